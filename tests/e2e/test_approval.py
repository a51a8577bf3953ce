"""Approvals: only a human with write permission counts, and only for the head it saw."""

from __future__ import annotations

from pathlib import Path

from orchestrator_sim.testing import SimWorld, make_token

from .harness import APPROVAL_LABEL, flow_for


def test_a_push_after_approval_is_reviewed_and_the_old_head_never_merged(
    tmp_path: Path, world: SimWorld
) -> None:
    with flow_for(tmp_path, world, mode="merge") as flow:
        number, pr = flow.to_waiting_for_human()
        approved_head = flow.head(pr)
        flow.approve(number)
        flow.run_to_phase(number, "merging")
        # The head moves between the decision to merge and the merge call.
        branch = flow.pull(pr)["head"]["ref"]
        new_head = flow.push_as_human(branch)
        flow.run_to_phase(number, "reviewing")
        flow.run_to_phase(number, "waiting_for_checks")
        record = flow.record(number)
        assert record is not None and record.workpad.review.last_reviewed_head_sha == new_head
        assert (
            f"<!-- orchestrator-review-head: {new_head} -->" in flow.review_comments(pr)[0]["body"]
        )

        flow.check(pr, "success")
        # The approval covered the old head only: it was withdrawn, and a new one is needed.
        flow.run_to_phase(number, "waiting_for_human")
        labels = {label["name"] for label in flow.issue(number)["labels"]}
        assert APPROVAL_LABEL not in labels
        flow.idle_ticks(2)
        assert not flow.pull(pr)["merged"]
        flow.approve(number)
        flow.run_to_phase(number, "done")
        pull = flow.pull(pr)
        assert pull["merged"] and pull["head"]["sha"] == new_head
        merges = [e for e in flow.d.db.outbox.for_issue(1) if e.kind == "merge_pr"]
        assert [e.payload["head_sha"] for e in merges] == [new_head]
        assert approved_head != new_head
        assert len(flow.review_comments(pr)) == 1


def test_approval_by_the_bot_or_by_a_user_without_write_permission_is_ignored(
    tmp_path: Path, world: SimWorld
) -> None:
    world.control.create_user("mallory", make_token())
    world.control.set_permission(world.repo, "mallory", "triage")
    with flow_for(tmp_path, world, mode="merge") as flow:
        number = flow.open_issue()
        flow.run_to_phase(number, "waiting_for_checks")
        flow.check(flow.pr_number(number), "success")
        flow.run_to_phase(number, "waiting_for_human")

        flow.approve(number, as_user="mallory")
        flow.idle_ticks(3)
        assert flow.phase(number) == "waiting_for_human"
        record = flow.record(number)
        assert record is not None
        assert record.workpad.observation.gates["human_approval"].value == "required"

        world.control.remove_label(world.repo, number, APPROVAL_LABEL, as_user=flow.human.login)
        gh = world.github()  # the bot's own token
        gh.requester.requestJson(
            "POST",
            f"/repos/{world.repo}/issues/{number}/labels",
            input={"labels": [APPROVAL_LABEL]},
        )
        flow.idle_ticks(3)
        assert flow.phase(number) == "waiting_for_human"

        # A label that is already there gets no new event: the human adds it afresh.
        world.control.remove_label(world.repo, number, APPROVAL_LABEL, as_user=flow.human.login)
        flow.approve(number)
        flow.run_to_phase(number, "done")
