"""What the per-phase rules share: the view of one issue and the decision they build.

Each phase's rules read an :class:`IssueContext` and fill an :class:`IssueDecision`;
the planner then applies rollout mode, kill switches and concurrency to it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from orchestrator.domain.actions import (
    Cancel,
    Dispatch,
    SideEffect,
    Transition,
    side_effect,
)
from orchestrator.domain.agent_files.errors import GITHUB_BODY_LIMIT
from orchestrator.domain.approval import ApprovalView, latest_verdicts
from orchestrator.domain.gates import Gates
from orchestrator.domain.phases import PHASE_CLASS, Phase, PhaseClass, RolloutMode, WaitingReason
from orchestrator.domain.policy import FlowPolicy, ReviewActOn
from orchestrator.domain.review_decisions import (
    bouncing_threads,
    escalated_before,
    passes_in_lineage,
)
from orchestrator.domain.side_effects import PostComment
from orchestrator.domain.snapshot import (
    IssueRef,
    IssueSnapshot,
    PRStatus,
    PullRequest,
    ReviewThread,
    ReviewVerdict,
    RunningAgent,
    StoredRecord,
)
from orchestrator.domain.trust import is_self, last_word, thread_trusted


@dataclass(slots=True)
class IssueContext:
    """Everything the rules may read about one issue during one plan."""

    item: IssueSnapshot
    record: StoredRecord
    policy: FlowPolicy
    now: datetime
    gates: Gates
    # The approval of the current head, evaluated once for the gates and the rules.
    approval: ApprovalView
    mode: RolloutMode
    running: RunningAgent | None
    self_login: str | None

    @property
    def ref(self) -> IssueRef:
        """The issue's reference."""
        return self.item.issue.ref

    @property
    def phase(self) -> Phase:
        """The phase the store says the issue is in."""
        return self.record.phase

    @property
    def pr(self) -> PullRequest | None:
        """The issue's pull request as inspected this tick."""
        return self.item.pr

    def completed(self, key: str) -> bool:
        """Whether the outbox marked the side effect with this key done."""
        return key in self.record.completed_effects


@dataclass(slots=True)
class IssueDecision:
    """The actions the rules chose for one issue, before mode and capacity are applied."""

    next_action: str
    transition: Transition | None = None
    dispatch: Dispatch | None = None
    cancel: Cancel | None = None
    effects: list[SideEffect] = field(default_factory=list)
    waiting_reason: WaitingReason | None = None
    # The next action only names the move: the planner asks the target phase's rules
    # what comes after it, so the action shown matches the phase the issue is in.
    names_the_move: bool = False


def move(
    ctx: IssueContext,
    to_phase: Phase,
    reason: str,
    waiting_reason: WaitingReason | None = None,
    *,
    next_action: str | None = None,
) -> IssueDecision:
    """A decision to change phase (the caller guarantees the pair is allowed)."""
    return IssueDecision(
        next_action=next_action or f"move to {to_phase}",
        transition=Transition(ctx.ref, ctx.phase, to_phase, reason, waiting_reason),
        waiting_reason=waiting_reason,
        names_the_move=next_action is None,
    )


def wait(ctx: IssueContext, next_action: str, reason: WaitingReason | None = None) -> IssueDecision:
    """A decision to do nothing this tick."""
    return IssueDecision(next_action=next_action, waiting_reason=reason)


def dispatch(ctx: IssueContext, reason: str, phase: Phase | None = None) -> IssueDecision:
    """A decision to run an agent turn in the current (or given) agent phase."""
    target = phase or ctx.phase
    return IssueDecision(
        next_action=f"run an agent turn ({target})",
        dispatch=Dispatch(ctx.ref, target, ctx.record.attempt + 1, reason),
    )


def resume_target(ctx: IssueContext) -> Phase:
    """Where a blocked issue goes back to: where the flow was, never straight into merging."""
    resume = ctx.record.resume_phase
    if resume is Phase.MERGING:
        return Phase.READY_TO_MERGE
    if resume is None or PHASE_CLASS[resume] is PhaseClass.TERMINAL or resume is Phase.BLOCKED:
        has_pr = ctx.pr is not None or ctx.record.workpad.pr is not None
        return Phase.WAITING_FOR_CHECKS if has_pr else ctx.policy.default_phase
    return resume


def enter_rework(ctx: IssueContext, reason: str) -> IssueDecision:
    """Rework, unless that would exceed the rework limit: then blocked for a human."""
    if ctx.record.rework_cycles >= ctx.policy.max_rework_cycles:
        decision = move(
            ctx,
            Phase.BLOCKED,
            f"{reason}; rework limit of {ctx.policy.max_rework_cycles} reached",
            WaitingReason.REWORK_LIMIT_EXCEEDED,
            next_action="ask an operator: rework limit reached",
        )
        decision.effects.append(rework_limit_comment(ctx, reason))
        return decision
    return move(ctx, Phase.REWORK, reason, next_action=f"rework: {reason}")


REWORK_LIMIT_MARKER = "<!-- orchestrator-rework-limit -->"


def rework_limit_comment(ctx: IssueContext, reason: str) -> SideEffect:
    """The summary a human gets when the rework limit stops the flow."""
    pr = ctx.pr
    lines = [
        REWORK_LIMIT_MARKER,
        f"**Rework limit reached:** {ctx.record.rework_cycles} rework cycle(s) of "
        f"{ctx.policy.max_rework_cycles} allowed (`orchestration.max_rework_cycles`).",
        "",
        f"- Still asked for: {reason}",
    ]
    if pr is not None:
        lines.append(f"- Pull request #{pr.number} at `{pr.head_sha[:12]}`")
        open_threads = [t for t in pr.threads if not t.is_resolved]
        for thread in open_threads[:10]:
            where = f"`{thread.path}`" if thread.path else "the pull request"
            first = thread.body.strip().splitlines()[0] if thread.body.strip() else ""
            lines.append(f"- Open thread on {where} by @{thread.author.login}: {first[:200]}")
        if pr.checks is not None and pr.checks.failing:
            lines.append("- Failing checks: " + ", ".join(sorted(pr.checks.failing)))
    fixed = sum(1 for e in ctx.record.thread_history if e.status is not None)
    lines.append(f"- Thread answers given so far: {fixed}")
    lines += ["", "Fix it by hand, or ask an operator to resume the issue."]
    body = "\n".join(lines)[:GITHUB_BODY_LIMIT]
    return side_effect(
        ctx.ref, f"rework-limit:{ctx.record.phase_since.isoformat()}", PostComment(body=body)
    )


def head_needs_review(ctx: IssueContext, pr: PullRequest) -> bool:
    """The current head is neither reviewed nor one of our own review-fix commits."""
    if not ctx.policy.review.enabled:
        return False
    state = ctx.record.workpad.review
    return pr.head_sha not in (state.last_reviewed_head_sha, state.last_fixed_head_sha)


def review_budget_spent(ctx: IssueContext, pr: PullRequest) -> bool:
    """The head is an unreviewed fix commit and no review pass is left in its lineage."""
    state = ctx.record.workpad.review
    return (
        ctx.policy.review.enabled
        and pr.head_sha == state.last_fixed_head_sha
        and pr.head_sha != state.last_reviewed_head_sha
        and passes_in_lineage(state, pr.head_sha) >= ctx.policy.review.max_passes
    )


def last_word_is_ours(
    thread: ReviewThread, self_login: str | None, act_on: ReviewActOn = ReviewActOn.WRITERS
) -> bool:
    """The daemon wrote the thread's latest comment that counts (it waits for the other side).

    Replies by people whose comments do not count (``review.act_on``) are skipped.
    """
    return is_self(last_word(thread, act_on, self_login), self_login)


@dataclass(frozen=True)
class Feedback:
    """What the pull request asks for, beyond checks: threads and review verdicts.

    Only threads whose author counts under ``review.act_on`` appear here; the others
    are context for the agent, never work, never a reason to wait.
    """

    actionable: tuple[ReviewThread, ...]
    bouncing: tuple[ReviewThread, ...]
    awaiting_human: tuple[ReviewThread, ...]
    changes_requested: bool


def pr_feedback(ctx: IssueContext, pr: PullRequest) -> Feedback:
    """Open threads split into actionable, bouncing and waiting on a human; new change requests."""
    act_on = ctx.policy.review.act_on
    open_threads = tuple(
        t for t in pr.threads if not t.is_resolved and thread_trusted(t, act_on, ctx.self_login)
    )
    bouncing_ids = (
        bouncing_threads(ctx.record.thread_history, open_threads, ctx.policy.review)
        if ctx.record.thread_history
        else frozenset()
    )
    actionable: list[ReviewThread] = []
    bouncing: list[ReviewThread] = []
    awaiting: list[ReviewThread] = []
    for thread in open_threads:
        if last_word_is_ours(thread, ctx.self_login, act_on):
            if not _settled_by_approval(ctx, thread):
                awaiting.append(thread)
        elif thread.id in bouncing_ids:
            # A thread is escalated once: if it comes back again, it still waits for a human.
            if escalated_before(thread, ctx.self_login):
                awaiting.append(thread)
            else:
                bouncing.append(thread)
        else:
            actionable.append(thread)
    changes = any(
        verdict is ReviewVerdict.CHANGES_REQUESTED and sha == pr.head_sha
        for verdict, sha in latest_verdicts(pr, ctx.self_login).values()
    )
    return Feedback(tuple(actionable), tuple(bouncing), tuple(awaiting), changes)


def _settled_by_approval(ctx: IssueContext, thread: ReviewThread) -> bool:
    """A thread held for a human that a qualified human's approval of the head settled.

    The approval must come after the daemon's last word on the thread: approving
    the head is the human's decision to take it as it is.
    """
    held_at = next(
        (c.created_at for c in reversed(thread.comments) if is_self(c.author, ctx.self_login)),
        thread.last_comment_at,
    )
    return held_at is not None and ctx.approval.given_after(held_at)


def pr_is_gone(pr: PullRequest | None) -> bool:
    """The pull request was closed without being merged."""
    return pr is not None and pr.status is PRStatus.CLOSED
