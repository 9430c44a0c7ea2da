"""SQLite storage: connection, migrations and one repository module per aggregate."""
