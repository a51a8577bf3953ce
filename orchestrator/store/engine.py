"""Database URLs and engines for SQLite (embedded default) and PostgreSQL."""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, exc
from sqlalchemy.engine import ExceptionContext, make_url
from sqlalchemy.pool import QueuePool

from orchestrator.state_home import expand_path, state_home
from orchestrator.store.sqlite_faults import probe_sqlite_writable, symptom_of

DATABASE_URL_ENV = "ORCHESTRATOR_DATABASE_URL"
SQLITE_BUSY_TIMEOUT_MS = 30_000
# SQLite connections kept open for reuse: about the daemon's threads that use the store
# at once (the tick, the heartbeat, the workers, the dashboard). More are opened when
# needed and closed when given back, so a thread never waits for one.
SQLITE_POOL_SIZE = 8
# Where a pooled SQLite connection notes the (device, inode) of the file it opened.
_FILE_IDENTITY = "orchestrator_sqlite_file"


def default_database_path() -> Path:
    """The embedded database file under ``$XDG_STATE_HOME/orchestrator/``."""
    return state_home() / "orchestrator" / "orchestrator.db"


def normalize_url(value: str) -> str:
    """Turn a file path or a database URL into a SQLAlchemy URL string.

    A bare path means SQLite; ``postgresql://`` URLs use the psycopg 3 driver.
    """
    value = value.strip()
    if "://" not in value:
        return f"sqlite:///{Path(expand_path(value)).resolve()}"
    if value.startswith(("postgres://", "postgresql://")):
        return "postgresql+psycopg://" + value.split("://", 1)[1]
    return value


class UrlSource(StrEnum):
    """Where a database URL was taken from."""

    FLAG = "flag"
    ENV = "env"
    POLICY = "policy"
    DEFAULT = "default"


@dataclass(frozen=True)
class DatabaseChoice:
    """A database URL and where it came from, so a message can say how to reach it again.

    A hint never shows the URL with its password masked: pasted back, such a
    URL fails on the password. It names what chose the database instead.
    """

    url: str
    source: UrlSource
    # The policy file whose database.url it is (source POLICY).
    policy_path: Path | None = None

    @property
    def display(self) -> str:
        return describe_url(self.url)

    def command(self, action: str) -> str:
        """``orchestrator db ACTION`` with what selects this database again."""
        base = f"orchestrator db {action}"
        if self.source is UrlSource.POLICY and self.policy_path is not None:
            return f"{base} --workflow {shlex.quote(str(self.policy_path))}"
        if self.source is UrlSource.ENV:
            return f"{base} (with the same {DATABASE_URL_ENV} in the environment)"
        if make_url(self.url).password is not None:
            return f"{base} --db URL (this database's URL, with its password)"
        if self.source is UrlSource.DEFAULT:
            return base
        return f"{base} --db {shlex.quote(self.url)}"


def choose_database(
    flag: str | None = None, policy_url: str | None = None, policy_path: Path | None = None
) -> DatabaseChoice:
    """The database by precedence: flag > environment > policy > default file."""
    env = os.environ.get(DATABASE_URL_ENV)
    if flag:
        return DatabaseChoice(normalize_url(flag), UrlSource.FLAG)
    if env:
        return DatabaseChoice(normalize_url(env), UrlSource.ENV)
    if policy_url:
        path = policy_path.resolve() if policy_path is not None else None
        return DatabaseChoice(normalize_url(policy_url), UrlSource.POLICY, path)
    return DatabaseChoice(normalize_url(str(default_database_path())), UrlSource.DEFAULT)


def resolve_database_url(flag: str | None = None, policy_url: str | None = None) -> str:
    """The database URL by precedence: flag > environment > policy > default file."""
    return choose_database(flag, policy_url).url


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

    SQLite connections are pooled (the PRAGMAs run once per connection). A
    connection is dropped, and the next use opens the file afresh, when the
    file was replaced or removed since it was opened, and after an error about
    the storage itself (full disk, read-only or damaged file).
    """
    url = normalize_url(url)
    if is_sqlite(url):
        database = sqlite_path(url)
        if database is not None:
            probe_sqlite_writable(database, busy_timeout_s=SQLITE_BUSY_TIMEOUT_MS / 1000)
        if "poolclass" not in kwargs:
            kwargs.update(poolclass=QueuePool, pool_size=SQLITE_POOL_SIZE, max_overflow=-1)
        engine = create_engine(
            url,
            connect_args={"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000},
            **kwargs,
        )
        _configure_sqlite(engine, database)
        return engine
    kwargs.setdefault("pool_pre_ping", True)
    kwargs.setdefault("pool_size", 10)
    kwargs.setdefault("max_overflow", 20)
    return create_engine(url, **kwargs)


def _file_identity(database: Path) -> tuple[int, int] | None:
    try:
        found = os.stat(database)
    except OSError:
        return None
    return found.st_dev, found.st_ino


def _configure_sqlite(engine: Engine, database: Path | None) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, record: Any) -> None:
        # Take transaction control from the driver so BEGIN IMMEDIATE is ours to emit.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()
        if database is not None:
            record.info[_FILE_IDENTITY] = _file_identity(database)

    @event.listens_for(engine, "checkout")
    def _on_checkout(_dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        # A connection keeps the file it opened: once the path names another file (or
        # none), the pool opens a new connection, as a fresh open would see.
        if database is None:
            return
        identity = _file_identity(database)
        if identity is None or identity != record.info.get(_FILE_IDENTITY):
            raise exc.DisconnectionError(f"SQLite database {database} was replaced or removed")

    @event.listens_for(engine, "handle_error")
    def _on_error(context: ExceptionContext) -> None:
        # After a storage fault the next use starts from a fresh connection.
        if symptom_of(context.original_exception) is not None:
            context.is_disconnect = True

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")
