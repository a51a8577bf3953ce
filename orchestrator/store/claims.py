"""Turn claims: agent turns the polling leader planned, claimed by any replica with a lease.

A claim is a compare-and-set on the row (unclaimed, or its lease expired), so it
works the same on SQLite and PostgreSQL; the owner renews the lease while the
turn runs. A replica that dies stops renewing, and once the lease expired
another replica claims the same row again, with a new run and the next epoch.
Expiry is judged on the database's clock; the epoch fences the holder's
pushes and records (:mod:`orchestrator.store.fencing`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, or_, select, update
from sqlalchemy.orm import Session, sessionmaker

from orchestrator.store.fencing import database_now
from orchestrator.store.models import TurnClaim


@dataclass(frozen=True)
class Claimed:
    """A claim this replica now holds, and the run a previous holder left open."""

    claim_id: int
    issue_id: int
    repo: str
    number: int
    payload: dict[str, Any]
    run_id: str
    previous_run_id: str | None
    epoch: int = 1
    # When the leader queued the turn: an outcome recorded after it is this claim's.
    queued_at: datetime | None = None


class ClaimStore:
    """Queue, claim, renew, cancel and finish turn claims."""

    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self._sessions = sessions

    def enqueue(
        self,
        *,
        issue_id: int,
        repo: str,
        number: int,
        phase: str,
        attempt: int,
        payload: dict[str, Any],
        now: datetime,
    ) -> int | None:
        """Queue a turn; None when the issue already has an open claim."""
        with self._sessions.begin() as session:
            open_claim = session.scalar(
                select(TurnClaim.id).where(
                    TurnClaim.issue_id == issue_id, TurnClaim.finished_at.is_(None)
                )
            )
            if open_claim is not None:
                return None
            claim = TurnClaim(
                issue_id=issue_id,
                repo=repo,
                number=number,
                phase=phase,
                attempt=attempt,
                payload=payload,
                queued_at=now,
            )
            session.add(claim)
            session.flush()
            return int(claim.id)

    def open(self, repo: str) -> list[TurnClaim]:
        """The repository's claims not finished yet (queued or running anywhere)."""
        with self._sessions() as session:
            return list(
                session.scalars(
                    select(TurnClaim)
                    .where(TurnClaim.repo == repo, TurnClaim.finished_at.is_(None))
                    .order_by(TurnClaim.id)
                )
            )

    def claimable(self, *, now: datetime, limit: int) -> list[int]:
        """Claims nobody holds: never claimed, or whose holder's lease expired."""
        if limit <= 0:
            return []
        with self._sessions() as session:
            now = database_now(session, now)
            return list(
                session.scalars(
                    select(TurnClaim.id)
                    .where(
                        TurnClaim.finished_at.is_(None),
                        TurnClaim.cancel_reason.is_(None),
                        or_(TurnClaim.owner.is_(None), TurnClaim.lease_expires_at <= now),
                    )
                    .order_by(TurnClaim.id)
                    .limit(limit)
                )
            )

    def claim(
        self, claim_id: int, owner: str, *, run_id: str, ttl: timedelta, now: datetime
    ) -> Claimed | None:
        """Take the claim if nobody holds it (compare-and-set); None when another replica won."""
        with self._sessions.begin() as session:
            now = database_now(session, now)
            row = session.get(TurnClaim, claim_id)
            if row is None or row.finished_at is not None or row.cancel_reason is not None:
                return None
            previous_owner, previous_run, epoch = row.owner, row.run_id, row.epoch + 1
            result = session.execute(
                update(TurnClaim)
                .where(
                    TurnClaim.id == claim_id,
                    TurnClaim.finished_at.is_(None),
                    or_(TurnClaim.owner.is_(None), TurnClaim.lease_expires_at <= now),
                    # The row must still be what was read: no one claimed it in between.
                    TurnClaim.owner.is_(None)
                    if previous_owner is None
                    else TurnClaim.owner == previous_owner,
                    TurnClaim.run_id.is_(None)
                    if previous_run is None
                    else TurnClaim.run_id == previous_run,
                )
                .values(
                    owner=owner,
                    run_id=run_id,
                    lease_expires_at=now + ttl,
                    claimed_at=now,
                    epoch=TurnClaim.epoch + 1,
                )
                .execution_options(synchronize_session=False)
            )
            if not result.rowcount:  # type: ignore[attr-defined]
                return None
            return Claimed(
                claim_id=claim_id,
                issue_id=row.issue_id,
                repo=row.repo,
                number=row.number,
                payload=dict(row.payload),
                run_id=run_id,
                previous_run_id=previous_run,
                epoch=epoch,
                queued_at=row.queued_at,
            )

    def renew(self, owner: str, *, ttl: timedelta, now: datetime) -> set[int]:
        """Extend every unexpired open claim ``owner`` holds; returns the ids still held.

        A claim whose lease expired is not renewed, even when nobody took it
        yet: its holder must treat it as lost (another replica may claim it at
        any moment, with the next epoch).
        """
        with self._sessions.begin() as session:
            now = database_now(session, now)
            held = set(
                session.scalars(
                    select(TurnClaim.id).where(
                        TurnClaim.owner == owner,
                        TurnClaim.finished_at.is_(None),
                        TurnClaim.lease_expires_at > now,
                    )
                )
            )
            if held:
                session.execute(
                    update(TurnClaim)
                    .where(TurnClaim.id.in_(held), TurnClaim.owner == owner)
                    .values(lease_expires_at=now + ttl)
                    .execution_options(synchronize_session=False)
                )
            return {int(claim_id) for claim_id in held}

    def finish(self, claim_id: int, owner: str, *, now: datetime, epoch: int | None = None) -> bool:
        """Close a claim this replica holds (at ``epoch``); False when it lost it meanwhile."""
        with self._sessions.begin() as session:
            now = database_now(session, now)
            conditions = [
                TurnClaim.id == claim_id,
                TurnClaim.owner == owner,
                TurnClaim.finished_at.is_(None),
            ]
            if epoch is not None:
                conditions.append(TurnClaim.epoch == epoch)
            result = session.execute(
                update(TurnClaim).where(*conditions).values(finished_at=now, lease_expires_at=None)
            )
            return bool(result.rowcount)  # type: ignore[attr-defined]

    def request_cancel(self, repo: str, number: int, reason: str, *, now: datetime) -> int:
        """Ask the holder of the issue's open claim to stop; a claim nobody holds just ends."""
        with self._sessions.begin() as session:
            session.execute(
                update(TurnClaim)
                .where(
                    TurnClaim.repo == repo,
                    TurnClaim.number == number,
                    TurnClaim.finished_at.is_(None),
                    TurnClaim.owner.is_(None),
                )
                .values(finished_at=now, cancel_reason=reason)
            )
            result = session.execute(
                update(TurnClaim)
                .where(
                    TurnClaim.repo == repo,
                    TurnClaim.number == number,
                    TurnClaim.finished_at.is_(None),
                    TurnClaim.cancel_reason.is_(None),
                )
                .values(cancel_reason=reason)
            )
            return int(result.rowcount)  # type: ignore[attr-defined]

    def cancelled(self, owner: str) -> list[tuple[str, int, str]]:
        """The open claims ``owner`` holds that someone asked to stop: (repo, number, reason)."""
        with self._sessions() as session:
            rows = session.execute(
                select(TurnClaim.repo, TurnClaim.number, TurnClaim.cancel_reason).where(
                    TurnClaim.owner == owner,
                    TurnClaim.finished_at.is_(None),
                    TurnClaim.cancel_reason.is_not(None),
                )
            )
            return [(str(repo), int(number), str(reason)) for repo, number, reason in rows]

    def finished_count(self, repo: str) -> int:
        """How many of the repository's claims ended (the leader ticks when this grows)."""
        with self._sessions() as session:
            return int(
                session.scalar(
                    select(func.count())
                    .select_from(TurnClaim)
                    .where(TurnClaim.repo == repo, TurnClaim.finished_at.is_not(None))
                )
                or 0
            )

    def release(self, owner: str | None) -> int:
        """Give back the open claims ``owner`` (None: anyone) holds, so others may take them."""
        query = update(TurnClaim).where(
            TurnClaim.finished_at.is_(None), TurnClaim.owner.is_not(None)
        )
        if owner is not None:
            query = query.where(TurnClaim.owner == owner)
        with self._sessions.begin() as session:
            result = session.execute(query.values(lease_expires_at=None, owner=None))
            return int(result.rowcount)  # type: ignore[attr-defined]

    def release_ids(self, owner: str, claim_ids: set[int]) -> int:
        """Give back these open claims of ``owner`` (no local turn backs them any more)."""
        if not claim_ids:
            return 0
        with self._sessions.begin() as session:
            result = session.execute(
                update(TurnClaim)
                .where(
                    TurnClaim.id.in_(claim_ids),
                    TurnClaim.owner == owner,
                    TurnClaim.finished_at.is_(None),
                )
                .values(lease_expires_at=None, owner=None)
                .execution_options(synchronize_session=False)
            )
            return int(result.rowcount)  # type: ignore[attr-defined]

    def release_one(self, claim_id: int, owner: str) -> bool:
        """Give back one claim this replica could not start."""
        with self._sessions.begin() as session:
            result = session.execute(
                update(TurnClaim)
                .where(
                    TurnClaim.id == claim_id,
                    TurnClaim.owner == owner,
                    TurnClaim.finished_at.is_(None),
                )
                .values(lease_expires_at=None, owner=None)
            )
            return bool(result.rowcount)  # type: ignore[attr-defined]

    def open_by_owner(self, repo: str | None = None) -> dict[str | None, int]:
        """How many open claims each replica holds (None: queued, held by nobody).

        A replica that died keeps its claims here until another one takes them
        over, so the operator sees what it left behind.
        """
        query = (
            select(TurnClaim.owner, func.count())
            .where(TurnClaim.finished_at.is_(None))
            .group_by(TurnClaim.owner)
        )
        if repo is not None:
            query = query.where(TurnClaim.repo == repo)
        with self._sessions() as session:
            return {owner: int(count) for owner, count in session.execute(query)}
