"""The policy values the planner, the gates and the workpad need, as one frozen value.

The workflow loader builds a :class:`FlowPolicy` from WORKFLOW.md; every field has
a safe default so a test can write ``FlowPolicy(rollout_mode=RolloutMode.MERGE)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property
from types import MappingProxyType
from typing import TypeVar

from orchestrator.domain.agent_files.review import Severity
from orchestrator.domain.phases import AGENT_PHASES, PHASE_CLASS, Phase, PhaseClass, RolloutMode


class MergeMode(StrEnum):
    """Who performs the merge once every gate passes."""

    # The runtime merges with the expected head SHA (needs rollout mode merge).
    RUNTIME = "runtime"
    # A human or a merge queue merges; the runtime only confirms and closes the issue.
    EXTERNAL = "external"


class MergeMethod(StrEnum):
    """GitHub's merge methods."""

    MERGE = "merge"
    SQUASH = "squash"
    REBASE = "rebase"


class ApprovalSource(StrEnum):
    """Where a human's merge approval may come from (``merge.approval_source``)."""

    LABEL = "label"
    REVIEW = "review"
    # Either one. ``either`` is how WORKFLOW.md spells it; both names are the same member.
    EITHER = "either"
    LABEL_OR_REVIEW = "either"

    @property
    def by_label(self) -> bool:
        """An approval label added by a qualified human counts."""
        return self is not ApprovalSource.REVIEW

    @property
    def by_review(self) -> bool:
        """A qualified human's approving review counts."""
        return self is not ApprovalSource.LABEL


class ReviewActOn(StrEnum):
    """Whose review threads and comments may drive rework (``review.act_on``)."""

    # Humans with write permission (not bots, not the daemon): everyone else is context.
    WRITERS = "writers"
    # Anyone but the daemon itself, readers and other bots included.
    ANYONE = "anyone"


class TrackerState(StrEnum):
    """The human-facing lifecycle of an issue (Done is the closed issue)."""

    TO_DO = "Todo"
    IN_PROGRESS = "In Progress"
    IN_REVIEW = "In Review"
    MERGING = "Merging"
    REWORK = "Rework"
    BLOCKED = "Blocked"
    DONE = "Done"


_K = TypeVar("_K")
_V = TypeVar("_V")


def _frozen_map(items: Mapping[_K, _V]) -> Mapping[_K, _V]:
    return MappingProxyType(dict(items))


_DEFAULT_STATE_LABELS: Mapping[str, str] = _frozen_map(
    {
        TrackerState.TO_DO: "state:todo",
        TrackerState.IN_PROGRESS: "state:in-progress",
        TrackerState.IN_REVIEW: "state:in-review",
        TrackerState.MERGING: "state:merging",
        TrackerState.REWORK: "state:rework",
        TrackerState.BLOCKED: "state:blocked",
    }
)

_DEFAULT_MODE_LABELS: Mapping[str, RolloutMode] = _frozen_map(
    {"orchestrator:observe": RolloutMode.OBSERVE, "orchestrator:mutate": RolloutMode.MUTATE}
)

_NO_PHASE_LIMITS: Mapping[Phase, int] = _frozen_map({})

_DEFAULT_PASSIVE = frozenset(p for p, c in PHASE_CLASS.items() if c is PhaseClass.PASSIVE)


@dataclass(frozen=True)
class ReviewPolicy:
    """The bounded self-review: how many passes per head lineage, which findings get fixed."""

    enabled: bool = True
    max_passes: int = 2
    fix_consideration_severities: frozenset[Severity] = frozenset({Severity.P0, Severity.P1})
    bounce_threshold: int = 2
    # Whose threads start a rework and are given to the agent as work to do.
    act_on: ReviewActOn = ReviewActOn.WRITERS


@dataclass(frozen=True)
class MergePolicy:
    """When a pull request may be merged, by whom, and how."""

    mode: MergeMode = MergeMode.RUNTIME
    method: MergeMethod = MergeMethod.SQUASH
    require_green_checks: bool = True
    # Empty: every check reported on the head must pass (and at least one must be reported).
    required_checks: tuple[str, ...] = ()
    require_human_approval: bool = True
    # Tracker states that mean "a human approved the merge".
    approval_states: tuple[str, ...] = (TrackerState.MERGING,)
    approval_source: ApprovalSource = ApprovalSource.LABEL
    # The approval label; None means the label of the first approval state.
    approval_label: str | None = None

    @property
    def lands_commits(self) -> bool:
        """Whether the branch's own commits may reach the base branch as they are: a merge
        commit or a rebase does that, and so may a merge the runtime does not make (its
        method is someone else's choice). A squash by the runtime writes one new commit."""
        return self.mode is MergeMode.EXTERNAL or self.method is not MergeMethod.SQUASH


@dataclass(frozen=True)
class PRPolicy:
    """Pull request settings the planner needs to name branches and effects."""

    base_branch: str = "main"
    branch_prefix: str = "orchestrator/"
    draft: bool = False
    update_description: bool = True
    # Reviewers asked again after a rework turn.
    reviewers: tuple[str, ...] = ()
    closes_issue: bool = True
    # GitHub's web address (an Enterprise server's): issue URLs on it are references too.
    web_base: str = "https://github.com"


@dataclass(frozen=True)
class FlowPolicy:
    """Every policy value the pure core reads, with safe defaults."""

    rollout_mode: RolloutMode = RolloutMode.OBSERVE
    # Labels that lower the rollout mode for one issue (never raise it).
    mode_labels: Mapping[str, RolloutMode] = field(default_factory=lambda: _DEFAULT_MODE_LABELS)
    kill_switch_label: str = "orchestrator:stop"
    repo_kill_switch_label: str = "orchestrator:stop-all"
    ownership_label: str = "orchestrator"
    workpad_marker: str = "## Orchestrator Workpad"
    default_phase: Phase = Phase.IMPLEMENTING
    passive_phases: frozenset[Phase] = _DEFAULT_PASSIVE
    max_rework_cycles: int = 3
    max_concurrent_agents: int = 4
    max_concurrent_agents_by_phase: Mapping[Phase, int] = field(
        default_factory=lambda: _NO_PHASE_LIMITS
    )
    max_retry_backoff_ms: int = 300_000
    # Consecutive failed turns in one phase before the issue asks a human.
    max_failed_attempts: int = 5
    review: ReviewPolicy = field(default_factory=ReviewPolicy)
    merge: MergePolicy = field(default_factory=MergePolicy)
    pr: PRPolicy = field(default_factory=PRPolicy)
    # Tracker state (Todo, In Progress, ...) -> the label that shows it on GitHub.
    state_labels: Mapping[str, str] = field(default_factory=lambda: _DEFAULT_STATE_LABELS)
    # Most urgent first; issues without any of these come after all that have one.
    priority_labels: tuple[str, ...] = (
        "priority:critical",
        "priority:high",
        "priority:medium",
        "priority:low",
    )

    def __post_init__(self) -> None:
        # Callers may pass plain dicts: freeze them so the policy stays immutable.
        for name in ("mode_labels", "max_concurrent_agents_by_phase", "state_labels"):
            value = getattr(self, name)
            if not isinstance(value, MappingProxyType):
                object.__setattr__(self, name, _frozen_map(value))
        problems = policy_problems(self)
        if problems:
            raise ValueError("invalid flow policy: " + "; ".join(problems))

    @cached_property
    def approval_labels(self) -> frozenset[str]:
        """Labels whose presence (added by a qualified human) means approval."""
        labels = {
            self.state_labels[s] for s in self.merge.approval_states if s in self.state_labels
        }
        if self.merge.approval_label:
            labels.add(self.merge.approval_label)
        return frozenset(labels)

    @cached_property
    def all_state_labels(self) -> frozenset[str]:
        """Every label that shows a tracker state."""
        return frozenset(self.state_labels.values())

    def other_state_labels(self, label: str) -> frozenset[str]:
        """Every state label except ``label`` (the ones to remove when showing it)."""
        return self._other_state_labels.get(label, self.all_state_labels)

    @cached_property
    def _other_state_labels(self) -> Mapping[str, frozenset[str]]:
        labels = self.all_state_labels
        return {label: labels - {label} for label in labels}

    def phase_limit(self, phase: Phase) -> int | None:
        """The per-phase concurrency limit, if one is set."""
        return self.max_concurrent_agents_by_phase.get(phase)


def policy_problems(policy: FlowPolicy) -> list[str]:
    """Human-readable problems with a policy's values (empty when it is usable)."""
    problems: list[str] = []
    if policy.max_rework_cycles < 0:
        problems.append("max_rework_cycles must be 0 or more")
    if policy.max_concurrent_agents < 1:
        problems.append("max_concurrent_agents must be at least 1")
    for phase, limit in policy.max_concurrent_agents_by_phase.items():
        if limit < 0:
            problems.append(f"max_concurrent_agents_by_phase.{phase} must be 0 or more")
    if policy.max_retry_backoff_ms < 0:
        problems.append("max_retry_backoff_ms must be 0 or more")
    if policy.max_failed_attempts < 1:
        problems.append("max_failed_attempts must be at least 1")
    if policy.review.max_passes < 1:
        problems.append("review.max_passes must be at least 1")
    if policy.review.bounce_threshold < 1:
        problems.append("review.bounce_threshold must be at least 1")
    if policy.default_phase not in (Phase.IMPLEMENTING, Phase.REVIEWING, Phase.REWORK):
        problems.append("default_phase must be implementing, reviewing or rework")
    missing = _DEFAULT_PASSIVE - policy.passive_phases
    if missing:
        problems.append("passive_phases must contain " + ", ".join(sorted(missing)))
    misplaced = policy.passive_phases & (AGENT_PHASES | {Phase.MERGING, Phase.DONE})
    if misplaced:
        problems.append("passive_phases must not contain " + ", ".join(sorted(misplaced)))
    if not policy.ownership_label:
        problems.append("ownership_label must not be empty")
    if not policy.workpad_marker.startswith("#"):
        problems.append("workpad_marker must be a markdown heading")
    if (
        policy.merge.require_human_approval
        and not policy.approval_labels
        and (policy.merge.approval_source is ApprovalSource.LABEL)
    ):
        problems.append("merge.approval_source is label but no approval label is configured")
    return problems
