"""The dashboard's row of an issue tells its state as it is after every tick.

Driven through a whole flow on the emulator: the tracker state shown is the one
the issue's labels on GitHub say, the next action always belongs to the phase
the issue is in, and a finished issue shows its merge, not gates.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from orchestrator.web.views.dashboard import IssueRow, issue_rows
from orchestrator_sim.testing import SimWorld

from .harness import Flow, flow_for

STATE_BY_LABEL = {
    "state:todo": "Todo",
    "state:in-progress": "In Progress",
    "state:in-review": "In Review",
    "state:merging": "Merging",
    "state:rework": "Rework",
    "state:blocked": "Blocked",
}


def _tracker_state(issue: dict[str, Any]) -> str:
    """The tracker state GitHub shows now: Done once closed, else the state label (or Todo)."""
    if issue["state"] == "closed":
        return "Done"
    names = [label["name"] for label in issue["labels"]]
    states = sorted(STATE_BY_LABEL[name] for name in names if name in STATE_BY_LABEL)
    return states[0] if states else "Todo"


def _row(flow: Flow, number: int) -> IssueRow:
    rows = issue_rows(flow.d.db, None, datetime.now(UTC))
    return next(row for row in rows if row.number == number)


def _check_row(flow: Flow, number: int, seen: list[str]) -> None:
    row = _row(flow, number)
    expected = _tracker_state(flow.issue(number))
    shown = row.tracker_state
    assert shown == expected, f"{row.phase}: shows {shown}, GitHub {expected}"
    assert row.next_action, row
    assert not row.next_action.startswith(f"move to {row.phase}"), (row.phase, row.next_action)
    seen.append(f"{row.phase}/{row.tracker_state}: {row.next_action}")


def test_tracker_state_and_next_action_follow_each_tick_and_done_shows_the_merge(
    tmp_path: Path, world: SimWorld
) -> None:
    with flow_for(tmp_path, world, mode="merge") as flow:
        number = flow.open_issue()
        seen: list[str] = []

        def step_until(phase: str) -> None:
            for _ in range(40):
                if flow.phase(number) == phase:
                    return
                flow.step()
                _check_row(flow, number, seen)
            raise AssertionError(f"#{number} never reached {phase}: {seen}")

        step_until("waiting_for_checks")
        pr = flow.pr_number(number)
        flow.check(pr, "success")
        step_until("waiting_for_human")
        flow.approve(number)
        step_until("done")
        flow.idle_ticks(2)
        _check_row(flow, number, seen)

        row = _row(flow, number)
        assert row.phase == "done" and row.tracker_state == "Done"
        # Finished: no gates (the merged pull request's mergeability means nothing), the merge.
        assert row.gates == {}
        assert row.merge is not None and row.merge["state"] == "merged"
        assert row.merge["pr_number"] == pr
        assert row.merge["commit_sha"] == flow.pull(pr)["merge_commit_sha"]
        # Each phase the issue went through was shown with its own next action.
        phases = {entry.split("/")[0] for entry in seen}
        assert {"implementing", "reviewing", "waiting_for_checks", "done"} <= phases, seen
