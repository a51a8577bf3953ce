"""The database store: SQLAlchemy models, compare-and-set transitions, the
side-effect outbox, agent runs, leases and the HTTP cache.

SQLite is the embedded default; PostgreSQL is used for production and for
several replicas. The schema is owned by the Alembic revisions in the
top-level ``migrations/`` folder.
"""
