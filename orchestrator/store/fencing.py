"""One clock for every replica, and fences: proof that a writer still holds what it acts under.

Lease and claim validity is decided by the database's clock on PostgreSQL
(``clock_timestamp()``, the same for every replica, whatever its own clock
says). SQLite has one daemon per file (its lock), so there the daemon's own
clock is the only one and is used as it is.

A :class:`Fence` names a poll lease or a turn claim, its holder and the epoch
it was taken at. :func:`fence_holds` checks it inside the caller's
transaction: the outbox checks it in the same transaction that records a side
effect's intent, so a replica that lost its lease or claim (expired, taken by
another replica, which bumped the epoch) writes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Protocol

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from orchestrator.store.models import Lease, TurnClaim

# Where a database's session factory keeps the clock its sessions judge leases by.
STORE_CLOCK = "store_clock"


class StoreClock(Protocol):
    """The time leases, claims, presence and runs are judged by, read in the caller's
    transaction; ``caller_now`` is the time the caller passed (its own clock's)."""

    def now(self, session: Session, caller_now: datetime) -> datetime: ...


class DatabaseClock:
    """PostgreSQL's ``clock_timestamp()``, the same for every replica; on SQLite, where one
    daemon owns the file, that daemon's clock (the time the caller passed)."""

    def now(self, session: Session, caller_now: datetime) -> datetime:
        if session.get_bind().dialect.name != "postgresql":
            return caller_now
        value = session.scalar(select(func.clock_timestamp()))
        if not isinstance(value, datetime):
            return caller_now
        return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


DATABASE_CLOCK = DatabaseClock()


def database_now(session: Session, fallback: datetime) -> datetime:
    """The time by the session's store clock (:data:`DATABASE_CLOCK` unless the database was
    opened with another); ``fallback`` is the caller's own time."""
    clock: StoreClock = session.info.get(STORE_CLOCK, DATABASE_CLOCK)
    return clock.now(session, fallback)


class FenceKind(StrEnum):
    LEASE = "lease"
    CLAIM = "claim"


@dataclass(frozen=True)
class Fence:
    """What a write is made under: a lease by name or a claim by id, its holder, its epoch."""

    kind: FenceKind
    key: str
    owner: str
    epoch: int

    @classmethod
    def lease(cls, name: str, owner: str, epoch: int) -> Fence:
        return cls(FenceKind.LEASE, name, owner, epoch)

    @classmethod
    def claim(cls, claim_id: int, owner: str, epoch: int) -> Fence:
        return cls(FenceKind.CLAIM, str(claim_id), owner, epoch)

    def describe(self) -> str:
        what = f"poll lease {self.key}" if self.kind is FenceKind.LEASE else f"claim {self.key}"
        return f"{what} at epoch {self.epoch} held by {self.owner}"


class FenceLost(Exception):
    """The writer no longer holds the lease or claim it acts under; nothing was recorded."""

    def __init__(self, fence: Fence) -> None:
        super().__init__(f"{fence.describe()} is no longer held")
        self.fence = fence


def fence_holds(session: Session, fence: Fence, *, now: datetime) -> bool:
    """Whether ``fence`` is still held and unexpired, on the database's clock, in ``session``."""
    at = database_now(session, now)
    found: object
    if fence.kind is FenceKind.LEASE:
        found = session.scalar(
            select(Lease.name).where(
                Lease.name == fence.key,
                Lease.owner == fence.owner,
                Lease.epoch == fence.epoch,
                Lease.expires_at > at,
            )
        )
    else:
        found = session.scalar(
            select(TurnClaim.id).where(
                TurnClaim.id == int(fence.key),
                TurnClaim.owner == fence.owner,
                TurnClaim.epoch == fence.epoch,
                TurnClaim.finished_at.is_(None),
                TurnClaim.lease_expires_at > at,
            )
        )
    return found is not None


def check_fence(session: Session, fence: Fence | None, *, now: datetime) -> None:
    """Raise :class:`FenceLost` unless ``fence`` (when given) still holds."""
    if fence is not None and not fence_holds(session, fence, now=now):
        raise FenceLost(fence)
