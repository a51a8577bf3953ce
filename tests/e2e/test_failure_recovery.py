"""One test per row of the failure-recovery table of the orchestrated PR flow."""

from __future__ import annotations

from pathlib import Path

from orchestrator_sim.testing import SimWorld

from .harness import Flow, default_scenario, flow_for


def outbox(flow: Flow, kind: str) -> list[str]:
    return [e.status for e in flow.d.db.outbox.for_issue(1) if e.kind == kind]


def merges(flow: Flow, pr: int) -> list[dict[str, object]]:
    return [w for w in flow.bot_writes() if str(w["path"]).endswith(f"/pulls/{pr}/merge")]


def ready_to_merge(flow: Flow, number: int) -> int:
    flow.run_to_phase(number, "waiting_for_checks")
    pr = flow.pr_number(number)
    flow.check(pr, "success")
    flow.run_to_phase(number, "waiting_for_human")
    flow.approve(number)
    return pr


def test_pr_creation_fails_after_push_keeps_implementing_then_publishes(
    tmp_path: Path, world: SimWorld
) -> None:
    with flow_for(tmp_path, world) as flow:
        number = flow.open_issue()
        flow.step()  # the implementing turn
        world.control.add_fault(
            path=f"/repos/{world.repo}/pulls", method="POST", action="error", status=502, count=3
        )
        flow.step()  # push, then the pull request fails

        assert flow.phase(number) == "implementing"
        record = flow.record(number)
        assert record is not None and record.last_outcome is not None
        assert record.workpad.branch == "orchestrator/1-add-the-feature"
        assert record.workpad.pr is None
        branch = flow.rest("GET", f"/repos/{world.repo}/branches/{record.workpad.branch}")
        assert branch["commit"]["sha"] == record.last_outcome.head_after
        assert outbox(flow, "create_pr") == ["failed"]
        assert flow.pulls() == []

        flow.run_to_phase(number, "reviewing")
        assert len(flow.pulls()) == 1
        assert outbox(flow, "create_pr") == ["done"]
        pushes = [w for w in flow.bot_writes() if "receive-pack" in w["path"]]
        assert len(pushes) == 1, "only the pull request is retried, not the push"


def test_lost_answers_never_duplicate_the_pull_request_or_the_workpad(
    tmp_path: Path, world: SimWorld
) -> None:
    with flow_for(tmp_path, world) as flow:
        number = flow.open_issue()
        world.control.add_fault(
            path=f"/repos/{world.repo}/pulls", method="POST", action="lost_response", count=1
        )
        world.control.add_fault(
            path=f"/repos/{world.repo}/issues/{number}/comments",
            method="POST",
            action="lost_response",
            count=1,
        )
        flow.run_to_phase(number, "waiting_for_checks")
        assert len(flow.pulls()) == 1
        assert len(flow.workpads(number)) == 1
        assert len(flow.review_comments(flow.pr_number(number))) == 1


def test_review_comment_upsert_failure_does_not_count_the_pass(
    tmp_path: Path, world: SimWorld
) -> None:
    with flow_for(tmp_path, world) as flow:
        number = flow.open_issue()
        flow.run_to_phase(number, "reviewing")
        pr = flow.pr_number(number)
        world.control.add_fault(
            path=f"/repos/{world.repo}/issues/{pr}/comments",
            method="POST",
            action="error",
            status=502,
            count=3,
        )
        flow.step()  # the review turn
        flow.step()  # the review comment fails

        assert flow.phase(number) == "reviewing"
        record = flow.record(number)
        assert record is not None
        assert record.workpad.review.passes_completed == 0
        assert record.workpad.review.last_reviewed_head_sha is None
        assert outbox(flow, "upsert_review_comment") == ["failed"]
        assert flow.review_comments(pr) == []

        flow.run_to_phase(number, "waiting_for_checks")
        record = flow.record(number)
        assert record is not None and record.workpad.review.passes_completed == 1
        assert len(flow.review_comments(pr)) == 1
        assert len(flow.d.db.runs.for_issue(1)) == 2, "the review is not run again"


def test_new_commit_after_review_invalidates_it_and_reviews_the_new_head(
    tmp_path: Path, world: SimWorld
) -> None:
    with flow_for(tmp_path, world) as flow:
        number = flow.open_issue()
        flow.run_to_phase(number, "waiting_for_checks")
        pr = flow.pr_number(number)
        reviewed = flow.head(pr)
        new_head = flow.push_as_human(flow.branch(number))
        flow.check(pr, "success")
        flow.step()
        assert flow.phase(number) == "reviewing"
        record = flow.record(number)
        assert record is not None
        assert record.workpad.observation.gates["head_match"].value == "fail"

        flow.run_to_phase(number, "waiting_for_checks")
        record = flow.record(number)
        assert record is not None
        assert record.workpad.review.last_reviewed_head_sha == new_head != reviewed
        comments = flow.review_comments(pr)
        assert len(comments) == 1
        assert f"<!-- orchestrator-review-head: {new_head} -->" in comments[0]["body"]


def test_pending_checks_wait_passively_without_agent_turns(tmp_path: Path, world: SimWorld) -> None:
    with flow_for(tmp_path, world) as flow:
        number = flow.open_issue()
        flow.run_to_phase(number, "waiting_for_checks")
        flow.check(flow.pr_number(number), None, status="in_progress")
        runs = len(flow.d.db.runs.for_issue(1))
        flow.idle_ticks(5)

        assert flow.phase(number) == "waiting_for_checks"
        record = flow.record(number)
        assert record is not None and record.waiting_reason is not None
        assert record.waiting_reason.value == "checks_pending"
        assert record.workpad.observation.gates["checks"].value == "pending"
        assert len(flow.d.db.runs.for_issue(1)) == runs


def test_mergeability_lost_before_the_merge_aborts_and_reinspects(
    tmp_path: Path, world: SimWorld
) -> None:
    with flow_for(tmp_path, world) as flow:
        number = flow.open_issue()
        pr = ready_to_merge(flow, number)
        flow.run_to_phase(number, "merging")
        world.control.set_mergeable(world.repo, pr, False)
        flow.step()

        assert flow.phase(number) == "waiting_for_checks"
        record = flow.record(number)
        assert record is not None and record.waiting_reason is not None
        assert record.waiting_reason.value == "mergeability_changed"
        assert merges(flow, pr) == []
        assert not flow.pull(pr)["merged"]

        world.control.set_mergeable(world.repo, pr, None)
        flow.run_to_phase(number, "done")
        assert len(merges(flow, pr)) == 1


def test_merge_ok_but_closing_fails_retries_only_the_close(tmp_path: Path, world: SimWorld) -> None:
    with flow_for(tmp_path, world) as flow:
        number = flow.open_issue()
        pr = ready_to_merge(flow, number)
        flow.run_to_phase(number, "merging")
        world.control.add_fault(
            path=f"/repos/{world.repo}/issues/{number}",
            method="PATCH",
            action="error",
            status=502,
            count=1000,
        )
        flow.run(lambda: bool(flow.pull(pr)["merged"]), what="the merge")
        flow.step()  # closing fails (as often as it is tried until the fault is lifted)

        assert flow.issue(number)["state"] == "open"
        assert flow.phase(number) == "merging"
        record = flow.record(number)
        assert record is not None
        assert record.workpad.merge.last_merged_head_sha == flow.head(pr)
        assert "failed" in outbox(flow, "close_issue")

        world.control.clear_faults()
        flow.run_to_phase(number, "done")
        assert flow.issue(number)["state"] == "closed"
        assert len(merges(flow, pr)) == 1, "the merge is never repeated"
        assert outbox(flow, "close_issue") == ["done"]


def test_merge_failure_never_marks_done_and_reinspects(tmp_path: Path, world: SimWorld) -> None:
    with flow_for(tmp_path, world) as flow:
        number = flow.open_issue()
        pr = ready_to_merge(flow, number)
        flow.run_to_phase(number, "merging")
        world.control.add_fault(
            path=f"/repos/{world.repo}/pulls/{pr}/merge",
            method="PUT",
            action="error",
            status=502,
            count=2,
        )
        flow.step()  # the merge call fails
        flow.step()

        assert flow.phase(number) == "waiting_for_checks"
        record = flow.record(number)
        assert record is not None and record.workpad.merge.last_failure_reason
        assert flow.issue(number)["state"] == "open"
        assert not [
            w
            for w in flow.bot_writes()
            if w["method"] == "PATCH" and str(w["path"]).endswith(f"/issues/{number}")
        ]

        flow.run_to_phase(number, "done")
        writes = flow.bot_writes()
        merged_at = max(
            i
            for i, w in enumerate(writes)
            if str(w["path"]).endswith(f"/pulls/{pr}/merge") and w["status"] == 200
        )
        closed_at = next(
            i
            for i, w in enumerate(writes)
            if w["method"] == "PATCH" and str(w["path"]).endswith(f"/issues/{number}")
        )
        assert merged_at < closed_at


def test_rework_oscillation_stops_at_the_limit(tmp_path: Path, world: SimWorld) -> None:
    with flow_for(tmp_path, world, policy={"orchestration": {"max_rework_cycles": 1}}) as flow:
        number = flow.open_issue()
        flow.run_to_phase(number, "waiting_for_checks")
        pr = flow.pr_number(number)
        first = flow.head(pr)
        flow.check(pr, "failure")
        flow.run(lambda: flow.head(pr) != first, what="the rework is pushed")
        flow.run_to_phase(number, "waiting_for_checks")
        flow.check(pr, "failure")
        flow.run_to_phase(number, "blocked")

        record = flow.record(number)
        assert record is not None and record.waiting_reason is not None
        assert record.waiting_reason.value == "rework_limit_exceeded"
        assert record.rework_cycles == 1
        runs = len(flow.d.db.runs.for_issue(1))
        flow.idle_ticks(3)
        assert len(flow.d.db.runs.for_issue(1)) == runs
        assert "rework limit" in (record.workpad.observation.next_intended_action or "")


def test_a_turn_longer_than_the_claim_is_kept_when_ticks_are_driven_by_hand(
    tmp_path: Path, world: SimWorld
) -> None:
    """``run --once`` and these tests wait for turns outside the scheduler: the wait renews
    the claim, so a turn longer than the lease is recorded, not discarded and re-run."""
    scenario = default_scenario()
    scenario["steps"] = [{"sleep_ms": 4_000}, *scenario["steps"]]
    with flow_for(
        tmp_path, world, scenario=scenario, policy={"review": {"enabled": False}}, lease_s=2.0
    ) as flow:
        number = flow.open_issue()
        flow.run_to_phase(number, "waiting_for_checks", max_ticks=10)
        runs = flow.d.db.runs.for_issue(1)
        assert len(runs) == 1 and runs[0].outcome == "completed"


def test_a_maintainers_push_before_a_rework_turn_is_not_taken_for_the_turns_own_commits(
    tmp_path: Path, world: SimWorld
) -> None:
    with flow_for(tmp_path, world) as flow:
        number = flow.open_issue()
        pr, maintainers = flow.rework_after_a_human_push(number)
        flow.run_to_phase(number, "waiting_for_checks")
        # The turn started from the maintainer's head, brought into the workspace, and its
        # own commit went on top of it (before, it was blocked: "the branch moved").
        head = flow.head(pr)
        commit = flow.rest("GET", f"/repos/{world.repo}/commits/{head}")
        assert head != maintainers
        assert [p["sha"] for p in commit["parents"]] == [maintainers]
