"""Follow-up ticks: what a tick changed is carried on at once, over those issues alone.

A transition or a write asks for another tick right away (the next step can be
planned now); that tick reads, plans and acts on the issues the previous one
changed, not on every tracked issue, so an approval is merged in a chain of small
ticks instead of one whole pass per step.
"""

from __future__ import annotations

from pathlib import Path

from structlog.testing import capture_logs

from orchestrator.sim.testing import SimWorld

from .harness import flow_for


def test_an_approval_is_merged_by_follow_up_ticks_over_that_issue_alone(
    tmp_path: Path, world: SimWorld
) -> None:
    with flow_for(tmp_path, world, mode="merge") as flow:
        first, pr = flow.to_waiting_for_human()
        other, other_pr = flow.to_waiting_for_human()
        flow.run(lambda: not flow.step(), what="a tick that does nothing")
        flow.approve(first)
        with capture_logs() as logs:
            # One run of the scheduled job: a whole tick, then the follow-ups it asks for.
            flow.d._poll_job()
        ticks = [e for e in logs if e["event"] == "tick"]
        assert ticks[0]["focus"] is None and ticks[0]["issues"] == 2
        follow_ups = ticks[1:]
        assert len(follow_ups) >= 2, ticks
        # (The last one finds the issue done: done issues are left out of a snapshot.)
        assert all(t["focus"] == 1 and t["issues"] <= 1 for t in follow_ups), ticks
        assert flow.pull(pr)["merged"]
        assert flow.phase(first) == "done"
        # The other issue was in the whole tick only, and is as it was.
        assert flow.phase(other) == "waiting_for_human"
        assert not flow.pull(other_pr)["merged"]


def test_a_whole_tick_asked_for_meanwhile_is_not_narrowed_to_a_follow_up(
    tmp_path: Path, world: SimWorld
) -> None:
    """A request for a whole tick (a finished turn, the operator) wins over a follow-up."""
    with flow_for(tmp_path, world, mode="merge") as flow:
        first, _ = flow.to_waiting_for_human()
        flow.to_waiting_for_human()
        flow.run(lambda: not flow.step(), what="a tick that does nothing")
        flow.approve(first)
        d = flow.d
        d._pending, d._focus = False, None
        report = d.tick()
        assert report is not None
        assert report.execution.touched == {flow.ref(first)}
        # The tick asked for a follow-up over the issue it changed.
        assert d._pending and d._focus == {flow.ref(first)}
        d.request_tick()
        assert d._focus is None
        d._ask_again({flow.ref(first)})
        assert d._focus is None
