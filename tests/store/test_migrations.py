"""Migrations upgrade, downgrade and upgrade again, and match the models."""

from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect

from orchestrator.store import migrate
from orchestrator.store.database import Database
from orchestrator.store.engine import make_engine
from orchestrator.store.models import Base

TABLES = {
    "tracked_issues",
    "phase_events",
    "side_effects",
    "agent_runs",
    "leases",
    "http_cache",
    "turn_claims",
    "replicas",
    "feed_snapshots",
}


def _tables(url: str) -> set[str]:
    engine = make_engine(url)
    try:
        return set(inspect(engine).get_table_names()) - {"alembic_version"}
    finally:
        engine.dispose()


def test_empty_to_head_to_base_to_head(db_url: str) -> None:
    assert _tables(db_url) == set()
    migrate.upgrade(db_url)
    assert _tables(db_url) == TABLES
    migrate.downgrade(db_url, "base")
    assert _tables(db_url) == set()
    migrate.upgrade(db_url)
    assert _tables(db_url) == TABLES
    engine = make_engine(db_url)
    try:
        assert migrate.current_revision(engine) == migrate.head_revision()
    finally:
        engine.dispose()


def test_models_match_migrated_schema(db_url: str) -> None:
    migrate.upgrade(db_url)
    engine = make_engine(db_url)
    try:
        with engine.connect() as conn:
            context = MigrationContext.configure(conn, opts={"compare_type": True})
            diff = compare_metadata(context, Base.metadata)
    finally:
        engine.dispose()
    assert diff == []


def test_sqlite_is_upgraded_on_open(sqlite_url: str) -> None:
    db = Database.open(sqlite_url)
    try:
        assert _tables(sqlite_url) == TABLES
    finally:
        db.close()


@pytest.mark.postgres
def test_postgres_behind_refuses_with_the_command(pg_url: str) -> None:
    with pytest.raises(migrate.SchemaBehindError) as excinfo:
        Database.open(pg_url)
    message = str(excinfo.value)
    assert "orchestrator db upgrade" in message
    assert "none (empty)" in message
    assert _tables(pg_url) == set()
    migrate.upgrade(pg_url)
    Database.open(pg_url).close()
