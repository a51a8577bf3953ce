"""Tracked issues: creation, compare-and-set transitions, races."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest

from orchestrator.domain.phases import Phase, WaitingReason
from orchestrator.store import migrate
from orchestrator.store.database import Database
from orchestrator.store.issues import Applied, Illegal, LostRace

NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def _issue(db: Database, number: int = 1) -> int:
    return db.issues.ensure(
        "acme/app", number, title="Fix it", phase=Phase.IMPLEMENTING, now=NOW
    ).id


def test_ensure_creates_once_with_a_first_event(database: Database) -> None:
    first = database.issues.ensure(
        "acme/app", 7, title="Add x", phase=Phase.IMPLEMENTING, now=NOW, labels=["agent"]
    )
    again = database.issues.ensure("acme/app", 7, title="Other", phase=Phase.BLOCKED, now=NOW)
    assert first.id == again.id
    stored = database.issues.get("acme/app", 7)
    assert stored is not None
    assert stored.phase == "implementing"
    assert stored.labels == ["agent"]
    assert stored.phase_since == NOW
    events = database.issues.events(first.id)
    assert [(e.from_phase, e.to_phase) for e in events] == [(None, "implementing")]


def test_transition_applies_with_fields_and_event(database: Database) -> None:
    issue_id = _issue(database)
    later = NOW + timedelta(minutes=5)
    result = database.issues.transition(
        issue_id,
        Phase.IMPLEMENTING,
        Phase.BLOCKED,
        reason="agent asked a question",
        now=later,
        actor="agent",
        waiting_reason=WaitingReason.MISSING_CONTEXT.value,
        waiting_since=later,
    )
    assert result == Applied(issue_id, Phase.IMPLEMENTING, Phase.BLOCKED, 2)
    row = database.issues.get_by_id(issue_id)
    assert row is not None
    assert (row.phase, row.waiting_reason, row.phase_since, row.version) == (
        "blocked",
        "missing_context",
        later,
        2,
    )
    last = database.issues.events(issue_id)[-1]
    assert (last.from_phase, last.to_phase, last.reason, last.actor, last.at) == (
        "implementing",
        "blocked",
        "agent asked a question",
        "agent",
        later,
    )


def test_transition_from_a_stale_phase_is_a_lost_race(database: Database) -> None:
    issue_id = _issue(database)
    database.issues.transition(issue_id, Phase.IMPLEMENTING, Phase.REVIEWING, reason="r", now=NOW)
    result = database.issues.transition(
        issue_id, Phase.IMPLEMENTING, Phase.WAITING_FOR_CHECKS, reason="late", now=NOW
    )
    assert result == LostRace(issue_id, Phase.IMPLEMENTING, Phase.REVIEWING)
    assert len(database.issues.events(issue_id)) == 2


def test_illegal_pair_changes_nothing(database: Database) -> None:
    issue_id = _issue(database)
    result = database.issues.transition(
        issue_id, Phase.IMPLEMENTING, Phase.DONE, reason="shortcut", now=NOW
    )
    assert isinstance(result, Illegal)
    row = database.issues.get_by_id(issue_id)
    assert row is not None and row.phase == "implementing" and row.version == 1
    assert len(database.issues.events(issue_id)) == 1


def test_unknown_field_is_refused(database: Database) -> None:
    issue_id = _issue(database)
    with pytest.raises(TypeError, match="phase"):
        database.issues.update_fields(issue_id, now=NOW, phase="done")


def test_update_fields_with_expected_version(database: Database) -> None:
    issue_id = _issue(database)
    assert database.issues.update_fields(issue_id, now=NOW, expected_version=1, pr_number=4)
    assert not database.issues.update_fields(issue_id, now=NOW, expected_version=1, pr_number=5)
    row = database.issues.get_by_id(issue_id)
    assert row is not None and row.pr_number == 4 and row.version == 2


def test_two_threads_race_for_one_transition(db_url: str) -> None:
    """Each thread has its own connection; exactly one wins, one event is written."""
    migrate.upgrade(db_url)
    databases = [Database.open(db_url), Database.open(db_url)]
    try:
        issue_id = _issue(databases[0])
        barrier = threading.Barrier(len(databases) * 4)
        results: list[object] = []
        lock = threading.Lock()

        def attempt(db: Database) -> None:
            barrier.wait()
            outcome = db.issues.transition(
                issue_id, Phase.IMPLEMENTING, Phase.REVIEWING, reason="race", now=NOW
            )
            with lock:
                results.append(outcome)

        threads = [
            threading.Thread(target=attempt, args=(db,)) for db in databases for _ in range(4)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert sum(isinstance(r, Applied) for r in results) == 1
        assert sum(isinstance(r, LostRace) for r in results) == len(threads) - 1
        events = databases[0].issues.events(issue_id)
        assert [(e.from_phase, e.to_phase) for e in events].count(
            ("implementing", "reviewing")
        ) == 1
    finally:
        for db in databases:
            db.close()
