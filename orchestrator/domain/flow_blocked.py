"""Rules of blocked: how an issue leaves it (an operator, a human's reply, a lifted switch).

Leaving blocked goes back to where the flow was, with its review, rework and merge
state untouched; an operator may instead name a working phase.
"""

from __future__ import annotations

from orchestrator.domain import effects
from orchestrator.domain.approval import qualifies_as_human
from orchestrator.domain.flow import IssueContext, IssueDecision, move, resume_target, wait
from orchestrator.domain.outcomes import asked_before_this_visit, blocked_question
from orchestrator.domain.phases import Phase, WaitingReason, is_allowed
from orchestrator.domain.snapshot import PRStatus

# Reasons a human's reply on the issue answers; the others need an operator.
REPLY_RESUMES = frozenset(
    {
        WaitingReason.MISSING_CONTEXT,
        WaitingReason.MISSING_AUTH,
        WaitingReason.TOOL_UNAVAILABLE,
        WaitingReason.MERGEABILITY_CHANGED,
    }
)


def decide_blocked(ctx: IssueContext) -> IssueDecision:
    """Rules for blocked."""
    record = ctx.record
    reason = record.waiting_reason
    request = record.operator_request
    if request is not None and request.requested_at >= record.phase_since:
        target = request.to_phase or resume_target(ctx)
        if target is Phase.MERGING:
            target = Phase.READY_TO_MERGE
        if not is_allowed(Phase.BLOCKED, target):
            return wait(ctx, f"ignore the operator's request: cannot resume into {target}", reason)
        return move(ctx, target, "operator_resume", next_action=f"resume {target}")
    if reason is WaitingReason.KILL_SWITCH_ACTIVE:
        target = resume_target(ctx)
        return move(ctx, target, "kill switch lifted", next_action=f"resume {target}")
    if ctx.pr is not None and ctx.pr.status is PRStatus.MERGED and reason in REPLY_RESUMES:
        return move(ctx, Phase.READY_TO_MERGE, "merged_outside", next_action="confirm the merge")
    if reason in REPLY_RESUMES and _human_replied(ctx):
        target = resume_target(ctx)
        return move(ctx, target, "a human replied", next_action=f"resume {target}")
    decision = wait(ctx, _waiting_text(reason), reason)
    last = record.last_outcome
    question = blocked_question(last) if last is not None else None
    if question is not None and last is not None and asked_before_this_visit(last, record):
        comment = effects.blocked_question_comment(ctx, last.run_id, question)
        if not ctx.completed(comment.idempotency_key):
            decision.effects.append(comment)
    return decision


def _human_replied(ctx: IssueContext) -> bool:
    since = ctx.record.phase_since
    return any(
        comment.created_at > since and qualifies_as_human(comment.author, ctx.self_login)
        for comment in ctx.item.issue.comments
    )


def _waiting_text(reason: WaitingReason | None) -> str:
    if reason in REPLY_RESUMES:
        return "wait for a human's reply or an operator"
    return "wait for an operator to resume"
