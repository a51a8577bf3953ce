"""Running the Alembic revisions from inside the application.

The daemon upgrades an embedded SQLite database by itself; against PostgreSQL
it refuses to start on a schema that is behind and names the command to run,
because several replicas must not race to migrate a shared database.
"""

from __future__ import annotations

import os
import sys
from enum import StrEnum
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine

from orchestrator.store.engine import (
    DatabaseChoice,
    UrlSource,
    describe_url,
    is_sqlite,
    make_engine,
)

MIGRATIONS_ENV = "ORCHESTRATOR_MIGRATIONS_DIR"


class SchemaBehindError(RuntimeError):
    """The database schema is older than this release needs."""


class SchemaAheadError(RuntimeError):
    """The database was migrated by a newer release than this one."""


class SchemaState(StrEnum):
    """How a database's schema revision compares with what this release needs."""

    UP_TO_DATE = "up to date"
    BEHIND = "behind"
    NEWER = "newer than this release"


def _known_revision(url: str, revision: str) -> bool:
    script = ScriptDirectory.from_config(alembic_config(url))
    return any(r.revision == revision for r in script.walk_revisions())


def schema_state(url: str, current: str | None) -> SchemaState:
    """Whether ``current`` is this release's head, one of its older revisions, or unknown to it.

    A revision this release does not know was written by a newer release:
    upgrading cannot help, and this release must not run on it.
    """
    if current == head_revision(url):
        return SchemaState.UP_TO_DATE
    if current is not None and not _known_revision(url, current):
        return SchemaState.NEWER
    return SchemaState.BEHIND


def newer_schema_message(url: str, current: str) -> str:
    """What to say about a database a newer release migrated."""
    return (
        f"database {describe_url(url)} is at revision {current}, which this release does "
        f"not know (it needs {head_revision(url)}): the database is newer than this release "
        "(a newer release migrated it); run that release, or restore a backup taken before "
        "the upgrade"
    )


def migrations_dir() -> Path:
    """Where the Alembic environment lives: a source checkout or an installed copy."""
    candidates = []
    if os.environ.get(MIGRATIONS_ENV):
        candidates.append(Path(os.environ[MIGRATIONS_ENV]))
    candidates.append(Path(__file__).resolve().parents[2] / "migrations")
    candidates.append(Path(sys.prefix) / "share" / "orchestrator" / "migrations")
    for candidate in candidates:
        if (candidate / "env.py").is_file():
            return candidate
    raise FileNotFoundError(
        "cannot find the migrations folder (looked in "
        + ", ".join(str(c) for c in candidates)
        + f"); set {MIGRATIONS_ENV}"
    )


def alembic_config(url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    # Alembic reads this as a ConfigParser value: '%' must be escaped.
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def head_revision(url: str = "sqlite://") -> str:
    script = ScriptDirectory.from_config(alembic_config(url))
    head = script.get_current_head()
    if head is None:
        raise RuntimeError("the migrations folder has no revisions")
    return head


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def upgrade(url: str, revision: str = "head") -> None:
    command.upgrade(alembic_config(url), revision)


def downgrade(url: str, revision: str = "base") -> None:
    command.downgrade(alembic_config(url), revision)


def ensure_schema(
    url: str, engine: Engine | None = None, *, upgrade_command: str | None = None
) -> None:
    """Bring the schema to head on SQLite; on PostgreSQL, refuse when it is behind.

    ``upgrade_command`` is the command the refusal names (what chose the
    database: a policy file, the environment); by default ``--db`` with the URL,
    or a placeholder for it when it holds a password.
    """
    own = engine is None
    engine = engine or make_engine(url)
    try:
        current = current_revision(engine)
    finally:
        if own:
            engine.dispose()
    state = schema_state(url, current)
    if state is SchemaState.UP_TO_DATE:
        return
    if state is SchemaState.NEWER:
        assert current is not None
        raise SchemaAheadError(newer_schema_message(url, current))
    if is_sqlite(url):
        upgrade(url)
        return
    command = upgrade_command or DatabaseChoice(url, UrlSource.FLAG).command("upgrade")
    raise SchemaBehindError(
        f"database {describe_url(url)} is at revision {current or 'none (empty)'}, "
        f"this release needs {head_revision(url)}; run: {command}"
    )
