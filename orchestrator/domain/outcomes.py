"""How to read an agent turn's recorded outcome: success, a failure to retry, or a question.

Shared by the planner and by the record reducer so both count failures alike.
"""

from __future__ import annotations

from orchestrator.domain.phases import Phase, WaitingReason
from orchestrator.domain.results import BlockedQuestion, FixSummary, ResultError, Review
from orchestrator.domain.snapshot import AgentOutcome, OutcomeKind, StoredRecord
from orchestrator.domain.workpad import WorkpadRecord

_PROCESS_FAILURES = frozenset(
    {OutcomeKind.FAILED, OutcomeKind.TIMED_OUT, OutcomeKind.START_TIMEOUT}
)


def fresh_outcome(record: StoredRecord) -> AgentOutcome | None:
    """The last outcome if it belongs to the phase the issue is in now (this visit of it).

    An outcome for another phase, or from an earlier visit, is history: it is never
    acted on again, which is what keeps a late completion from moving the flow.
    """
    outcome = record.last_outcome
    if outcome is None or outcome.phase is not record.phase:
        return None
    if outcome.finished_at < record.phase_since:
        return None
    return outcome


def blocked_question(outcome: AgentOutcome) -> BlockedQuestion | None:
    """The agent's question for a human, when it left a valid ``blocked.md``."""
    return outcome.blocked if isinstance(outcome.blocked, BlockedQuestion) else None


def turn_failure(outcome: AgentOutcome, workpad: WorkpadRecord) -> str | None:
    """Why the turn counts as failed, or None when it succeeded (or asked a question)."""
    if outcome.kind in _PROCESS_FAILURES:
        return f"agent turn {outcome.kind}"
    if outcome.kind is OutcomeKind.CANCELLED:
        return None
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
