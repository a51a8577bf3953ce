"""Fenced writes between two replicas on PostgreSQL: whoever lost its lease or claim writes nothing.

Two in-process daemons ("a" and "b") share one database; their scheduler jobs
are driven by hand so each race is played exactly: a leader whose tick began
before its lease moved on, and a replica whose turn claim expired while its
agent ran.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import create_engine, text
from structlog.testing import capture_logs

from orchestrator.daemon.daemon import Daemon
from orchestrator.store import migrate
from orchestrator.store.fencing import Fence
from orchestrator.tick.cycle import combined
from orchestrator.tick.request import WHOLE
from orchestrator_sim.testing import SimWorld
from tests.e2e.harness import Flow, default_scenario, flow_for
from tests.support.idle import wait_idle

LEASE_S = 30.0


def expire(db_url: str, sql: str) -> None:
    engine = create_engine(db_url)
    try:
        with engine.begin() as conn:
            conn.execute(text(sql))
    finally:
        engine.dispose()


@contextmanager
def two_replicas(flow: Flow, db_url: str) -> Iterator[tuple[Daemon, Daemon]]:
    started: list[Daemon] = []
    try:
        for name in ("a", "b"):
            daemon = Daemon(
                flow.policy_path,
                db_url=db_url,
                env=flow.env,
                replica_id=name,
                lease_s=LEASE_S,
            )
            daemon.start()
            started.append(daemon)
        yield started[0], started[1]
    finally:
        for daemon in started:
            daemon.shutdown(grace_s=0)


def test_a_leader_whose_lease_moved_on_mid_tick_writes_nothing(
    tmp_path: Path, world: SimWorld, pg_url: str
) -> None:
    migrate.upgrade(pg_url)
    with (
        flow_for(tmp_path, world, mode="mutate", start=False, db_url=pg_url) as flow,
        two_replicas(flow, pg_url) as (a, b),
    ):
        flow.open_issue()
        a.tick()  # a leads (epoch 1), queues the implementing turn and runs it
        assert wait_idle(a, 60)
        assert a.parts.cluster.fence == Fence.lease("poll:acme/widgets", "a", 1)
        stale = a.parts.cluster.fence
        # a stalls past its lease; b's heartbeat takes the repository over.
        expire(pg_url, "UPDATE leases SET expires_at = now() - interval '1 second'")
        assert b.parts.cluster.heartbeat(flow.world.repo)
        assert b.parts.cluster.fence is not None and b.parts.cluster.fence.epoch == 2

        # a's tick had begun under epoch 1: its plan (open the PR, the workpad) is fenced.
        writes = len(flow.bot_writes())
        with capture_logs() as logs:
            passes = a.parts.repo_set.first.parts.tick.passes(
                WHOLE,
                view=a.view,
                agents=a.parts.repo_set.agents,
                source=a.parts.repo_set.repo_source(),
                now=a.clock(),
                dispatching=True,
                fence=stale,
            )
            report = combined(list(passes))
        assert report.execution.fenced
        assert [e["reason"] for e in logs if e["event"] == "side_effect_fenced"] == [
            "poll lease poll:acme/widgets at epoch 1 held by a is no longer held"
        ]
        assert len(flow.bot_writes()) == writes and flow.pulls() == []
        # a's own next tick sees it no longer leads; b, the leader now, opens the PR.
        assert a.tick() is None and a.leading == ()
        b.tick()
        assert len(flow.pulls()) == 1


def test_a_replica_whose_claim_expired_cancels_its_agent_and_records_nothing(
    tmp_path: Path, world: SimWorld, pg_url: str
) -> None:
    migrate.upgrade(pg_url)
    scenario = default_scenario()
    # The implementing turn runs long enough for its claim to be taken meanwhile.
    scenario["steps"] = [{"sleep_ms": 4000}, *scenario["steps"]]
    with (
        flow_for(
            tmp_path, world, mode="mutate", start=False, db_url=pg_url, scenario=scenario
        ) as flow,
        two_replicas(flow, pg_url) as (a, b),
    ):
        flow.open_issue()
        with capture_logs() as logs:
            a.tick()  # a leads, queues the turn and claims it: its agent sleeps
            deadline = time.monotonic() + 30
            while not a.parts.pool.running():
                assert time.monotonic() < deadline, "a never started the turn"
                time.sleep(0.05)
            [claim] = flow_claims(pg_url)
            assert claim == ("a", 1)
            # a stalls: its claim expires and b claims the turn (epoch 2).
            expire(pg_url, "UPDATE turn_claims SET lease_expires_at = now() - interval '1 s'")
            assert b.claim_ready()
            assert flow_claims(pg_url) == [("b", 2)]
            # a's heartbeat finds the claim gone: its agent is cancelled, its result dropped.
            assert a.parts.claimer.renew() == 0
            assert wait_idle(a, 60)
            assert wait_idle(b, 60)
        first, second = [e["run_id"] for e in logs if e["event"] == "turn_claimed"]
        lost = [e for e in logs if e["event"] == "claim_lost"]
        assert lost and {e["run_id"] for e in lost} == {first}
        discarded = [e for e in logs if e["event"] == "turn_result_discarded"]
        assert [e["outcome"] for e in discarded] == ["cancelled"]
        # The record holds b's outcome, and only b's turn pushed.
        record = flow_record(a)
        assert record is not None and record.last_outcome is not None
        assert record.last_outcome.run_id == second
        assert [r.replica_id for r in a.db.runs.for_issue(1) if r.outcome == "completed"] == ["b"]
        assert len([e for e in logs if e["event"] == "turn_pushed"]) == 1


def flow_claims(db_url: str) -> list[tuple[str, int]]:
    engine = create_engine(db_url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(
                text("SELECT owner, epoch FROM turn_claims WHERE finished_at IS NULL")
            )
            return [(str(owner), int(epoch)) for owner, epoch in rows]
    finally:
        engine.dispose()


def flow_record(daemon: Daemon):  # type: ignore[no-untyped-def]
    row = daemon.parts.records.get_by_id(1)
    return row.record if row is not None else None


def test_a_claim_no_local_turn_backs_is_handed_back_at_the_next_heartbeat(
    tmp_path: Path, world: SimWorld, pg_url: str
) -> None:
    migrate.upgrade(pg_url)
    with (
        flow_for(tmp_path, world, mode="mutate", start=False, db_url=pg_url) as flow,
        two_replicas(flow, pg_url) as (a, _b),
    ):
        flow.open_issue()
        a.tick()  # queues the turn; a claims and runs it
        assert wait_idle(a, 60)
        # As if a's worker had died with the database connection: the row says a holds a
        # claim, and no turn of a backs it.
        queued = a.db.claims.enqueue(
            issue_id=1,
            repo=world.repo,
            number=1,
            phase="reviewing",
            attempt=1,
            payload={},
            now=a.clock(),
        )
        assert queued is not None
        ttl = a.parts.cluster.ttl
        assert a.db.claims.claim(queued, "a", run_id="ghost", ttl=ttl, now=a.clock())
        with capture_logs() as logs:
            assert a.parts.claimer.renew() == 0
        assert [e["count"] for e in logs if e["event"] == "claims_released"] == [1]
        assert flow_claims(pg_url) == [("None", 1)]
