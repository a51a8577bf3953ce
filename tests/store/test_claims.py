"""Turn claims: one holder at a time, take-over after an expired lease, cancellations."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from orchestrator.domain.phases import Phase
from orchestrator.store.database import Database

NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
TTL = timedelta(seconds=30)


def _queue(db: Database, number: int = 1) -> int:
    issue_id = db.issues.ensure(
        "acme/app", number, title="Fix it", phase=Phase.IMPLEMENTING, now=NOW
    ).id
    claim_id = db.claims.enqueue(
        issue_id=issue_id,
        repo="acme/app",
        number=number,
        phase="implementing",
        attempt=1,
        payload={"k": "v"},
        now=NOW,
    )
    assert claim_id is not None
    return claim_id


def test_an_issue_has_one_open_claim(database: Database) -> None:
    _queue(database)
    issue_id = database.issues.ensure(
        "acme/app", 1, title="Fix it", phase=Phase.IMPLEMENTING, now=NOW
    ).id
    again = database.claims.enqueue(
        issue_id=issue_id,
        repo="acme/app",
        number=1,
        phase="implementing",
        attempt=1,
        payload={},
        now=NOW,
    )
    assert again is None
    assert [c.number for c in database.claims.open("acme/app")] == [1]


def test_only_one_replica_wins_a_claim(database: Database) -> None:
    claim_id = _queue(database)
    first = database.claims.claim(claim_id, "r1", run_id="run-1", ttl=TTL, now=NOW)
    second = database.claims.claim(claim_id, "r2", run_id="run-2", ttl=TTL, now=NOW)
    assert first is not None and first.payload == {"k": "v"} and first.previous_run_id is None
    assert second is None
    assert database.claims.claimable(now=NOW, limit=5) == []


def test_an_expired_claim_is_taken_over_with_the_previous_run(database: Database) -> None:
    claim_id = _queue(database)
    assert database.claims.claim(claim_id, "r1", run_id="run-1", ttl=TTL, now=NOW)
    later = NOW + TTL + timedelta(seconds=1)
    assert database.claims.claimable(now=later, limit=5) == [claim_id]
    taken = database.claims.claim(claim_id, "r2", run_id="run-2", ttl=TTL, now=later)
    assert taken is not None and taken.previous_run_id == "run-1"
    # The first holder lost it: it can neither renew nor close it.
    assert database.claims.renew("r1", ttl=TTL, now=later) == set()
    assert not database.claims.finish(claim_id, "r1", now=later)
    assert database.claims.finish(claim_id, "r2", now=later)
    assert database.claims.finished_count("acme/app") == 1


def test_renewal_keeps_a_claim_from_others(database: Database) -> None:
    claim_id = _queue(database)
    assert database.claims.claim(claim_id, "r1", run_id="run-1", ttl=TTL, now=NOW)
    renewed_at = NOW + TTL - timedelta(seconds=1)
    assert database.claims.renew("r1", ttl=TTL, now=renewed_at) == {claim_id}
    assert database.claims.claimable(now=NOW + TTL + timedelta(seconds=1), limit=5) == []


def test_cancellation_reaches_the_holder_and_ends_unclaimed_turns(database: Database) -> None:
    held = _queue(database, 1)
    _queue(database, 2)
    assert database.claims.claim(held, "r1", run_id="run-1", ttl=TTL, now=NOW)
    database.claims.request_cancel("acme/app", 1, "kill_switch", now=NOW)
    database.claims.request_cancel("acme/app", 2, "kill_switch", now=NOW)
    assert database.claims.cancelled("r1") == [("acme/app", 1, "kill_switch")]
    assert [c.number for c in database.claims.open("acme/app")] == [1]
    assert database.claims.claimable(now=NOW, limit=5) == []


def test_release_hands_claims_back(database: Database) -> None:
    claim_id = _queue(database)
    assert database.claims.claim(claim_id, "r1", run_id="run-1", ttl=TTL, now=NOW)
    assert database.claims.release("r1") == 1
    taken = database.claims.claim(claim_id, "r2", run_id="run-2", ttl=TTL, now=NOW)
    assert taken is not None and taken.previous_run_id == "run-1"
