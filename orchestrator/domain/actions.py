"""The planner's output: actions as plain values the executor applies in order.

Side effects carry an idempotency key derived only from stable facts (repository,
issue, kind and a head SHA or target), so planning again after a crash yields the
same keys and the outbox can tell what was already done.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType

from orchestrator.domain.phases import Phase, RolloutMode, WaitingReason
from orchestrator.domain.snapshot import HeadSighting, IssueRef
from orchestrator.domain.workpad import Observation

# JSON-compatible payload values.
PayloadValue = str | int | bool | None | tuple[str, ...]


class SideEffectKind(StrEnum):
    """The closed set of writes to GitHub or the git remote."""

    PUSH_BRANCH = "push_branch"
    CREATE_PR = "create_pr"
    UPDATE_PR_BODY = "update_pr_body"
    UPSERT_WORKPAD = "upsert_workpad"
    UPSERT_REVIEW_COMMENT = "upsert_review_comment"
    SET_LABELS = "set_labels"
    REPLY_THREAD = "reply_thread"
    RESOLVE_THREAD = "resolve_thread"
    REQUEST_REVIEW = "request_review"
    POST_COMMENT = "post_comment"
    MARK_PR_READY = "mark_pr_ready"
    MERGE_PR = "merge_pr"
    CLOSE_ISSUE = "close_issue"


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
    kind: SideEffectKind
    payload: Mapping[str, PayloadValue]
    idempotency_key: str


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


def side_effect(
    issue: IssueRef, kind: SideEffectKind, target: str, **payload: PayloadValue
) -> SideEffect:
    """A side effect with a read-only payload and its derived idempotency key."""
    return SideEffect(
        issue=issue,
        kind=kind,
        payload=MappingProxyType(payload),
        idempotency_key=idempotency_key(issue, kind, target),
    )
