"""The issues' flow records in the database, read and written as the domain's StoredRecord.

The tick thread and the worker threads both change records (a transition, an
effect's result, a finished turn's outcome). Every change is a read-modify-write
of one row under a per-issue lock, checked against the row's version, and
phase changes go through the store's compare-and-set transition, which writes
the phase event in the same transaction.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from orchestrator.domain.actions import Transition
from orchestrator.domain.phases import Phase
from orchestrator.domain.record_updates import apply_transition
from orchestrator.domain.snapshot import IssueRef, OperatorRequest, StoredRecord
from orchestrator.domain.workpad import WorkpadRecord
from orchestrator.logs import get_logger
from orchestrator.store.codec import (
    CodecError,
    decode_record,
    decode_workpad,
    encode_record,
    encode_workpad,
)
from orchestrator.store.database import Database
from orchestrator.store.fencing import Fence
from orchestrator.store.issues import Applied, Illegal, LostRace, TransitionResult
from orchestrator.store.models import TrackedIssue

log = get_logger(__name__)

# A version conflict means another writer got in between: read again and re-apply.
_WRITE_ATTEMPTS = 5


# Key of the recovery note kept beside the encoded record in the ``record`` column.
RECOVERY_KEY = "recovery"


@dataclass(frozen=True, slots=True)
class RecoveryNote:
    """The text of a workpad block that could not be trusted, kept until an operator checks it."""

    raw: str
    problem: str | None


@dataclass(frozen=True, slots=True)
class RecordRow:
    """One tracked issue as the runtime sees it: its row identity and its flow record."""

    issue_id: int
    ref: IssueRef
    title: str
    version: int
    record: StoredRecord
    workpad_comment_id: int | None = None
    recovery: RecoveryNote | None = None
    # The issue's tracker state and labels as last written (what the dashboard shows).
    tracker_state: str | None = None
    labels: tuple[str, ...] = ()


def record_columns(record: StoredRecord, recovery: RecoveryNote | None = None) -> dict[str, Any]:
    """The row's columns that mirror the record (the dashboard reads these directly)."""
    workpad = record.workpad
    encoded = encode_workpad(workpad)
    document = encode_record(record)
    if recovery is not None:
        document[RECOVERY_KEY] = {"raw": recovery.raw, "problem": recovery.problem}
    return {
        "record": document,
        "workpad": encoded,
        "observation": encoded.get("observation") or {},
        "branch": workpad.branch,
        "pr_number": workpad.pr.number if workpad.pr is not None else None,
        "pr_head_sha": workpad.pr.head_sha if workpad.pr is not None else None,
        "rework_cycles": record.rework_cycles,
        "waiting_reason": record.waiting_reason.value if record.waiting_reason else None,
        "waiting_since": workpad.waiting.since,
        "attempt": record.attempt,
        "retry_due_at": record.retry_due_at,
    }


def row_record(row: TrackedIssue) -> StoredRecord:
    """The flow record of a row; rows without a stored record are rebuilt from their columns."""
    phase = Phase(row.phase)
    record: StoredRecord | None = None
    if row.record:
        try:
            record = decode_record(row.record)
        except CodecError as error:
            log.error("record_unreadable", issue=f"{row.repo}#{row.number}", error=str(error))
    if record is None:
        workpad = WorkpadRecord(phase=phase)
        if row.workpad:
            try:
                workpad = decode_workpad(row.workpad)
            except CodecError:
                workpad = WorkpadRecord(phase=phase)
        record = StoredRecord(
            phase=phase,
            phase_since=row.phase_since,
            workpad=workpad,
            rework_cycles=row.rework_cycles,
            attempt=row.attempt,
            retry_due_at=row.retry_due_at,
        )
    if record.phase is not phase:
        # The phase column is authoritative (an operator tool may have moved it).
        record = replace(
            record,
            phase=phase,
            phase_since=row.phase_since,
            workpad=replace(record.workpad, phase=phase),
        )
    return record


def _recovery(row: TrackedIssue) -> RecoveryNote | None:
    note = (row.record or {}).get(RECOVERY_KEY)
    if not isinstance(note, dict) or not isinstance(note.get("raw"), str):
        return None
    problem = note.get("problem")
    return RecoveryNote(raw=note["raw"], problem=problem if isinstance(problem, str) else None)


def _written_identity(columns: dict[str, Any]) -> dict[str, Any]:
    """The fields of a RecordRow that ``columns`` just wrote (title, tracker state, labels)."""
    written: dict[str, Any] = {}
    if "title" in columns:
        written["title"] = columns["title"]
    if "tracker_state" in columns:
        written["tracker_state"] = columns["tracker_state"]
    if "labels" in columns:
        written["labels"] = tuple(columns["labels"] or ())
    return written


def _same(row: RecordRow, number: int, version: int) -> bool:
    # The number guards against SQLite giving a deleted row's id to a new one.
    return row.ref.number == number and row.version == version


class RecordStore:
    """Reads and guarded writes of flow records. Thread-safe.

    The rows last read are kept, by row id: every write bumps a row's version,
    whoever writes it (another thread, another replica, an operator tool), so a
    row whose issue number and version are unchanged is the same row, and is
    neither read again nor decoded again. Rows that disappeared from the
    database are dropped at the next :meth:`load` of their repository.
    """

    def __init__(self, db: Database) -> None:
        self.db = db
        self._locks: dict[int, threading.Lock] = {}
        self._guard = threading.Lock()
        self._rows: dict[int, RecordRow] = {}

    def _lock(self, issue_id: int) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(issue_id, threading.Lock())

    # ------------------------------------------------------------------ reads

    def _row(self, row: TrackedIssue) -> RecordRow:
        with self._guard:
            known = self._rows.get(row.id)
        if known is not None and _same(known, row.number, row.version):
            return known
        found = RecordRow(
            issue_id=row.id,
            ref=IssueRef(row.repo, row.number),
            title=row.title,
            version=row.version,
            record=row_record(row),
            workpad_comment_id=row.workpad_comment_id,
            recovery=_recovery(row),
            tracker_state=row.tracker_state,
            labels=tuple(row.labels or ()),
        )
        with self._guard:
            self._rows[row.id] = found
        return found

    def load(self, repo: str) -> dict[IssueRef, RecordRow]:
        """Every tracked issue of ``repo``, done ones included, in number order.

        One query reads the rows' versions; only the rows that changed since
        they were last read are read in full (a few hundred per query).
        """
        versions = self.db.issues.versions(repo)
        with self._guard:
            stale = [
                issue_id
                for issue_id, (number, version) in versions.items()
                if (known := self._rows.get(issue_id)) is None or not _same(known, number, version)
            ]
            self._forget_gone(repo, versions)
        read: set[int] = set()
        for batch in self.db.issues.by_ids(stale):
            for row in batch:
                read.add(self._row(row).issue_id)
        with self._guard:
            for issue_id in set(stale) - read:  # deleted in between
                self._forget(issue_id)
            found = [self._rows.get(issue_id) for issue_id in versions]
        return {row.ref: row for row in found if row is not None and row.ref.repo == repo}

    def _forget_gone(self, repo: str, versions: dict[int, tuple[int, int]]) -> None:
        """Drop what is kept for the rows of ``repo`` that are no longer in the database."""
        gone = [
            issue_id
            for issue_id, row in self._rows.items()
            if row.ref.repo == repo and issue_id not in versions
        ]
        for issue_id in gone:
            self._forget(issue_id)

    def _forget(self, issue_id: int) -> None:
        """Drop a row's copy, and its lock unless a write holds it (under the guard)."""
        self._rows.pop(issue_id, None)
        lock = self._locks.get(issue_id)
        if lock is not None and not lock.locked():
            del self._locks[issue_id]

    def get(self, ref: IssueRef) -> RecordRow | None:
        row = self.db.issues.get(ref.repo, ref.number)
        return self._row(row) if row is not None else None

    def get_by_id(self, issue_id: int) -> RecordRow | None:
        row = self.db.issues.get_by_id(issue_id)
        return self._row(row) if row is not None else None

    # ----------------------------------------------------------------- writes

    def create(
        self,
        ref: IssueRef,
        *,
        title: str,
        record: StoredRecord,
        now: datetime,
        reason: str,
        labels: list[str] | None = None,
        recovery: RecoveryNote | None = None,
    ) -> RecordRow:
        """Start tracking ``ref`` with ``record`` (an existing row is returned unchanged)."""
        row = self.db.issues.ensure(
            ref.repo,
            ref.number,
            title=title,
            phase=record.phase,
            now=now,
            reason=reason,
            labels=labels or [],
            **record_columns(record, recovery),
        )
        return self._row(row)

    def update(
        self,
        issue_id: int,
        change: Callable[[StoredRecord], StoredRecord],
        *,
        now: datetime,
        fence: Fence | None = None,
        **columns: Any,
    ) -> RecordRow | None:
        """Apply ``change`` to the stored record and write it (None if the row is gone).

        With ``fence``, the write happens only while the lease or claim it names
        is still held; :class:`~orchestrator.store.fencing.FenceLost` otherwise.
        """
        with self._lock(issue_id):
            for _ in range(_WRITE_ATTEMPTS):
                row = self.get_by_id(issue_id)
                if row is None:
                    return None
                updated = change(row.record)
                if updated == row.record and not columns:
                    return row
                values = {**record_columns(updated, row.recovery), **columns}
                if self.db.issues.update_fields(
                    issue_id, now=now, expected_version=row.version, fence=fence, **values
                ):
                    return replace(
                        row,
                        record=updated,
                        version=row.version + 1,
                        **_written_identity(columns),
                    )
            raise RuntimeError(f"issue {issue_id}: the record kept changing under the update")

    def transition(
        self, issue_id: int, transition: Transition, *, now: datetime
    ) -> tuple[TransitionResult, RecordRow | None]:
        """Apply a phase change with compare-and-set; the record follows in the same write."""
        with self._lock(issue_id):
            row = self.get_by_id(issue_id)
            if row is None:
                return LostRace(issue_id, transition.from_phase, None), None
            if row.record.phase is not transition.from_phase:
                return LostRace(issue_id, transition.from_phase, row.record.phase), row
            updated = apply_transition(row.record, transition, now)
            # Leaving blocked means an operator settled what the recovery note was about.
            recovery = None if transition.from_phase is Phase.BLOCKED else row.recovery
            result = self.db.issues.transition(
                issue_id,
                transition.from_phase,
                transition.to_phase,
                reason=transition.reason,
                now=now,
                **record_columns(updated, recovery),
            )
            if isinstance(result, Applied):
                return result, replace(
                    row, record=updated, version=result.version, recovery=recovery
                )
            if isinstance(result, Illegal):
                return result, row
            return result, self.get_by_id(issue_id)

    def request_operator_resume(
        self, ref: IssueRef, *, to_phase: Phase | None, now: datetime
    ) -> bool:
        """Ask a blocked issue to resume (to ``to_phase``, or where it was); False if unknown."""
        row = self.get(ref)
        if row is None:
            return False
        request = OperatorRequest(requested_at=now, to_phase=to_phase)
        self.update(row.issue_id, lambda r: replace(r, operator_request=request), now=now)
        return True
