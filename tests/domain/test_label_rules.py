"""Every label rule compares names as GitHub does, without regard to case, and exists once.

A repository holds one label per name whatever its case, so the policy's
``orchestrator:stop`` is the label a human created as ``Orchestrator:STOP``:
the kill switch, the rollout mode, the priority and the ownership label all
see it, in the planner, the reconciliation and the side-effect gate alike.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from orchestrator.domain.actions import Cancel
from orchestrator.domain.gates import carries_stop_label, evaluate_gates, kill_switch_active
from orchestrator.domain.labels import fold, folded, has_label, shared_labels
from orchestrator.domain.phases import GateValue, Phase, RolloutMode, WaitingReason
from orchestrator.domain.rollout import effective_mode, issue_mode
from orchestrator.domain.selection import candidate_order, issue_priority, priority_rank
from orchestrator.domain.snapshot import IssueSnapshot, KillSwitches
from tests.domain.builders import (
    EARLIER,
    OWNED,
    SELF,
    cancels,
    dispatches,
    make_issue,
    make_item,
    make_policy,
    make_pr,
    make_snapshot,
    observes,
    run_plan,
    running,
    transitions,
)

POLICY = make_policy()


def test_names_compare_without_regard_to_case() -> None:
    assert has_label(frozenset({"Orchestrator:STOP"}), "orchestrator:stop")
    assert has_label(["orchestrator:stop"], "ORCHESTRATOR:Stop")
    assert not has_label(frozenset({"orchestrator:stopped"}), "orchestrator:stop")
    # Unicode's full folding: "ß" and "SS" are one name.
    assert fold("Straße") == fold("STRASSE")
    assert folded(["A", "b"]) == frozenset({"a", "b"})
    assert shared_labels({"State:Merging", "bug"}, ["state:merging", "ship-it"]) == (
        "state:merging",
    )


@pytest.mark.parametrize(
    ("issue_labels", "pr_labels", "stopped"),
    [
        (OWNED, frozenset(), False),
        (OWNED | {"orchestrator:stop"}, frozenset(), True),
        (OWNED | {"Orchestrator:STOP"}, frozenset(), True),
        (OWNED, frozenset({"ORCHESTRATOR:STOP"}), True),
        (OWNED | {"orchestrator:stop-all"}, frozenset(), False),
    ],
    ids=["none", "exact", "issue in another case", "pr in another case", "another label"],
)
def test_the_kill_switch_label(
    issue_labels: frozenset[str], pr_labels: frozenset[str], stopped: bool
) -> None:
    item = make_item(
        Phase.REWORK, issue=make_issue(labels=issue_labels), pr=make_pr(labels=pr_labels)
    )
    assert kill_switch_active(item, POLICY, KillSwitches()) is stopped
    gates = evaluate_gates(item, POLICY, KillSwitches(), SELF)
    assert gates.kill_switch is (GateValue.FAIL if stopped else GateValue.PASS)
    assert carries_stop_label(issue_labels | pr_labels, POLICY) is stopped


def test_a_stop_label_in_another_case_cancels_the_turn_and_blocks() -> None:
    item = make_item(Phase.IMPLEMENTING, issue=make_issue(labels=OWNED | {"Orchestrator:Stop"}))
    actions = run_plan(make_snapshot(item, running=(running(Phase.IMPLEMENTING),)))
    assert cancels(actions) == [Cancel(item.ref, "kill_switch")]
    [move] = transitions(actions)
    assert (move.to_phase, move.waiting_reason) == (
        Phase.BLOCKED,
        WaitingReason.KILL_SWITCH_ACTIVE,
    )
    assert dispatches(actions) == []


def test_a_new_issue_with_a_stop_label_in_another_case_is_not_dispatched() -> None:
    item = IssueSnapshot(make_issue(labels=OWNED | {"ORCHESTRATOR:STOP"}))
    actions = run_plan(make_snapshot(item))
    assert dispatches(actions) == []
    assert observes(actions)[0].waiting_reason is WaitingReason.KILL_SWITCH_ACTIVE


def test_the_ownership_label_in_another_case_owns_the_issue() -> None:
    item = make_item(Phase.REWORK, issue=make_issue(labels=frozenset({"Orchestrator"})))
    assert evaluate_gates(item, POLICY, KillSwitches(), SELF).ownership is GateValue.PASS


@pytest.mark.parametrize(
    ("issue_labels", "pr_labels", "mode"),
    [
        (OWNED, frozenset(), RolloutMode.MERGE),
        (OWNED | {"Orchestrator:Observe"}, frozenset(), RolloutMode.OBSERVE),
        (OWNED, frozenset({"ORCHESTRATOR:MUTATE"}), RolloutMode.MUTATE),
        (OWNED | {"orchestrator:mutate"}, frozenset({"orchestrator:observe"}), RolloutMode.OBSERVE),
    ],
    ids=["no label", "issue label in another case", "pr label in another case", "lowest wins"],
)
def test_the_rollout_mode_of_one_issue(
    issue_labels: frozenset[str], pr_labels: frozenset[str], mode: RolloutMode
) -> None:
    item = make_item(
        Phase.REWORK, issue=make_issue(labels=issue_labels), pr=make_pr(labels=pr_labels)
    )
    assert issue_mode(item, POLICY) is mode
    # The side-effect gate asks the same rule with the labels it read again.
    assert effective_mode(POLICY, issue_labels, pr_labels) is mode


def test_a_mode_label_never_raises_the_mode() -> None:
    policy = make_policy(rollout_mode=RolloutMode.OBSERVE)
    assert effective_mode(policy, {"Orchestrator:Mutate"}) is RolloutMode.OBSERVE


def test_priority_labels_in_another_case_rank_and_feed_the_prompt() -> None:
    assert priority_rank({"Priority:Critical"}, POLICY) == 0
    assert priority_rank({"PRIORITY:LOW"}, POLICY) == 3
    assert priority_rank({"bug"}, POLICY) == len(POLICY.priority_labels)
    assert issue_priority({"priority:HIGH"}, POLICY) == 2
    assert issue_priority({"bug"}, POLICY) is None
    urgent = IssueSnapshot(make_issue(2, labels=OWNED | {"Priority:Critical"}))
    older = IssueSnapshot(make_issue(3, labels=OWNED, created_at=EARLIER - timedelta(days=1)))
    assert candidate_order(urgent, POLICY) < candidate_order(older, POLICY)
