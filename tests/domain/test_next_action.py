"""The next action recorded with a phase change belongs to the phase the issue moves to.

Over every rule of the planner's table that moves an issue: the observation and
the transition carry the same next action, it never names the move just made,
applying the transition stores it with the phase, and where the move had no
words of its own it is what the next plan in the new phase says.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from orchestrator.domain.phases import Phase
from orchestrator.domain.record_updates import apply_transition
from tests.domain.builders import NOW, make_item, make_snapshot, observes, run_plan, transitions
from tests.domain.test_planner_rules import CASES, Case

MOVES = [case for case in CASES if case.to is not None]


def _plan(case: Case) -> list[object]:
    snapshot = make_snapshot(case.item(), running=case.running, kill_switches=case.switches)
    return run_plan(snapshot, case.policy())  # type: ignore[return-value]


@pytest.mark.parametrize("case", MOVES, ids=[c.name for c in MOVES])
def test_a_move_records_the_next_action_of_the_phase_it_moves_to(case: Case) -> None:
    actions = _plan(case)
    [move] = transitions(actions)  # type: ignore[arg-type]
    [observe] = observes(actions)  # type: ignore[arg-type]
    said = observe.observation.next_intended_action
    assert said and move.next_action == said
    assert not said.startswith(f"move to {move.to_phase}"), said
    item = case.item()
    assert item.record is not None
    moved = apply_transition(item.record, move, NOW)
    assert moved.phase is move.to_phase
    assert moved.workpad.observation.next_intended_action == said


def test_a_move_without_words_is_described_as_the_next_plan_in_the_new_phase() -> None:
    # An already reviewed head with green checks leaves reviewing: "move to
    # waiting_for_checks" says nothing about what comes there; its rules do.
    item = make_item(Phase.REVIEWING)
    [move] = transitions(run_plan(make_snapshot(item)))
    assert move.to_phase is Phase.WAITING_FOR_CHECKS
    assert item.record is not None
    after = replace(item, record=apply_transition(item.record, move, NOW))
    [next_tick] = observes(run_plan(make_snapshot(after)))
    assert move.next_action == next_tick.observation.next_intended_action
    assert move.next_action == "wait for a human's approval"


def test_a_move_to_done_says_nothing_is_left() -> None:
    done = [c for c in MOVES if c.to is Phase.DONE]
    assert done
    for case in done:
        [move] = transitions(_plan(case))  # type: ignore[arg-type]
        assert move.next_action == "nothing: done"
