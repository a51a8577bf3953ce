"""The flow sections of the policy: ``orchestration``, ``rollout``, ``pr``, ``review``, ``merge``.

Together they say how an issue moves through the phases, what the daemon may
do on GitHub along the way, and when a pull request merges.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.domain.agent_files.review import Severity as FindingSeverity
from orchestrator.domain.phases import PHASE_CLASS, Phase, PhaseClass, RolloutMode
from orchestrator.domain.policy import MergeMethod, ReviewActOn
from orchestrator.workflow.schema.service import STATE_DIR
from orchestrator.workflow.schema_types import (
    ApprovalSource,
    ClosedPrPolicy,
    MergeMode,
    ReviewCommentMode,
    ReviewOutputFormat,
    meta,
)

DEFAULT_PASSIVE_PHASES: tuple[Phase, ...] = tuple(
    p for p, c in PHASE_CLASS.items() if c is PhaseClass.PASSIVE
)


@dataclass(frozen=True)
class OwnershipSettings:
    """How the daemon recognises the issues it owns."""

    required_label: str = field(
        default="orchestrator",
        metadata=meta(doc="Label an issue must carry for the daemon to act on it."),
    )
    required_workpad_marker: str = field(
        default="## Orchestrator Workpad",
        metadata=meta(doc="Markdown heading that identifies the workpad comment."),
    )


@dataclass(frozen=True)
class OrchestrationSettings:
    """The flow of phases: where it starts, what waits, and its limits."""

    default_phase: Phase = field(
        default=Phase.IMPLEMENTING,
        metadata=meta(doc="Phase of a newly owned issue (an agent phase)."),
    )
    passive_phases: tuple[Phase, ...] = field(
        default=DEFAULT_PASSIVE_PHASES,
        metadata=meta(
            doc="Phases that only re-poll and are never continuation-retried. Must contain "
            "waiting_for_checks, waiting_for_human and blocked; may add ready_to_merge."
        ),
    )
    max_rework_cycles: int = field(
        default=3,
        metadata=meta(
            doc="Rework entries allowed before the issue is blocked (rework_limit_exceeded).",
            minimum=0,
            maximum=100,
        ),
    )
    max_failed_attempts: int = field(
        default=5,
        metadata=meta(
            doc="Consecutive failed turns in one phase before the issue asks a human.",
            minimum=1,
            maximum=100,
        ),
    )
    priority_labels: tuple[str, ...] = field(
        default=("priority:critical", "priority:high", "priority:medium", "priority:low"),
        metadata=meta(
            doc="Most urgent first; candidates with one of these labels go before the others."
        ),
    )
    ownership: OwnershipSettings = field(
        default_factory=OwnershipSettings,
        metadata=meta(doc="How owned issues are recognised.", section=True),
    )


@dataclass(frozen=True)
class RolloutSettings:
    """What side effects are allowed at all, and the kill switches."""

    mode: RolloutMode = field(
        default=RolloutMode.OBSERVE,
        metadata=meta(
            doc="`observe` (read and report only), `mutate` (everything but merge) or `merge`."
        ),
    )
    observe_label: str = field(
        default="orchestrator:observe",
        metadata=meta(doc="Issue label that lowers that issue to observe."),
    )
    mutate_label: str = field(
        default="orchestrator:mutate",
        metadata=meta(doc="Issue label that lowers that issue to at most mutate."),
    )
    kill_switch_label: str = field(
        default="orchestrator:stop",
        metadata=meta(doc="Issue or PR label that stops every side effect for it."),
    )
    repo_kill_switch_label: str = field(
        default="orchestrator:stop-all",
        metadata=meta(
            doc="An open issue carrying this label stops every side effect in the repository."
        ),
    )
    kill_switch_file: Path = field(
        default=Path(f"{STATE_DIR}/STOP"),
        metadata=meta(
            doc="While this local file exists, no side effect happens. `~` is expanded; a "
            "relative path is relative to the policy file's directory."
        ),
    )
    preflight_required: bool = field(
        default=True,
        metadata=meta(
            doc="Run the preflight checks (token scopes, labels, repository) before acting."
        ),
    )


@dataclass(frozen=True)
class PrSettings:
    """How pull requests are opened and kept up to date."""

    auto_create: bool = field(
        default=True, metadata=meta(doc="Open the pull request after the first push.")
    )
    base_branch: str = field(default="main", metadata=meta(doc="Branch pull requests target."))
    branch_prefix: str = field(
        default="orchestrator/", metadata=meta(doc="Prefix of the branches the daemon creates.")
    )
    reuse_branch_pr: bool = field(
        default=True,
        metadata=meta(doc="Adopt an open pull request that already exists for the branch."),
    )
    closed_pr_policy: ClosedPrPolicy = field(
        default=ClosedPrPolicy.NEW_BRANCH,
        metadata=meta(
            doc="When the PR was closed unmerged: `new_branch`, `reopen` or `stop` (block)."
        ),
    )
    required_labels: tuple[str, ...] = field(
        default=(), metadata=meta(doc="Labels added to every pull request.")
    )
    reviewers: tuple[str, ...] = field(
        default=(), metadata=meta(doc="Reviewers (logins) asked again after a rework turn.")
    )
    closes_issue: bool = field(
        default=True, metadata=meta(doc="Write `Closes #N` in the pull request body.")
    )
    review_comment_mode: ReviewCommentMode = field(
        default=ReviewCommentMode.UPSERT,
        metadata=meta(doc="`upsert` one review comment per PR, `create` one per review, or `off`."),
    )
    review_comment_marker: str | None = field(
        default="<!-- orchestrator-review -->",
        metadata=meta(
            doc="Hidden marker that finds the review comment again (needed by `upsert`)."
        ),
    )
    update_description: bool = field(
        default=True,
        metadata=meta(doc="Update the PR body from `.orchestrator/pr-description.md` after fixes."),
    )
    draft: bool = field(default=False, metadata=meta(doc="Open pull requests as drafts."))


@dataclass(frozen=True)
class ReviewSettings:
    """The bounded self-review of each head."""

    enabled: bool = field(
        default=True, metadata=meta(doc="Run a self-review before a head may merge.")
    )
    output_format: ReviewOutputFormat = field(
        default=ReviewOutputFormat.STRUCTURED_MARKDOWN_V1,
        metadata=meta(doc="Format of `.orchestrator/review.md`."),
    )
    max_passes: int = field(
        default=2, metadata=meta(doc="Review passes per head lineage.", minimum=1, maximum=10)
    )
    fix_consideration_severities: tuple[FindingSeverity, ...] = field(
        default=(FindingSeverity.P0, FindingSeverity.P1),
        metadata=meta(doc="Finding severities (P0..P3) that get a fix pass."),
    )
    bounce_threshold: int = field(
        default=2,
        metadata=meta(
            doc="Times a bot's fixed request may come back before it goes to a human.",
            minimum=1,
            maximum=20,
        ),
    )
    act_on: ReviewActOn = field(
        default=ReviewActOn.WRITERS,
        metadata=meta(
            doc="Whose review threads start a rework and are given to the agent as work: "
            "`writers` (humans with write permission) or `anyone` (readers and other bots "
            "too). Other threads reach the agent only as context marked untrusted."
        ),
    )


@dataclass(frozen=True)
class MergeSettings:
    """When and how the runtime merges."""

    mode: MergeMode = field(
        default=MergeMode.DISABLED,
        metadata=meta(
            doc="`auto`: the runtime merges once every gate passes (needs rollout mode merge); "
            "`disabled`: a human merges and the runtime only confirms."
        ),
    )
    method: MergeMethod = field(
        default=MergeMethod.SQUASH,
        metadata=meta(
            doc="`merge`, `squash` or `rebase`. A squash says the cleaned pull request body; "
            "with `merge` or `rebase` (and with `mode: disabled`) the agent's commits land as "
            "they are, so a push whose commits would close another issue is refused."
        ),
    )
    require_green_checks: bool = field(
        default=True, metadata=meta(doc="Checks on the current head must pass.")
    )
    required_checks: tuple[str, ...] = field(
        default=(), metadata=meta(doc="Check names that must pass (empty: every reported check).")
    )
    require_head_match: bool = field(
        default=True,
        metadata=meta(
            doc="Merge only the reviewed head SHA. Must stay true; present so the file can say so."
        ),
    )
    require_human_approval: bool = field(
        default=True, metadata=meta(doc="A human must approve the merge.")
    )
    approval_states: tuple[str, ...] = field(
        default=("Merging",),
        metadata=meta(
            doc="Tracker states a human sets to approve a merge (on GitHub, their state "
            "labels; with kind `linear`, the Linear workflow states)."
        ),
    )
    approval_source: ApprovalSource = field(
        default=ApprovalSource.LABEL,
        metadata=meta(
            doc="Approval from the state `label` (with kind `linear`: the approval state or "
            "label a trusted Linear user set, read from the issue's history), an approving "
            "`review`, or `either`."
        ),
    )
    approval_label: str | None = field(
        default=None,
        metadata=meta(
            doc="An extra label that means approval (besides the approval states' labels); with "
            "kind `linear`, a label on the Linear issue."
        ),
    )
    completion_state: str = field(
        default="Done",
        metadata=meta(doc="Tracker state set after the merge is confirmed (a terminal state)."),
    )
