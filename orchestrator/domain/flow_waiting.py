"""Rules of the passive phases waiting_for_checks and waiting_for_human, from the PR's state.

They never run an agent: they read checks, reviews, threads and mergeability on the
current head and move the issue on, back to review, or into rework.
"""

from __future__ import annotations

from orchestrator.domain.actions import side_effect
from orchestrator.domain.flow import (
    Feedback,
    IssueContext,
    IssueDecision,
    enter_rework,
    head_needs_review,
    move,
    pr_feedback,
    review_budget_spent,
    wait,
)
from orchestrator.domain.phases import GateValue, Phase, WaitingReason
from orchestrator.domain.side_effects import ReplyThread
from orchestrator.domain.snapshot import PRStatus, PullRequest


def checks_running(pr: PullRequest) -> bool:
    """Some check on the current head is still running (a first run or a rerun)."""
    return pr.checks is not None and bool(pr.checks.pending)


def rework_reason(ctx: IssueContext, pr: PullRequest, feedback: Feedback) -> str | None:
    """Why the PR needs code changes now, if it does."""
    if ctx.gates.checks is GateValue.FAIL and not checks_running(pr):
        assert pr.checks is not None
        return "checks failing: " + ", ".join(sorted(pr.checks.failing)[:5])
    if feedback.changes_requested:
        return "changes requested on the current head"
    if feedback.actionable:
        return f"{len(feedback.actionable)} open review thread(s)"
    if pr.mergeable is False:
        return "merge conflicts with the base branch"
    return None


def decide_waiting(ctx: IssueContext) -> IssueDecision:
    """Rules for waiting_for_checks and waiting_for_human."""
    pr = ctx.pr
    if pr is None:
        if ctx.record.workpad.pr is None:
            return move(
                ctx,
                Phase.BLOCKED,
                "no pull request to wait on",
                WaitingReason.MISSING_CONTEXT,
                next_action="ask a human: the issue has no pull request",
            )
        return wait(ctx, "wait for the pull request state", ctx.record.waiting_reason)
    if pr.status is PRStatus.MERGED:
        return move(ctx, Phase.READY_TO_MERGE, "merged_outside", next_action="confirm the merge")
    if pr.status is PRStatus.CLOSED:
        return move(
            ctx,
            Phase.BLOCKED,
            "pull request closed without merge",
            WaitingReason.MISSING_CONTEXT,
            next_action="ask a human: the pull request was closed",
        )
    if head_needs_review(ctx, pr):
        return move(ctx, Phase.REVIEWING, "new head to review", next_action="self-review")
    feedback = pr_feedback(ctx, pr)
    reason = rework_reason(ctx, pr, feedback)
    if reason is not None:
        return enter_rework(ctx, reason)
    if feedback.bouncing:
        return _escalate_bounces(ctx, feedback)
    if ctx.gates.checks is GateValue.FAIL and checks_running(pr):
        # A fix is never started while checks run: a rerun may still pass.
        return wait(ctx, "wait for the running checks before a fix", WaitingReason.CHECKS_PENDING)
    if ctx.gates.checks is GateValue.PENDING:
        if ctx.phase is Phase.WAITING_FOR_HUMAN:
            return move(
                ctx, Phase.WAITING_FOR_CHECKS, "checks restarted", WaitingReason.CHECKS_PENDING
            )
        return wait(ctx, "wait for checks on the current head", WaitingReason.CHECKS_PENDING)
    if pr.mergeable is None:
        return wait(ctx, "wait for GitHub to compute mergeability", ctx.record.waiting_reason)
    needs_human = (
        review_budget_spent(ctx, pr)
        or bool(feedback.awaiting_human)
        or ctx.gates.human_approval is GateValue.REQUIRED
    )
    if needs_human:
        if ctx.phase is Phase.WAITING_FOR_HUMAN:
            return wait(
                ctx,
                "wait for a human's approval or decision",
                WaitingReason.HUMAN_APPROVAL_REQUIRED,
            )
        return move(
            ctx,
            Phase.WAITING_FOR_HUMAN,
            "checks green; a human must approve",
            WaitingReason.HUMAN_APPROVAL_REQUIRED,
            next_action="wait for a human's approval",
        )
    return move(ctx, Phase.READY_TO_MERGE, "all gates pass", next_action="merge")


def _escalate_bounces(ctx: IssueContext, feedback: Feedback) -> IssueDecision:
    """Comments that keep coming back after being fixed go to a human, not to another rework."""
    if ctx.phase is Phase.WAITING_FOR_HUMAN:
        decision = wait(
            ctx,
            "wait for a human to settle a recurring review comment",
            WaitingReason.HUMAN_APPROVAL_REQUIRED,
        )
    else:
        decision = move(
            ctx,
            Phase.WAITING_FOR_HUMAN,
            "a review comment keeps coming back",
            WaitingReason.HUMAN_APPROVAL_REQUIRED,
            next_action="wait for a human to settle a recurring review comment",
        )
    for thread in feedback.bouncing:
        decision.effects.append(
            side_effect(
                ctx.ref,
                f"{thread.id}:bounce",
                ReplyThread(
                    thread_id=thread.id,
                    body="Needs a human decision: this comment came back after being addressed "
                    f"{ctx.policy.review.bounce_threshold} or more times, so it is not "
                    "changed again automatically.",
                ),
            )
        )
    return decision
