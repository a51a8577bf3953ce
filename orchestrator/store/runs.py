"""Agent runs: one row per turn, from start to outcome.

Times are written on the database's clock on PostgreSQL (see
:func:`~orchestrator.store.fencing.database_now`), so the runs of every
replica share one timeline: a run interrupted by another replica never ends
before it started, whatever the two replicas' clocks say.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session, sessionmaker

from orchestrator.store.fencing import database_now
from orchestrator.store.models import AgentRun

INTERRUPTED = "interrupted"


class RunStore:
    """Recording agent turns and finding the ones a crash left open."""

    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self._sessions = sessions

    def start(
        self,
        run_id: str,
        *,
        issue_id: int,
        phase: str,
        attempt: int,
        now: datetime,
        replica_id: str | None = None,
        prompt: str | None = None,
    ) -> None:
        with self._sessions.begin() as session:
            now = database_now(session, now)
            session.add(
                AgentRun(
                    run_id=run_id,
                    issue_id=issue_id,
                    phase=phase,
                    attempt=attempt,
                    replica_id=replica_id,
                    started_at=now,
                    prompt=prompt,
                )
            )

    def first_event(self, run_id: str, *, at: datetime) -> None:
        with self._sessions.begin() as session:
            at = database_now(session, at)
            session.execute(
                update(AgentRun)
                .where(AgentRun.run_id == run_id, AgentRun.first_event_at.is_(None))
                .values(first_event_at=at)
            )

    def finish(
        self,
        run_id: str,
        *,
        outcome: str,
        now: datetime,
        error: str | None = None,
        input_tokens: int | None = None,
        cached_input_tokens: int | None = None,
        output_tokens: int | None = None,
        total_tokens: int | None = None,
        session_id: str | None = None,
        cost_usd: float | None = None,
    ) -> bool:
        """Close the run; False if it was already closed (for example marked interrupted)."""
        with self._sessions.begin() as session:
            now = database_now(session, now)
            result = session.execute(
                update(AgentRun)
                .where(AgentRun.run_id == run_id, AgentRun.ended_at.is_(None))
                .values(
                    ended_at=now,
                    outcome=outcome,
                    error=error,
                    input_tokens=input_tokens,
                    cached_input_tokens=cached_input_tokens,
                    output_tokens=output_tokens,
                    total_tokens=total_tokens,
                    session_id=session_id,
                    cost_usd=cost_usd,
                )
            )
            return bool(result.rowcount)  # type: ignore[attr-defined]

    def interrupt_unfinished(self, *, now: datetime, replica_id: str | None = None) -> int:
        """Mark runs a crash left open as interrupted; returns how many."""
        with self._sessions.begin() as session:
            now = database_now(session, now)
            query = update(AgentRun).where(AgentRun.ended_at.is_(None))
            if replica_id is not None:
                query = query.where(AgentRun.replica_id == replica_id)
            result = session.execute(
                query.values(
                    ended_at=now, outcome=INTERRUPTED, error="daemon stopped during the turn"
                )
            )
            return int(result.rowcount)  # type: ignore[attr-defined]

    def interrupt(self, run_id: str, *, now: datetime, error: str) -> bool:
        """Close one run left open by a replica that stopped renewing its claim."""
        with self._sessions.begin() as session:
            now = database_now(session, now)
            result = session.execute(
                update(AgentRun)
                .where(AgentRun.run_id == run_id, AgentRun.ended_at.is_(None))
                .values(ended_at=now, outcome=INTERRUPTED, error=error)
            )
            return bool(result.rowcount)  # type: ignore[attr-defined]

    def last_session(self, issue_id: int, phase: str) -> str | None:
        """The session id the issue's latest finished turn in ``phase`` reported, if any."""
        with self._sessions() as session:
            return session.scalar(
                select(AgentRun.session_id)
                .where(
                    AgentRun.issue_id == issue_id,
                    AgentRun.phase == phase,
                    AgentRun.ended_at.is_not(None),
                )
                .order_by(AgentRun.id.desc())
                .limit(1)
            )

    def session_usage(self, issue_id: int, session_id: str) -> tuple[int, int, int]:
        """Input, cached input and output tokens the issue's finished runs of one agent
        session recorded: what a resumed turn's running total already counted."""
        with self._sessions() as session:
            row = session.execute(
                select(
                    func.coalesce(func.sum(AgentRun.input_tokens), 0),
                    func.coalesce(func.sum(AgentRun.cached_input_tokens), 0),
                    func.coalesce(func.sum(AgentRun.output_tokens), 0),
                ).where(
                    AgentRun.issue_id == issue_id,
                    AgentRun.session_id == session_id,
                    AgentRun.ended_at.is_not(None),
                )
            ).one()
        return int(row[0] or 0), int(row[1] or 0), int(row[2] or 0)

    def running(self) -> list[AgentRun]:
        with self._sessions() as session:
            return list(
                session.scalars(
                    select(AgentRun).where(AgentRun.ended_at.is_(None)).order_by(AgentRun.id)
                )
            )

    def for_issue(self, issue_id: int, limit: int = 100) -> list[AgentRun]:
        with self._sessions() as session:
            return list(
                session.scalars(
                    select(AgentRun)
                    .where(AgentRun.issue_id == issue_id)
                    .order_by(AgentRun.id.desc())
                    .limit(limit)
                )
            )
