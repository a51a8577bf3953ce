"""Rules of ready_to_merge and merging: merge one exact head, confirm, then close the issue.

The merge is asked for only when every gate passes on the PR's current head and
the issue's rollout mode is merge; the merge call carries that head SHA, so a
head that moved in between makes it fail instead of merging unreviewed code.
"""

from __future__ import annotations

from orchestrator.domain import effects
from orchestrator.domain.flow import (
    IssueContext,
    IssueDecision,
    head_needs_review,
    move,
    pr_feedback,
    review_budget_spent,
    wait,
)
from orchestrator.domain.flow_waiting import rework_reason
from orchestrator.domain.phases import GateValue, Phase, RolloutMode, WaitingReason
from orchestrator.domain.policy import MergeMode
from orchestrator.domain.snapshot import PRStatus, PullRequest


def _fall_back(ctx: IssueContext, pr: PullRequest) -> IssueDecision | None:
    """Where to go when a gate no longer passes on the current head (None: all still pass)."""
    if head_needs_review(ctx, pr):
        return move(ctx, Phase.REVIEWING, "the head changed", next_action="self-review")
    feedback = pr_feedback(ctx, pr)
    reason = rework_reason(ctx, pr, feedback)
    if reason is not None:
        waiting = (
            WaitingReason.MERGEABILITY_CHANGED
            if pr.mergeable is False
            else WaitingReason.CHECKS_PENDING
        )
        return move(ctx, Phase.WAITING_FOR_CHECKS, reason, waiting)
    if ctx.gates.checks is GateValue.PENDING:
        return move(ctx, Phase.WAITING_FOR_CHECKS, "checks pending", WaitingReason.CHECKS_PENDING)
    if feedback.bouncing or feedback.awaiting_human or review_budget_spent(ctx, pr):
        return _to_human(ctx, "a review thread needs a human")
    if ctx.gates.human_approval is GateValue.REQUIRED:
        return _to_human(ctx, "approval missing")
    return None


def _to_human(ctx: IssueContext, reason: str) -> IssueDecision:
    if ctx.phase is Phase.MERGING:
        # Merging cannot wait for a human directly: step back and let the checks rule route it.
        return move(ctx, Phase.WAITING_FOR_CHECKS, reason, WaitingReason.HUMAN_APPROVAL_REQUIRED)
    return move(
        ctx,
        Phase.WAITING_FOR_HUMAN,
        reason,
        WaitingReason.HUMAN_APPROVAL_REQUIRED,
        next_action="wait for a human's approval",
    )


def _runtime_merges(ctx: IssueContext) -> bool:
    # A ready_to_merge the operator declared passive waits for someone else to merge.
    return (
        ctx.policy.merge.mode is MergeMode.RUNTIME
        and ctx.mode is RolloutMode.MERGE
        and Phase.READY_TO_MERGE not in ctx.policy.passive_phases
    )


def decide_ready_to_merge(ctx: IssueContext) -> IssueDecision:
    """Rules for ready_to_merge."""
    pr = ctx.pr
    if pr is None:
        return wait(ctx, "wait for the pull request state")
    if pr.status is PRStatus.MERGED:
        return move(ctx, Phase.MERGING, "merged_outside", next_action="confirm the merge")
    if pr.status is PRStatus.CLOSED:
        return move(
            ctx,
            Phase.BLOCKED,
            "pull request closed without merge",
            WaitingReason.MISSING_CONTEXT,
        )
    fallback = _fall_back(ctx, pr)
    if fallback is not None:
        return fallback
    if not ctx.gates.merge_ready:
        return wait(ctx, "wait for gates: " + ", ".join(ctx.gates.blocking()))
    if not _runtime_merges(ctx):
        if ctx.mode is RolloutMode.MERGE:
            return wait(ctx, "wait for a human or merge queue to merge")
        return wait(ctx, f"merge pull request (needs rollout mode merge, is {ctx.mode})")
    return move(ctx, Phase.MERGING, f"all gates pass on {pr.head_sha[:12]}", next_action="merge")


def decide_merging(ctx: IssueContext) -> IssueDecision:
    """Rules for merging: merge with the expected head, confirm, close the issue, done."""
    pr = ctx.pr
    if pr is None:
        return wait(ctx, "wait for the pull request state")
    if pr.status is PRStatus.MERGED:
        if ctx.item.issue.is_open:
            close = effects.close_issue(ctx, pr)
            decision = wait(ctx, "close the issue after the confirmed merge")
            if not ctx.completed(close.idempotency_key):
                decision.effects.append(close)
            return decision
        return move(ctx, Phase.DONE, "merge confirmed", next_action="nothing: done")
    if pr.status is PRStatus.CLOSED:
        return move(
            ctx,
            Phase.BLOCKED,
            "pull request closed without merge",
            WaitingReason.MISSING_CONTEXT,
        )
    fallback = _fall_back(ctx, pr)
    if fallback is not None:
        return fallback
    merge = ctx.record.workpad.merge
    if (
        merge.last_failure_reason is not None
        and merge.last_attempted_head_sha == pr.head_sha
        and merge.last_attempted_at is not None
        and merge.last_attempted_at >= ctx.record.phase_since
    ):
        return move(
            ctx,
            Phase.WAITING_FOR_CHECKS,
            f"merge failed: {merge.last_failure_reason}",
            WaitingReason.MERGEABILITY_CHANGED,
        )
    if not _runtime_merges(ctx):
        return move(
            ctx,
            Phase.WAITING_FOR_CHECKS,
            f"merge not allowed in rollout mode {ctx.mode}",
            WaitingReason.CHECKS_PENDING,
        )
    if not ctx.gates.merge_ready:
        return wait(ctx, "wait for gates: " + ", ".join(ctx.gates.blocking()))
    if pr.is_draft:
        # GitHub refuses to merge a draft: it leaves draft first, through the gate.
        ready = effects.mark_pr_ready(ctx, pr)
        decision = wait(ctx, f"mark the draft pull request ready, then merge {pr.head_sha[:12]}")
        if not ctx.completed(ready.idempotency_key):
            decision.effects.append(ready)
        return decision
    merge_effect = effects.merge_pr(ctx, pr)
    if ctx.completed(merge_effect.idempotency_key):
        return wait(ctx, "confirm the merge")
    decision = wait(ctx, f"merge {pr.head_sha[:12]}")
    decision.effects.append(merge_effect)
    return decision
