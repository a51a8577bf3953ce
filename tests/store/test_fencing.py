"""Epochs and fences: a replica that lost its lease or claim can neither renew nor write.

Leases and claims are judged on the database's clock on PostgreSQL, so a
replica whose own clock runs 30 seconds ahead still cannot take a live lease.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from orchestrator.domain.phases import Phase
from orchestrator.store import migrate
from orchestrator.store.database import Database
from orchestrator.store.fencing import Fence, FenceLost, fence_holds

NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
TTL = timedelta(seconds=30)
LEASE = "poll:acme/app"


def _claim_id(db: Database) -> int:
    issue_id = db.issues.ensure("acme/app", 1, title="Fix", phase=Phase.IMPLEMENTING, now=NOW).id
    claim_id = db.claims.enqueue(
        issue_id=issue_id,
        repo="acme/app",
        number=1,
        phase="implementing",
        attempt=1,
        payload={},
        now=NOW,
    )
    assert claim_id is not None
    return claim_id


def test_a_lease_epoch_grows_with_every_change_of_hands_and_never_repeats(
    database: Database,
) -> None:
    leases = database.leases
    assert leases.acquire(LEASE, "a", ttl=TTL, now=NOW) == 1
    assert leases.acquire(LEASE, "a", ttl=TTL, now=NOW + timedelta(seconds=10)) == 1
    later = NOW + timedelta(seconds=41)
    assert leases.acquire(LEASE, "b", ttl=TTL, now=later) == 2
    assert not leases.renew(LEASE, "a", ttl=TTL, now=later)
    assert leases.release(LEASE, "b")
    assert leases.acquire(LEASE, "c", ttl=TTL, now=later) == 3
    # Expired and taken again by the same holder: a new epoch all the same.
    much_later = later + timedelta(minutes=5)
    assert leases.acquire(LEASE, "c", ttl=TTL, now=much_later) == 4
    assert leases.reap(now=much_later + timedelta(minutes=5)) == 1
    assert leases.acquire(LEASE, "a", ttl=TTL, now=much_later + timedelta(minutes=5)) == 5


def test_a_lease_fence_holds_only_for_its_holder_epoch_and_lifetime(database: Database) -> None:
    leases = database.leases
    epoch = leases.acquire(LEASE, "a", ttl=TTL, now=NOW)
    assert epoch == 1
    fence = Fence.lease(LEASE, "a", epoch)
    with database.session() as session:
        assert fence_holds(session, fence, now=NOW + timedelta(seconds=29))
        assert not fence_holds(session, fence, now=NOW + timedelta(seconds=30))
        assert not fence_holds(session, Fence.lease(LEASE, "a", 2), now=NOW)
        assert not fence_holds(session, Fence.lease(LEASE, "b", 1), now=NOW)


def test_a_claim_epoch_fences_the_previous_holder(database: Database) -> None:
    claim_id = _claim_id(database)
    first = database.claims.claim(claim_id, "r1", run_id="run-1", ttl=TTL, now=NOW)
    assert first is not None and first.epoch == 1
    later = NOW + TTL + timedelta(seconds=1)
    second = database.claims.claim(claim_id, "r2", run_id="run-2", ttl=TTL, now=later)
    assert second is not None and second.epoch == 2
    old = Fence.claim(claim_id, "r1", 1)
    new = Fence.claim(claim_id, "r2", 2)
    with database.session() as session:
        assert not fence_holds(session, old, now=later)
        assert fence_holds(session, new, now=later)
    assert not database.claims.finish(claim_id, "r2", now=later, epoch=1)
    assert database.claims.finish(claim_id, "r2", now=later, epoch=2)
    with database.session() as session:
        assert not fence_holds(session, new, now=later), "a finished claim fences nothing"


def test_an_expired_claim_is_not_renewed_even_before_anyone_takes_it(database: Database) -> None:
    claim_id = _claim_id(database)
    assert database.claims.claim(claim_id, "r1", run_id="run-1", ttl=TTL, now=NOW)
    assert database.claims.renew("r1", ttl=TTL, now=NOW + TTL) == set()
    assert database.claims.claimable(now=NOW + TTL, limit=5) == [claim_id]


def test_an_intent_under_a_lost_fence_is_refused_and_records_nothing(database: Database) -> None:
    epoch = database.leases.acquire(LEASE, "a", ttl=TTL, now=NOW)
    assert epoch is not None
    fence = Fence.lease(LEASE, "a", epoch)
    kwargs = {"kind": "merge_pr", "payload": {}, "issue_id": None, "rollout_mode": "merge"}
    database.outbox.intend("k1", now=NOW, fence=fence, **kwargs)  # type: ignore[arg-type]
    later = NOW + TTL
    assert database.leases.acquire(LEASE, "b", ttl=TTL, now=later) == 2
    with pytest.raises(FenceLost, match="poll lease poll:acme/app at epoch 1 held by a"):
        database.outbox.intend("k2", now=later, fence=fence, **kwargs)  # type: ignore[arg-type]
    assert database.outbox.get("k2") is None


def test_an_issue_write_under_a_lost_claim_is_refused(database: Database) -> None:
    claim_id = _claim_id(database)
    claimed = database.claims.claim(claim_id, "r1", run_id="run-1", ttl=TTL, now=NOW)
    assert claimed is not None
    issue_id = database.claims.open("acme/app")[0].issue_id
    fence = Fence.claim(claim_id, "r1", claimed.epoch)
    assert database.issues.update_fields(issue_id, now=NOW, fence=fence, attempt=2)
    with pytest.raises(FenceLost):
        database.issues.update_fields(issue_id, now=NOW + TTL, fence=fence, attempt=3)


@pytest.mark.postgres
def test_on_postgresql_a_replica_with_a_clock_30_s_ahead_cannot_take_a_live_lease(
    pg_url: str,
) -> None:
    migrate.upgrade(pg_url)
    db = Database.open(pg_url)
    try:
        honest = datetime.now(UTC)
        assert db.leases.acquire(LEASE, "a", ttl=timedelta(seconds=10), now=honest) == 1
        skewed = honest + timedelta(seconds=30)
        # By its own clock A's lease expired 20 s ago; by the database's it lives on.
        assert db.leases.acquire(LEASE, "b", ttl=timedelta(seconds=10), now=skewed) is None
        assert db.leases.holder(LEASE, now=skewed) == "a"
        # A replica whose clock is 30 s behind cannot keep a lease past its end either.
        late = honest - timedelta(seconds=30)
        assert db.leases.renew(LEASE, "a", ttl=timedelta(seconds=10), now=late)
        with db.session() as session:
            assert fence_holds(session, Fence.lease(LEASE, "a", 1), now=skewed)
    finally:
        db.close()
