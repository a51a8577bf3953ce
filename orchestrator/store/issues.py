"""Tracked issues and their phase transitions.

A transition is a compare-and-set: ``UPDATE ... WHERE phase = :expected``,
with the phase event inserted in the same transaction. Losing a race is an
ordinary outcome returned as a value.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from orchestrator.domain.phases import Phase, is_allowed
from orchestrator.logs import get_logger
from orchestrator.store.fencing import Fence, check_fence
from orchestrator.store.models import PhaseEvent, TrackedIssue

log = get_logger(__name__)


@dataclass(frozen=True)
class Applied:
    """The transition happened; ``version`` is the row's new version."""

    issue_id: int
    from_phase: Phase
    to_phase: Phase
    version: int


@dataclass(frozen=True)
class LostRace:
    """Someone else moved the issue first; ``actual`` is where it is now."""

    issue_id: int
    expected: Phase
    actual: Phase | None


@dataclass(frozen=True)
class Illegal:
    """The pair is not in the transition table; nothing was changed."""

    issue_id: int
    from_phase: Phase
    to_phase: Phase


TransitionResult = Applied | LostRace | Illegal

# Rows per query when rows are read by id (well under the databases' parameter limits).
ID_BATCH = 500

# Columns a caller may set together with a transition or through ``update_fields``.
MUTABLE_FIELDS = frozenset(
    {
        "title",
        "tracker_state",
        "labels",
        "workpad",
        "workpad_comment_id",
        "workpad_hash",
        "branch",
        "pr_number",
        "pr_head_sha",
        "rework_cycles",
        "waiting_reason",
        "waiting_since",
        "observation",
        "attempt",
        "retry_due_at",
        "record",
    }
)


class IssueStore:
    """Queries and guarded updates of tracked issues."""

    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self._sessions = sessions

    def ensure(
        self,
        repo: str,
        number: int,
        *,
        title: str,
        phase: Phase,
        now: datetime,
        actor: str = "runtime",
        reason: str = "tracked",
        **fields: Any,
    ) -> TrackedIssue:
        """Return the tracked issue, creating it in ``phase`` (with its first event) if new."""
        _check_fields(fields)
        with self._sessions.begin() as session:
            row = session.scalar(
                select(TrackedIssue).where(TrackedIssue.repo == repo, TrackedIssue.number == number)
            )
            if row is not None:
                return row
            row = TrackedIssue(
                repo=repo,
                number=number,
                title=title,
                phase=phase.value,
                phase_since=now,
                labels=fields.pop("labels", []),
                workpad=fields.pop("workpad", {}),
                observation=fields.pop("observation", {}),
                rework_cycles=fields.pop("rework_cycles", 0),
                attempt=fields.pop("attempt", 0),
                version=1,
                created_at=now,
                updated_at=now,
                **fields,
            )
            session.add(row)
            session.flush()
            session.add(
                PhaseEvent(
                    issue_id=row.id,
                    from_phase=None,
                    to_phase=phase.value,
                    reason=reason,
                    actor=actor,
                    at=now,
                )
            )
            return row

    def get(self, repo: str, number: int) -> TrackedIssue | None:
        with self._sessions() as session:
            return session.scalar(
                select(TrackedIssue).where(TrackedIssue.repo == repo, TrackedIssue.number == number)
            )

    def get_by_id(self, issue_id: int) -> TrackedIssue | None:
        with self._sessions() as session:
            return session.get(TrackedIssue, issue_id)

    def all(self, repo: str | None = None) -> list[TrackedIssue]:
        with self._sessions() as session:
            query = select(TrackedIssue).order_by(TrackedIssue.repo, TrackedIssue.number)
            if repo is not None:
                query = query.where(TrackedIssue.repo == repo)
            return list(session.scalars(query))

    def versions(self, repo: str) -> dict[int, tuple[int, int]]:
        """The issue number and version of every tracked issue of ``repo`` by row id.

        One narrow query, in number order: with it a reader tells which rows changed
        since it last read them (every write bumps the version) without reading them.
        """
        with self._sessions() as session:
            rows = session.execute(
                select(TrackedIssue.id, TrackedIssue.number, TrackedIssue.version)
                .where(TrackedIssue.repo == repo)
                .order_by(TrackedIssue.number)
            )
            return {issue_id: (number, version) for issue_id, number, version in rows}

    def by_ids(self, ids: Iterable[int]) -> Iterator[list[TrackedIssue]]:
        """The rows of ``ids`` that exist, read :data:`ID_BATCH` at a time, a list per batch."""
        wanted = list(ids)
        for start in range(0, len(wanted), ID_BATCH):
            batch = wanted[start : start + ID_BATCH]
            with self._sessions() as session:
                rows = list(session.scalars(select(TrackedIssue).where(TrackedIssue.id.in_(batch))))
            yield rows

    def events(self, issue_id: int) -> list[PhaseEvent]:
        with self._sessions() as session:
            return list(
                session.scalars(
                    select(PhaseEvent)
                    .where(PhaseEvent.issue_id == issue_id)
                    .order_by(PhaseEvent.at, PhaseEvent.id)
                )
            )

    def transition(
        self,
        issue_id: int,
        expected: Phase,
        new: Phase,
        *,
        reason: str,
        now: datetime,
        actor: str = "runtime",
        **fields: Any,
    ) -> TransitionResult:
        """Move the issue from ``expected`` to ``new`` if it is still in ``expected``.

        Extra ``fields`` (waiting reason, rework cycles, ...) are written in the
        same statement, so the phase and what goes with it never disagree.
        """
        _check_fields(fields)
        if not is_allowed(expected, new):
            log.error(
                "illegal_transition",
                issue_id=issue_id,
                from_phase=expected.value,
                to_phase=new.value,
                reason=reason,
            )
            return Illegal(issue_id, expected, new)
        with self._sessions.begin() as session:
            result = session.execute(
                update(TrackedIssue)
                .where(TrackedIssue.id == issue_id, TrackedIssue.phase == expected.value)
                .values(
                    phase=new.value,
                    phase_since=now,
                    updated_at=now,
                    version=TrackedIssue.version + 1,
                    **fields,
                )
                .returning(TrackedIssue.version)
            )
            version = result.scalar_one_or_none()
            if version is None:
                actual = session.scalar(
                    select(TrackedIssue.phase).where(TrackedIssue.id == issue_id)
                )
                return LostRace(issue_id, expected, Phase(actual) if actual else None)
            session.add(
                PhaseEvent(
                    issue_id=issue_id,
                    from_phase=expected.value,
                    to_phase=new.value,
                    reason=reason,
                    actor=actor,
                    at=now,
                )
            )
        log.info(
            "phase_transition",
            issue_id=issue_id,
            from_phase=expected.value,
            to_phase=new.value,
            reason=reason,
            actor=actor,
        )
        return Applied(issue_id, expected, new, version)

    def update_fields(
        self,
        issue_id: int,
        *,
        now: datetime,
        expected_version: int | None = None,
        fence: Fence | None = None,
        **fields: Any,
    ) -> bool:
        """Write non-phase fields; with ``expected_version``, only if nobody wrote in between.

        With ``fence``, only while the lease or claim it names is still held
        (:class:`FenceLost` otherwise).
        """
        _check_fields(fields)
        with self._sessions.begin() as session:
            check_fence(session, fence, now=now)
            query = update(TrackedIssue).where(TrackedIssue.id == issue_id)
            if expected_version is not None:
                query = query.where(TrackedIssue.version == expected_version)
            result = session.execute(
                query.values(updated_at=now, version=TrackedIssue.version + 1, **fields)
            )
            return bool(result.rowcount)  # type: ignore[attr-defined]


def _check_fields(fields: dict[str, Any]) -> None:
    unknown = set(fields) - MUTABLE_FIELDS
    if unknown:
        raise TypeError(f"not a writable issue field: {', '.join(sorted(unknown))}")
