from __future__ import annotations

from collections.abc import Iterator

import pytest

from orchestrator.store import migrate
from orchestrator.store.database import Database


@pytest.fixture
def database(db_url: str) -> Iterator[Database]:
    """A migrated store on each backend, judging leases by the ``now`` each test passes."""
    migrate.upgrade(db_url)
    db = Database.open(db_url, caller_clock=True)
    try:
        yield db
    finally:
        db.close()
