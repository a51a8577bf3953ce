"""Exhaustive over phase pairs: the planner only ever proposes transitions in ALLOWED.

For every current phase a broad, systematic family of situations (pull request
state, checks, mergeability, approval, threads, agent outcomes, kill switches) is
planned; each of the 81 (from, to) pairs is then checked against the table.
"""

from __future__ import annotations

import itertools
from dataclasses import replace
from functools import cache

import pytest

from orchestrator.domain.agent_files.fix_summary import FixStatus
from orchestrator.domain.agent_files.questions import BlockedQuestion
from orchestrator.domain.phases import Phase, WaitingReason, is_allowed
from orchestrator.domain.planner import REFUSED
from orchestrator.domain.snapshot import (
    AgentOutcome,
    IssueSnapshot,
    KillSwitches,
    OperatorRequest,
    OutcomeKind,
    PRStatus,
    PullRequest,
)
from tests.domain.builders import (
    HEAD_A,
    HEAD_B,
    HEAD_C,
    NOW,
    SELF_ACTOR,
    approved_issue,
    checks,
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
    run_plan,
    thread,
    transitions,
)


def _prs() -> list[PullRequest | None]:
    prs: list[PullRequest | None] = [None]
    for status, head, state, mergeable, threads in itertools.product(
        list(PRStatus),
        (HEAD_A, HEAD_C),
        ("green", "pending", "failing"),
        (True, False, None),
        ((), (thread(),), (thread(last_comment_author=SELF_ACTOR),)),
    ):
        prs.append(
            make_pr(
                head,
                status=status,
                checks=checks(head, state),
                mergeable=mergeable,
                threads=threads,
            )
        )
    return prs


def _outcomes(phase: Phase) -> list[AgentOutcome | None]:
    question = BlockedQuestion(WaitingReason.MISSING_CONTEXT, "q", "q")
    return [
        None,
        make_outcome(phase),
        make_outcome(phase, head_after=HEAD_B),
        make_outcome(phase, kind=OutcomeKind.FAILED),
        make_outcome(phase, kind=OutcomeKind.CANCELLED),
        make_outcome(phase, blocked=question),
        make_outcome(
            phase,
            head_after=HEAD_B,
            review=make_review(HEAD_A, "P1"),
            fix_summary=fix_summary(("T1", FixStatus.UNCERTAIN)),
        ),
        make_outcome(Phase.IMPLEMENTING if phase is not Phase.IMPLEMENTING else Phase.REWORK),
    ]


def _situations(phase: Phase) -> list[IssueSnapshot]:
    items = []
    for pr, outcome, approved in itertools.product(_prs(), _outcomes(phase), (False, True)):
        issue = approved_issue() if approved else make_issue()
        item = make_item(phase, issue=issue, pr=pr, no_pr=pr is None, last_outcome=outcome)
        items.append(item)
    record = make_item(phase).record
    assert record is not None
    for reason, request in itertools.product(
        list(WaitingReason), (None, OperatorRequest(NOW), OperatorRequest(NOW, Phase.REWORK))
    ):
        items.append(
            replace(
                make_item(phase, issue=make_issue(comments=(human_comment(),))),
                record=replace(
                    record,
                    waiting_reason=reason,
                    operator_request=request,
                    resume_phase=Phase.MERGING,
                    attempt=5,
                    rework_cycles=3,
                ),
            )
        )
    return items


@cache
def produced(phase: Phase) -> frozenset[Phase]:
    """Every phase the planner proposed to move to from ``phase`` over all situations."""
    targets: set[Phase] = set()
    policy = make_policy()
    for item in _situations(phase):
        for switches in (KillSwitches(), KillSwitches(local_file_active=True)):
            actions = run_plan(make_snapshot(item, kill_switches=switches), policy)
            for observe in observes(actions):
                assert not (observe.observation.next_intended_action or "").startswith(REFUSED)
            for move in transitions(actions):
                assert move.from_phase is phase
                targets.add(move.to_phase)
    return frozenset(targets)


@pytest.mark.parametrize(
    ("current", "target"),
    list(itertools.product(list(Phase), list(Phase))),
    ids=str,
)
def test_only_allowed_pairs_are_produced(current: Phase, target: Phase) -> None:
    proposed = target in produced(current)
    assert not proposed or is_allowed(current, target), f"planner proposed {current} -> {target}"


def test_the_families_exercise_every_phase() -> None:
    for phase in Phase:
        if phase is Phase.DONE:
            assert produced(phase) == frozenset()
        else:
            assert produced(phase), f"no situation moved the issue out of {phase}"
