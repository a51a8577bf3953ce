"""Merge safety under GitHub's real semantics: each test reproduces one way an unreviewed,
unchecked or unapproved head could be merged, through the daemon, the emulator and git."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from orchestrator_sim.testing import SimWorld, make_token

from .harness import APPROVAL_LABEL, STOP_LABEL, Flow, flow_for


def _labels(flow: Flow, number: int) -> set[str]:
    return {label["name"] for label in flow.issue(number)["labels"]}


def _merged_heads(flow: Flow) -> list[str]:
    return [
        str(e.payload["head_sha"])
        for e in flow.d.db.outbox.for_issue(1)
        if e.kind == "merge_pr" and e.status == "done"
    ]


def test_a_label_approval_given_before_a_push_is_withdrawn_and_never_merges_the_new_head(
    tmp_path: Path, world: SimWorld
) -> None:
    with flow_for(tmp_path, world, mode="merge") as flow:
        number, pr = flow.to_waiting_for_human()
        flow.approve(number)
        # A human pushes right after the approval, before the daemon saw either.
        new_head = flow.push_as_human(flow.pull(pr)["head"]["ref"])
        flow.check(pr, "success")
        flow.run(lambda: APPROVAL_LABEL not in _labels(flow, number), what="label withdrawn")
        flow.run_to_phase(number, "waiting_for_human")
        flow.idle_ticks(3)
        assert not flow.pull(pr)["merged"]
        record = flow.record(number)
        # The new head is dated from the first read that showed it, kept in the database.
        assert record is not None and record.head_seen is not None
        assert record.head_seen.sha == new_head
        asks = [c for c in flow.comments(number) if "approve it again" in c["body"]]
        assert len(asks) == 1 and new_head[:12] in asks[0]["body"]

        flow.approve(number)
        flow.run_to_phase(number, "done")
        assert flow.pull(pr)["merged"] and _merged_heads(flow) == [new_head]


def test_checks_are_read_from_the_head_commit_not_the_latest_dated_one(
    tmp_path: Path, world: SimWorld
) -> None:
    # No branch protection: the daemon's own check of the head is what stands in the way.
    with flow_for(tmp_path, world, mode="merge", protect=False) as flow:
        number, pr = flow.to_waiting_for_human()
        old_head = flow.head(pr)
        # A human pushes a commit dated a year back: GitHub lists it first, so
        # commits(last: 1) still names the old, green commit.
        new_head = world.control.push(
            world.repo,
            branch=flow.pull(pr)["head"]["ref"],
            files={"src/human.py": "dated = True\n"},
            message="An old-dated change",
            as_user=flow.human.login,
            author_date="2025-01-01T00:00:00Z",
            committer_date="2025-01-01T00:00:00Z",
        )
        assert new_head != old_head
        flow.run_to_phase(number, "waiting_for_checks", max_ticks=20)
        flow.check(pr, "failure")
        flow.wait_past_head(number)
        flow.approve(number)
        flow.idle_ticks(6)
        assert not flow.pull(pr)["merged"]
        assert _merged_heads(flow) == []


def test_a_failing_check_past_the_hundredth_blocks_the_merge(
    tmp_path: Path, world: SimWorld
) -> None:
    with flow_for(tmp_path, world, mode="merge") as flow:
        number, pr = flow.to_waiting_for_human()
        head = flow.head(pr)
        for index in range(100):
            world.control.check_run(
                world.repo,
                sha=head,
                name=f"shard-{index:03d}",
                status="completed",
                conclusion="success",
            )
        world.control.check_run(
            world.repo, sha=head, name="zz-late-shard", status="completed", conclusion="failure"
        )
        flow.approve(number)
        flow.idle_ticks(6)
        assert not flow.pull(pr)["merged"]
        record = flow.record(number)
        assert record is not None and record.workpad.observation.gates["checks"] != "pass"


def test_a_stop_label_added_during_a_slow_tick_stops_the_merge(
    tmp_path: Path, world: SimWorld
) -> None:
    with flow_for(tmp_path, world, mode="merge") as flow:
        number, pr = flow.to_waiting_for_human()
        flow.approve(number)
        flow.run_to_phase(number, "merging")
        # The next tick's reads are slow; a human pulls the stop label meanwhile.
        world.control.add_fault(path="/graphql", action="latency", latency_ms=2500, count=2)

        def stop_soon() -> None:
            time.sleep(1.0)
            world.control.add_labels(world.repo, number, [STOP_LABEL], as_user=flow.human.login)

        helper = threading.Thread(target=stop_soon)
        helper.start()
        flow.step()
        helper.join()
        flow.idle_ticks(2)
        assert not flow.pull(pr)["merged"]
        assert _merged_heads(flow) == []


def test_a_required_check_completed_between_polls_is_seen(tmp_path: Path, world: SimWorld) -> None:
    policy: dict[str, Any] = {"merge": {"required_checks": ["ci", "lint"]}}
    with flow_for(tmp_path, world, mode="merge", policy=policy) as flow:
        number = flow.open_issue()
        flow.run_to_phase(number, "waiting_for_checks")
        pr = flow.pr_number(number)
        flow.check(pr, "success")
        flow.approve(number)
        flow.idle_ticks(2)
        # Long enough for the poller to trust its cached state.
        time.sleep(3.5)
        flow.idle_ticks(1)
        assert flow.phase(number) == "waiting_for_checks"
        world.control.check_run(
            world.repo, sha=flow.head(pr), name="lint", status="completed", conclusion="success"
        )
        flow.run_to_phase(number, "done", max_ticks=15)


def test_a_writer_demoted_to_read_before_the_merge_no_longer_approves(
    tmp_path: Path, world: SimWorld
) -> None:
    world.control.create_user("bob", make_token())
    world.control.set_permission(world.repo, "bob", "write")
    with flow_for(tmp_path, world, mode="mutate") as flow:
        number, pr = flow.to_waiting_for_human()
        flow.approve(number, as_user="bob")
        # Mutate mode: every gate passes, but the issue waits in ready_to_merge.
        flow.run_to_phase(number, "ready_to_merge")
        world.control.set_permission(world.repo, "bob", "read")
        flow.edit_policy({"rollout": {"mode": "merge"}})
        flow.idle_ticks(5)
        assert not flow.pull(pr)["merged"]
        assert _merged_heads(flow) == []
        assert flow.phase(number) in ("waiting_for_human", "waiting_for_checks")


def test_a_draft_pull_request_is_marked_ready_through_the_gate_then_merged(
    tmp_path: Path, world: SimWorld
) -> None:
    with flow_for(tmp_path, world, mode="merge", policy={"pr": {"draft": True}}) as flow:
        number, pr = flow.to_waiting_for_human()
        assert flow.pull(pr)["draft"] is True
        flow.approve(number)
        flow.run_to_phase(number, "done")
        pull = flow.pull(pr)
        assert pull["merged"] and pull["draft"] is False
        # The outbox lists the newest first: the draft left draft before the merge.
        kinds = [e.kind for e in flow.d.db.outbox.for_issue(1) if e.status == "done"]
        assert kinds.index("merge_pr") < kinds.index("mark_pr_ready")
