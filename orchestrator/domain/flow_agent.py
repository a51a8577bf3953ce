"""Rules of the agent phases (implementing, reviewing, rework): dispatch, retry, and results.

A finished turn is handled in two steps: first its side effects (push, PR, review
comment, thread replies) are asked for; once the outbox shows them done and the
pull request shows the pushed head, the phase moves on. A crash between the two
steps only repeats the same idempotent effects.
"""

from __future__ import annotations

from dataclasses import replace

from orchestrator.domain import effects
from orchestrator.domain.actions import Cancel, SideEffect
from orchestrator.domain.agent_files.fix_summary import FixSummary
from orchestrator.domain.agent_files.review import Review
from orchestrator.domain.flow import (
    IssueContext,
    IssueDecision,
    dispatch,
    move,
    pr_feedback,
    wait,
)
from orchestrator.domain.flow_waiting import checks_running, rework_reason
from orchestrator.domain.outcomes import (
    blocked_question,
    failure_reason,
    fresh_outcome,
    in_this_visit,
    threads_to_answer,
    turn_failure,
)
from orchestrator.domain.phases import GateValue, Phase, WaitingReason
from orchestrator.domain.retry import RetryKind, decide_retry, is_due
from orchestrator.domain.review_decisions import (
    FixEvaluation,
    bounce_counts,
    evaluate_fix_summary,
    needs_fix_pass,
    passes_in_lineage,
)
from orchestrator.domain.snapshot import AgentOutcome, OutcomeKind, PullRequest, ReviewThread


def decide_agent_phase(ctx: IssueContext) -> IssueDecision:
    """Rules for implementing, reviewing and rework."""
    if ctx.running is not None:
        if ctx.running.phase is not ctx.phase:
            decision = wait(ctx, "stop the turn of a phase the issue left")
            decision.cancel = Cancel(ctx.ref, "phase_changed")
            return decision
        return wait(ctx, f"wait for the running agent turn ({ctx.phase})")
    if ctx.phase is Phase.REVIEWING and not ctx.policy.review.enabled:
        return move(ctx, Phase.WAITING_FOR_CHECKS, "review_disabled", WaitingReason.CHECKS_PENDING)
    if ctx.phase is not Phase.IMPLEMENTING and ctx.pr is None:
        if ctx.record.workpad.pr is None:
            return move(
                ctx,
                Phase.BLOCKED,
                "no pull request for this phase",
                WaitingReason.MISSING_CONTEXT,
                next_action="ask a human: the issue has no pull request",
            )
        return wait(ctx, "wait for the pull request state")
    outcome = fresh_outcome(ctx.record)
    if outcome is None and ctx.phase is Phase.REWORK and ctx.record.attempt == 0:
        withdrawn = _withdraw_rework(ctx)
        if withdrawn is not None:
            return withdrawn
    if outcome is None:
        if (
            ctx.phase is Phase.REVIEWING
            and ctx.pr is not None
            and ctx.pr.head_sha == ctx.record.workpad.review.last_reviewed_head_sha
        ):
            return move(
                ctx, Phase.WAITING_FOR_CHECKS, "head_already_reviewed", WaitingReason.CHECKS_PENDING
            )
        return _continue(ctx, "start" if ctx.record.last_outcome is None else "continue")
    if outcome.kind is OutcomeKind.CANCELLED:
        # Stopped by the daemon (kill switch, ownership, phase change): not a failure.
        return _continue(ctx, "continue after a cancelled turn")
    question = blocked_question(outcome)
    if question is not None:
        decision = move(
            ctx,
            Phase.BLOCKED,
            "agent_asked_a_question",
            question.reason,
            next_action="wait for a human's reply to the agent's question",
        )
        decision.effects.append(effects.blocked_question_comment(ctx, outcome.run_id, question))
        return decision
    failure = turn_failure(outcome, ctx.record.workpad)
    if failure is not None:
        return _after_failure(ctx, outcome, failure)
    moved = _head_moved_during_turn(ctx, outcome)
    if moved is not None:
        return moved
    if ctx.phase is Phase.IMPLEMENTING:
        return _after_implementing(ctx, outcome)
    if ctx.phase is Phase.REVIEWING:
        return _after_reviewing(ctx, outcome)
    return _after_rework(ctx, outcome)


def _continue(ctx: IssueContext, reason: str) -> IssueDecision:
    if not is_due(ctx.record.retry_due_at, ctx.now):
        return wait(ctx, f"retry {ctx.phase} after {ctx.record.retry_due_at}")
    return dispatch(ctx, reason)


def _withdraw_rework(ctx: IssueContext) -> IssueDecision | None:
    """Leave a rework no turn has started for when the PR no longer asks for one.

    A flaky check that passes on rerun (or is running again) is not a rework cycle.
    """
    pr = ctx.pr
    if pr is None or (
        ctx.record.last_outcome is not None
        and (
            ctx.record.last_outcome.phase is Phase.REWORK
            and in_this_visit(ctx.record.last_outcome, ctx.record)
        )
    ):
        return None
    seen = ctx.record.workpad.observation.gates.get("checks")
    if seen is not GateValue.FAIL or rework_reason(ctx, pr, pr_feedback(ctx, pr)) is not None:
        # Only a rework entered while checks failed is withdrawn when they stop failing.
        return None
    if checks_running(pr):
        why = "a failing check is running again"
    elif pr.checks is not None and not pr.checks.failing:
        why = "the failing check passed on rerun"
    else:
        return None
    decision = move(
        ctx,
        Phase.WAITING_FOR_CHECKS,
        why,
        WaitingReason.CHECKS_PENDING,
        next_action="wait for checks on the current head",
    )
    assert decision.transition is not None
    decision.transition = replace(decision.transition, withdraws_rework=True)
    return decision


def _after_failure(ctx: IssueContext, outcome: AgentOutcome, failure: str) -> IssueDecision:
    if outcome.contract_error is not None:
        return _after_contract_miss(ctx, outcome, outcome.contract_error)
    decision = decide_retry(
        failed=True,
        failures=max(ctx.record.attempt, 1),
        finished_at=outcome.finished_at,
        max_backoff_ms=ctx.policy.max_retry_backoff_ms,
        max_failures=ctx.policy.max_failed_attempts,
    )
    if decision.kind is RetryKind.GIVE_UP:
        reason = failure_reason(outcome)
        blocked = move(
            ctx,
            Phase.BLOCKED,
            f"{ctx.record.attempt} failed turns: {failure}",
            reason,
            next_action="ask a human: the agent keeps failing",
        )
        blocked.effects.append(
            effects.post_comment(
                ctx,
                f"failed:{outcome.run_id}",
                f"{effects.BLOCKED_COMMENT_MARKER}\n**The agent needs a human ({reason}).**"
                f"\n\n{ctx.record.attempt} {ctx.phase} turns in a row failed. The last one: "
                f"{' '.join(failure.split())[:500]}\n\nFix the cause, then reply here or ask an "
                "operator to resume the issue.",
            )
        )
        return blocked
    due = ctx.record.retry_due_at or decision.due_at
    if not is_due(due, ctx.now):
        return wait(ctx, f"retry {ctx.phase} after {due} ({failure})")
    return dispatch(ctx, f"retry: {failure}")


def _after_contract_miss(ctx: IssueContext, outcome: AgentOutcome, error: str) -> IssueDecision:
    """One continuation turn, told what was wrong; a second miss asks a human."""
    if ctx.record.attempt < 2:
        return dispatch(ctx, f"continue: {error}")
    decision = move(
        ctx,
        Phase.BLOCKED,
        f"the agent's results do not match its work twice: {error}",
        WaitingReason.MISSING_CONTEXT,
        next_action="ask a human: the agent's report and commits disagree",
    )
    decision.effects.append(
        effects.post_comment(
            ctx,
            f"contract:{outcome.run_id}",
            f"{effects.BLOCKED_COMMENT_MARKER}\n**The agent needs a human (missing_context).**"
            f"\n\nTwo {ctx.phase} turns in a row ended with results that do not match the "
            f"work: {error}. Review threads, findings and counts are kept; reply here or ask "
            "an operator to resume the issue.",
        )
    )
    return decision


def _pushed(ctx: IssueContext, outcome: AgentOutcome) -> bool:
    if not outcome.committed:
        return True
    return ctx.pr is not None and ctx.pr.head_sha == outcome.head_after


def _head_moved_during_turn(ctx: IssueContext, outcome: AgentOutcome) -> IssueDecision | None:
    """Someone else pushed while the agent worked: keep everything and ask a human."""
    pr = ctx.pr
    if pr is None or not outcome.committed or outcome.head_before is None:
        return None
    if pr.head_sha in (outcome.head_before, outcome.head_after):
        return None
    decision = move(
        ctx,
        Phase.BLOCKED,
        "the branch moved during the agent turn",
        WaitingReason.MISSING_CONTEXT,
        next_action="ask a human: the branch moved while the agent worked",
    )
    decision.effects.append(
        effects.post_comment(
            ctx,
            f"head-moved:{outcome.run_id}",
            f"The pull request head moved to `{pr.head_sha[:12]}` while the agent was working "
            f"from `{outcome.head_before[:12]}`; its commits were not pushed. Reply here or ask "
            "an operator to resume once the branch is settled.",
        )
    )
    return decision


def _after_implementing(ctx: IssueContext, outcome: AgentOutcome) -> IssueDecision:
    pending: list[SideEffect] = []
    if outcome.committed and not _pushed(ctx, outcome):
        assert outcome.head_after is not None
        pending.append(effects.push_branch(ctx, outcome.head_after, "implementation"))
    if ctx.pr is None:
        pending.append(effects.create_pr(ctx, outcome))
    elif (update := effects.update_pr_body(ctx, ctx.pr, outcome)) is not None:
        pending.append(update)
    pending = [e for e in pending if not ctx.completed(e.idempotency_key)]
    if pending or ctx.pr is None or not _pushed(ctx, outcome):
        decision = wait(ctx, "push the branch and open the pull request")
        decision.effects.extend(pending)
        return decision
    if ctx.policy.review.enabled:
        return move(ctx, Phase.REVIEWING, "implementation_pushed", next_action="self-review")
    return move(
        ctx, Phase.WAITING_FOR_CHECKS, "implementation_pushed", WaitingReason.CHECKS_PENDING
    )


def _after_reviewing(ctx: IssueContext, outcome: AgentOutcome) -> IssueDecision:
    """A review turn fixes the previous pass's findings (if any), then reviews the final HEAD."""
    review = outcome.review
    assert isinstance(review, Review) and ctx.pr is not None
    pr = ctx.pr
    state = ctx.record.workpad.review
    pending: list[SideEffect] = []
    if outcome.committed and not _pushed(ctx, outcome):
        assert outcome.head_after is not None
        pending.append(effects.push_branch(ctx, outcome.head_after, "review_fix"))
    pass_number = passes_in_lineage(state, outcome.head_before) + 1
    # A review turn that fixed code updates the description like a rework does.
    update = effects.update_pr_body(ctx, pr, outcome) if outcome.committed else None
    if update is not None and not ctx.completed(update.idempotency_key):
        pending.append(update)
    comment = effects.upsert_review_comment(ctx, pr, review, outcome, pass_number)
    if not ctx.completed(comment.idempotency_key):
        pending.append(comment)
    if pending:
        decision = wait(ctx, "push the review fixes and persist the review")
        decision.effects.extend(pending)
        return decision
    if needs_fix_pass(review, None, state, ctx.policy.review):
        return dispatch(ctx, "fix the findings of the last review pass")
    return move(ctx, Phase.WAITING_FOR_CHECKS, "review_done", WaitingReason.CHECKS_PENDING)


def _after_rework(ctx: IssueContext, outcome: AgentOutcome) -> IssueDecision:
    summary = outcome.fix_summary
    assert isinstance(summary, FixSummary) and ctx.pr is not None
    pr: PullRequest = ctx.pr
    stale = _stale_rework(ctx, pr, outcome)
    if stale is not None:
        return stale
    pending: list[SideEffect] = []
    if outcome.committed and not _pushed(ctx, outcome):
        assert outcome.head_after is not None
        pending.append(effects.push_branch(ctx, outcome.head_after, "rework"))
    # The finished turn's own answers are already the newest iteration of the history.
    history = ctx.record.thread_history
    this_turn = max((entry.iteration for entry in history), default=None)
    # Only threads the agent was given as work are answered: a thread held for a
    # human, or an untrusted one (review.act_on), named in the summary is ignored,
    # never replied to or resolved.
    given = _given_threads(ctx, pr, outcome)
    bounces = bounce_counts(history, given, before_iteration=this_turn)
    evaluation = evaluate_fix_summary(
        summary,
        given,
        committed=outcome.committed,
        bounces=bounces,
        bounce_threshold=ctx.policy.review.bounce_threshold,
        commits=outcome.commits,
    )
    for reply in evaluation.replies:
        pending.extend(effects.thread_effects(ctx, reply, outcome.run_id))
    if (update := effects.update_pr_body(ctx, pr, outcome)) is not None:
        pending.append(update)
    addressed = {reply.thread_id for reply in evaluation.replies if reply.resolve}
    # GitHub takes review requests from people only: a bot (an App) cannot be asked.
    authors = tuple(t.author.login for t in pr.threads if t.id in addressed and not t.author.is_bot)
    ask = effects.request_review(
        ctx, pr, outcome.head_after or pr.head_sha, outcome.run_id, extra_reviewers=authors
    )
    if ask is not None:
        pending.append(ask)
    pending = [e for e in pending if not ctx.completed(e.idempotency_key)]
    if pending or not _pushed(ctx, outcome):
        decision = wait(
            ctx, "push the rework and answer the review threads" + _ignored_note(evaluation)
        )
        decision.effects.extend(pending)
        return decision
    if outcome.committed and ctx.policy.review.enabled:
        return move(ctx, Phase.REVIEWING, "rework_pushed", next_action="self-review the rework")
    if not outcome.committed and evaluation.escalated:
        return move(
            ctx,
            Phase.WAITING_FOR_HUMAN,
            "review threads need a human decision",
            WaitingReason.HUMAN_APPROVAL_REQUIRED,
            next_action="wait for a human to decide the open review threads",
        )
    return move(ctx, Phase.WAITING_FOR_CHECKS, "rework_done", WaitingReason.CHECKS_PENDING)


def _stale_rework(
    ctx: IssueContext, pr: PullRequest, outcome: AgentOutcome
) -> IssueDecision | None:
    """Discard a finished rework whose reason went away while the agent worked.

    A failing check that passed on a rerun during the turn (or a change request
    withdrawn) leaves nothing to fix: the turn's commits are not pushed, the
    rework cycle is not counted, and the next turn starts from the PR's head.
    A turn given review threads is never discarded: its answers are owed. While
    a check runs again, the result waits for its verdict.
    """
    if not outcome.committed or pr.head_sha != outcome.head_before or outcome.given_threads:
        return None
    if checks_running(pr):
        return wait(ctx, "wait for the running checks before pushing the rework")
    if rework_reason(ctx, pr, pr_feedback(ctx, pr)) is not None:
        return None
    decision = move(
        ctx,
        Phase.WAITING_FOR_CHECKS,
        "the failure that started the rework is gone; the turn's commits are discarded",
        WaitingReason.CHECKS_PENDING,
        next_action="wait for checks on the current head",
    )
    assert decision.transition is not None
    decision.transition = replace(decision.transition, withdraws_rework=True)
    return decision


def _given_threads(
    ctx: IssueContext, pr: PullRequest, outcome: AgentOutcome
) -> tuple[ReviewThread, ...]:
    """The PR's threads the turn was given as work, as recorded when it ended.

    An outcome recorded before the runtime kept that list falls back to the
    threads a turn would be given now.
    """
    if outcome.given_threads is not None:
        given = frozenset(outcome.given_threads)
        return tuple(t for t in pr.threads if t.id in given)
    return threads_to_answer(
        pr.threads, ctx.record.thread_history, ctx.policy.review, ctx.self_login
    )


def _ignored_note(evaluation: FixEvaluation) -> str:
    """Says which fix-summary thread ids are not answered because the turn was not given them."""
    if not evaluation.ignored:
        return ""
    return "; not answering thread(s) the turn was not given: " + ", ".join(evaluation.ignored)
