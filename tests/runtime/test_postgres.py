"""The daemon on PostgreSQL: the whole merge flow, and a schema that is behind refused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.daemon.daemon import Daemon, DaemonError
from orchestrator.store import migrate
from orchestrator_sim.testing import SimWorld, running_world
from tests.e2e.harness import flow_for

pytestmark = pytest.mark.postgres


@pytest.fixture
def world(tmp_path: Path) -> Iterator[SimWorld]:
    with running_world(tmp_path / "sim") as running:
        yield running


def test_the_merge_flow_on_postgresql(tmp_path: Path, world: SimWorld, pg_url: str) -> None:
    migrate.upgrade(pg_url)
    with flow_for(tmp_path, world, db_url=pg_url) as flow:
        number = flow.open_issue()
        flow.run_to_phase(number, "waiting_for_checks")
        pr = flow.pr_number(number)
        flow.check(pr, "success")
        flow.run_to_phase(number, "waiting_for_human")
        flow.approve(number)
        flow.run_to_phase(number, "done")
        assert flow.pull(pr)["merged"]
        assert not (tmp_path / "orchestrator.db.lock").exists()
        assert flow.d.status().leading == (world.repo,)


def test_a_schema_behind_is_refused_with_the_command(
    tmp_path: Path, world: SimWorld, pg_url: str
) -> None:
    with flow_for(tmp_path, world, start=False) as flow:
        daemon = Daemon(flow.policy_path, db_url=pg_url, env=flow.env)
        with pytest.raises(DaemonError) as excinfo:
            daemon.start()
        assert "orchestrator db upgrade" in str(excinfo.value)
