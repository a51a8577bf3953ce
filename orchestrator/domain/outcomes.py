"""How to read an agent turn's recorded outcome: success, a failure to retry, or a question.

Shared by the planner and by the record reducer so both count failures alike.
"""

from __future__ import annotations

from collections.abc import Iterable

from orchestrator.domain.agent_files.errors import ResultError
from orchestrator.domain.agent_files.fix_summary import FixStatus, FixSummary, FixTargetKind
from orchestrator.domain.agent_files.questions import BlockedQuestion
from orchestrator.domain.agent_files.review import Review
from orchestrator.domain.phases import Phase, WaitingReason
from orchestrator.domain.policy import ReviewPolicy
from orchestrator.domain.review_decisions import bouncing_threads, unproven_fixes
from orchestrator.domain.snapshot import (
    AgentOutcome,
    OutcomeKind,
    ReviewThread,
    StoredRecord,
    ThreadHistoryEntry,
)
from orchestrator.domain.trust import is_self, last_word, thread_trusted
from orchestrator.domain.workpad import WorkpadRecord

_PROCESS_FAILURES = frozenset(
    {
        OutcomeKind.FAILED,
        OutcomeKind.TIMED_OUT,
        OutcomeKind.START_TIMEOUT,
        OutcomeKind.COMMITS_LOST,
    }
)


def fresh_outcome(record: StoredRecord) -> AgentOutcome | None:
    """The last outcome if it belongs to the phase the issue is in now (this visit of it).

    An outcome for another phase, or from an earlier visit, is history: it is never
    acted on again, which is what keeps a late completion from moving the flow.
    """
    outcome = record.last_outcome
    if outcome is None or outcome.phase is not record.phase:
        return None
    return outcome if in_this_visit(outcome, record) else None


def in_this_visit(outcome: AgentOutcome, record: StoredRecord) -> bool:
    """Whether the turn ran in the record's current visit of its phase.

    The visit is named by the time it began, as written by the replica that moved
    the phase, and compared for equality: the replica that ran the turn may keep
    another time. Outcomes recorded before visits were kept fall back to comparing
    the turn's end with the visit's start.
    """
    if outcome.visit is not None:
        return outcome.visit == record.phase_since
    return outcome.finished_at >= record.phase_since


def asked_before_this_visit(outcome: AgentOutcome, record: StoredRecord) -> bool:
    """Whether the turn ran before the record's current visit (the one that led to it)."""
    if outcome.visit is not None:
        return outcome.visit != record.phase_since
    return outcome.finished_at <= record.phase_since


def blocked_question(outcome: AgentOutcome) -> BlockedQuestion | None:
    """The agent's question for a human, when it left a valid ``blocked.md``."""
    return outcome.blocked if isinstance(outcome.blocked, BlockedQuestion) else None


def turn_failure(outcome: AgentOutcome, workpad: WorkpadRecord) -> str | None:
    """Why the turn counts as failed, or None when it succeeded (or asked a question)."""
    if outcome.kind in _PROCESS_FAILURES:
        if outcome.reason:
            return f"agent turn {outcome.kind}: {outcome.reason}"
        return f"agent turn {outcome.kind}"
    if outcome.kind is OutcomeKind.CANCELLED:
        return None
    if outcome.kind is OutcomeKind.PUSH_REFUSED:
        return f"the push was refused: {outcome.reason or 'no reason recorded'}"
    if isinstance(outcome.blocked, ResultError):
        return str(outcome.blocked)
    if isinstance(outcome.blocked, BlockedQuestion):
        return None
    if outcome.phase is Phase.IMPLEMENTING:
        pushed_before = workpad.pr is not None and workpad.pr.head_sha == outcome.head_before
        if not outcome.committed and not (pushed_before and outcome.head_before is not None):
            return "the turn ended without any commit"
    if outcome.phase is Phase.REVIEWING:
        if outcome.review is None:
            return "review.md is missing"
        if not isinstance(outcome.review, Review):
            return str(outcome.review)
        final_head = outcome.head_after or outcome.head_before
        if final_head is not None and outcome.review.head_sha != final_head:
            return f"review.md is for {outcome.review.head_sha[:12]}, not the final head"
    if outcome.contract_error is not None:
        return outcome.contract_error
    if outcome.phase is Phase.REWORK:
        if outcome.fix_summary is None:
            return "fix-summary.json is missing"
        if not isinstance(outcome.fix_summary, FixSummary):
            return str(outcome.fix_summary)
    return None


def failure_reason(outcome: AgentOutcome) -> WaitingReason:
    """The waiting reason when failures exhaust their retries."""
    if outcome.kind in _PROCESS_FAILURES:
        return WaitingReason.TOOL_UNAVAILABLE
    return WaitingReason.MISSING_CONTEXT


def threads_to_answer(
    threads: Iterable[ReviewThread],
    history: Iterable[ThreadHistoryEntry],
    policy: ReviewPolicy,
    self_login: str | None,
) -> tuple[ReviewThread, ...]:
    """Open threads a rework turn must answer in its fix summary.

    Threads whose last word is the daemon's wait for a human, and threads that
    bounced ``review.bounce_threshold`` times are escalated, not fixed again: neither
    is asked of the agent. Threads whose author does not count under
    ``review.act_on`` are only context: never asked of the agent either.
    """
    act_on = policy.act_on
    open_threads = tuple(
        t
        for t in threads
        if not t.is_resolved
        and thread_trusted(t, act_on, self_login)
        and not is_self(last_word(t, act_on, self_login), self_login)
    )
    bouncing = bouncing_threads(tuple(history), open_threads, policy)
    return tuple(t for t in open_threads if t.id not in bouncing)


def rework_contract_error(
    outcome: AgentOutcome,
    required: Iterable[ReviewThread],
    published_head: str | None,
    *,
    prove_fixes: bool = True,
) -> str | None:
    """Why a rework turn's results do not match what it did, or None when they do.

    ``published_head`` is the pull request's head when the turn started: a commit is
    new when the turn ends on another head. With ``prove_fixes`` (the turn is not
    already the continuation of such a miss), a thread marked fixed must be backed
    by a commit of the turn that changes its file; on the continuation an unproven
    claim is no longer a broken contract: it is answered as uncertain.
    """
    required = tuple(required)
    if outcome.kind is not OutcomeKind.SUCCEEDED or outcome.phase is not Phase.REWORK:
        return None
    if isinstance(outcome.blocked, BlockedQuestion):
        return None
    new_commits = outcome.head_after is not None and outcome.head_after != published_head
    summary = outcome.fix_summary
    if summary is None:
        if new_commits:
            assert outcome.head_after is not None
            return (
                f"the turn committed {outcome.head_after[:12]} but left no fix-summary.json; "
                "report what each commit addresses"
            )
        return "the turn made no commit and left no fix-summary.json"
    if not isinstance(summary, FixSummary):
        return None
    missing = [t.id for t in required if summary.for_target(FixTargetKind.THREAD, t.id) is None]
    if missing:
        return "fix-summary.json: no entry for review thread(s) " + ", ".join(missing)
    claimed = [e.target for e in summary.entries if e.status is FixStatus.FIXED]
    if claimed and not new_commits:
        return (
            "fix-summary.json: " + ", ".join(claimed) + " marked fixed, but the turn made no "
            "commit; commit the fix or change the status"
        )
    if prove_fixes and outcome.commits is not None:
        problems = unproven_fixes(summary, required, outcome.commits)
        if problems:
            shown = "; ".join(problems[:5])
            more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
            return (
                f"fix-summary.json: {shown}{more}; name a commit of this turn that changes "
                "the thread's file, or change the status"
            )
    return None
