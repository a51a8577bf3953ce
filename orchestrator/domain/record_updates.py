"""Pure reducers that fold executed actions and finished turns into an issue's stored record.

The executor applies a transition, a side effect's result or a turn's outcome
through these functions, so what the planner expects and what the store keeps
are computed by the same code.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from types import MappingProxyType

from orchestrator.domain.actions import Dispatch, Observe, SideEffect, Transition
from orchestrator.domain.agent_files.fix_summary import FixSummary, FixTargetKind
from orchestrator.domain.outcomes import (
    in_this_visit,
    rework_contract_error,
    threads_to_answer,
    turn_failure,
)
from orchestrator.domain.phases import Phase
from orchestrator.domain.policy import FlowPolicy
from orchestrator.domain.retry import decide_retry
from orchestrator.domain.side_effects import (
    CreatePR,
    MergePR,
    PushBranch,
    UpdatePRBody,
    UpsertReviewComment,
    UpsertWorkpad,
)
from orchestrator.domain.snapshot import (
    AgentOutcome,
    OutcomeKind,
    ReviewThread,
    StoredRecord,
    ThreadHistoryEntry,
)
from orchestrator.domain.workpad import (
    PRRef,
    ReviewState,
    WorkpadRecord,
    WorkpadStatus,
    parse_workpad,
)

# Entries to passive phases that count as a new rework cycle.
_REWORK_ENTRY_FROM = frozenset({Phase.WAITING_FOR_CHECKS, Phase.WAITING_FOR_HUMAN})


def new_record(phase: Phase, now: datetime, branch: str | None = None) -> StoredRecord:
    """The record of an issue claimed now in ``phase``, on ``branch`` when it is named already."""
    return StoredRecord(
        phase=phase, phase_since=now, workpad=WorkpadRecord(phase=phase, branch=branch)
    )


def apply_dispatch(
    record: StoredRecord | None, dispatch: Dispatch, now: datetime, branch: str | None = None
) -> StoredRecord:
    """A dispatch claims an issue that had no record; otherwise the record is unchanged.

    The claim names the issue's branch once (``branch``): recorded in the workpad,
    it stays the branch when the issue's title is edited later.
    """
    if record is None:
        return new_record(dispatch.phase, now, branch)
    return record


def apply_transition(record: StoredRecord, transition: Transition, now: datetime) -> StoredRecord:
    """The record after a phase change; review, rework and merge state are kept."""
    if record.phase is not transition.from_phase:
        raise ValueError(
            f"transition from {transition.from_phase} applied to a record in {record.phase}"
        )
    to_phase = transition.to_phase
    cycles = record.rework_cycles
    if to_phase is Phase.REWORK and record.phase in _REWORK_ENTRY_FROM:
        cycles += 1
    last = record.last_outcome
    if transition.withdraws_rework and record.phase is Phase.REWORK:
        cycles = max(0, cycles - 1)
        if (
            last is not None
            and last.phase is Phase.REWORK
            and last.committed
            and in_this_visit(last, record)
        ):
            # The turn's commits are never pushed: the next turn starts from the PR's head.
            last = replace(last, discarded=True)
    resume = record.resume_phase
    if to_phase is Phase.BLOCKED:
        resume = record.phase
    elif record.phase is Phase.BLOCKED:
        resume = None
    # A blocked issue says why in one line: the failure, question or fact that stopped it.
    detail = " ".join(transition.reason.split())[:300] if to_phase is Phase.BLOCKED else None
    workpad = replace(
        record.workpad.with_phase(to_phase, transition.waiting_reason, now, detail),
        rework_cycles=cycles,
    )
    if transition.next_action is not None:
        workpad = replace(
            workpad,
            observation=replace(workpad.observation, next_intended_action=transition.next_action),
        )
    return replace(
        record,
        phase=to_phase,
        phase_since=now,
        workpad=workpad,
        rework_cycles=cycles,
        waiting_reason=transition.waiting_reason,
        resume_phase=resume,
        retry_due_at=None,
        attempt=0,
        operator_request=None if record.phase is Phase.BLOCKED else record.operator_request,
        last_outcome=last,
    )


@dataclass(frozen=True)
class EffectResult:
    """What the executor learned from one side effect (``data`` holds ids, urls, shas)."""

    ok: bool
    data: Mapping[str, str | int | None] = field(default_factory=lambda: MappingProxyType({}))
    error: str | None = None

    @classmethod
    def done(cls, **data: str | int | None) -> EffectResult:
        """The effect took place; ``data`` says what it made."""
        return cls(ok=True, data=MappingProxyType(dict(data)))

    @classmethod
    def failed(cls, error: str, **data: str | int | None) -> EffectResult:
        """The effect did not take place, and why."""
        return cls(ok=False, error=error, data=MappingProxyType(dict(data)))


def _text(data: Mapping[str, str | int | None], key: str) -> str | None:
    value = data.get(key)
    return value if isinstance(value, str) else None


def _number(data: Mapping[str, str | int | None], key: str) -> int | None:
    value = data.get(key)
    return value if isinstance(value, int) else None


def apply_effect_result(
    record: StoredRecord, effect: SideEffect, result: EffectResult, now: datetime
) -> StoredRecord:
    """The record after a side effect ran: its key marked done, workpad facts updated."""
    workpad = record.workpad
    payload = effect.payload
    if isinstance(payload, MergePR):
        attempted = replace(
            workpad.merge, last_attempted_at=now, last_attempted_head_sha=payload.head_sha
        )
        if result.ok:
            attempted = replace(
                attempted,
                last_merge_commit_sha=_text(result.data, "merge_commit_sha"),
                last_merged_head_sha=attempted.last_attempted_head_sha,
                last_failure_reason=None,
            )
        else:
            attempted = replace(attempted, last_failure_reason=result.error or "merge failed")
        workpad = replace(workpad, merge=attempted)
    if not result.ok:
        lost = result.data.get("commits_lost")
        refused = result.data.get("push_refused")
        kept = replace(record, workpad=workpad)
        if isinstance(payload, PushBranch) and isinstance(lost, str):
            return _push_failed(kept, lost, now, OutcomeKind.COMMITS_LOST)
        if isinstance(payload, PushBranch) and isinstance(refused, str):
            return _push_failed(kept, refused, now, OutcomeKind.PUSH_REFUSED, result.error)
        return kept
    if isinstance(payload, PushBranch):
        workpad = replace(workpad, branch=payload.branch)
        if workpad.pr is not None:
            workpad = replace(workpad, pr=replace(workpad.pr, head_sha=payload.head_sha))
        if payload.purpose == "review_fix":
            workpad = replace(
                workpad, review=replace(workpad.review, last_fixed_head_sha=payload.head_sha)
            )
    elif isinstance(payload, CreatePR):
        number = _number(result.data, "number")
        url = _text(result.data, "url")
        if number is not None and url is not None:
            workpad = replace(
                workpad, pr=PRRef(number=number, url=url, head_sha=_text(result.data, "head_sha"))
            )
        record, workpad = _body_written(record, workpad, result)
    elif isinstance(payload, UpdatePRBody):
        record, workpad = _body_written(record, workpad, result)
    elif isinstance(payload, UpsertReviewComment):
        workpad = replace(workpad, review=_after_review_comment(workpad.review, payload, result))
    elif isinstance(payload, UpsertWorkpad):
        # Mirror exactly what the comment now says, read back from the written body.
        written = parse_workpad(payload.body, marker=payload.heading, now=now)
        mirrored = written.record if written.status is WorkpadStatus.PARSED else None
        record = replace(record, mirrored_workpad=mirrored)
    return replace(
        record,
        workpad=workpad,
        completed_effects=record.completed_effects | {effect.idempotency_key},
    )


def _body_written(
    record: StoredRecord, workpad: WorkpadRecord, result: EffectResult
) -> tuple[StoredRecord, WorkpadRecord]:
    """Keep the description the runtime wrote, and what it changed in the agent's text."""
    body = _text(result.data, "body")
    if body is None:
        return record, workpad
    notes = _text(result.data, "notes")
    return replace(record, pr_body=body), replace(workpad, pr_description_notes=notes)


def _push_failed(
    record: StoredRecord, head: str, now: datetime, kind: OutcomeKind, reason: str | None = None
) -> StoredRecord:
    """The turn whose commit ``head`` was not pushed counts as failed and runs again.

    ``COMMITS_LOST``: its commits existed only in a workspace that is gone (or no
    longer holds them), and the next turn starts from what the remote has.
    ``PUSH_REFUSED``: the runtime would not push what they say (``reason``); they
    stay in the workspace and the next turn is told why, to put them right. Either
    failure counts toward ``orchestration.max_failed_attempts``, with the usual
    backoff from now: it is retried a bounded number of times, never every tick.
    """
    outcome = record.last_outcome
    if outcome is None or outcome.head_after != head or outcome.phase is not record.phase:
        return record
    failed = replace(outcome, kind=kind, reason=reason or outcome.reason, finished_at=now)
    return replace(record, last_outcome=failed, attempt=record.attempt + 1, retry_due_at=None)


def _after_review_comment(
    state: ReviewState, payload: UpsertReviewComment, result: EffectResult
) -> ReviewState:
    comment_id = _number(result.data, "comment_id") or state.comment_id
    return replace(
        state,
        comment_id=comment_id,
        passes_completed=payload.pass_number,
        last_reviewed_head_sha=payload.head_sha,
    )


def apply_observation(record: StoredRecord, observe: Observe) -> StoredRecord:
    """The record with the planner's latest observation in its workpad, and the head it saw."""
    head_seen = observe.head_seen if observe.head_seen is not None else record.head_seen
    return replace(
        record,
        workpad=replace(record.workpad, observation=observe.observation),
        head_seen=head_seen,
    )


def record_outcome(
    record: StoredRecord,
    outcome: AgentOutcome,
    policy: FlowPolicy,
    threads: tuple[ReviewThread, ...] = (),
    self_login: str | None = None,
) -> StoredRecord:
    """The record after a turn ended: outcome kept, failures counted, retry time set.

    A rework turn is checked against the threads it was given (``threads``, as the
    pull request showed them at dispatch): a broken contract is a failed turn that
    is continued at once, without backoff (see ``rework_contract_error``).

    A rework turn's fix summary is added to the thread history (with the threads
    open on the PR) so later iterations can recognise comments that come back.
    """
    if outcome.phase is not record.phase:
        # A late completion for a phase the issue left: keep it for the record only.
        return replace(record, last_outcome=outcome)
    outcome = _checked_rework(record, outcome, policy, threads, self_login)
    failure = turn_failure(outcome, record.workpad)
    attempt = record.attempt + 1 if failure is not None else 0
    retry_due = None
    if failure is not None and outcome.contract_error is None:
        decision = decide_retry(
            failed=True,
            failures=attempt,
            finished_at=outcome.finished_at,
            max_backoff_ms=policy.max_retry_backoff_ms,
            max_failures=policy.max_failed_attempts,
        )
        retry_due = decision.due_at
    history = record.thread_history
    if outcome.phase is Phase.REWORK and isinstance(outcome.fix_summary, FixSummary):
        iteration = 1 + max((e.iteration for e in history), default=0)
        additions = []
        given = frozenset(outcome.given_threads or ())
        for thread in threads:
            # Only the threads the turn was given as work enter the history: not a
            # thread held for a human, nor one whose author does not count (act_on).
            if thread.id not in given:
                continue
            entry = outcome.fix_summary.for_target(FixTargetKind.THREAD, thread.id)
            additions.append(
                ThreadHistoryEntry(
                    iteration=iteration,
                    thread_id=thread.id,
                    path=thread.path,
                    body=thread.body,
                    status=entry.status if entry is not None else None,
                    author=thread.author.login,
                    author_is_bot=thread.author.is_bot,
                )
            )
        history = history + tuple(additions)
    return replace(
        record,
        last_outcome=outcome,
        attempt=attempt,
        retry_due_at=retry_due,
        thread_history=history,
    )


def _checked_rework(
    record: StoredRecord,
    outcome: AgentOutcome,
    policy: FlowPolicy,
    threads: tuple[ReviewThread, ...],
    self_login: str | None,
) -> AgentOutcome:
    """A rework outcome measured against the published head and the threads it had to answer.

    Commits an earlier turn left unpublished in the workspace count as this turn's
    work: ``head_before`` becomes the pull request's head, so they are pushed.
    """
    if outcome.phase is not Phase.REWORK:
        return outcome
    published = record.workpad.pr.head_sha if record.workpad.pr is not None else None
    if published is not None and outcome.head_after is not None and not outcome.committed:
        outcome = replace(outcome, head_before=published)
    required = threads_to_answer(threads, record.thread_history, policy.review, self_login)
    # A turn continuing a broken contract had its one chance to back its "fixed"
    # claims: an unproven claim is now answered as uncertain, not continued again.
    previous = record.last_outcome
    continued = (
        record.attempt > 0
        and previous is not None
        and previous.phase is Phase.REWORK
        and previous.contract_error is not None
    )
    error = rework_contract_error(
        outcome, required, published or outcome.head_before, prove_fixes=not continued
    )
    return replace(outcome, contract_error=error, given_threads=tuple(t.id for t in required))
