"""Phases of an issue's flow, their classes, and the transition table.

The table is the single source of truth for which phase changes are legal; the
store enforces it with a compare-and-set update and the planner never proposes
a pair outside it.
"""

from __future__ import annotations

from enum import StrEnum


class Phase(StrEnum):
    """The machine-facing execution state of one issue."""

    IMPLEMENTING = "implementing"
    REVIEWING = "reviewing"
    WAITING_FOR_CHECKS = "waiting_for_checks"
    WAITING_FOR_HUMAN = "waiting_for_human"
    REWORK = "rework"
    BLOCKED = "blocked"
    READY_TO_MERGE = "ready_to_merge"
    MERGING = "merging"
    DONE = "done"


class PhaseClass(StrEnum):
    """Who acts in a phase: an active phase is worked on now, a passive one waits."""

    ACTIVE = "active"
    PASSIVE = "passive"
    TERMINAL = "terminal"


PHASE_CLASS: dict[Phase, PhaseClass] = {
    Phase.IMPLEMENTING: PhaseClass.ACTIVE,
    Phase.REVIEWING: PhaseClass.ACTIVE,
    Phase.WAITING_FOR_CHECKS: PhaseClass.PASSIVE,
    Phase.WAITING_FOR_HUMAN: PhaseClass.PASSIVE,
    Phase.REWORK: PhaseClass.ACTIVE,
    Phase.BLOCKED: PhaseClass.PASSIVE,
    Phase.READY_TO_MERGE: PhaseClass.ACTIVE,
    Phase.MERGING: PhaseClass.ACTIVE,
    Phase.DONE: PhaseClass.TERMINAL,
}

# Phases in which a coding agent runs a turn (the others are runtime steps or waits).
AGENT_PHASES: frozenset[Phase] = frozenset({Phase.IMPLEMENTING, Phase.REVIEWING, Phase.REWORK})

_ALL_WORKING = frozenset({Phase.IMPLEMENTING, Phase.REVIEWING, Phase.REWORK})

ALLOWED: dict[Phase, frozenset[Phase]] = {
    Phase.IMPLEMENTING: frozenset({Phase.REVIEWING, Phase.WAITING_FOR_CHECKS, Phase.BLOCKED}),
    Phase.REVIEWING: frozenset({Phase.WAITING_FOR_CHECKS, Phase.BLOCKED}),
    Phase.WAITING_FOR_CHECKS: frozenset(
        {
            Phase.REVIEWING,
            Phase.REWORK,
            Phase.WAITING_FOR_HUMAN,
            Phase.READY_TO_MERGE,
            Phase.BLOCKED,
        }
    ),
    Phase.WAITING_FOR_HUMAN: frozenset(
        {
            Phase.REWORK,
            Phase.READY_TO_MERGE,
            Phase.WAITING_FOR_CHECKS,
            Phase.REVIEWING,
            Phase.BLOCKED,
        }
    ),
    Phase.REWORK: frozenset(
        {Phase.REVIEWING, Phase.WAITING_FOR_CHECKS, Phase.WAITING_FOR_HUMAN, Phase.BLOCKED}
    ),
    # Leaving blocked: back to where the flow was, or an operator's choice of working phase.
    Phase.BLOCKED: frozenset(
        _ALL_WORKING | {Phase.WAITING_FOR_CHECKS, Phase.WAITING_FOR_HUMAN, Phase.READY_TO_MERGE}
    ),
    Phase.READY_TO_MERGE: frozenset(
        {
            Phase.MERGING,
            Phase.WAITING_FOR_HUMAN,
            Phase.WAITING_FOR_CHECKS,
            Phase.REVIEWING,
            Phase.BLOCKED,
        }
    ),
    Phase.MERGING: frozenset(
        {Phase.DONE, Phase.WAITING_FOR_CHECKS, Phase.REVIEWING, Phase.BLOCKED}
    ),
    Phase.DONE: frozenset(),
}


def is_allowed(current: Phase, new: Phase) -> bool:
    """Whether the flow may move from ``current`` to ``new``."""
    return new in ALLOWED[current]


def phase_class(phase: Phase) -> PhaseClass:
    """The class (active, passive, terminal) of a phase."""
    return PHASE_CLASS[phase]


class WaitingReason(StrEnum):
    """Why an issue is waiting or blocked: a closed set shown to operators."""

    CHECKS_PENDING = "checks_pending"
    HUMAN_APPROVAL_REQUIRED = "human_approval_required"
    METADATA_RECOVERY_REQUIRED = "metadata_recovery_required"
    MISSING_CONTEXT = "missing_context"
    MISSING_AUTH = "missing_auth"
    TOOL_UNAVAILABLE = "tool_unavailable"
    MERGEABILITY_CHANGED = "mergeability_changed"
    REWORK_LIMIT_EXCEEDED = "rework_limit_exceeded"
    KILL_SWITCH_ACTIVE = "kill_switch_active"
    OBSERVE_ONLY = "observe_only"


class GateValue(StrEnum):
    """The value of one named gate (ownership, checks, human_approval, ...)."""

    PASS = "pass"
    PENDING = "pending"
    FAIL = "fail"
    REQUIRED = "required"
    NOT_APPLICABLE = "not_applicable"


class RolloutMode(StrEnum):
    """What side effects are allowed at all, from least to most."""

    OBSERVE = "observe"
    MUTATE = "mutate"
    MERGE = "merge"

    @property
    def rank(self) -> int:
        return _MODE_RANK[self]

    def lowered_to(self, other: RolloutMode | None) -> RolloutMode:
        """This mode, lowered (never raised) by ``other`` when given."""
        if other is None or other.rank >= self.rank:
            return self
        return other


_MODE_RANK = {RolloutMode.OBSERVE: 0, RolloutMode.MUTATE: 1, RolloutMode.MERGE: 2}
