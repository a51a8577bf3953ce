"""The cluster role on its own: presence, leadership with epochs, takeover, the agent limit.

Two roles share one store and a clock the test moves, so every lease expiry
is played exactly; the database judges leases by the ``now`` passed here
(``CallerClock``), as SQLite does in production.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from structlog.testing import capture_logs

from orchestrator.repos.cluster import ClusterRole
from orchestrator.store.database import Database
from orchestrator.store.fencing import Fence
from orchestrator.wiring.policy_view import PolicyView
from orchestrator.workflow.loader import load_workflow

REPO = "acme/widgets"
START = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


def roles(db: Database, clock: Clock) -> tuple[ClusterRole, ClusterRole]:
    a = ClusterRole(db, replica_id="a", lease_s=10, clock=clock, version="1.0")
    b = ClusterRole(db, replica_id="b", lease_s=10, clock=clock, version="1.1")
    a.join()
    b.join()
    return a, b


def test_one_leader_until_its_lease_lapses_then_the_follower_takes_over_with_a_new_epoch(
    database: Database,
) -> None:
    clock = Clock()
    a, b = roles(database, clock)
    assert a.lead(REPO).fence == Fence.lease("poll:acme/widgets", "a", 1)
    assert not b.lead(REPO).leading and b.leading == ()
    assert a.leading == (REPO,) and b.leader(REPO) == "a"

    # a beats in time: it keeps the lease; b's heartbeat cannot take it.
    clock.advance(9)
    assert not a.heartbeat(REPO)
    assert not b.heartbeat(REPO)
    # a stalls past its lease: b's next heartbeat takes over, at epoch 2.
    clock.advance(10.5)
    with capture_logs() as logs:
        assert b.heartbeat(REPO)
        assert not a.heartbeat(REPO)
    assert b.fence == Fence.lease("poll:acme/widgets", "b", 2)
    assert a.fence is None and a.leading == ()
    assert [(e["event"], e["epoch"]) for e in logs] == [
        ("leadership_taken", 2),
        ("leadership_lost", 1),
    ]


def test_presence_counts_live_replicas_and_scales_the_agent_limit(
    database: Database, tmp_path: Path
) -> None:
    clock = Clock()
    a, _b = roles(database, clock)
    (tmp_path / "WORKFLOW.md").write_text(
        "---\ntracker: {repo: acme/widgets, token: x}\nagent: {max_concurrent_agents: 3}\n---\n"
    )
    view = PolicyView.of(load_workflow(tmp_path / "WORKFLOW.md"))
    assert a.live_replicas() == 2
    assert a.scaled(view).flow.max_concurrent_agents == 6
    # b stops beating: after its time to live only a counts.
    clock.advance(6)
    a.heartbeat(REPO)
    clock.advance(6)
    assert a.live_replicas() == 1
    assert a.scaled(view) is view
    rows = {row.replica_id: row for row in database.replicas.all(now=clock())}
    assert rows["a"].alive and not rows["b"].alive and rows["b"].version == "1.1"


def test_a_clean_leave_gives_the_lease_up_at_once_and_epochs_keep_growing(
    database: Database,
) -> None:
    clock = Clock()
    a, b = roles(database, clock)
    assert a.lead(REPO).fence is not None
    assert a.leave() == 1
    assert b.heartbeat(REPO), "no need to wait for the lease to lapse"
    assert b.fence is not None and b.fence.epoch == 2
    rows = {row.replica_id: row for row in database.replicas.all(now=clock())}
    assert rows["a"].stopped_at is not None and not rows["a"].alive
    # Dead replicas are forgotten a day later; expired leases lose their holder, not their row.
    clock.advance(2 * 86_400)
    b.reap()
    assert [row.replica_id for row in database.replicas.all(now=clock())] == []
    assert database.leases.holder("poll:acme/widgets", now=clock()) is None
    assert a.lead(REPO).fence == Fence.lease("poll:acme/widgets", "a", 3)
