"""Kill switches stop writes at once: the issue label, the repository label, the local file."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from orchestrator_sim.testing import SimWorld
from tests.support.idle import wait_idle

from .harness import REPO_STOP_LABEL, STOP_LABEL, default_scenario, flow_for


def slow_implementation() -> dict[str, Any]:
    scenario = default_scenario()
    scenario["steps"] = [
        {"session": "auto"},
        {"events": {"count": 400, "interval_ms": 25}},
        *scenario["steps"][1:],
    ]
    return scenario


def wait_until(predicate: Any, timeout_s: float = 15.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_issue_stop_label_during_a_turn_cancels_it_and_stops_every_write(
    tmp_path: Path, world: SimWorld
) -> None:
    with flow_for(tmp_path, world, mode="merge", scenario=slow_implementation()) as flow:
        number = flow.open_issue()
        flow.d.tick()
        wait_until(lambda: any(turn.last_event for turn in flow.d.parts.pool.turns()))
        writes_before = len(flow.bot_writes())
        world.control.add_labels(world.repo, number, [STOP_LABEL], as_user=flow.human.login)
        flow.d.tick()
        assert wait_idle(flow.d, 20)
        flow.idle_ticks(4)

        runs = flow.d.db.runs.for_issue(flow.d.parts.records.get(flow.ref(number)).issue_id)
        assert [run.outcome for run in runs] == ["cancelled"]
        assert flow.phase(number) == "blocked"
        record = flow.record(number)
        assert record is not None and record.waiting_reason is not None
        assert record.waiting_reason.value == "kill_switch_active"
        assert len(flow.bot_writes()) == writes_before
        assert flow.pulls() == []


def test_stop_label_added_after_the_snapshot_is_seen_by_the_gate(
    tmp_path: Path, world: SimWorld
) -> None:
    with flow_for(tmp_path, world, mode="merge") as flow:
        number = flow.open_issue()
        flow.step()  # the implementing turn ran and its worker pushed; the PR comes next tick
        pushes = [w for w in flow.bot_writes() if "receive-pack" in w["path"]]
        assert len(pushes) == 1
        writes_before = len(flow.bot_writes())
        builder = flow.d.parts.repo_set.first.parts.builder
        original = builder.build

        def build_then_label(*args: Any, **kwargs: Any) -> Any:
            gathered = original(*args, **kwargs)
            # A human adds the stop label between the snapshot and the writes.
            world.control.add_labels(world.repo, number, [STOP_LABEL], as_user=flow.human.login)
            return gathered

        builder.build = build_then_label  # type: ignore[method-assign]
        flow.d.parts.switches.max_age_s = 0.0
        flow.step()

        refused = [e for e in flow.d.db.outbox.for_issue(1) if e.status == "refused_by_kill_switch"]
        assert sorted(e.kind for e in refused) == ["create_pr", "upsert_workpad"]
        assert all("stop label" in e.result["reason"] for e in refused)
        assert len(flow.bot_writes()) == writes_before
        assert flow.pulls() == []


def test_repo_wide_label_stops_every_write_until_lifted(tmp_path: Path, world: SimWorld) -> None:
    with flow_for(tmp_path, world, mode="merge") as flow:
        number = flow.open_issue()
        flow.run_to_phase(number, "waiting_for_checks")
        pr = flow.pr_number(number)
        stopper = world.control.create_issue(
            world.repo, "Stop everything", as_user=flow.human.login, labels=[REPO_STOP_LABEL]
        )
        flow.check(pr, "success")
        writes_before = len(flow.bot_writes())
        flow.idle_ticks(4)
        assert len(flow.bot_writes()) == writes_before
        assert flow.phase(number) == "blocked"
        assert flow.d.status().stopped_repos == (world.repo,)

        world.control.update_issue(world.repo, stopper, as_user=flow.human.login, state="closed")
        flow.run_to_phase(number, "waiting_for_human")
        assert len(flow.bot_writes()) > writes_before


def test_local_file_stops_every_write_and_removing_it_resumes(
    tmp_path: Path, world: SimWorld
) -> None:
    with flow_for(tmp_path, world, mode="merge") as flow:
        flow.d.set_brake(True)
        assert (tmp_path / "STOP").exists()
        number = flow.open_issue()
        flow.idle_ticks(3)
        assert flow.bot_writes() == []
        assert flow.d.db.runs.running() == []
        assert flow.phase(number) is None
        assert flow.d.status().brake_active

        flow.d.set_brake(False)
        flow.run_to_phase(number, "waiting_for_checks")
        assert len(flow.pulls()) == 1


def test_mode_label_lowers_one_issue_to_observe(tmp_path: Path, world: SimWorld) -> None:
    with flow_for(tmp_path, world, mode="merge") as flow:
        number = flow.open_issue(labels=["orchestrator:observe"])
        flow.idle_ticks(3)
        paths = {w["path"] for w in flow.bot_writes()}
        assert paths, "the workpad is still written"
        assert all("/comments" in path for path in paths), paths
        assert "(observe only)" in flow.workpads(number)[0]["body"]
        assert flow.pulls() == []


# GitHub compares label names without regard to case: a repository holds one label
# per name, and a human may have created the stop label in a case of their own.
ODD_CASE_STOP_LABEL = "Orchestrator:STOP"


def test_stop_label_in_another_case_stops_dispatch_and_cancels_the_turn(
    tmp_path: Path, world: SimWorld
) -> None:
    with flow_for(tmp_path, world, mode="merge", scenario=slow_implementation()) as flow:
        number = flow.open_issue()
        flow.d.tick()
        wait_until(lambda: any(turn.last_event for turn in flow.d.parts.pool.turns()))
        stopped = flow.open_issue("Another feature", labels=[ODD_CASE_STOP_LABEL])
        assert ODD_CASE_STOP_LABEL in {label["name"] for label in flow.issue(stopped)["labels"]}
        writes_before = len(flow.bot_writes())
        world.control.add_labels(
            world.repo, number, [ODD_CASE_STOP_LABEL], as_user=flow.human.login
        )
        flow.d.tick()
        assert wait_idle(flow.d, 20)
        flow.idle_ticks(4)

        runs = flow.d.db.runs.for_issue(flow.d.parts.records.get(flow.ref(number)).issue_id)
        assert [run.outcome for run in runs] == ["cancelled"]
        assert flow.phase(number) == "blocked"
        record = flow.record(number)
        assert record is not None and record.waiting_reason is not None
        assert record.waiting_reason.value == "kill_switch_active"
        # The issue that carried the label from the start was never dispatched.
        assert flow.record(stopped) is None
        assert len(flow.d.db.runs.running()) == 0
        assert len(flow.bot_writes()) == writes_before
        assert flow.pulls() == []


def test_stop_label_in_another_case_added_after_the_snapshot_is_refused_by_the_gate(
    tmp_path: Path, world: SimWorld
) -> None:
    with flow_for(tmp_path, world, mode="merge") as flow:
        number = flow.open_issue()
        flow.step()
        writes_before = len(flow.bot_writes())
        builder = flow.d.parts.repo_set.first.parts.builder
        original = builder.build

        def build_then_label(*args: Any, **kwargs: Any) -> Any:
            gathered = original(*args, **kwargs)
            world.control.add_labels(
                world.repo, number, [ODD_CASE_STOP_LABEL], as_user=flow.human.login
            )
            return gathered

        builder.build = build_then_label  # type: ignore[method-assign]
        flow.d.parts.switches.max_age_s = 0.0
        flow.step()

        refused = [e for e in flow.d.db.outbox.for_issue(1) if e.status == "refused_by_kill_switch"]
        assert sorted(e.kind for e in refused) == ["create_pr", "upsert_workpad"]
        assert len(flow.bot_writes()) == writes_before
        assert flow.pulls() == []
