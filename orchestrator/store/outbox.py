"""The side-effect outbox and audit trail.

Every write to GitHub is recorded here under its idempotency key before it is
attempted and marked with its result after, so a crash or a lost response is
followed by a find-before-create check instead of a blind repeat. Refusals
(by rollout mode or kill switch) are recorded too, so an operator sees what
would have happened.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from orchestrator.store.fencing import Fence, check_fence
from orchestrator.store.models import SideEffect, SideEffectStatus

REFUSALS = frozenset({SideEffectStatus.REFUSED_BY_MODE, SideEffectStatus.REFUSED_BY_KILL_SWITCH})


@dataclass(frozen=True)
class Intent:
    """The outcome of recording an intent.

    ``previous`` is the status the key had before (None when new): ``done``
    means the effect already happened and must not be repeated; ``intended``
    means an earlier attempt may or may not have reached GitHub.
    """

    key: str
    previous: SideEffectStatus | None
    attempts: int
    result: dict[str, Any] | None

    @property
    def already_done(self) -> bool:
        return self.previous is SideEffectStatus.DONE

    @property
    def maybe_applied(self) -> bool:
        return self.previous is SideEffectStatus.INTENDED


class Outbox:
    """Guarded writes of side-effect rows."""

    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self._sessions = sessions

    def intend(
        self,
        key: str,
        *,
        kind: str,
        payload: dict[str, Any],
        issue_id: int | None,
        rollout_mode: str,
        now: datetime,
        fence: Fence | None = None,
    ) -> Intent:
        """Record that ``key`` is about to be attempted (unless it is already done).

        With ``fence``, the lease or claim it names must still be held, in the
        same transaction; otherwise :class:`FenceLost` is raised and nothing is
        recorded.
        """
        for _ in range(2):
            try:
                with self._sessions.begin() as session:
                    check_fence(session, fence, now=now)
                    row = session.scalar(
                        select(SideEffect).where(SideEffect.idempotency_key == key)
                    )
                    if row is None:
                        session.add(
                            SideEffect(
                                issue_id=issue_id,
                                kind=kind,
                                idempotency_key=key,
                                payload=payload,
                                status=SideEffectStatus.INTENDED.value,
                                rollout_mode=rollout_mode,
                                attempts=1,
                                created_at=now,
                                updated_at=now,
                            )
                        )
                        return Intent(key, None, 1, None)
                    previous = SideEffectStatus(row.status)
                    if previous is SideEffectStatus.DONE:
                        return Intent(key, previous, row.attempts, row.result)
                    row.status = SideEffectStatus.INTENDED.value
                    row.payload = payload
                    row.rollout_mode = rollout_mode
                    row.attempts += 1
                    row.updated_at = now
                    return Intent(key, previous, row.attempts, row.result)
            except IntegrityError:
                # Another writer inserted the same key between our select and insert.
                continue
        raise RuntimeError(f"could not record side effect {key!r}")

    def complete(self, key: str, *, result: dict[str, Any], now: datetime) -> None:
        self._finish(key, SideEffectStatus.DONE, result, now)

    def fail(self, key: str, *, error: dict[str, Any], now: datetime) -> None:
        self._finish(key, SideEffectStatus.FAILED, error, now)

    def refuse(
        self,
        key: str,
        *,
        status: SideEffectStatus,
        kind: str,
        payload: dict[str, Any],
        issue_id: int | None,
        rollout_mode: str,
        reason: str,
        now: datetime,
    ) -> None:
        """Record that the gate refused ``key``; a done row is never downgraded."""
        if status not in REFUSALS:
            raise ValueError(f"{status} is not a refusal")
        result = {"reason": reason}
        try:
            with self._sessions.begin() as session:
                row = session.scalar(select(SideEffect).where(SideEffect.idempotency_key == key))
                if row is None:
                    session.add(
                        SideEffect(
                            issue_id=issue_id,
                            kind=kind,
                            idempotency_key=key,
                            payload=payload,
                            status=status.value,
                            result=result,
                            rollout_mode=rollout_mode,
                            attempts=0,
                            created_at=now,
                            updated_at=now,
                        )
                    )
                elif row.status != SideEffectStatus.DONE.value:
                    row.status = status.value
                    row.result = result
                    row.rollout_mode = rollout_mode
                    row.updated_at = now
        except IntegrityError:
            # A concurrent writer recorded the key first; its row stands.
            return

    def get(self, key: str) -> SideEffect | None:
        with self._sessions() as session:
            return session.scalar(select(SideEffect).where(SideEffect.idempotency_key == key))

    def unfinished(self) -> list[SideEffect]:
        """Intents recorded without a result: to be re-checked after a restart."""
        with self._sessions() as session:
            return list(
                session.scalars(
                    select(SideEffect)
                    .where(SideEffect.status == SideEffectStatus.INTENDED.value)
                    .order_by(SideEffect.id)
                )
            )

    def for_issue(self, issue_id: int, limit: int = 200) -> list[SideEffect]:
        with self._sessions() as session:
            return list(
                session.scalars(
                    select(SideEffect)
                    .where(SideEffect.issue_id == issue_id)
                    .order_by(SideEffect.id.desc())
                    .limit(limit)
                )
            )

    def _finish(
        self, key: str, status: SideEffectStatus, result: dict[str, Any], now: datetime
    ) -> None:
        with self._sessions.begin() as session:
            row = session.scalar(select(SideEffect).where(SideEffect.idempotency_key == key))
            if row is None:
                raise KeyError(f"no side effect recorded under {key!r}")
            row.status = status.value
            row.result = result
            row.updated_at = now
