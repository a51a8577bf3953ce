"""The whole flow per rollout mode: mutate stops short of merging, merge merges, observe reports."""

from __future__ import annotations

from pathlib import Path

from orchestrator_sim.testing import SimWorld

from .harness import APPROVAL_LABEL, flow_for

REVIEW_HEAD = "<!-- orchestrator-review-head: {} -->"


def test_mutate_mode_reviews_reworks_and_waits_for_a_human_without_merging(
    tmp_path: Path, world: SimWorld
) -> None:
    with flow_for(tmp_path, world, mode="mutate") as flow:
        number = flow.open_issue()
        flow.run_to_phase(number, "waiting_for_checks")
        pr = flow.pr_number(number)
        first_head = flow.head(pr)
        reviews = flow.review_comments(pr)
        assert len(reviews) == 1
        assert REVIEW_HEAD.format(first_head) in reviews[0]["body"]

        flow.check(pr, "failure")
        flow.run_to_phase(number, "rework")
        flow.run(lambda: flow.head(pr) != first_head, what="the rework is pushed")
        flow.run_to_phase(number, "waiting_for_checks")
        second_head = flow.head(pr)
        reviews = flow.review_comments(pr)
        assert len(reviews) == 1, "the review comment is updated, never duplicated"
        assert REVIEW_HEAD.format(second_head) in reviews[0]["body"]

        flow.check(pr, "success")
        flow.run_to_phase(number, "waiting_for_human")
        flow.approve(number)
        flow.idle_ticks(4)

        assert flow.phase(number) == "ready_to_merge"
        record = flow.record(number)
        assert record is not None and record.rework_cycles == 1
        assert "needs rollout mode merge" in (record.workpad.observation.next_intended_action or "")
        assert not flow.pull(pr)["merged"]
        assert flow.issue(number)["state"] == "open"
        assert not [w for w in flow.bot_writes() if w["path"].endswith("/merge")]
        assert len(flow.pulls()) == 1
        assert len(flow.workpads(number)) == 1


STATE_LABELS = {
    "Todo": "state:todo",
    "In Progress": "state:in-progress",
    "In Review": "state:in-review",
    "Merging": "state:merging",
    "Rework": "state:rework",
    "Blocked": "state:blocked",
    "Done": "state:done",
}


def test_merge_mode_merges_the_approved_head_then_closes_the_issue(
    tmp_path: Path, world: SimWorld
) -> None:
    policy = {"tracker": {"state_labels": STATE_LABELS}}
    with flow_for(tmp_path, world, mode="merge", policy=policy) as flow:
        number = flow.open_issue()
        flow.run_to_phase(number, "waiting_for_checks")
        pr = flow.pr_number(number)
        flow.check(pr, "success")
        flow.run_to_phase(number, "waiting_for_human")
        head = flow.head(pr)
        flow.approve(number)
        flow.run_to_phase(number, "done")

        pull = flow.pull(pr)
        assert pull["merged"] and pull["head"]["sha"] == head
        merge_commit = pull["merge_commit_sha"]
        assert flow.issue(number)["state"] == "closed"
        writes = flow.bot_writes()
        merge_at = next(i for i, w in enumerate(writes) if w["path"].endswith(f"/pulls/{pr}/merge"))
        close_at = next(
            i
            for i, w in enumerate(writes)
            if w["method"] == "PATCH" and w["path"].endswith(f"/issues/{number}")
        )
        assert merge_at < close_at, "Done never precedes the merge"
        workpad = flow.workpads(number)
        assert len(workpad) == 1
        assert merge_commit in workpad[0]["body"]
        assert "phase: done" in workpad[0]["body"]
        record = flow.record(number)
        assert record is not None
        assert record.workpad.merge.last_merged_head_sha == head
        labels = {label["name"] for label in flow.issue(number)["labels"]}
        assert {APPROVAL_LABEL, "state:done"} <= labels
        assert not labels & {"state:in-review", "state:in-progress"}
        assert len(flow.pulls()) == 1
        assert len(flow.review_comments(pr)) == 1


def test_observe_mode_writes_only_the_workpad_with_the_intended_action(
    tmp_path: Path, world: SimWorld
) -> None:
    with flow_for(tmp_path, world, mode="observe") as flow:
        number = flow.open_issue()
        flow.idle_ticks(4)

        writes = flow.bot_writes()
        assert writes, "the workpad observation is written"
        comment_paths = (
            f"/repos/{world.repo}/issues/{number}/comments",
            f"/repos/{world.repo}/issues/comments/",
        )
        for write in writes:
            assert write["path"].startswith(comment_paths), write
        workpad = flow.workpads(number)
        assert len(workpad) == 1
        assert "run an agent turn (implementing) (observe only)" in workpad[0]["body"]
        assert "rollout_mode: observe" in workpad[0]["body"]
        assert flow.pulls() == []
        assert flow.d.db.runs.running() == []
        refused = [e for e in flow.d.db.outbox.for_issue(1) if e.status.startswith("refused")]
        assert refused == []
