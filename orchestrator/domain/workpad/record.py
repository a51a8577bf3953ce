"""The workpad record of one issue: what the daemon knows about the issue's flow.

The record (schema_version 1) holds the phase, branch, pull request, review
and merge state, why the issue waits, and what the daemon last observed. Its
comment form is read by :mod:`orchestrator.domain.workpad.parse` and written by
:mod:`orchestrator.domain.workpad.render`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from types import MappingProxyType

from orchestrator.domain.phases import GateValue, Phase, RolloutMode, WaitingReason

SCHEMA_VERSION = 1

# The one top-level key of the comment's yaml block.
ROOT_KEY = "orchestrator"

_NO_GATES: Mapping[str, GateValue] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class PRRef:
    """The pull request opened for the issue."""

    number: int
    url: str
    head_sha: str | None = None


@dataclass(frozen=True, slots=True)
class ReviewState:
    """Self-review bookkeeping, keyed to head SHAs."""

    comment_id: int | None = None
    # Passes persisted in the current head lineage (a run of heads our own fixes produced).
    passes_completed: int = 0
    last_reviewed_head_sha: str | None = None
    last_fixed_head_sha: str | None = None


@dataclass(frozen=True, slots=True)
class MergeState:
    """What the daemon attempted and confirmed about merging."""

    last_attempted_at: datetime | None = None
    last_attempted_head_sha: str | None = None
    last_merge_commit_sha: str | None = None
    last_merged_head_sha: str | None = None
    last_failure_reason: str | None = None


@dataclass(frozen=True, slots=True)
class WaitingState:
    """Why the issue waits, and since when."""

    reason: WaitingReason | None = None
    since: datetime | None = None
    # Why, in one line, when the issue is blocked (the failure or question that stopped it).
    detail: str | None = None


@dataclass(frozen=True, slots=True)
class Observation:
    """What the daemon last saw and would do next (the operator's view, kept in observe mode)."""

    last_observed_at: datetime | None = None
    next_intended_action: str | None = None
    rollout_mode: RolloutMode | None = None
    gates: Mapping[str, GateValue] = field(default_factory=lambda: _NO_GATES)


@dataclass(frozen=True, slots=True)
class Validation:
    """The agent's summary of local validation (tests, build) for humans."""

    summary: str | None = None


@dataclass(frozen=True, slots=True)
class WorkpadRecord:
    """The machine record of one issue's flow, schema_version 1."""

    schema_version: int = SCHEMA_VERSION
    owned: bool = True
    phase: Phase = Phase.IMPLEMENTING
    rework_cycles: int = 0
    branch: str | None = None
    pr: PRRef | None = None
    review: ReviewState = field(default_factory=ReviewState)
    merge: MergeState = field(default_factory=MergeState)
    waiting: WaitingState = field(default_factory=WaitingState)
    observation: Observation = field(default_factory=Observation)
    validation: Validation = field(default_factory=Validation)
    # What the runtime changed in the agent's pull request description, in one line.
    pr_description_notes: str | None = None

    def with_phase(
        self,
        phase: Phase,
        reason: WaitingReason | None,
        since: datetime,
        detail: str | None = None,
    ) -> WorkpadRecord:
        """This record in ``phase``, waiting for ``reason`` since ``since`` because ``detail``."""
        waiting = WaitingState(
            reason=reason, since=since if reason is not None else None, detail=detail
        )
        if reason is not None and self.waiting.reason is reason:
            waiting = replace(self.waiting, detail=detail)
        return replace(self, phase=phase, waiting=waiting)


def fresh_record(phase: Phase = Phase.IMPLEMENTING) -> WorkpadRecord:
    """A minimal record for an issue the daemon has not worked on yet."""
    return WorkpadRecord(phase=phase)


def recovery_record(now: datetime) -> WorkpadRecord:
    """The fresh record written after a recovery: blocked for metadata recovery."""
    return WorkpadRecord(
        phase=Phase.BLOCKED,
        waiting=WaitingState(reason=WaitingReason.METADATA_RECOVERY_REQUIRED, since=now),
    )
