"""RecordStore.load reads only what changed, and still answers exactly what a full read does."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from sqlalchemy import delete, update

from orchestrator.domain.actions import Transition
from orchestrator.domain.phases import ALLOWED, Phase
from orchestrator.domain.snapshot import IssueRef, OperatorRequest, StoredRecord
from orchestrator.store.database import Database
from orchestrator.store.issues import ID_BATCH
from orchestrator.store.models import TrackedIssue
from orchestrator.store.records import RecordRow, RecordStore, RecoveryNote
from tests.support.store_clock import CALLER_CLOCK

REPO = "acme/app"
OTHER_REPO = "acme/other"
NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def fresh_read(db: Database, repo: str = REPO) -> dict[IssueRef, RecordRow]:
    """What a store that never read anything before answers."""
    return RecordStore(db).load(repo)


def create(store: RecordStore, number: int, repo: str = REPO, recovery: bool = False) -> RecordRow:
    note = RecoveryNote(raw="<!-- workpad -->", problem="unreadable") if recovery else None
    return store.create(
        IssueRef(repo, number),
        title=f"Issue {number}",
        record=StoredRecord(phase=Phase.IMPLEMENTING, phase_since=NOW),
        now=NOW,
        reason="test",
        recovery=note,
    )


class Interleaving:
    """Random writes by two stores (two replicas) and by hand, checked after every step."""

    def __init__(self, db: Database, seed: int) -> None:
        self.db = db
        self.rng = random.Random(seed)
        self.stores = (RecordStore(db), RecordStore(db))
        self.numbers = 0
        self.now = NOW

    def step(self) -> None:
        self.now += timedelta(seconds=1)
        store = self.rng.choice(self.stores)
        rows = list(store.load(REPO).values())
        choice = self.rng.random()
        if not rows or choice < 0.15:
            self.numbers += 1
            create(store, self.numbers, recovery=self.rng.random() < 0.3)
            return
        row = self.rng.choice(rows)
        if choice < 0.45:
            store.update(
                row.issue_id,
                lambda r: replace(r, attempt=r.attempt + 1, rework_cycles=self.rng.randrange(4)),
                now=self.now,
            )
        elif choice < 0.65:
            targets = sorted(ALLOWED[row.record.phase], key=lambda p: p.value)
            if targets:
                to_phase = self.rng.choice(targets)
                transition = Transition(row.ref, row.record.phase, to_phase, "test")
                store.transition(row.issue_id, transition, now=self.now)
        elif choice < 0.75:
            request = OperatorRequest(requested_at=self.now)
            store.update(row.issue_id, lambda r: replace(r, operator_request=request), now=self.now)
        elif choice < 0.85:
            # Columns beside the record: the title, the workpad comment.
            self.db.issues.update_fields(
                row.issue_id,
                now=self.now,
                title=f"Renamed {self.now.second}",
                workpad_comment_id=self.rng.randrange(1, 10**9),
            )
        elif choice < 0.92:
            # An operator tool moving the phase column by hand (the version moves with it).
            with self.db.session() as session:
                session.execute(
                    update(TrackedIssue)
                    .where(TrackedIssue.id == row.issue_id)
                    .values(phase=Phase.BLOCKED.value, version=TrackedIssue.version + 1)
                )
        else:
            with self.db.session() as session:
                session.execute(delete(TrackedIssue).where(TrackedIssue.id == row.issue_id))

    def check(self) -> None:
        expected = fresh_read(self.db)
        for store in self.stores:
            loaded = store.load(REPO)
            assert loaded == expected
            assert list(loaded) == list(expected)


def test_load_equals_a_fresh_read_after_random_writes_from_two_stores(
    database: Database,
) -> None:
    for seed in range(3):
        interleaving = Interleaving(database, seed)
        for _ in range(60):
            interleaving.step()
            if interleaving.rng.random() < 0.5:
                interleaving.check()
        interleaving.check()
        with database.session() as session:
            session.execute(delete(TrackedIssue))


def test_a_write_through_another_connection_is_seen(database: Database) -> None:
    """Another process (its own engine) writes: the version moves, the reader reads again."""
    store = RecordStore(database)
    row = create(store, 1)
    assert store.load(REPO)[row.ref].title == "Issue 1"
    other = Database.open(database.url, clock=CALLER_CLOCK)
    try:
        other_store = RecordStore(other)
        other_store.update(row.issue_id, lambda r: replace(r, attempt=3), now=NOW)
        other.issues.update_fields(row.issue_id, now=NOW, title="Renamed", workpad_comment_id=9)
    finally:
        other.close()
    seen = store.load(REPO)[row.ref]
    assert (seen.title, seen.record.attempt, seen.workpad_comment_id) == ("Renamed", 3, 9)
    assert seen.version == row.version + 2
    assert store.get(row.ref) == seen == store.get_by_id(row.issue_id)


def test_rows_that_disappear_are_forgotten_with_their_locks(database: Database) -> None:
    store = RecordStore(database)
    kept, gone = create(store, 1), create(store, 2)
    elsewhere = create(store, 1, repo=OTHER_REPO)
    for row in (kept, gone):
        store.update(row.issue_id, lambda r: replace(r, attempt=1), now=NOW)
    assert len(store.load(REPO)) == 2 and len(store.load(OTHER_REPO)) == 1
    with database.session() as session:
        session.execute(delete(TrackedIssue).where(TrackedIssue.id == gone.issue_id))
    assert list(store.load(REPO)) == [kept.ref]
    held = store._rows  # what the store keeps between loads
    assert set(held) == {kept.issue_id, elsewhere.issue_id}
    assert gone.issue_id not in store._locks
    assert kept.issue_id in store._locks


def test_a_first_load_reads_more_rows_than_one_query_takes(database: Database) -> None:
    count = ID_BATCH + 3
    record = StoredRecord(phase=Phase.WAITING_FOR_CHECKS, phase_since=NOW)
    for number in range(1, count + 1):
        database.issues.ensure(REPO, number, title=f"Issue {number}", phase=record.phase, now=NOW)
    loaded = RecordStore(database).load(REPO)
    assert [ref.number for ref in loaded] == list(range(1, count + 1))
    assert all(row.record.phase is Phase.WAITING_FOR_CHECKS for row in loaded.values())
