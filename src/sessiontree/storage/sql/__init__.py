"""The SQL back ends: SQLite (stdlib ``sqlite3``) and PostgreSQL (``psycopg``), one schema, fenced writers."""
