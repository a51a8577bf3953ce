"""The cluster's replicas: who runs, which version, when each last beat (on the database's clock).

Each daemon registers itself at start, beats from its heartbeat, and marks
itself stopped on a clean shutdown. A replica whose heartbeat is older than
its time to live is dead; the leader sizes the cluster's agent limit by the
live ones, and the operator views list them all.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session, sessionmaker

from orchestrator.store.fencing import database_now
from orchestrator.store.models import Replica


@dataclass(frozen=True)
class ReplicaRow:
    """One replica as the store sees it."""

    replica_id: str
    version: str
    started_at: datetime
    heartbeat_at: datetime
    expires_at: datetime
    stopped_at: datetime | None
    alive: bool


class ReplicaStore:
    """Register, beat, stop and list replicas."""

    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self._sessions = sessions

    def register(self, replica_id: str, *, version: str, ttl: timedelta, now: datetime) -> None:
        """Record this replica as started now (a restart replaces its previous row)."""
        with self._sessions.begin() as session:
            at = database_now(session, now)
            row = session.get(Replica, replica_id)
            if row is None:
                session.add(
                    Replica(
                        replica_id=replica_id,
                        version=version,
                        started_at=at,
                        heartbeat_at=at,
                        expires_at=at + ttl,
                    )
                )
                return
            row.version = version
            row.started_at = at
            row.heartbeat_at = at
            row.expires_at = at + ttl
            row.stopped_at = None

    def beat(self, replica_id: str, *, ttl: timedelta, now: datetime) -> datetime:
        """Extend this replica's life; returns the heartbeat's time on the database's clock."""
        with self._sessions.begin() as session:
            at = database_now(session, now)
            result = session.execute(
                update(Replica)
                .where(Replica.replica_id == replica_id)
                .values(heartbeat_at=at, expires_at=at + ttl, stopped_at=None)
            )
            if not result.rowcount:  # type: ignore[attr-defined]
                session.add(
                    Replica(
                        replica_id=replica_id,
                        version="unknown",
                        started_at=at,
                        heartbeat_at=at,
                        expires_at=at + ttl,
                    )
                )
            return at

    def stopped(self, replica_id: str, *, now: datetime) -> None:
        """Mark a clean shutdown: the replica is no longer counted."""
        with self._sessions.begin() as session:
            at = database_now(session, now)
            session.execute(
                update(Replica)
                .where(Replica.replica_id == replica_id)
                .values(stopped_at=at, expires_at=at)
            )

    def count_live(self, *, now: datetime) -> int:
        with self._sessions() as session:
            at = database_now(session, now)
            return int(
                session.scalar(
                    select(func.count())
                    .select_from(Replica)
                    .where(Replica.expires_at > at, Replica.stopped_at.is_(None))
                )
                or 0
            )

    def all(self, *, now: datetime) -> list[ReplicaRow]:
        """Every replica known, live ones first, then by id."""
        with self._sessions() as session:
            at = database_now(session, now)
            rows = [
                ReplicaRow(
                    replica_id=row.replica_id,
                    version=row.version,
                    started_at=row.started_at,
                    heartbeat_at=row.heartbeat_at,
                    expires_at=row.expires_at,
                    stopped_at=row.stopped_at,
                    alive=row.stopped_at is None and row.expires_at > at,
                )
                for row in session.scalars(select(Replica))
            ]
        return sorted(rows, key=lambda r: (not r.alive, r.replica_id))

    def forget_older_than(self, cutoff: datetime) -> int:
        """Delete replicas dead since before ``cutoff`` (the list stays short)."""
        with self._sessions.begin() as session:
            result = session.execute(delete(Replica).where(Replica.expires_at < cutoff))
            return int(result.rowcount)  # type: ignore[attr-defined]
