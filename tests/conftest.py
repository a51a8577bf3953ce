"""Fixtures shared by every test folder: databases on SQLite and PostgreSQL."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from orchestrator.store import migrate
from orchestrator.store.database import Database
from tests.support.store_clock import CALLER_CLOCK

PG_URL_ENV = "ORCHESTRATOR_TEST_PG_URL"

# The longest test files, longest first. `make test` runs the suite on two pytest-xdist
# workers a file at a time, in collection order: starting these first keeps one of them
# from being the last thing left running while the other worker sits idle.
LONGEST_FIRST = (
    "tests/property/test_merge_oracle.py",
    "tests/e2e/test_chaos_kills.py",
    "tests/replicas/test_cluster_chaos.py",
    "tests/scale/test_thousand_issues.py",
    "tests/replicas/test_replicas.py",
    "tests/replicas/test_cluster_bench.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rank = {path: index for index, path in enumerate(LONGEST_FIRST)}
    root = config.rootpath

    def order(item: pytest.Item) -> int:
        return rank.get(item.path.relative_to(root).as_posix(), len(rank))

    items.sort(key=order)


def _pg_server_url() -> str | None:
    url = os.environ.get(PG_URL_ENV)
    if url:
        return url
    if os.environ.get("ORCHESTRATOR_REQUIRE_PG") or os.environ.get("CI"):
        pytest.fail(
            f"{PG_URL_ENV} is not set: the PostgreSQL tests must run here "
            "(`make test` starts a throwaway server)"
        )
    return None


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A fresh, empty PostgreSQL database for one test, dropped afterwards."""
    server = _pg_server_url()
    if server is None:
        pytest.skip(f"{PG_URL_ENV} not set (run `make test` for a throwaway PostgreSQL)")
    name = f"t_{uuid.uuid4().hex[:12]}"
    admin = create_engine(server, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        yield make_url(server).set(database=name).render_as_string(hide_password=False)
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()


@pytest.fixture
def sqlite_url(tmp_path: object) -> str:
    return f"sqlite:///{tmp_path}/orchestrator.db"


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest) -> str:
    """The URL of an empty database, once per backend."""
    if request.param == "sqlite":
        return str(request.getfixturevalue("sqlite_url"))
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture
def database(db_url: str) -> Iterator[Database]:
    """A migrated store on each backend, judging leases by the ``now`` each test passes."""
    migrate.upgrade(db_url)
    db = Database.open(db_url, clock=CALLER_CLOCK)
    try:
        yield db
    finally:
        db.close()
