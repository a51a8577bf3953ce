"""A planned turn survives the trip through JSON to another replica unchanged."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from orchestrator.domain.actions import Dispatch
from orchestrator.domain.phases import Phase
from orchestrator.domain.snapshot import (
    Actor,
    ChecksSummary,
    IssueRef,
    LabelAction,
    LabelEvent,
    PRReview,
    PullRequest,
    ReviewThread,
    ReviewVerdict,
    TrackedIssue,
)
from orchestrator.turns.handoff import HandoffError, TurnInputs, decode_inputs, encode_inputs

NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
REF = IssueRef("acme/app", 7)


def test_a_turn_with_a_pull_request_round_trips() -> None:
    human = Actor("alice", can_write=True)
    inputs = TurnInputs(
        dispatch=Dispatch(REF, Phase.REWORK, 2, "retry"),
        issue=TrackedIssue(
            REF,
            "Fix it",
            True,
            frozenset({"orchestrator", "bug"}),
            NOW,
            tracker_state="In Progress",
            label_events=(LabelEvent("bug", LabelAction.ADDED, human, NOW),),
        ),
        pr=PullRequest(
            12,
            "http://127.0.0.1/pull/12",
            "abc",
            mergeable=True,
            checks=ChecksSummary("abc", passed=frozenset({"ci"})),
            reviews=(PRReview(human, ReviewVerdict.APPROVED, "abc", NOW),),
            threads=(ReviewThread("t1", human, "Rename", NOW, path="a.py"),),
        ),
    )
    document = json.loads(json.dumps(encode_inputs(inputs)))
    assert decode_inputs(document) == inputs


def test_a_turn_without_a_pull_request_round_trips() -> None:
    inputs = TurnInputs(
        dispatch=Dispatch(REF, Phase.IMPLEMENTING, 1, "claim"),
        issue=TrackedIssue(REF, "Fix it", True, frozenset(), NOW),
        pr=None,
    )
    assert decode_inputs(json.loads(json.dumps(encode_inputs(inputs)))) == inputs


def test_a_bad_document_names_the_field() -> None:
    document = encode_inputs(
        TurnInputs(
            dispatch=Dispatch(REF, Phase.IMPLEMENTING, 1, "claim"),
            issue=TrackedIssue(REF, "Fix it", True, frozenset(), NOW),
            pr=None,
        )
    )
    document["dispatch"]["phase"] = "dancing"
    with pytest.raises(HandoffError, match=r"turn\.dispatch\.phase"):
        decode_inputs(document)
