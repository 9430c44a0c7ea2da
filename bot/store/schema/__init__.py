"""The schema: the migration history and each version's steps, for SQLite and PostgreSQL."""
