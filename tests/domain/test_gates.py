"""Gates: one named row per rule, each evaluated from record, PR state and policy."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from orchestrator.domain.gates import GateName, Gates, evaluate_gates
from orchestrator.domain.phases import GateValue, Phase
from orchestrator.domain.policy import ApprovalSource, FlowPolicy, MergePolicy, ReviewPolicy
from orchestrator.domain.snapshot import (
    Actor,
    ChecksSummary,
    HeadSighting,
    IssueSnapshot,
    KillSwitches,
    LabelAction,
    LabelEvent,
    PRReview,
    PRStatus,
    ReviewVerdict,
)
from tests.domain.builders import (
    APPROVAL,
    EARLIER,
    HEAD_A,
    HEAD_B,
    HEAD_PUSHED,
    HUMAN,
    NOW,
    OWNED,
    READER,
    REVIEW_BOT,
    SELF,
    SELF_ACTOR,
    approval_event,
    approved_issue,
    approving_review,
    checks,
    make_issue,
    make_item,
    make_policy,
    make_pr,
    reviewed,
)

PASS, PENDING, FAIL = GateValue.PASS, GateValue.PENDING, GateValue.FAIL
REQUIRED, NA = GateValue.REQUIRED, GateValue.NOT_APPLICABLE


@dataclass(frozen=True)
class Row:
    name: str
    item: Callable[[], IssueSnapshot]
    gate: GateName
    expected: GateValue
    policy: Callable[[], FlowPolicy] = make_policy
    switches: KillSwitches = field(default_factory=KillSwitches)


def review_policy(source: ApprovalSource) -> Callable[[], FlowPolicy]:
    return lambda: make_policy(merge=MergePolicy(approval_source=source))


ROWS = [
    Row(
        "owned issue passes ownership",
        lambda: make_item(Phase.WAITING_FOR_CHECKS),
        GateName.OWNERSHIP,
        PASS,
    ),
    Row(
        "missing ownership label fails",
        lambda: make_item(Phase.WAITING_FOR_CHECKS, issue=make_issue(labels=frozenset())),
        GateName.OWNERSHIP,
        FAIL,
    ),
    Row(
        "record no longer owned fails",
        lambda: make_item(Phase.WAITING_FOR_CHECKS, workpad={"owned": False}),
        GateName.OWNERSHIP,
        FAIL,
    ),
    Row("no switch passes", lambda: make_item(Phase.REWORK), GateName.KILL_SWITCH, PASS),
    Row(
        "issue stop label fails",
        lambda: make_item(Phase.REWORK, issue=make_issue(labels=OWNED | {"orchestrator:stop"})),
        GateName.KILL_SWITCH,
        FAIL,
    ),
    Row(
        "pr stop label fails",
        lambda: make_item(Phase.REWORK, pr=make_pr(labels=frozenset({"orchestrator:stop"}))),
        GateName.KILL_SWITCH,
        FAIL,
    ),
    Row(
        "local file fails",
        lambda: make_item(Phase.REWORK),
        GateName.KILL_SWITCH,
        FAIL,
        switches=KillSwitches(local_file_active=True),
    ),
    Row(
        "repo-wide switch fails",
        lambda: make_item(Phase.REWORK),
        GateName.KILL_SWITCH,
        FAIL,
        switches=KillSwitches(repo_wide_active=True),
    ),
    Row(
        "stopped repo fails",
        lambda: make_item(Phase.REWORK),
        GateName.KILL_SWITCH,
        FAIL,
        switches=KillSwitches(stopped_repos=frozenset({"acme/app"})),
    ),
    Row(
        "another stopped repo passes",
        lambda: make_item(Phase.REWORK),
        GateName.KILL_SWITCH,
        PASS,
        switches=KillSwitches(stopped_repos=frozenset({"acme/other"})),
    ),
    Row("green on head passes", lambda: make_item(Phase.WAITING_FOR_CHECKS), GateName.CHECKS, PASS),
    Row(
        "green on an older head is pending",
        lambda: make_item(Phase.WAITING_FOR_CHECKS, pr=make_pr(HEAD_B, checks=checks(HEAD_A))),
        GateName.CHECKS,
        PENDING,
    ),
    Row(
        "failing check fails",
        lambda: make_item(Phase.WAITING_FOR_CHECKS, pr=make_pr(checks=checks(state="failing"))),
        GateName.CHECKS,
        FAIL,
    ),
    Row(
        "pending check is pending",
        lambda: make_item(Phase.WAITING_FOR_CHECKS, pr=make_pr(checks=checks(state="pending"))),
        GateName.CHECKS,
        PENDING,
    ),
    Row(
        "no check reported is pending",
        lambda: make_item(Phase.WAITING_FOR_CHECKS, pr=make_pr(checks=checks(state="none"))),
        GateName.CHECKS,
        PENDING,
    ),
    Row(
        "no pull request is pending",
        lambda: make_item(Phase.IMPLEMENTING, no_pr=True),
        GateName.CHECKS,
        PENDING,
    ),
    Row(
        "required check missing is pending",
        lambda: make_item(Phase.WAITING_FOR_CHECKS),
        GateName.CHECKS,
        PENDING,
        policy=lambda: make_policy(merge=MergePolicy(required_checks=("ci", "lint"))),
    ),
    Row(
        "unrequired failing check is ignored",
        lambda: make_item(
            Phase.WAITING_FOR_CHECKS,
            pr=make_pr(
                checks=ChecksSummary(HEAD_A, passed=frozenset({"ci"}), failing=frozenset({"docs"}))
            ),
        ),
        GateName.CHECKS,
        PASS,
        policy=lambda: make_policy(merge=MergePolicy(required_checks=("ci",))),
    ),
    Row(
        "checks not required",
        lambda: make_item(Phase.WAITING_FOR_CHECKS, pr=make_pr(checks=None)),
        GateName.CHECKS,
        NA,
        policy=lambda: make_policy(merge=MergePolicy(require_green_checks=False)),
    ),
    Row(
        "approval label from a human with write passes",
        lambda: make_item(Phase.WAITING_FOR_HUMAN, issue=approved_issue()),
        GateName.HUMAN_APPROVAL,
        PASS,
    ),
    Row(
        "approval label from the bot itself is required",
        lambda: make_item(Phase.WAITING_FOR_HUMAN, issue=approved_issue(actor=SELF_ACTOR)),
        GateName.HUMAN_APPROVAL,
        REQUIRED,
    ),
    Row(
        "approval label from a bot account is required",
        lambda: make_item(Phase.WAITING_FOR_HUMAN, issue=approved_issue(actor=REVIEW_BOT)),
        GateName.HUMAN_APPROVAL,
        REQUIRED,
    ),
    Row(
        "approval label from a reader is required",
        lambda: make_item(Phase.WAITING_FOR_HUMAN, issue=approved_issue(actor=READER)),
        GateName.HUMAN_APPROVAL,
        REQUIRED,
    ),
    Row(
        "approval label without events is required",
        lambda: make_item(Phase.WAITING_FOR_HUMAN, issue=make_issue(labels=OWNED | {APPROVAL})),
        GateName.HUMAN_APPROVAL,
        REQUIRED,
    ),
    Row(
        "approval label re-added by the bot after a human is required",
        lambda: make_item(
            Phase.WAITING_FOR_HUMAN,
            issue=make_issue(
                labels=OWNED | {APPROVAL},
                label_events=(
                    approval_event(HUMAN),
                    LabelEvent(APPROVAL, LabelAction.REMOVED, SELF_ACTOR, NOW),
                    LabelEvent(APPROVAL, LabelAction.ADDED, SELF_ACTOR, NOW),
                ),
            ),
        ),
        GateName.HUMAN_APPROVAL,
        REQUIRED,
    ),
    Row(
        "approval label added before the current head was pushed is required",
        lambda: make_item(
            Phase.WAITING_FOR_HUMAN,
            issue=approved_issue(),
            pr=make_pr(updated_at=NOW),
        ),
        GateName.HUMAN_APPROVAL,
        REQUIRED,
    ),
    Row(
        "approval label added in the same second as the head appeared is required",
        lambda: make_item(
            Phase.WAITING_FOR_HUMAN, issue=approved_issue(), pr=make_pr(updated_at=EARLIER)
        ),
        GateName.HUMAN_APPROVAL,
        REQUIRED,
    ),
    Row(
        "approval label counts from the head's first sighting, not from later updates",
        lambda: make_item(
            Phase.WAITING_FOR_HUMAN,
            issue=approved_issue(),
            pr=make_pr(updated_at=NOW),
            head_seen=HeadSighting(HEAD_A, HEAD_PUSHED),
        ),
        GateName.HUMAN_APPROVAL,
        PASS,
    ),
    Row(
        "a sighting of an older head does not date the new one",
        lambda: make_item(
            Phase.WAITING_FOR_HUMAN,
            issue=approved_issue(),
            pr=make_pr(HEAD_B, checks=checks(HEAD_B), updated_at=NOW),
            head_seen=HeadSighting(HEAD_A, HEAD_PUSHED),
        ),
        GateName.HUMAN_APPROVAL,
        REQUIRED,
    ),
    Row(
        "approval label without a known head time is required",
        lambda: make_item(
            Phase.WAITING_FOR_HUMAN, issue=approved_issue(), pr=make_pr(updated_at=None)
        ),
        GateName.HUMAN_APPROVAL,
        REQUIRED,
    ),
    Row(
        "a writer's change request on an older head blocks a label approval",
        lambda: make_item(
            Phase.WAITING_FOR_HUMAN,
            issue=approved_issue(),
            pr=make_pr(
                reviews=(PRReview(HUMAN, ReviewVerdict.CHANGES_REQUESTED, HEAD_B, EARLIER),)
            ),
        ),
        GateName.HUMAN_APPROVAL,
        REQUIRED,
    ),
    Row(
        "a writer's change request blocks even without an approval requirement",
        lambda: make_item(
            Phase.WAITING_FOR_HUMAN,
            pr=make_pr(
                reviews=(PRReview(HUMAN, ReviewVerdict.CHANGES_REQUESTED, HEAD_A, EARLIER),)
            ),
        ),
        GateName.HUMAN_APPROVAL,
        REQUIRED,
        policy=lambda: make_policy(merge=MergePolicy(require_human_approval=False)),
    ),
    Row(
        "a dismissed change request no longer blocks",
        lambda: make_item(
            Phase.WAITING_FOR_HUMAN,
            issue=approved_issue(),
            pr=make_pr(
                reviews=(
                    PRReview(HUMAN, ReviewVerdict.CHANGES_REQUESTED, HEAD_B, EARLIER),
                    PRReview(HUMAN, ReviewVerdict.DISMISSED, HEAD_B, NOW),
                )
            ),
        ),
        GateName.HUMAN_APPROVAL,
        PASS,
    ),
    Row(
        "a bot's change request does not block",
        lambda: make_item(
            Phase.WAITING_FOR_HUMAN,
            issue=approved_issue(),
            pr=make_pr(
                reviews=(PRReview(REVIEW_BOT, ReviewVerdict.CHANGES_REQUESTED, HEAD_A, EARLIER),)
            ),
        ),
        GateName.HUMAN_APPROVAL,
        PASS,
    ),
    Row(
        "reviews not read to the end fail closed",
        lambda: make_item(
            Phase.WAITING_FOR_HUMAN,
            issue=approved_issue(),
            pr=make_pr(incomplete=frozenset({"reviews"})),
        ),
        GateName.HUMAN_APPROVAL,
        REQUIRED,
    ),
    Row(
        "checks not read to the end are pending",
        lambda: make_item(Phase.WAITING_FOR_CHECKS, pr=make_pr(incomplete=frozenset({"checks"}))),
        GateName.CHECKS,
        PENDING,
    ),
    Row(
        "threads not read to the end keep mergeability pending",
        lambda: make_item(Phase.WAITING_FOR_CHECKS, pr=make_pr(incomplete=frozenset({"threads"}))),
        GateName.MERGEABILITY,
        PENDING,
    ),
    Row(
        "approval label on the pull request counts",
        lambda: make_item(
            Phase.WAITING_FOR_HUMAN,
            pr=make_pr(labels=frozenset({APPROVAL}), label_events=(approval_event(),)),
        ),
        GateName.HUMAN_APPROVAL,
        PASS,
    ),
    Row(
        "review approval on the head passes with review source",
        lambda: make_item(Phase.WAITING_FOR_HUMAN, pr=make_pr(reviews=(approving_review(),))),
        GateName.HUMAN_APPROVAL,
        PASS,
        policy=review_policy(ApprovalSource.REVIEW),
    ),
    Row(
        "review approval on an older head is required",
        lambda: make_item(
            Phase.WAITING_FOR_HUMAN, pr=make_pr(HEAD_B, reviews=(approving_review(HEAD_A),))
        ),
        GateName.HUMAN_APPROVAL,
        REQUIRED,
        policy=review_policy(ApprovalSource.REVIEW),
    ),
    Row(
        "review approval by the bot is required",
        lambda: make_item(
            Phase.WAITING_FOR_HUMAN, pr=make_pr(reviews=(approving_review(actor=SELF_ACTOR),))
        ),
        GateName.HUMAN_APPROVAL,
        REQUIRED,
        policy=review_policy(ApprovalSource.REVIEW),
    ),
    Row(
        "later change request by another human blocks approval",
        lambda: make_item(
            Phase.WAITING_FOR_HUMAN,
            pr=make_pr(
                reviews=(
                    approving_review(),
                    PRReview(
                        Actor("bob", can_write=True), ReviewVerdict.CHANGES_REQUESTED, HEAD_A, NOW
                    ),
                )
            ),
        ),
        GateName.HUMAN_APPROVAL,
        REQUIRED,
        policy=review_policy(ApprovalSource.REVIEW),
    ),
    Row(
        "a label does not count when the source is review",
        lambda: make_item(Phase.WAITING_FOR_HUMAN, issue=approved_issue()),
        GateName.HUMAN_APPROVAL,
        REQUIRED,
        policy=review_policy(ApprovalSource.REVIEW),
    ),
    Row(
        "either source accepts a review",
        lambda: make_item(Phase.WAITING_FOR_HUMAN, pr=make_pr(reviews=(approving_review(),))),
        GateName.HUMAN_APPROVAL,
        PASS,
        policy=review_policy(ApprovalSource.LABEL_OR_REVIEW),
    ),
    Row(
        "approval not required",
        lambda: make_item(Phase.WAITING_FOR_HUMAN),
        GateName.HUMAN_APPROVAL,
        NA,
        policy=lambda: make_policy(merge=MergePolicy(require_human_approval=False)),
    ),
    Row("mergeable passes", lambda: make_item(Phase.READY_TO_MERGE), GateName.MERGEABILITY, PASS),
    Row(
        "conflicts fail",
        lambda: make_item(Phase.READY_TO_MERGE, pr=make_pr(mergeable=False)),
        GateName.MERGEABILITY,
        FAIL,
    ),
    Row(
        "not computed is pending",
        lambda: make_item(Phase.READY_TO_MERGE, pr=make_pr(mergeable=None)),
        GateName.MERGEABILITY,
        PENDING,
    ),
    Row(
        "merged pull request is pending",
        lambda: make_item(Phase.MERGING, pr=make_pr(status=PRStatus.MERGED)),
        GateName.MERGEABILITY,
        PENDING,
    ),
    Row(
        "reviewed head matches", lambda: make_item(Phase.READY_TO_MERGE), GateName.HEAD_MATCH, PASS
    ),
    Row(
        "reviewed head differs",
        lambda: make_item(Phase.READY_TO_MERGE, pr=make_pr(HEAD_B, checks=checks(HEAD_B))),
        GateName.HEAD_MATCH,
        FAIL,
    ),
    Row(
        "never reviewed is pending",
        lambda: make_item(Phase.READY_TO_MERGE, workpad={"review": reviewed(None, passes=0)}),
        GateName.HEAD_MATCH,
        PENDING,
    ),
    Row(
        "head match without review is not applicable",
        lambda: make_item(Phase.READY_TO_MERGE),
        GateName.HEAD_MATCH,
        NA,
        policy=lambda: make_policy(review=ReviewPolicy(enabled=False)),
    ),
    Row(
        "review pass on head passes", lambda: make_item(Phase.READY_TO_MERGE), GateName.REVIEW, PASS
    ),
    Row(
        "review pass on another head is pending",
        lambda: make_item(Phase.READY_TO_MERGE, pr=make_pr(HEAD_B)),
        GateName.REVIEW,
        PENDING,
    ),
    Row(
        "review not yet persisted is pending",
        lambda: make_item(Phase.READY_TO_MERGE, workpad={"review": reviewed(HEAD_A, passes=0)}),
        GateName.REVIEW,
        PENDING,
    ),
    Row(
        "review disabled is not applicable",
        lambda: make_item(Phase.READY_TO_MERGE),
        GateName.REVIEW,
        NA,
        policy=lambda: make_policy(review=ReviewPolicy(enabled=False)),
    ),
]


@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
def test_gate(row: Row) -> None:
    gates = evaluate_gates(row.item(), row.policy(), row.switches, SELF)
    assert gates.as_mapping()[row.gate] is row.expected


def test_merge_ready_needs_every_gate_on_the_same_head() -> None:
    item = make_item(Phase.READY_TO_MERGE, issue=approved_issue())
    gates = evaluate_gates(item, make_policy(), KillSwitches(), SELF)
    assert gates.merge_ready
    assert gates.blocking() == ()
    moved = make_item(
        Phase.READY_TO_MERGE, issue=approved_issue(), pr=make_pr(HEAD_B, checks=checks(HEAD_B))
    )
    moved_gates = evaluate_gates(moved, make_policy(), KillSwitches(), SELF)
    assert not moved_gates.merge_ready
    assert set(moved_gates.blocking()) == {GateName.HEAD_MATCH, GateName.REVIEW}


def test_gates_by_name_cover_every_gate() -> None:
    gates = Gates(*([PASS] * 7))
    assert set(gates.as_mapping()) == set(GateName)
