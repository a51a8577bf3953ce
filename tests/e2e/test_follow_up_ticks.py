"""Follow-up ticks: what a tick changed is carried on at once, over those issues alone.

A transition or a write asks for another tick right away (the next step can be
planned now); that tick reads, plans and acts on the issues the previous one
changed, not on every tracked issue, so an approval is merged in a chain of small
ticks instead of one whole pass per step.
"""

from __future__ import annotations

import time
from pathlib import Path

from structlog.testing import capture_logs

from orchestrator.domain.snapshot import IssueRef
from orchestrator.tick.request import WHOLE, CycleRequest
from orchestrator_sim.testing import SimWorld

from .harness import flow_for

LONG_INTERVAL = {"polling": {"interval_ms": 3_600_000}}


def test_an_approval_is_merged_by_follow_up_ticks_over_that_issue_alone(
    tmp_path: Path, world: SimWorld
) -> None:
    # An interval longer than the chain, however slow the machine: a chain that outlasts
    # the interval ends with the whole tick it owed (the last test of this file).
    with flow_for(tmp_path, world, mode="merge", policy=LONG_INTERVAL) as flow:
        first, pr = flow.to_waiting_for_human()
        other, other_pr = flow.to_waiting_for_human()
        flow.run(lambda: not flow.step(), what="a tick that does nothing")
        flow.approve(first)
        with capture_logs() as logs:
            # One run of the scheduled job: a whole tick, then the follow-ups it asks for.
            flow.d._poll_job()
        ticks = [e for e in logs if e["event"] == "tick"]
        kinds = [(t["kind"], t["focus"]) for t in ticks]
        # The whole tick looks first at what the issue feed saw move (the approval), and
        # follows it through (ready to merge, merging, the merge) before the pass over
        # every issue.
        assert kinds[0] == ("moved", 1), ticks
        whole = kinds.index(("whole", None))
        assert whole >= 2 and all(k == ("follow_up", 1) for k in kinds[1:whole]), kinds
        merge_call = next(
            i
            for i, e in enumerate(logs)
            if e.get("event") == "side_effect" and e.get("kind") == "merge_pr"
        )
        whole_line = [i for i, e in enumerate(logs) if e.get("event") == "tick"][whole]
        assert merge_call < whole_line, "the merge was made before the pass over every issue"
        # Any later tick is a follow-up over what the tick changed.
        assert all(t["kind"] == "follow_up" for t in ticks[whole + 1 :]), kinds
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
        d, requests = flow.d, flow.d.requests
        requests.pending, requests.focus = False, None
        report = d.tick()
        assert report is not None
        assert flow.ref(first) in report.execution.touched
        # The tick asked for a follow-up over the issues it changed.
        assert requests.pending and requests.focus == report.execution.touched
        d.request_tick()
        assert requests.focus is None
        requests.follow_up({flow.ref(first)})
        assert requests.focus is None


def test_a_new_label_is_acted_on_before_the_pass_over_every_issue(
    tmp_path: Path, world: SimWorld
) -> None:
    """A whole tick starts with what the issue feed saw move: a newly labelled issue is
    dispatched (and its turn claimed) before the other issues are read and planned."""
    with flow_for(tmp_path, world, mode="merge") as flow:
        flow.to_waiting_for_human()
        flow.run(lambda: not flow.step(), what="a tick that does nothing")
        flow.d.requests.pending, flow.d.requests.focus = False, None
        number = flow.open_issue()
        with capture_logs() as logs:
            flow.d.tick()
        events = [e for e in logs if e["event"] in ("tick", "turn_claimed")]
        assert [(e["event"], e.get("kind"), e.get("issues")) for e in events[:3]] == [
            ("tick", "moved", 1),
            ("turn_claimed", None, None),
            ("tick", "whole", 2),
        ], events
        assert events[1]["issue"] == f"{world.repo}#{number}"


def test_follow_ups_that_outlast_the_interval_end_with_the_whole_tick_it_owed(
    tmp_path: Path, world: SimWorld
) -> None:
    """The scheduler skips a run while the poll job still chains follow-ups; the job then
    makes the whole tick that run owed instead of leaving it for an interval later."""
    with flow_for(tmp_path, world, policy={"polling": {"interval_ms": 1000}}) as flow:
        d = flow.d
        ref = flow.ref(1)
        calls: list[frozenset[IssueRef] | None] = []

        def slow_tick(request: CycleRequest = WHOLE) -> None:
            calls.append(None if request.whole else request.issues)
            if len(calls) <= 3:
                d.requests.follow_up({ref})  # each of the first three asks for a follow-up
                time.sleep(0.45)  # three of them outlast the 1 s interval

        d.parts.poller.tick = slow_tick  # type: ignore[method-assign]
        d._poll_job()
        assert calls == [None, frozenset({ref}), frozenset({ref}), None]
