"""The outbox, agent runs and leases."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from orchestrator.domain.phases import Phase
from orchestrator.store.database import Database
from orchestrator.store.models import SideEffectStatus

NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def _issue(db: Database) -> int:
    return db.issues.ensure("acme/app", 1, title="t", phase=Phase.IMPLEMENTING, now=NOW).id


def test_intent_then_done_is_never_repeated(database: Database) -> None:
    issue_id = _issue(database)
    first = database.outbox.intend(
        "acme/app#1:create_pr:branch",
        kind="create_pr",
        payload={"head": "b"},
        issue_id=issue_id,
        rollout_mode="mutate",
        now=NOW,
    )
    assert first.previous is None and first.attempts == 1
    database.outbox.complete("acme/app#1:create_pr:branch", result={"number": 2}, now=NOW)
    again = database.outbox.intend(
        "acme/app#1:create_pr:branch",
        kind="create_pr",
        payload={"head": "b"},
        issue_id=issue_id,
        rollout_mode="mutate",
        now=NOW,
    )
    assert again.already_done and again.result == {"number": 2}


def test_intent_left_by_a_crash_is_reported_as_maybe_applied(database: Database) -> None:
    database.outbox.intend(
        "k", kind="post_comment", payload={}, issue_id=None, rollout_mode="mutate", now=NOW
    )
    assert [row.idempotency_key for row in database.outbox.unfinished()] == ["k"]
    retry = database.outbox.intend(
        "k", kind="post_comment", payload={}, issue_id=None, rollout_mode="mutate", now=NOW
    )
    assert retry.maybe_applied and retry.attempts == 2


def test_refusals_are_recorded_and_later_allowed(database: Database) -> None:
    issue_id = _issue(database)
    database.outbox.refuse(
        "m",
        status=SideEffectStatus.REFUSED_BY_MODE,
        kind="merge_pr",
        payload={"sha": "a"},
        issue_id=issue_id,
        rollout_mode="mutate",
        reason="merge needs rollout mode merge",
        now=NOW,
    )
    row = database.outbox.get("m")
    assert row is not None and row.status == "refused_by_mode"
    assert row.result == {"reason": "merge needs rollout mode merge"}
    after = database.outbox.intend(
        "m", kind="merge_pr", payload={"sha": "a"}, issue_id=issue_id, rollout_mode="merge", now=NOW
    )
    assert after.previous is SideEffectStatus.REFUSED_BY_MODE
    database.outbox.complete("m", result={"merged": True}, now=NOW)
    database.outbox.refuse(
        "m",
        status=SideEffectStatus.REFUSED_BY_KILL_SWITCH,
        kind="merge_pr",
        payload={},
        issue_id=issue_id,
        rollout_mode="merge",
        reason="brake",
        now=NOW,
    )
    done = database.outbox.get("m")
    assert done is not None and done.status == "done"
    assert [r.idempotency_key for r in database.outbox.for_issue(issue_id)] == ["m"]


def test_refuse_rejects_a_non_refusal(database: Database) -> None:
    with pytest.raises(ValueError, match="not a refusal"):
        database.outbox.refuse(
            "x",
            status=SideEffectStatus.DONE,
            kind="k",
            payload={},
            issue_id=None,
            rollout_mode="observe",
            reason="r",
            now=NOW,
        )


def test_complete_unknown_key_is_an_error(database: Database) -> None:
    with pytest.raises(KeyError, match="nope"):
        database.outbox.complete("nope", result={}, now=NOW)


def test_runs_lifecycle_and_interruption(database: Database) -> None:
    issue_id = _issue(database)
    database.runs.start(
        "r1", issue_id=issue_id, phase="implementing", attempt=1, now=NOW, replica_id="a"
    )
    database.runs.start(
        "r2", issue_id=issue_id, phase="implementing", attempt=2, now=NOW, replica_id="b"
    )
    database.runs.first_event("r1", at=NOW + timedelta(seconds=2))
    database.runs.first_event("r1", at=NOW + timedelta(seconds=9))
    assert database.runs.finish(
        "r1",
        outcome="completed",
        now=NOW + timedelta(minutes=1),
        input_tokens=10,
        output_tokens=5,
        total_tokens=15,
    )
    assert not database.runs.finish("r1", outcome="failed", now=NOW)
    assert [r.run_id for r in database.runs.running()] == ["r2"]
    assert database.runs.interrupt_unfinished(now=NOW, replica_id="a") == 0
    assert database.runs.interrupt_unfinished(now=NOW) == 1
    runs = {r.run_id: r for r in database.runs.for_issue(issue_id)}
    assert runs["r1"].first_event_at == NOW + timedelta(seconds=2)
    assert runs["r1"].outcome == "completed" and runs["r1"].total_tokens == 15
    assert runs["r2"].outcome == "interrupted"


def test_a_sessions_usage_sums_its_finished_runs(database: Database) -> None:
    issue_id = _issue(database)
    for run_id, session, tokens in (("s1", "th-1", 10), ("s2", "th-1", 5), ("s3", "th-2", 7)):
        database.runs.start(run_id, issue_id=issue_id, phase="rework", attempt=1, now=NOW)
        database.runs.finish(
            run_id,
            outcome="completed",
            now=NOW,
            input_tokens=tokens * 100,
            cached_input_tokens=tokens * 10,
            output_tokens=tokens,
            session_id=session,
            cost_usd=0.5,
        )
    assert database.runs.session_usage(issue_id, "th-1") == (1500, 150, 15)
    assert database.runs.session_usage(issue_id, "none") == (0, 0, 0)
    (run,) = [r for r in database.runs.for_issue(issue_id) if r.run_id == "s3"]
    assert run.cost_usd == 0.5 and run.cached_input_tokens == 70


def test_leases_exclusive_until_expiry(database: Database) -> None:
    ttl = timedelta(seconds=30)
    assert database.leases.acquire("poll:acme/app", "a", ttl=ttl, now=NOW)
    assert not database.leases.acquire(
        "poll:acme/app", "b", ttl=ttl, now=NOW + timedelta(seconds=10)
    )
    assert database.leases.acquire("poll:acme/app", "a", ttl=ttl, now=NOW + timedelta(seconds=10))
    assert database.leases.holder("poll:acme/app", now=NOW) == "a"
    assert database.leases.renew("poll:acme/app", "a", ttl=ttl, now=NOW + timedelta(seconds=20))
    assert not database.leases.renew("poll:acme/app", "b", ttl=ttl, now=NOW)
    expired = NOW + timedelta(seconds=51)
    assert database.leases.holder("poll:acme/app", now=expired) is None
    assert database.leases.acquire("poll:acme/app", "b", ttl=ttl, now=expired)
    assert not database.leases.renew("poll:acme/app", "a", ttl=ttl, now=expired)
    assert database.leases.held_by("b", now=expired) == ["poll:acme/app"]
    assert database.leases.release("poll:acme/app", "b")
    assert database.leases.acquire("issue:1", "c", ttl=ttl, now=NOW)
    assert database.leases.reap(now=NOW + timedelta(minutes=5)) == 1
    assert database.leases.release_all("c") == 0
