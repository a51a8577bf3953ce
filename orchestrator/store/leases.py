"""Named, expiring leases: who polls a repository, who runs an issue's turn.

Acquisition is a compare-and-set on the lease row (free, expired, or already
ours), so it works the same on SQLite and PostgreSQL.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import delete, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from orchestrator.store.models import Lease


class LeaseStore:
    """Acquire, renew, release and reap leases."""

    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self._sessions = sessions

    def acquire(self, name: str, owner: str, *, ttl: timedelta, now: datetime) -> bool:
        """Take the lease if it is free, expired or already ours."""
        expires = now + ttl
        with self._sessions.begin() as session:
            result = session.execute(
                update(Lease)
                .where(Lease.name == name, or_(Lease.owner == owner, Lease.expires_at <= now))
                .values(owner=owner, expires_at=expires, acquired_at=now)
            )
            if result.rowcount:  # type: ignore[attr-defined]
                return True
            if session.get(Lease, name) is not None:
                return False
        try:
            with self._sessions.begin() as session:
                session.add(Lease(name=name, owner=owner, expires_at=expires, acquired_at=now))
            return True
        except IntegrityError:
            return False

    def renew(self, name: str, owner: str, *, ttl: timedelta, now: datetime) -> bool:
        """Extend a lease we still hold; False if it expired and someone else took it."""
        with self._sessions.begin() as session:
            result = session.execute(
                update(Lease)
                .where(Lease.name == name, Lease.owner == owner)
                .values(expires_at=now + ttl)
            )
            return bool(result.rowcount)  # type: ignore[attr-defined]

    def release(self, name: str, owner: str) -> bool:
        with self._sessions.begin() as session:
            result = session.execute(delete(Lease).where(Lease.name == name, Lease.owner == owner))
            return bool(result.rowcount)  # type: ignore[attr-defined]

    def release_all(self, owner: str) -> int:
        with self._sessions.begin() as session:
            result = session.execute(delete(Lease).where(Lease.owner == owner))
            return int(result.rowcount)  # type: ignore[attr-defined]

    def clear(self) -> int:
        """Delete every lease, whoever holds it (only for a database one daemon owns alone)."""
        with self._sessions.begin() as session:
            result = session.execute(delete(Lease))
            return int(result.rowcount)  # type: ignore[attr-defined]

    def holder(self, name: str, *, now: datetime) -> str | None:
        with self._sessions() as session:
            lease = session.get(Lease, name)
            if lease is None or lease.expires_at <= now:
                return None
            return lease.owner

    def held_by(self, owner: str, *, now: datetime) -> list[str]:
        with self._sessions() as session:
            return list(
                session.scalars(
                    select(Lease.name).where(Lease.owner == owner, Lease.expires_at > now)
                )
            )

    def count_live(self, prefix: str, *, now: datetime) -> int:
        """How many unexpired leases have a name starting with ``prefix``."""
        with self._sessions() as session:
            return len(
                list(
                    session.scalars(
                        select(Lease.name).where(
                            Lease.name.startswith(prefix, autoescape=True), Lease.expires_at > now
                        )
                    )
                )
            )

    def reap(self, *, now: datetime) -> int:
        """Delete expired leases; returns how many."""
        with self._sessions.begin() as session:
            result = session.execute(delete(Lease).where(Lease.expires_at <= now))
            return int(result.rowcount)  # type: ignore[attr-defined]
