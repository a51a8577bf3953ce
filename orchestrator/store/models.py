"""SQLAlchemy models of the store.

Every change here needs an Alembic revision in ``migrations/versions``; a test
compares these models with the migrated schema on SQLite and PostgreSQL.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from orchestrator.store.types import UTCDateTime

# Named constraints let Alembic's batch mode rebuild SQLite tables reliably.
NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    """Declarative base carrying the naming convention."""

    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class SideEffectStatus(StrEnum):
    """Where a side effect stands in the outbox."""

    INTENDED = "intended"
    DONE = "done"
    FAILED = "failed"
    REFUSED_BY_MODE = "refused_by_mode"
    REFUSED_BY_KILL_SWITCH = "refused_by_kill_switch"


class TrackedIssue(Base):
    """One issue the daemon owns or watches, with its phase and workpad record."""

    __tablename__ = "tracked_issues"
    __table_args__ = (UniqueConstraint("repo", "number", name="uq_tracked_issues_repo_number"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    repo: Mapped[str] = mapped_column(String(200))
    number: Mapped[int] = mapped_column(Integer)
    title: Mapped[str] = mapped_column(Text, default="")
    tracker_state: Mapped[str | None] = mapped_column(String(100))
    labels: Mapped[list[str]] = mapped_column(JSON, default=list)
    phase: Mapped[str] = mapped_column(String(40), index=True)
    phase_since: Mapped[datetime] = mapped_column(UTCDateTime)
    workpad: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    workpad_comment_id: Mapped[int | None] = mapped_column(BigInteger)
    workpad_hash: Mapped[str | None] = mapped_column(String(64))
    branch: Mapped[str | None] = mapped_column(String(255))
    pr_number: Mapped[int | None] = mapped_column(Integer)
    pr_head_sha: Mapped[str | None] = mapped_column(String(64))
    rework_cycles: Mapped[int] = mapped_column(Integer, default=0)
    waiting_reason: Mapped[str | None] = mapped_column(String(60))
    waiting_since: Mapped[datetime | None] = mapped_column(UTCDateTime)
    observation: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    attempt: Mapped[int] = mapped_column(Integer, default=0)
    retry_due_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # The runtime's whole flow record (outcomes, history, completed effects) as JSON.
    record: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    version: Mapped[int] = mapped_column(Integer, default=1)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime)


class PhaseEvent(Base):
    """An applied phase transition, written in the same transaction as the change."""

    __tablename__ = "phase_events"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    issue_id: Mapped[int] = mapped_column(
        ForeignKey("tracked_issues.id", ondelete="CASCADE"), index=True
    )
    from_phase: Mapped[str | None] = mapped_column(String(40))
    to_phase: Mapped[str] = mapped_column(String(40))
    reason: Mapped[str] = mapped_column(Text, default="")
    actor: Mapped[str] = mapped_column(String(100), default="runtime")
    at: Mapped[datetime] = mapped_column(UTCDateTime)


class SideEffect(Base):
    """Outbox and audit of one write to GitHub, keyed by its idempotency key."""

    __tablename__ = "side_effects"
    __table_args__ = (Index("ix_side_effects_status", "status"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    issue_id: Mapped[int | None] = mapped_column(
        ForeignKey("tracked_issues.id", ondelete="SET NULL"), index=True
    )
    kind: Mapped[str] = mapped_column(String(60))
    idempotency_key: Mapped[str] = mapped_column(String(255), unique=True)
    payload: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    status: Mapped[str] = mapped_column(String(40))
    result: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    rollout_mode: Mapped[str] = mapped_column(String(20))
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime)


class AgentRun(Base):
    """One agent turn: when it started, first spoke, ended, and how."""

    __tablename__ = "agent_runs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[str] = mapped_column(String(64), unique=True)
    issue_id: Mapped[int] = mapped_column(
        ForeignKey("tracked_issues.id", ondelete="CASCADE"), index=True
    )
    phase: Mapped[str] = mapped_column(String(40))
    attempt: Mapped[int] = mapped_column(Integer, default=1)
    replica_id: Mapped[str | None] = mapped_column(String(100))
    started_at: Mapped[datetime] = mapped_column(UTCDateTime)
    first_event_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    ended_at: Mapped[datetime | None] = mapped_column(UTCDateTime, index=True)
    outcome: Mapped[str | None] = mapped_column(String(40))
    error: Mapped[str | None] = mapped_column(Text)
    input_tokens: Mapped[int | None] = mapped_column(BigInteger)
    # The part of input_tokens the model read from its cache.
    cached_input_tokens: Mapped[int | None] = mapped_column(BigInteger)
    output_tokens: Mapped[int | None] = mapped_column(BigInteger)
    total_tokens: Mapped[int | None] = mapped_column(BigInteger)
    # What the turn cost in US dollars, when the agent reported it.
    cost_usd: Mapped[float | None] = mapped_column(Float)
    # The rendered prompt the agent was given, for the dashboard's timeline.
    prompt: Mapped[str | None] = mapped_column(Text)
    # The agent's own session id, to resume it on the next turn of the same phase.
    session_id: Mapped[str | None] = mapped_column(String(200))


class Lease(Base):
    """A named, expiring claim held by one daemon replica."""

    __tablename__ = "leases"

    name: Mapped[str] = mapped_column(String(255), primary_key=True)
    owner: Mapped[str] = mapped_column(String(100))
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)
    acquired_at: Mapped[datetime] = mapped_column(UTCDateTime)
    # Grows by one each time the lease changes hands (or is taken again after expiring):
    # a write fenced by an older epoch is refused.
    epoch: Mapped[int] = mapped_column(BigInteger, default=1, server_default="1")


class Replica(Base):
    """One daemon process of the cluster: its version and heartbeat (on the database's clock)."""

    __tablename__ = "replicas"

    replica_id: Mapped[str] = mapped_column(String(100), primary_key=True)
    version: Mapped[str] = mapped_column(String(40))
    started_at: Mapped[datetime] = mapped_column(UTCDateTime)
    heartbeat_at: Mapped[datetime] = mapped_column(UTCDateTime)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)
    stopped_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class HttpCacheEntry(Base):
    """The last successful answer for a URL, for conditional requests."""

    __tablename__ = "http_cache"

    url: Mapped[str] = mapped_column(String(1000), primary_key=True)
    etag: Mapped[str | None] = mapped_column(String(255))
    last_modified: Mapped[str | None] = mapped_column(String(100))
    body: Mapped[str] = mapped_column(Text)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime)


class TurnClaim(Base):
    """An agent turn the polling leader planned; any replica claims it with a lease and runs it.

    The row stays open (``finished_at`` unset) from the dispatch until the turn and
    the push of its commits are over, so the leader counts it as running meanwhile.
    """

    __tablename__ = "turn_claims"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    issue_id: Mapped[int] = mapped_column(
        ForeignKey("tracked_issues.id", ondelete="CASCADE"), index=True
    )
    repo: Mapped[str] = mapped_column(String(200))
    number: Mapped[int] = mapped_column(Integer)
    phase: Mapped[str] = mapped_column(String(40))
    attempt: Mapped[int] = mapped_column(Integer, default=1)
    # What the worker needs (the dispatch, the issue, its pull request) as JSON.
    payload: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    # The run of the current claim; a new claim after an expired lease starts a new run.
    run_id: Mapped[str | None] = mapped_column(String(64))
    owner: Mapped[str | None] = mapped_column(String(100))
    lease_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # Grows by one with each claim: the holder's pushes and records are fenced by it.
    epoch: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    queued_at: Mapped[datetime] = mapped_column(UTCDateTime)
    claimed_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime, index=True)
    cancel_reason: Mapped[str | None] = mapped_column(String(100))


class FeedSnapshot(Base):
    """The issue feed of a repository as a leader last kept it, so that a restart or a
    takeover resumes it with one page of recent updates instead of reading every issue."""

    __tablename__ = "feed_snapshots"

    repo: Mapped[str] = mapped_column(String(200), primary_key=True)
    # The feed's state, compressed JSON (see orchestrator.github.feed_snapshot).
    state: Mapped[bytes] = mapped_column(LargeBinary)
    saved_at: Mapped[datetime] = mapped_column(UTCDateTime)
