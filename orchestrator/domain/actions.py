"""The planner's output: actions as plain values the executor applies in order.

Side effects carry an idempotency key derived only from stable facts (repository,
issue, kind and a head SHA or target), so planning again after a crash yields the
same keys and the outbox can tell what was already done.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from orchestrator.domain.phases import Phase, RolloutMode, WaitingReason
from orchestrator.domain.side_effects import EffectPayload, SideEffectKind
from orchestrator.domain.snapshot import HeadSighting, IssueRef
from orchestrator.domain.workpad import Observation

# The lowest rollout mode in which each kind of side effect may happen.
MINIMUM_MODE: Mapping[SideEffectKind, RolloutMode] = MappingProxyType(
    {
        **{kind: RolloutMode.MUTATE for kind in SideEffectKind},
        SideEffectKind.UPSERT_WORKPAD: RolloutMode.OBSERVE,
        SideEffectKind.MERGE_PR: RolloutMode.MERGE,
        # A draft leaves draft only to be merged right after.
        SideEffectKind.MARK_PR_READY: RolloutMode.MERGE,
    }
)


def allowed_in(kind: SideEffectKind, mode: RolloutMode) -> bool:
    """Whether a side effect of this kind may happen in this rollout mode."""
    return mode.rank >= MINIMUM_MODE[kind].rank


def idempotency_key(issue: IssueRef, kind: SideEffectKind, target: str) -> str:
    """The stable key of one side effect: ``owner/repo#12:push_branch:<sha>``."""
    return f"{issue.repo}#{issue.number}:{kind}:{target}"


@dataclass(frozen=True, slots=True)
class Dispatch:
    """Run an agent turn for the issue in an agent phase (claims a new issue)."""

    issue: IssueRef
    phase: Phase
    attempt: int
    reason: str


@dataclass(frozen=True, slots=True)
class Transition:
    """Move the issue from one phase to another (compare-and-set on ``from_phase``)."""

    issue: IssueRef
    from_phase: Phase
    to_phase: Phase
    reason: str
    waiting_reason: WaitingReason | None = None
    # Leaving rework before any turn ran because its cause went away (a flaky check
    # passed on rerun): the entry is withdrawn and does not count as a rework cycle.
    withdraws_rework: bool = False
    # What the daemon will do once the issue is in ``to_phase``: written with the phase,
    # so the next action shown never belongs to the phase the issue just left.
    next_action: str | None = None


@dataclass(frozen=True, slots=True)
class SideEffect:
    """One write to GitHub or the git remote, gated by rollout mode and kill switches."""

    issue: IssueRef
    payload: EffectPayload
    idempotency_key: str

    @property
    def kind(self) -> SideEffectKind:
        """What the write is (the payload's kind)."""
        return self.payload.KIND


@dataclass(frozen=True, slots=True)
class Cancel:
    """Stop the issue's running agent turn."""

    issue: IssueRef
    reason: str


@dataclass(frozen=True, slots=True)
class Observe:
    """What the planner sees for the issue and would do next (always emitted)."""

    issue: IssueRef
    observation: Observation
    waiting_reason: WaitingReason | None = None
    # The pull request head and since when it is known, kept in the record.
    head_seen: HeadSighting | None = None


Action = Dispatch | Transition | SideEffect | Cancel | Observe

__all__ = [
    "MINIMUM_MODE",
    "Action",
    "Cancel",
    "Dispatch",
    "EffectPayload",
    "Observe",
    "SideEffect",
    "SideEffectKind",
    "Transition",
    "allowed_in",
    "idempotency_key",
    "side_effect",
]


def side_effect(issue: IssueRef, target: str, payload: EffectPayload) -> SideEffect:
    """A side effect with its derived idempotency key (``target`` names what it writes)."""
    return SideEffect(
        issue=issue,
        payload=payload,
        idempotency_key=idempotency_key(issue, payload.KIND, target),
    )
