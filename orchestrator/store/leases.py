"""Named, expiring leases with epochs: who polls a repository.

Acquisition is a compare-and-set on the lease row (free, expired, or already
ours), so it works the same on SQLite and PostgreSQL. Expiry is judged on the
database's clock (:func:`~orchestrator.store.fencing.database_now`). Each
time the lease changes hands, or is taken again after it expired, its epoch
grows by one; the holder's writes are fenced by the epoch it got.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import delete, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from orchestrator.store.fencing import database_now
from orchestrator.store.models import Lease


class LeaseStore:
    """Acquire, renew, release and reap leases."""

    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self._sessions = sessions

    def acquire(self, name: str, owner: str, *, ttl: timedelta, now: datetime) -> int | None:
        """Take or extend the lease; its epoch (1 or more), or None when another holds it."""
        with self._sessions.begin() as session:
            at = database_now(session, now)
            kept = session.execute(
                update(Lease)
                .where(Lease.name == name, Lease.owner == owner, Lease.expires_at > at)
                .values(expires_at=at + ttl)
            )
            if kept.rowcount:  # type: ignore[attr-defined]
                return _epoch(session, name)
            taken = session.execute(
                update(Lease)
                .where(Lease.name == name, Lease.expires_at <= at)
                .values(owner=owner, expires_at=at + ttl, acquired_at=at, epoch=Lease.epoch + 1)
            )
            if taken.rowcount:  # type: ignore[attr-defined]
                return _epoch(session, name)
            if session.get(Lease, name) is not None:
                return None
        try:
            with self._sessions.begin() as session:
                at = database_now(session, now)
                session.add(
                    Lease(name=name, owner=owner, expires_at=at + ttl, acquired_at=at, epoch=1)
                )
            return 1
        except IntegrityError:
            return None

    def renew(self, name: str, owner: str, *, ttl: timedelta, now: datetime) -> bool:
        """Extend a lease we still hold unexpired; False if it expired or someone else has it."""
        with self._sessions.begin() as session:
            at = database_now(session, now)
            result = session.execute(
                update(Lease)
                .where(Lease.name == name, Lease.owner == owner, Lease.expires_at > at)
                .values(expires_at=at + ttl)
            )
            return bool(result.rowcount)  # type: ignore[attr-defined]

    def release(self, name: str, owner: str) -> bool:
        """Give the lease up at once (the row and its epoch stay, so epochs never repeat)."""
        with self._sessions.begin() as session:
            result = session.execute(
                update(Lease)
                .where(Lease.name == name, Lease.owner == owner)
                .values(expires_at=Lease.acquired_at, owner="")
            )
            return bool(result.rowcount)  # type: ignore[attr-defined]

    def release_all(self, owner: str) -> int:
        """Give up every lease ``owner`` holds (its epochs stay: the next holder's grows on)."""
        with self._sessions.begin() as session:
            result = session.execute(
                update(Lease)
                .where(Lease.owner == owner)
                .values(expires_at=Lease.acquired_at, owner="")
            )
            return int(result.rowcount)  # type: ignore[attr-defined]

    def clear(self) -> int:
        """End every lease, whoever holds it (only for a database one daemon owns alone)."""
        with self._sessions.begin() as session:
            result = session.execute(update(Lease).values(expires_at=Lease.acquired_at, owner=""))
            return int(result.rowcount)  # type: ignore[attr-defined]

    def holder(self, name: str, *, now: datetime) -> str | None:
        with self._sessions() as session:
            at = database_now(session, now)
            lease = session.get(Lease, name)
            if lease is None or lease.expires_at <= at or not lease.owner:
                return None
            return lease.owner

    def held_by(self, owner: str, *, now: datetime) -> list[str]:
        with self._sessions() as session:
            at = database_now(session, now)
            return list(
                session.scalars(
                    select(Lease.name).where(Lease.owner == owner, Lease.expires_at > at)
                )
            )

    def reap(self, *, now: datetime) -> int:
        """Forget who held the expired leases; returns how many (their epochs are kept)."""
        with self._sessions.begin() as session:
            at = database_now(session, now)
            result = session.execute(
                update(Lease).where(Lease.expires_at <= at, Lease.owner != "").values(owner="")
            )
            return int(result.rowcount)  # type: ignore[attr-defined]

    def purge(self) -> int:
        """Delete every lease row (tests and a database reset); epochs start again at 1."""
        with self._sessions.begin() as session:
            result = session.execute(delete(Lease))
            return int(result.rowcount)  # type: ignore[attr-defined]


def _epoch(session: Session, name: str) -> int:
    return int(session.scalar(select(Lease.epoch).where(Lease.name == name)) or 1)
