"""Approval evaluated once: the gate, who approved through which labels, since when, what is stale.

The gates, the merge effect (and its re-check right before the merge), the
withdrawal of stale labels and the settling of held threads all read one
:class:`ApprovalView`; these rows pin what each of them is given.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

import pytest

from orchestrator.domain.approval import (
    ApprovalRecheck,
    ApprovalView,
    StaleApproval,
    approval_lapsed,
    approval_view,
)
from orchestrator.domain.phases import GateValue, Phase
from orchestrator.domain.policy import ApprovalSource, FlowPolicy, MergePolicy
from orchestrator.domain.snapshot import (
    Actor,
    HeadSighting,
    IssueSnapshot,
    LabelAction,
    LabelEvent,
    PRReview,
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
    SELF,
    approval_event,
    approved_issue,
    approving_review,
    make_issue,
    make_item,
    make_policy,
    make_pr,
)

PASS, REQUIRED, NA = GateValue.PASS, GateValue.REQUIRED, GateValue.NOT_APPLICABLE
BOB = Actor("bob", can_write=True)


def source(kind: ApprovalSource, **merge: object) -> Callable[[], FlowPolicy]:
    return lambda: make_policy(merge=MergePolicy(approval_source=kind, **merge))  # type: ignore[arg-type]


BEFORE_THE_HEAD = LabelEvent(APPROVAL, LabelAction.ADDED, HUMAN, HEAD_PUSHED - timedelta(minutes=1))
STALE = ApprovalView(REQUIRED, stale=(StaleApproval("issue", APPROVAL, BEFORE_THE_HEAD),))


def stale_issue() -> IssueSnapshot:
    return make_item(
        Phase.WAITING_FOR_HUMAN,
        issue=make_issue(labels=OWNED | {APPROVAL}, label_events=(BEFORE_THE_HEAD,)),
    )


@dataclass(frozen=True)
class Row:
    name: str
    item: Callable[[], IssueSnapshot]
    expected: ApprovalView
    policy: Callable[[], FlowPolicy] = make_policy


ROWS = [
    Row(
        "nothing approves",
        lambda: make_item(Phase.WAITING_FOR_HUMAN),
        ApprovalView(REQUIRED),
    ),
    Row(
        "a label added after the head by a writer",
        lambda: make_item(Phase.WAITING_FOR_HUMAN, issue=approved_issue()),
        ApprovalView(PASS, ("alice",), (APPROVAL,), given_at=EARLIER),
    ),
    Row(
        "a label in another case is the same label",
        lambda: make_item(
            Phase.WAITING_FOR_HUMAN,
            issue=make_issue(
                labels=OWNED | {"State:Merging"},
                label_events=(approval_event(label="State:Merging"),),
            ),
        ),
        ApprovalView(PASS, ("alice",), ("State:Merging",), given_at=EARLIER),
    ),
    Row(
        "a label added by a reader",
        lambda: make_item(Phase.WAITING_FOR_HUMAN, issue=approved_issue(actor=READER)),
        ApprovalView(REQUIRED),
    ),
    Row(
        "a label added before the head appeared is stale",
        stale_issue,
        STALE,
    ),
    Row(
        "a stale label is stale whatever the source",
        stale_issue,
        STALE,
        policy=source(ApprovalSource.REVIEW),
    ),
    Row(
        "a label does not count under the review source",
        lambda: make_item(Phase.WAITING_FOR_HUMAN, issue=approved_issue()),
        ApprovalView(REQUIRED),
        policy=source(ApprovalSource.REVIEW),
    ),
    Row(
        "an approving review of the head",
        lambda: make_item(Phase.WAITING_FOR_HUMAN, pr=make_pr(reviews=(approving_review(),))),
        ApprovalView(PASS, ("alice",), given_at=EARLIER),
        policy=source(ApprovalSource.REVIEW),
    ),
    Row(
        "an approving review of an older head",
        lambda: make_item(
            Phase.WAITING_FOR_HUMAN, pr=make_pr(HEAD_B, reviews=(approving_review(HEAD_A),))
        ),
        ApprovalView(REQUIRED),
        policy=source(ApprovalSource.REVIEW),
    ),
    Row(
        "a writer's change request blocks every source",
        lambda: make_item(
            Phase.WAITING_FOR_HUMAN,
            issue=approved_issue(),
            pr=make_pr(
                reviews=(
                    approving_review(),
                    PRReview(BOB, ReviewVerdict.CHANGES_REQUESTED, HEAD_A, NOW),
                )
            ),
        ),
        ApprovalView(REQUIRED, ("alice",), (APPROVAL,), given_at=EARLIER),
        policy=source(ApprovalSource.EITHER),
    ),
    Row(
        "either source: a label and a later review",
        lambda: make_item(
            Phase.WAITING_FOR_HUMAN,
            issue=approved_issue(),
            pr=make_pr(reviews=(PRReview(BOB, ReviewVerdict.APPROVED, HEAD_A, NOW),)),
        ),
        ApprovalView(PASS, ("alice", "bob"), (APPROVAL,), given_at=NOW),
        policy=source(ApprovalSource.EITHER),
    ),
    Row(
        "not required: approvers still go with the merge",
        lambda: make_item(Phase.WAITING_FOR_HUMAN, issue=approved_issue()),
        ApprovalView(NA, ("alice",), (APPROVAL,), given_at=EARLIER),
        policy=source(ApprovalSource.LABEL, require_human_approval=False),
    ),
    Row(
        "an unread review list keeps the gate from passing",
        lambda: make_item(
            Phase.WAITING_FOR_HUMAN,
            issue=approved_issue(),
            pr=make_pr(incomplete=frozenset({"reviews"})),
        ),
        ApprovalView(REQUIRED, ("alice",), (APPROVAL,), given_at=EARLIER),
    ),
]


@pytest.mark.parametrize("row", ROWS, ids=[row.name for row in ROWS])
def test_approval_view(row: Row) -> None:
    assert approval_view(row.item(), row.policy(), SELF) == row.expected


def test_an_approval_counts_after_a_moment_only_when_given_after_it() -> None:
    view = approval_view(
        make_item(Phase.WAITING_FOR_HUMAN, issue=approved_issue()), make_policy(), SELF
    )
    assert view.given_after(EARLIER - timedelta(seconds=1))
    assert not view.given_after(EARLIER)
    assert not ApprovalView(REQUIRED).given_after(datetime.min.replace(tzinfo=NOW.tzinfo))


def test_a_sighted_head_dates_the_label_approval() -> None:
    item = make_item(
        Phase.WAITING_FOR_HUMAN,
        issue=approved_issue(),
        head_seen=HeadSighting(HEAD_A, EARLIER + timedelta(seconds=1)),
    )
    assert approval_view(item, make_policy(), SELF).gate is REQUIRED


@dataclass(frozen=True)
class Recheck:
    name: str
    approvers: tuple[str, ...]
    labels: tuple[str, ...]
    recheck: ApprovalRecheck
    expected: str | None
    required: bool = True


RECHECKS = [
    Recheck("holds", ("alice",), (APPROVAL,), ApprovalRecheck(labels=frozenset({APPROVAL})), None),
    Recheck(
        "a label in another case still holds",
        ("alice",),
        (APPROVAL,),
        ApprovalRecheck(labels=frozenset({"STATE:MERGING"})),
        None,
    ),
    Recheck(
        "no approver while one is required",
        (),
        (),
        ApprovalRecheck(),
        "no approver is recorded for this head",
    ),
    Recheck("no approver while none is required", (), (), ApprovalRecheck(), None, required=False),
    Recheck(
        "an approver lost their permission",
        ("alice", "bob"),
        (),
        ApprovalRecheck(lost={"bob": "the approver bob no longer has write permission"}),
        "the approver bob no longer has write permission",
    ),
    Recheck(
        "the label was removed",
        ("alice",),
        (APPROVAL,),
        ApprovalRecheck(labels=frozenset({"bug"})),
        "the approval label was removed",
    ),
    Recheck("a review approval needs no label", ("alice",), (), ApprovalRecheck(), None),
]


@pytest.mark.parametrize("row", RECHECKS, ids=[row.name for row in RECHECKS])
def test_approval_lapsed(row: Recheck) -> None:
    found = approval_lapsed(row.approvers, row.labels, required=row.required, recheck=row.recheck)
    assert found == row.expected


def test_one_approval_source_enum_with_the_policy_file_spelling() -> None:
    assert ApprovalSource("either") is ApprovalSource.EITHER is ApprovalSource.LABEL_OR_REVIEW
    assert [kind.value for kind in ApprovalSource] == ["label", "review", "either"]
    assert (ApprovalSource.LABEL.by_label, ApprovalSource.LABEL.by_review) == (True, False)
    assert (ApprovalSource.REVIEW.by_label, ApprovalSource.REVIEW.by_review) == (False, True)
    assert (ApprovalSource.EITHER.by_label, ApprovalSource.EITHER.by_review) == (True, True)
