"""The database engine: connections, dialects, the migration runner, backup and copy."""
