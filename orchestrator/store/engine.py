"""Database URLs and engines for SQLite (embedded default) and PostgreSQL."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from orchestrator.store.sqlite_faults import probe_sqlite_writable

DATABASE_URL_ENV = "ORCHESTRATOR_DATABASE_URL"
SQLITE_BUSY_TIMEOUT_MS = 30_000


def default_database_path() -> Path:
    """The embedded database file under ``$XDG_STATE_HOME/orchestrator/``."""
    state_home = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state_home) / "orchestrator" / "orchestrator.db"


def normalize_url(value: str) -> str:
    """Turn a file path or a database URL into a SQLAlchemy URL string.

    A bare path means SQLite; ``postgresql://`` URLs use the psycopg 3 driver.
    """
    value = value.strip()
    if "://" not in value:
        return f"sqlite:///{Path(value).expanduser().resolve()}"
    if value.startswith(("postgres://", "postgresql://")):
        return "postgresql+psycopg://" + value.split("://", 1)[1]
    return value


def resolve_database_url(flag: str | None = None, policy_url: str | None = None) -> str:
    """The database URL by precedence: flag > environment > policy > default file."""
    for candidate in (flag, os.environ.get(DATABASE_URL_ENV), policy_url):
        if candidate:
            return normalize_url(candidate)
    return normalize_url(str(default_database_path()))


def is_sqlite(url: str) -> bool:
    return make_url(url).get_backend_name() == "sqlite"


def sqlite_path(url: str) -> Path | None:
    """The file of a SQLite URL; None for PostgreSQL, in-memory and ``file:`` URI databases."""
    if not is_sqlite(url):
        return None
    parsed = make_url(url)
    database = parsed.database
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    if parsed.query.get("uri") == "true":
        return None
    return Path(database)


def describe_url(url: str) -> str:
    """The URL with any password hidden, for logs and messages."""
    return make_url(url).render_as_string(hide_password=True)


def make_engine(url: str, **kwargs: Any) -> Engine:
    """An engine configured for the daemon's transaction rules.

    SQLite: WAL, busy timeout, foreign keys, and ``BEGIN IMMEDIATE`` so a write
    transaction takes the write lock up front instead of failing on upgrade. A
    SQLite file is probed first: one that cannot be written raises
    :class:`~orchestrator.store.sqlite_faults.StorageFault` saying why.
    """
    url = normalize_url(url)
    if is_sqlite(url):
        database = sqlite_path(url)
        if database is not None:
            probe_sqlite_writable(database, busy_timeout_s=SQLITE_BUSY_TIMEOUT_MS / 1000)
        engine = create_engine(
            url,
            connect_args={"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000},
            poolclass=kwargs.pop("poolclass", NullPool),
            **kwargs,
        )
        _configure_sqlite(engine)
        return engine
    kwargs.setdefault("pool_pre_ping", True)
    kwargs.setdefault("pool_size", 10)
    kwargs.setdefault("max_overflow", 20)
    return create_engine(url, **kwargs)


def _configure_sqlite(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Take transaction control from the driver so BEGIN IMMEDIATE is ours to emit.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")
