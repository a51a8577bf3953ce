"""The planner's rules as a table: one named row per rule, each run through plan().

Every allowed transition of the phase table is taken by at least one row.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import timedelta

import pytest

from orchestrator.domain.actions import SideEffectKind, idempotency_key
from orchestrator.domain.agent_files.errors import ResultError
from orchestrator.domain.agent_files.fix_summary import FixStatus
from orchestrator.domain.agent_files.questions import BlockedQuestion, PRDescription
from orchestrator.domain.phases import ALLOWED, Phase, RolloutMode, WaitingReason
from orchestrator.domain.policy import FlowPolicy, MergeMode, PRPolicy, ReviewActOn, ReviewPolicy
from orchestrator.domain.snapshot import (
    ChecksSummary,
    IssueSnapshot,
    KillSwitches,
    OperatorRequest,
    OutcomeKind,
    PRReview,
    PRStatus,
    ReviewVerdict,
    RunningAgent,
    ThreadComment,
    ThreadHistoryEntry,
)
from orchestrator.domain.workpad import MergeState, ReviewState
from tests.domain.builders import (
    EARLIER,
    HEAD_A,
    HEAD_B,
    HEAD_C,
    HUMAN,
    NOW,
    OWNED,
    READER,
    REVIEW_BOT,
    SELF_ACTOR,
    approved_issue,
    cancels,
    checks,
    dispatches,
    effects_of,
    fix_summary,
    human_comment,
    make_issue,
    make_item,
    make_outcome,
    make_policy,
    make_pr,
    make_review,
    make_snapshot,
    observes,
    ref,
    reviewed,
    run_plan,
    running,
    thread,
    transitions,
)

K = SideEffectKind
ANY = object()


@dataclass(frozen=True)
class Case:
    """One rule: a situation and what the planner must (and must not) do about it."""

    name: str
    item: Callable[[], IssueSnapshot]
    to: Phase | None = None
    dispatch: Phase | None = None
    effects: frozenset[SideEffectKind] = frozenset()
    no_effects: frozenset[SideEffectKind] = frozenset()
    cancel: bool = False
    waiting: object = ANY
    policy: Callable[[], FlowPolicy] = make_policy
    running: tuple[RunningAgent, ...] = ()
    switches: KillSwitches = field(default_factory=KillSwitches)


def review_key(head: str = HEAD_A, run_id: str = "run-1") -> str:
    return idempotency_key(ref(), K.UPSERT_REVIEW_COMMENT, f"{head}:{run_id}")


def thread_keys(thread_id: str = "T1", run_id: str = "run-1") -> frozenset[str]:
    target = f"{thread_id}:{run_id}"
    return frozenset(
        {
            idempotency_key(ref(), K.REPLY_THREAD, target),
            idempotency_key(ref(), K.RESOLVE_THREAD, target),
        }
    )


def asked_again(head: str = HEAD_A, run_id: str = "run-1") -> frozenset[str]:
    return frozenset({idempotency_key(ref(), K.REQUEST_REVIEW, f"{head}:{run_id}")})


def committed(phase: Phase, **overrides: object) -> object:
    values: dict[str, object] = {"head_before": HEAD_A, "head_after": HEAD_B}
    values.update(overrides)
    return make_outcome(phase, **values)


def question() -> BlockedQuestion:
    return BlockedQuestion(WaitingReason.MISSING_CONTEXT, "Which API?", "Which API?")


def blocked_item(reason: WaitingReason, **overrides: object) -> IssueSnapshot:
    values: dict[str, object] = {"waiting_reason": reason, "resume_phase": Phase.WAITING_FOR_CHECKS}
    values.update(overrides)
    issue = values.pop("issue", None)
    pr = values.pop("pr", None)
    return make_item(Phase.BLOCKED, issue=issue, pr=pr, **values)  # type: ignore[arg-type]


def operator(to_phase: Phase | None = None) -> OperatorRequest:
    return OperatorRequest(requested_at=NOW - timedelta(minutes=1), to_phase=to_phase)


def no_review() -> FlowPolicy:
    return make_policy(review=ReviewPolicy(enabled=False))


def bounced_history() -> tuple[ThreadHistoryEntry, ...]:
    return tuple(
        ThreadHistoryEntry(
            i,
            f"old-{i}",
            "app/core.py",
            "Please handle the empty list.",
            FixStatus.FIXED,
            author=REVIEW_BOT.login,
            author_is_bot=True,
        )
        for i in (1, 2)
    )


MERGING_RECORD = {"phase_since": EARLIER}
CASES = [
    # -- candidates and claiming
    Case("new owned issue is claimed", lambda: make_item(None), dispatch=Phase.IMPLEMENTING),
    Case(
        "unowned issue is not claimed",
        lambda: make_item(None, issue=make_issue(labels=frozenset())),
        no_effects=frozenset(K),
    ),
    Case(
        "closed issue without a record is ignored",
        lambda: make_item(None, issue=make_issue(is_open=False)),
        no_effects=frozenset(K),
    ),
    Case(
        "new issue under a kill switch is not claimed",
        lambda: make_item(None),
        switches=KillSwitches(local_file_active=True),
        waiting=WaitingReason.KILL_SWITCH_ACTIVE,
        no_effects=frozenset(K),
    ),
    Case(
        "observe mode only writes the workpad of a new issue",
        lambda: make_item(None),
        policy=lambda: make_policy(rollout_mode=RolloutMode.OBSERVE),
        effects=frozenset({K.UPSERT_WORKPAD}),
        no_effects=frozenset(K) - {K.UPSERT_WORKPAD},
        waiting=WaitingReason.OBSERVE_ONLY,
    ),
    # -- implementing
    Case(
        "implementing without an outcome runs a turn",
        lambda: make_item(Phase.IMPLEMENTING, no_pr=True, workpad={"pr": None}),
        dispatch=Phase.IMPLEMENTING,
    ),
    Case(
        "a running turn is left alone",
        lambda: make_item(Phase.IMPLEMENTING, no_pr=True),
        running=(running(Phase.IMPLEMENTING),),
    ),
    Case(
        "a running turn of a phase the issue left is cancelled",
        lambda: make_item(Phase.REWORK),
        running=(running(Phase.IMPLEMENTING),),
        cancel=True,
    ),
    Case(
        "a running agent in a passive phase is cancelled",
        lambda: make_item(Phase.WAITING_FOR_CHECKS, pr=make_pr(checks=checks(state="pending"))),
        running=(running(Phase.REWORK),),
        cancel=True,
    ),
    Case(
        "implementing commits are pushed and a pull request opened",
        lambda: make_item(
            Phase.IMPLEMENTING,
            no_pr=True,
            workpad={"pr": None},
            last_outcome=committed(Phase.IMPLEMENTING),
        ),
        effects=frozenset({K.PUSH_BRANCH, K.CREATE_PR}),
    ),
    Case(
        "implementing moves to reviewing once the pull request shows the pushed head",
        lambda: make_item(
            Phase.IMPLEMENTING,
            pr=make_pr(HEAD_B),
            last_outcome=committed(Phase.IMPLEMENTING),
        ),
        to=Phase.REVIEWING,
        no_effects=frozenset({K.PUSH_BRANCH, K.CREATE_PR}),
    ),
    Case(
        "implementing goes to waiting_for_checks when review is disabled",
        lambda: make_item(
            Phase.IMPLEMENTING, pr=make_pr(HEAD_B), last_outcome=committed(Phase.IMPLEMENTING)
        ),
        policy=no_review,
        to=Phase.WAITING_FOR_CHECKS,
        waiting=WaitingReason.CHECKS_PENDING,
    ),
    Case(
        "implementing turn without any commit waits for its retry",
        lambda: make_item(
            Phase.IMPLEMENTING,
            no_pr=True,
            workpad={"pr": None},
            attempt=1,
            retry_due_at=NOW + timedelta(seconds=5),
            last_outcome=make_outcome(Phase.IMPLEMENTING),
        ),
        no_effects=frozenset({K.PUSH_BRANCH, K.CREATE_PR}),
    ),
    Case(
        "a failed turn is retried once its backoff passed",
        lambda: make_item(
            Phase.IMPLEMENTING,
            no_pr=True,
            attempt=2,
            last_outcome=make_outcome(Phase.IMPLEMENTING, kind=OutcomeKind.FAILED),
        ),
        dispatch=Phase.IMPLEMENTING,
    ),
    Case(
        "a failed turn waits for its backoff",
        lambda: make_item(
            Phase.IMPLEMENTING,
            no_pr=True,
            attempt=1,
            retry_due_at=NOW + timedelta(minutes=5),
            last_outcome=make_outcome(Phase.IMPLEMENTING, kind=OutcomeKind.TIMED_OUT),
        ),
    ),
    Case(
        "too many failed turns block the issue",
        lambda: make_item(
            Phase.IMPLEMENTING,
            no_pr=True,
            attempt=5,
            last_outcome=make_outcome(Phase.IMPLEMENTING, kind=OutcomeKind.START_TIMEOUT),
        ),
        to=Phase.BLOCKED,
        waiting=WaitingReason.TOOL_UNAVAILABLE,
    ),
    Case(
        "an agent's question blocks the issue and is posted",
        lambda: make_item(
            Phase.IMPLEMENTING,
            no_pr=True,
            last_outcome=make_outcome(Phase.IMPLEMENTING, blocked=question()),
        ),
        to=Phase.BLOCKED,
        effects=frozenset({K.POST_COMMENT}),
        waiting=WaitingReason.MISSING_CONTEXT,
    ),
    Case(
        "a head moved during the turn blocks without pushing",
        lambda: make_item(
            Phase.REWORK,
            pr=make_pr(HEAD_C),
            last_outcome=committed(Phase.REWORK, fix_summary=fix_summary()),
        ),
        to=Phase.BLOCKED,
        effects=frozenset({K.POST_COMMENT}),
        no_effects=frozenset({K.PUSH_BRANCH, K.REPLY_THREAD}),
    ),
    Case(
        "a cancelled turn continues",
        lambda: make_item(
            Phase.REWORK, last_outcome=make_outcome(Phase.REWORK, kind=OutcomeKind.CANCELLED)
        ),
        dispatch=Phase.REWORK,
    ),
    Case(
        "a pull request merged during an agent phase cancels the turn and moves on",
        lambda: make_item(Phase.IMPLEMENTING, pr=make_pr(status=PRStatus.MERGED)),
        running=(running(Phase.IMPLEMENTING),),
        cancel=True,
        to=Phase.WAITING_FOR_CHECKS,
    ),
    Case(
        "a pull request closed during an agent phase blocks",
        lambda: make_item(Phase.REWORK, pr=make_pr(status=PRStatus.CLOSED)),
        to=Phase.BLOCKED,
        waiting=WaitingReason.MISSING_CONTEXT,
    ),
    Case(
        "a late completion for a phase the issue left is not acted on",
        lambda: make_item(
            Phase.WAITING_FOR_CHECKS,
            issue=approved_issue(),
            last_outcome=committed(Phase.IMPLEMENTING),
        ),
        to=Phase.READY_TO_MERGE,
        no_effects=frozenset({K.PUSH_BRANCH, K.CREATE_PR}),
    ),
    Case(
        "an outcome from an earlier visit of the phase is history",
        lambda: make_item(
            Phase.REWORK,
            phase_since=NOW - timedelta(minutes=1),
            last_outcome=committed(Phase.REWORK, fix_summary=fix_summary(("T1", FixStatus.FIXED))),
        ),
        dispatch=Phase.REWORK,
        no_effects=frozenset({K.PUSH_BRANCH, K.REPLY_THREAD}),
    ),
    # -- reviewing
    Case(
        "a review is persisted before anything else",
        lambda: make_item(
            Phase.REVIEWING,
            workpad={"review": ReviewState()},
            last_outcome=make_outcome(Phase.REVIEWING, review=make_review(HEAD_A, "P2")),
        ),
        effects=frozenset({K.UPSERT_REVIEW_COMMENT}),
    ),
    Case(
        "a persisted clean review moves to waiting_for_checks",
        lambda: make_item(
            Phase.REVIEWING,
            completed_effects=frozenset({review_key()}),
            last_outcome=make_outcome(Phase.REVIEWING, review=make_review(HEAD_A, "P2")),
        ),
        to=Phase.WAITING_FOR_CHECKS,
        waiting=WaitingReason.CHECKS_PENDING,
    ),
    Case(
        "review fixes are pushed and the review of the new head persisted",
        lambda: make_item(
            Phase.REVIEWING,
            last_outcome=committed(Phase.REVIEWING, review=make_review(HEAD_B, "P1")),
        ),
        effects=frozenset({K.PUSH_BRANCH, K.UPSERT_REVIEW_COMMENT}),
    ),
    Case(
        "findings left after a pass get another pass",
        lambda: make_item(
            Phase.REVIEWING,
            pr=make_pr(HEAD_B),
            workpad={"review": reviewed(HEAD_B, passes=1, last_fixed_head_sha=HEAD_B)},
            completed_effects=frozenset({review_key(HEAD_B)}),
            last_outcome=committed(Phase.REVIEWING, review=make_review(HEAD_B, "P1")),
        ),
        dispatch=Phase.REVIEWING,
    ),
    Case(
        "findings left after the last pass go to waiting_for_checks",
        lambda: make_item(
            Phase.REVIEWING,
            pr=make_pr(HEAD_B),
            workpad={"review": reviewed(HEAD_B, passes=2, last_fixed_head_sha=HEAD_B)},
            completed_effects=frozenset({review_key(HEAD_B)}),
            last_outcome=committed(Phase.REVIEWING, review=make_review(HEAD_B, "P1")),
        ),
        to=Phase.WAITING_FOR_CHECKS,
    ),
    Case(
        "a review of another head than the final one is a failed turn",
        lambda: make_item(
            Phase.REVIEWING,
            attempt=1,
            last_outcome=committed(Phase.REVIEWING, review=make_review(HEAD_A)),
        ),
        dispatch=Phase.REVIEWING,
        no_effects=frozenset({K.UPSERT_REVIEW_COMMENT, K.PUSH_BRANCH}),
    ),
    Case(
        "unaddressed severe findings get a fix pass",
        lambda: make_item(
            Phase.REVIEWING,
            completed_effects=frozenset({review_key()}),
            last_outcome=make_outcome(Phase.REVIEWING, review=make_review(HEAD_A, "P0")),
        ),
        dispatch=Phase.REVIEWING,
    ),
    Case(
        "an invalid review file is a failed turn",
        lambda: make_item(
            Phase.REVIEWING,
            attempt=1,
            last_outcome=make_outcome(
                Phase.REVIEWING, review=ResultError("review.md", 1, None, "bad")
            ),
        ),
        dispatch=Phase.REVIEWING,
        no_effects=frozenset({K.UPSERT_REVIEW_COMMENT}),
    ),
    Case(
        "an already reviewed head leaves reviewing",
        lambda: make_item(Phase.REVIEWING),
        to=Phase.WAITING_FOR_CHECKS,
    ),
    Case(
        "an unreviewed head gets a review turn",
        lambda: make_item(Phase.REVIEWING, pr=make_pr(HEAD_B)),
        dispatch=Phase.REVIEWING,
    ),
    Case(
        "reviewing without any pull request blocks",
        lambda: make_item(Phase.REVIEWING, no_pr=True, workpad={"pr": None}),
        to=Phase.BLOCKED,
        waiting=WaitingReason.MISSING_CONTEXT,
    ),
    Case(
        "reviewing with review disabled moves on",
        lambda: make_item(Phase.REVIEWING),
        policy=no_review,
        to=Phase.WAITING_FOR_CHECKS,
    ),
    Case(
        "a question during review blocks",
        lambda: make_item(
            Phase.REVIEWING, last_outcome=make_outcome(Phase.REVIEWING, blocked=question())
        ),
        to=Phase.BLOCKED,
    ),
    # -- waiting_for_checks
    Case(
        "pending checks keep waiting",
        lambda: make_item(Phase.WAITING_FOR_CHECKS, pr=make_pr(checks=checks(state="pending"))),
        waiting=WaitingReason.CHECKS_PENDING,
    ),
    Case(
        "failing checks enter rework",
        lambda: make_item(Phase.WAITING_FOR_CHECKS, pr=make_pr(checks=checks(state="failing"))),
        to=Phase.REWORK,
    ),
    Case(
        "the rework limit blocks instead of another rework",
        lambda: make_item(
            Phase.WAITING_FOR_CHECKS,
            rework_cycles=3,
            pr=make_pr(checks=checks(state="failing")),
        ),
        to=Phase.BLOCKED,
        waiting=WaitingReason.REWORK_LIMIT_EXCEEDED,
    ),
    Case(
        "a new human review thread enters rework",
        lambda: make_item(Phase.WAITING_FOR_CHECKS, pr=make_pr(threads=(thread(),))),
        to=Phase.REWORK,
    ),
    Case(
        "a thread we answered last waits for a human",
        lambda: make_item(
            Phase.WAITING_FOR_CHECKS,
            issue=approved_issue(),
            pr=make_pr(threads=(thread(last_comment_author=SELF_ACTOR),)),
        ),
        to=Phase.WAITING_FOR_HUMAN,
        waiting=WaitingReason.HUMAN_APPROVAL_REQUIRED,
    ),
    Case(
        "a bouncing comment goes to a human with a reply",
        lambda: make_item(
            Phase.WAITING_FOR_CHECKS,
            thread_history=bounced_history(),
            pr=make_pr(threads=(thread("T9", author=REVIEW_BOT),)),
        ),
        policy=lambda: make_policy(review=ReviewPolicy(act_on=ReviewActOn.ANYONE)),
        to=Phase.WAITING_FOR_HUMAN,
        effects=frozenset({K.REPLY_THREAD}),
    ),
    Case(
        "a person asking again for what was fixed twice is a new request, not a bounce",
        lambda: make_item(
            Phase.WAITING_FOR_CHECKS,
            thread_history=bounced_history(),
            pr=make_pr(threads=(thread("T9", author=HUMAN),)),
        ),
        to=Phase.REWORK,
    ),
    Case(
        "a bouncing comment escalated once is not escalated again",
        lambda: make_item(
            Phase.WAITING_FOR_HUMAN,
            thread_history=bounced_history(),
            pr=make_pr(
                threads=(
                    thread(
                        "T9",
                        author=REVIEW_BOT,
                        comments=(
                            ThreadComment(REVIEW_BOT, "Please handle the empty list.", EARLIER),
                            ThreadComment(
                                SELF_ACTOR, "Needs a human decision: it came back.", EARLIER
                            ),
                            ThreadComment(REVIEW_BOT, "Still applies.", EARLIER),
                        ),
                    ),
                )
            ),
        ),
        policy=lambda: make_policy(review=ReviewPolicy(act_on=ReviewActOn.ANYONE)),
        waiting=WaitingReason.HUMAN_APPROVAL_REQUIRED,
    ),
    Case(
        "merge conflicts enter rework",
        lambda: make_item(Phase.WAITING_FOR_CHECKS, pr=make_pr(mergeable=False)),
        to=Phase.REWORK,
    ),
    Case(
        "unknown mergeability waits",
        lambda: make_item(Phase.WAITING_FOR_CHECKS, pr=make_pr(mergeable=None)),
    ),
    Case(
        "green checks without approval wait for a human",
        lambda: make_item(Phase.WAITING_FOR_CHECKS),
        to=Phase.WAITING_FOR_HUMAN,
        waiting=WaitingReason.HUMAN_APPROVAL_REQUIRED,
    ),
    Case(
        "green checks with approval are ready to merge",
        lambda: make_item(Phase.WAITING_FOR_CHECKS, issue=approved_issue()),
        to=Phase.READY_TO_MERGE,
    ),
    Case(
        "a head pushed by someone else is reviewed again",
        lambda: make_item(Phase.WAITING_FOR_CHECKS, pr=make_pr(HEAD_C, checks=checks(HEAD_C))),
        to=Phase.REVIEWING,
    ),
    Case(
        "a moved head without review only needs its checks",
        lambda: make_item(
            Phase.WAITING_FOR_CHECKS,
            issue=approved_issue(),
            pr=make_pr(HEAD_C, checks=checks(HEAD_C)),
        ),
        policy=no_review,
        to=Phase.READY_TO_MERGE,
    ),
    Case(
        "an unreviewed fix head after the last pass needs a human",
        lambda: make_item(
            Phase.WAITING_FOR_CHECKS,
            issue=approved_issue(),
            pr=make_pr(HEAD_B, checks=checks(HEAD_B)),
            workpad={"review": reviewed(HEAD_A, passes=2, last_fixed_head_sha=HEAD_B)},
        ),
        to=Phase.WAITING_FOR_HUMAN,
    ),
    Case(
        "a pull request merged outside is confirmed",
        lambda: make_item(Phase.WAITING_FOR_CHECKS, pr=make_pr(status=PRStatus.MERGED)),
        to=Phase.READY_TO_MERGE,
    ),
    Case(
        "a pull request closed while waiting blocks",
        lambda: make_item(Phase.WAITING_FOR_CHECKS, pr=make_pr(status=PRStatus.CLOSED)),
        to=Phase.BLOCKED,
    ),
    Case(
        "waiting without any pull request blocks",
        lambda: make_item(Phase.WAITING_FOR_CHECKS, no_pr=True, workpad={"pr": None}),
        to=Phase.BLOCKED,
    ),
    Case(
        "a pull request missing from this snapshot is waited for",
        lambda: make_item(Phase.WAITING_FOR_CHECKS, no_pr=True),
    ),
    # -- waiting_for_human
    Case(
        "approval moves to ready_to_merge",
        lambda: make_item(Phase.WAITING_FOR_HUMAN, issue=approved_issue()),
        to=Phase.READY_TO_MERGE,
    ),
    Case(
        "changes requested on the current head enter rework",
        lambda: make_item(
            Phase.WAITING_FOR_HUMAN,
            pr=make_pr(
                reviews=(PRReview(HUMAN, ReviewVerdict.CHANGES_REQUESTED, HEAD_A, EARLIER),)
            ),
        ),
        to=Phase.REWORK,
    ),
    Case(
        "a writer's change request on an older head is no rework but still blocks the merge",
        lambda: make_item(
            Phase.WAITING_FOR_HUMAN,
            issue=approved_issue(),
            pr=make_pr(
                reviews=(PRReview(HUMAN, ReviewVerdict.CHANGES_REQUESTED, HEAD_C, EARLIER),)
            ),
        ),
        to=None,
    ),
    Case(
        "a reader's change request does not block the merge",
        lambda: make_item(
            Phase.WAITING_FOR_HUMAN,
            issue=approved_issue(),
            pr=make_pr(
                reviews=(PRReview(READER, ReviewVerdict.CHANGES_REQUESTED, HEAD_A, EARLIER),)
            ),
        ),
        to=Phase.READY_TO_MERGE,
    ),
    Case(
        "restarted checks go back to waiting_for_checks",
        lambda: make_item(Phase.WAITING_FOR_HUMAN, pr=make_pr(checks=checks(state="pending"))),
        to=Phase.WAITING_FOR_CHECKS,
        waiting=WaitingReason.CHECKS_PENDING,
    ),
    Case(
        "a new head while waiting for a human is reviewed",
        lambda: make_item(Phase.WAITING_FOR_HUMAN, pr=make_pr(HEAD_C, checks=checks(HEAD_C))),
        to=Phase.REVIEWING,
    ),
    Case(
        "a pull request closed while waiting for a human blocks",
        lambda: make_item(Phase.WAITING_FOR_HUMAN, pr=make_pr(status=PRStatus.CLOSED)),
        to=Phase.BLOCKED,
    ),
    Case(
        "no approval keeps waiting and shows the state label",
        lambda: make_item(Phase.WAITING_FOR_HUMAN),
        waiting=WaitingReason.HUMAN_APPROVAL_REQUIRED,
        effects=frozenset({K.SET_LABELS}),
    ),
    # -- rework
    Case("rework runs a turn", lambda: make_item(Phase.REWORK), dispatch=Phase.REWORK),
    Case(
        "rework pushes and answers the threads",
        lambda: make_item(
            Phase.REWORK,
            pr=make_pr(threads=(thread("T1"),)),
            last_outcome=committed(Phase.REWORK, fix_summary=fix_summary(("T1", FixStatus.FIXED))),
        ),
        effects=frozenset({K.PUSH_BRANCH, K.REPLY_THREAD, K.RESOLVE_THREAD}),
    ),
    Case(
        "pushed rework is reviewed",
        lambda: make_item(
            Phase.REWORK,
            pr=make_pr(HEAD_B, threads=(thread("T1"),)),
            completed_effects=thread_keys() | asked_again(HEAD_B),
            last_outcome=committed(Phase.REWORK, fix_summary=fix_summary(("T1", FixStatus.FIXED))),
        ),
        to=Phase.REVIEWING,
    ),
    Case(
        "rework without commits goes back to waiting_for_checks",
        lambda: make_item(
            Phase.REWORK,
            pr=make_pr(threads=(thread("T1"),)),
            completed_effects=thread_keys() | asked_again(),
            last_outcome=make_outcome(
                Phase.REWORK, fix_summary=fix_summary(("T1", FixStatus.DISMISSED))
            ),
        ),
        to=Phase.WAITING_FOR_CHECKS,
    ),
    Case(
        "rework leaving only undecided threads waits for a human",
        lambda: make_item(
            Phase.REWORK,
            pr=make_pr(threads=(thread("T1"),)),
            completed_effects=thread_keys(),
            last_outcome=make_outcome(
                Phase.REWORK, fix_summary=fix_summary(("T1", FixStatus.UNCERTAIN))
            ),
        ),
        to=Phase.WAITING_FOR_HUMAN,
        waiting=WaitingReason.HUMAN_APPROVAL_REQUIRED,
    ),
    Case(
        "rework updates the description and asks reviewers again",
        lambda: make_item(
            Phase.REWORK,
            pr=make_pr(checks=ChecksSummary(HEAD_A, failing=frozenset({"ci"}))),
            last_outcome=committed(
                Phase.REWORK,
                fix_summary=fix_summary(),
                pr_description=PRDescription("## Summary\nFixed."),
            ),
        ),
        policy=lambda: make_policy(pr=PRPolicy(reviewers=("bob",))),
        effects=frozenset({K.PUSH_BRANCH, K.UPDATE_PR_BODY, K.REQUEST_REVIEW}),
    ),
    Case(
        "a rework whose failing check passed meanwhile is discarded, not pushed",
        lambda: make_item(
            Phase.REWORK,
            last_outcome=committed(Phase.REWORK, fix_summary=fix_summary()),
        ),
        to=Phase.WAITING_FOR_CHECKS,
        waiting=WaitingReason.CHECKS_PENDING,
    ),
    Case(
        "a rework waits for a rerunning check before pushing",
        lambda: make_item(
            Phase.REWORK,
            pr=make_pr(checks=ChecksSummary(HEAD_A, pending=frozenset({"ci"}))),
            last_outcome=committed(Phase.REWORK, fix_summary=fix_summary()),
        ),
    ),
    Case(
        "a rework contract miss is continued once at once",
        lambda: make_item(
            Phase.REWORK,
            attempt=1,
            last_outcome=make_outcome(Phase.REWORK, contract_error="T1 marked fixed, no commit"),
        ),
        dispatch=Phase.REWORK,
    ),
    Case(
        "a second rework contract miss blocks with a comment",
        lambda: make_item(
            Phase.REWORK,
            attempt=2,
            last_outcome=make_outcome(Phase.REWORK, contract_error="T1 marked fixed, no commit"),
        ),
        to=Phase.BLOCKED,
        waiting=WaitingReason.MISSING_CONTEXT,
        effects=frozenset({K.POST_COMMENT}),
    ),
    Case(
        "failing checks wait while another check runs",
        lambda: make_item(
            Phase.WAITING_FOR_CHECKS,
            pr=make_pr(
                checks=ChecksSummary(HEAD_A, failing=frozenset({"ci"}), pending=frozenset({"lint"}))
            ),
        ),
        waiting=WaitingReason.CHECKS_PENDING,
    ),
    Case(
        "the rework limit blocks with a summary comment",
        lambda: make_item(
            Phase.WAITING_FOR_CHECKS, pr=make_pr(checks=checks(state="failing")), rework_cycles=3
        ),
        to=Phase.BLOCKED,
        waiting=WaitingReason.REWORK_LIMIT_EXCEEDED,
        effects=frozenset({K.POST_COMMENT}),
    ),
    Case(
        "a missing fix summary is a failed turn",
        lambda: make_item(Phase.REWORK, attempt=1, last_outcome=make_outcome(Phase.REWORK)),
        dispatch=Phase.REWORK,
    ),
    Case(
        "a question during rework blocks",
        lambda: make_item(
            Phase.REWORK, last_outcome=make_outcome(Phase.REWORK, blocked=question())
        ),
        to=Phase.BLOCKED,
    ),
    # -- ready_to_merge
    Case(
        "merge mode with every gate passing moves to merging",
        lambda: make_item(Phase.READY_TO_MERGE, issue=approved_issue()),
        to=Phase.MERGING,
    ),
    Case(
        "mutate mode never merges",
        lambda: make_item(Phase.READY_TO_MERGE, issue=approved_issue()),
        policy=lambda: make_policy(rollout_mode=RolloutMode.MUTATE),
        no_effects=frozenset({K.MERGE_PR}),
    ),
    Case(
        "a mode label lowers merge to mutate for one issue",
        lambda: make_item(
            Phase.READY_TO_MERGE,
            issue=replace(
                approved_issue(), labels=OWNED | {"state:merging", "orchestrator:mutate"}
            ),
        ),
        no_effects=frozenset({K.MERGE_PR}),
    ),
    Case(
        "external merge mode waits for someone else to merge",
        lambda: make_item(Phase.READY_TO_MERGE, issue=approved_issue()),
        policy=lambda: make_policy(merge=replace(make_policy().merge, mode=MergeMode.EXTERNAL)),
    ),
    Case(
        "a passive ready_to_merge waits for someone else to merge",
        lambda: make_item(Phase.READY_TO_MERGE, issue=approved_issue()),
        policy=lambda: make_policy(
            passive_phases=make_policy().passive_phases | {Phase.READY_TO_MERGE}
        ),
    ),
    Case(
        "a withdrawn approval goes back to waiting_for_human",
        lambda: make_item(Phase.READY_TO_MERGE),
        to=Phase.WAITING_FOR_HUMAN,
    ),
    Case(
        "failing checks before merging go back to waiting_for_checks",
        lambda: make_item(
            Phase.READY_TO_MERGE, issue=approved_issue(), pr=make_pr(checks=checks(state="failing"))
        ),
        to=Phase.WAITING_FOR_CHECKS,
    ),
    Case(
        "a moved head before merging goes back to reviewing",
        lambda: make_item(
            Phase.READY_TO_MERGE, issue=approved_issue(), pr=make_pr(HEAD_C, checks=checks(HEAD_C))
        ),
        to=Phase.REVIEWING,
    ),
    Case(
        "a pull request closed before merging blocks",
        lambda: make_item(Phase.READY_TO_MERGE, pr=make_pr(status=PRStatus.CLOSED)),
        to=Phase.BLOCKED,
    ),
    Case(
        "a pull request merged outside moves to merging to be confirmed",
        lambda: make_item(Phase.READY_TO_MERGE, pr=make_pr(status=PRStatus.MERGED)),
        to=Phase.MERGING,
    ),
    # -- merging
    Case(
        "merging asks for the merge of the expected head",
        lambda: make_item(Phase.MERGING, issue=approved_issue()),
        effects=frozenset({K.MERGE_PR}),
    ),
    Case(
        "an asked merge waits for its confirmation",
        lambda: make_item(
            Phase.MERGING,
            issue=approved_issue(),
            completed_effects=frozenset({idempotency_key(ref(), K.MERGE_PR, HEAD_A)}),
        ),
        no_effects=frozenset({K.MERGE_PR}),
    ),
    Case(
        "a confirmed merge closes the issue before done",
        lambda: make_item(
            Phase.MERGING, pr=make_pr(status=PRStatus.MERGED, merge_commit_sha=HEAD_C)
        ),
        effects=frozenset({K.CLOSE_ISSUE}),
    ),
    Case(
        "a confirmed merge with the issue closed is done",
        lambda: make_item(
            Phase.MERGING,
            issue=make_issue(is_open=False),
            pr=make_pr(status=PRStatus.MERGED, merge_commit_sha=HEAD_C),
        ),
        to=Phase.DONE,
    ),
    Case(
        "a failed merge attempt re-inspects instead of retrying",
        lambda: make_item(
            Phase.MERGING,
            issue=approved_issue(),
            workpad={
                "merge": MergeState(
                    last_attempted_at=NOW - timedelta(seconds=30),
                    last_attempted_head_sha=HEAD_A,
                    last_failure_reason="409 head moved",
                )
            },
        ),
        to=Phase.WAITING_FOR_CHECKS,
        waiting=WaitingReason.MERGEABILITY_CHANGED,
        no_effects=frozenset({K.MERGE_PR}),
    ),
    Case(
        "a moved head while merging goes back to reviewing",
        lambda: make_item(
            Phase.MERGING, issue=approved_issue(), pr=make_pr(HEAD_C, checks=checks(HEAD_C))
        ),
        to=Phase.REVIEWING,
        no_effects=frozenset({K.MERGE_PR}),
    ),
    Case(
        "lost mergeability while merging goes back to waiting_for_checks",
        lambda: make_item(Phase.MERGING, issue=approved_issue(), pr=make_pr(mergeable=False)),
        to=Phase.WAITING_FOR_CHECKS,
        waiting=WaitingReason.MERGEABILITY_CHANGED,
        no_effects=frozenset({K.MERGE_PR}),
    ),
    Case(
        "a pull request closed while merging blocks",
        lambda: make_item(Phase.MERGING, pr=make_pr(status=PRStatus.CLOSED)),
        to=Phase.BLOCKED,
    ),
    Case(
        "a lowered mode while merging steps back",
        lambda: make_item(Phase.MERGING, issue=approved_issue()),
        policy=lambda: make_policy(rollout_mode=RolloutMode.MUTATE),
        to=Phase.WAITING_FOR_CHECKS,
        no_effects=frozenset({K.MERGE_PR}),
    ),
    # -- blocked
    Case(
        "blocked waits for an operator",
        lambda: blocked_item(
            WaitingReason.REWORK_LIMIT_EXCEEDED, issue=make_issue(comments=(human_comment(),))
        ),
        waiting=WaitingReason.REWORK_LIMIT_EXCEEDED,
    ),
    Case(
        "an operator resumes where the flow was",
        lambda: blocked_item(
            WaitingReason.REWORK_LIMIT_EXCEEDED,
            resume_phase=Phase.WAITING_FOR_HUMAN,
            operator_request=operator(),
        ),
        to=Phase.WAITING_FOR_HUMAN,
    ),
    Case(
        "an operator may choose implementing",
        lambda: blocked_item(
            WaitingReason.METADATA_RECOVERY_REQUIRED, operator_request=operator(Phase.IMPLEMENTING)
        ),
        to=Phase.IMPLEMENTING,
    ),
    Case(
        "an operator may choose reviewing",
        lambda: blocked_item(
            WaitingReason.MISSING_CONTEXT, operator_request=operator(Phase.REVIEWING)
        ),
        to=Phase.REVIEWING,
    ),
    Case(
        "an operator may choose rework",
        lambda: blocked_item(
            WaitingReason.REWORK_LIMIT_EXCEEDED, operator_request=operator(Phase.REWORK)
        ),
        to=Phase.REWORK,
    ),
    Case(
        "an operator resuming into merging goes to ready_to_merge",
        lambda: blocked_item(
            WaitingReason.MISSING_CONTEXT, operator_request=operator(Phase.MERGING)
        ),
        to=Phase.READY_TO_MERGE,
    ),
    Case(
        "an operator request older than the block is ignored",
        lambda: blocked_item(
            WaitingReason.MISSING_CONTEXT,
            operator_request=OperatorRequest(EARLIER - timedelta(hours=1)),
        ),
    ),
    Case(
        "a human's reply resumes after a question",
        lambda: blocked_item(
            WaitingReason.MISSING_CONTEXT,
            resume_phase=Phase.IMPLEMENTING,
            issue=make_issue(comments=(human_comment(),)),
        ),
        to=Phase.IMPLEMENTING,
    ),
    Case(
        "a reply from someone without write access does not resume",
        lambda: blocked_item(
            WaitingReason.MISSING_CONTEXT, issue=make_issue(comments=(human_comment(actor=READER),))
        ),
    ),
    Case(
        "a reply from before the block does not resume",
        lambda: blocked_item(
            WaitingReason.MISSING_AUTH,
            issue=make_issue(comments=(human_comment(at=EARLIER - timedelta(minutes=1)),)),
        ),
    ),
    Case(
        "a reply does not lift a metadata recovery",
        lambda: blocked_item(
            WaitingReason.METADATA_RECOVERY_REQUIRED, issue=make_issue(comments=(human_comment(),))
        ),
    ),
    Case(
        "a lifted kill switch resumes where the flow was",
        lambda: blocked_item(WaitingReason.KILL_SWITCH_ACTIVE),
        to=Phase.WAITING_FOR_CHECKS,
    ),
    Case(
        "a lifted kill switch never resumes straight into merging",
        lambda: blocked_item(WaitingReason.KILL_SWITCH_ACTIVE, resume_phase=Phase.MERGING),
        to=Phase.READY_TO_MERGE,
    ),
    Case(
        "a blocked issue whose pull request was merged is confirmed",
        lambda: blocked_item(WaitingReason.MISSING_CONTEXT, pr=make_pr(status=PRStatus.MERGED)),
        to=Phase.READY_TO_MERGE,
    ),
    Case(
        "an unposted question is posted again",
        lambda: blocked_item(
            WaitingReason.MISSING_CONTEXT,
            phase_since=EARLIER + timedelta(minutes=11),
            last_outcome=make_outcome(Phase.IMPLEMENTING, blocked=question()),
        ),
        effects=frozenset({K.POST_COMMENT}),
    ),
    # -- kill switches, ownership, closed and done issues
    Case(
        "a kill switch blocks the issue and cancels its agent",
        lambda: make_item(Phase.REWORK),
        running=(running(Phase.REWORK),),
        switches=KillSwitches(local_file_active=True),
        to=Phase.BLOCKED,
        cancel=True,
        waiting=WaitingReason.KILL_SWITCH_ACTIVE,
        no_effects=frozenset(K),
    ),
    Case(
        "a stop label suppresses every side effect, the merge included",
        lambda: make_item(
            Phase.MERGING,
            issue=replace(approved_issue(), labels=OWNED | {"state:merging", "orchestrator:stop"}),
        ),
        to=Phase.BLOCKED,
        no_effects=frozenset(K),
    ),
    Case(
        "a kill switch keeps a blocked issue blocked",
        lambda: blocked_item(
            WaitingReason.MISSING_CONTEXT, issue=make_issue(comments=(human_comment(),))
        ),
        switches=KillSwitches(repo_wide_active=True),
        waiting=WaitingReason.KILL_SWITCH_ACTIVE,
        no_effects=frozenset(K),
    ),
    Case(
        "lost ownership cancels the agent and changes nothing",
        lambda: make_item(Phase.REWORK, issue=make_issue(labels=frozenset())),
        running=(running(Phase.REWORK),),
        cancel=True,
        no_effects=frozenset(K),
    ),
    Case(
        "a closed issue cancels the agent and changes nothing",
        lambda: make_item(Phase.REWORK, issue=make_issue(is_open=False)),
        running=(running(Phase.REWORK),),
        cancel=True,
        no_effects=frozenset(K),
    ),
    Case(
        "a done issue needs nothing",
        lambda: make_item(Phase.DONE, pr=make_pr(status=PRStatus.MERGED)),
        no_effects=frozenset(K),
    ),
    # -- observe mode and labels
    Case(
        "observe mode reports the next action without acting",
        lambda: make_item(Phase.READY_TO_MERGE, issue=approved_issue()),
        policy=lambda: make_policy(rollout_mode=RolloutMode.OBSERVE),
        waiting=WaitingReason.OBSERVE_ONLY,
        effects=frozenset({K.UPSERT_WORKPAD}),
        no_effects=frozenset(K) - {K.UPSERT_WORKPAD},
    ),
]


def _run(case: Case) -> list[object]:
    snapshot = make_snapshot(case.item(), running=case.running, kill_switches=case.switches)
    return run_plan(snapshot, case.policy())  # type: ignore[return-value]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_rule(case: Case) -> None:
    actions = _run(case)
    moved = transitions(actions)  # type: ignore[arg-type]
    if case.to is None:
        assert moved == []
    else:
        assert [(t.from_phase, t.to_phase) for t in moved] == [(case.item().record.phase, case.to)]  # type: ignore[union-attr]
    started = dispatches(actions)  # type: ignore[arg-type]
    assert [d.phase for d in started] == ([case.dispatch] if case.dispatch else [])
    kinds = {e.kind for e in effects_of(actions)}  # type: ignore[arg-type]
    assert case.effects <= kinds, kinds
    assert not (case.no_effects & kinds), kinds
    assert bool(cancels(actions)) is case.cancel  # type: ignore[arg-type]
    if case.waiting is not ANY:
        [observe] = observes(actions)  # type: ignore[arg-type]
        assert observe.waiting_reason is case.waiting


def test_every_allowed_transition_is_taken_by_a_rule() -> None:
    taken = set()
    for case in CASES:
        if case.to is not None:
            record = case.item().record
            assert record is not None
            taken.add((record.phase, case.to))
    allowed = {(src, dst) for src, targets in ALLOWED.items() for dst in targets}
    assert allowed - taken == set()


def test_merge_effect_carries_the_expected_head_and_method() -> None:
    actions = run_plan(make_snapshot(make_item(Phase.MERGING, issue=approved_issue())))
    [merge] = [e for e in effects_of(actions) if e.kind is K.MERGE_PR]
    assert merge.payload.head_sha == HEAD_A
    assert merge.payload.method == "squash"
    assert merge.idempotency_key == f"acme/app#1:merge_pr:{HEAD_A}"


def test_observe_mode_names_the_action_it_would_take() -> None:
    actions = run_plan(
        make_snapshot(make_item(Phase.READY_TO_MERGE, issue=approved_issue())),
        make_policy(rollout_mode=RolloutMode.OBSERVE),
    )
    [observe] = observes(actions)
    assert observe.observation.next_intended_action == "merge (observe only)"
    assert not transitions(actions)
    assert observe.observation.rollout_mode is RolloutMode.OBSERVE


def test_approval_labels_are_never_removed_by_state_labels() -> None:
    item = make_item(Phase.READY_TO_MERGE, issue=approved_issue())
    actions = run_plan(make_snapshot(item), make_policy(rollout_mode=RolloutMode.MUTATE))
    [labels] = [e for e in effects_of(actions) if e.kind is K.SET_LABELS]
    assert labels.payload.add == ("state:in-review",)
    assert "state:merging" not in labels.payload.remove


def test_stale_state_labels_are_replaced() -> None:
    issue = make_issue(labels=OWNED | {"state:todo", "state:in-progress"})
    actions = run_plan(make_snapshot(make_item(Phase.REWORK, issue=issue)))
    [labels] = [e for e in effects_of(actions) if e.kind is K.SET_LABELS]
    assert labels.payload.add == ("state:rework",)
    assert labels.payload.remove == ("state:in-progress", "state:todo")
