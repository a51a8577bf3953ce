"""Branch protection's rules, rulesets, the merge queue and auto-merge on one repository:
one merge settings record, merge states and review decisions that combine both, a queue
that honours protection, and update-branch refused on a queued pull request."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from orchestrator_sim.control import ControlRequestError
from orchestrator_sim.testing import SimWorld
from tests.sim.strict import Pull, graphql, manual_world, new_account, open_pull, pull_json, rest

QUEUED = "Branches that are queued for merging cannot be updated"
ENQUEUE = """mutation($id: ID!) { enqueuePullRequest(input: {pullRequestId: $id}) {
  mergeQueueEntry { position } } }"""
UPDATE = """mutation($id: ID!) { updatePullRequestBranch(input: {pullRequestId: $id}) {
  pullRequest { headRefOid } } }"""
AUTO_MERGE = """mutation($id: ID!) { enablePullRequestAutoMerge(input: {pullRequestId: $id,
  mergeMethod: SQUASH}) { pullRequest { autoMergeRequest { mergeMethod } } } }"""
VIEW = """query($n: Int!) { repository(owner: "acme", name: "widgets") {
  mergeCommitAllowed squashMergeAllowed rebaseMergeAllowed autoMergeAllowed
  pullRequest(number: $n) { mergeStateStatus reviewDecision isInMergeQueue } } }"""


def _queue_rules(method: str = "MERGE") -> list[dict[str, Any]]:
    return [{"type": "merge_queue", "parameters": {"merge_method": method}}]


def _behind_pull(world: SimWorld) -> tuple[Pull, str]:
    """A pull request whose head passed ``ci`` and then fell behind main; its node id."""
    pull = open_pull(world)
    world.control.check_run(world.repo, sha=pull.head, name="ci", conclusion="success")
    world.control.push(world.repo, "main", {"CHANGES.md": "moved on\n"}, as_user=world.human.login)
    world.settle_mergeability()
    return pull, str(pull_json(world, pull.number)["node_id"])


def _view(world: SimWorld, number: int) -> dict[str, Any]:
    repository: dict[str, Any] = graphql(world, VIEW, {"n": number})["data"]["repository"]
    return repository


def test_one_merge_settings_call_sets_merge_methods_and_auto_merge(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, _clock):
        pull = open_pull(world)

        answer = world.control.set_merge_settings(
            world.repo,
            allow_rebase_merge=False,
            allow_auto_merge=True,
            merge_group_checks={"ci": "success"},
        )
        # Settings left out keep their value.
        again = world.control.set_merge_settings(world.repo, allow_squash_merge=False)

        assert answer == {
            "allow_merge_commit": True,
            "allow_squash_merge": True,
            "allow_rebase_merge": False,
            "allow_auto_merge": True,
            "merge_group_checks": {"ci": "success"},
        }
        assert again == {**answer, "allow_squash_merge": False}
        shown = rest(world, "GET", f"/repos/{world.repo}").json()
        assert (shown["allow_rebase_merge"], shown["allow_auto_merge"]) == (False, True)
        view = _view(world, pull.number)
        assert (view["squashMergeAllowed"], view["autoMergeAllowed"]) == (False, True)
        assert world.control.repo_info(world.repo)["merge_settings"] == again
        with pytest.raises(ControlRequestError, match="unknown setting 'allow_forking'"):
            world.control.request(
                "PATCH", f"/repos/{world.repo}/merge-settings", {"allow_forking": True}
            )


def test_a_queued_pull_request_cannot_have_its_branch_updated(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, _clock):
        pull, node = _behind_pull(world)
        # No check reports on the merge group: the entry waits in the queue.
        world.control.protect(world.repo, "main", required_checks=["ci"])
        world.control.create_ruleset(world.repo, "queue", _queue_rules())
        world.control.enqueue(world.repo, pull.number, as_user=world.human.login)
        path = f"/repos/{world.repo}/pulls/{pull.number}/update-branch"

        by_rest = rest(world, "PUT", path, {"expected_head_sha": pull.head})
        by_graphql = graphql(world, UPDATE, {"id": node})
        with pytest.raises(ControlRequestError, match=QUEUED):
            world.control.update_branch(world.repo, pull.number, as_user=world.human.login)

        assert by_rest.status_code == 422
        assert by_rest.json()["message"].startswith(QUEUED)
        assert by_graphql["errors"][0]["message"].startswith(QUEUED)
        assert pull_json(world, pull.number)["head"]["sha"] == pull.head
        assert _view(world, pull.number)["pullRequest"]["isInMergeQueue"] is True

        world.control.dequeue(world.repo, pull.number, as_user=world.human.login)
        assert rest(world, "PUT", path, {"expected_head_sha": pull.head}).status_code == 202


def test_a_pull_request_behind_strict_protection_merges_through_the_queue(
    tmp_path: Path,
) -> None:
    with manual_world(tmp_path) as (world, _clock):
        pull, node = _behind_pull(world)
        world.control.protect(world.repo, "main", required_checks=["ci"], strict=True)
        world.control.create_ruleset(world.repo, "queue", _queue_rules())
        world.control.set_merge_settings(world.repo, merge_group_checks={"ci": "success"})
        assert pull_json(world, pull.number)["mergeable_state"] == "behind"

        queued = graphql(world, ENQUEUE, {"id": node})

        # The queue's group is built on main's tip: up to date whatever the head is.
        assert queued["data"]["enqueuePullRequest"]["mergeQueueEntry"]["position"] == 1
        merged = pull_json(world, pull.number)
        assert (merged["merged"], merged["merged_by"]["login"]) == (True, "github-merge-queue[bot]")


def test_a_linear_history_refuses_a_queue_that_writes_merge_commits(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, _clock):
        _pull, node = _behind_pull(world)
        world.control.protect(world.repo, "main", required_linear_history=True)
        merging = world.control.create_ruleset(world.repo, "queue", _queue_rules("MERGE"))

        refused = graphql(world, ENQUEUE, {"id": node})
        world.control.delete_ruleset(world.repo, int(merging["id"]))
        world.control.create_ruleset(world.repo, "squashing queue", _queue_rules("SQUASH"))
        accepted = graphql(world, ENQUEUE, {"id": node})

        assert refused["errors"][0]["message"] == (
            "Merge commits are not allowed on this repository."
        )
        assert accepted["data"]["enqueuePullRequest"]["mergeQueueEntry"]["position"] == 1


def test_merge_state_is_blocked_when_protection_blocks_and_a_ruleset_wants_it_current(
    tmp_path: Path,
) -> None:
    with manual_world(tmp_path) as (world, _clock):
        pull, _node = _behind_pull(world)
        world.control.protect(world.repo, "main", required_approvals=1)
        strict_checks = {
            "type": "required_status_checks",
            "parameters": {
                "required_status_checks": [{"context": "ci"}],
                "strict_required_status_checks_policy": True,
            },
        }
        world.control.create_ruleset(world.repo, "current", [strict_checks])

        blocked = (pull_json(world, pull.number)["mergeable_state"], _view(world, pull.number))
        world.control.review(world.repo, pull.number, "APPROVED", as_user=world.human.login)
        behind = (pull_json(world, pull.number)["mergeable_state"], _view(world, pull.number))

        assert (blocked[0], blocked[1]["pullRequest"]["mergeStateStatus"]) == (
            "blocked",
            "BLOCKED",
        )
        assert (behind[0], behind[1]["pullRequest"]["mergeStateStatus"]) == ("behind", "BEHIND")


def test_review_decision_is_approved_only_once_protection_and_rulesets_agree(
    tmp_path: Path,
) -> None:
    with manual_world(tmp_path) as (world, _clock):
        pull = open_pull(world)  # pushed by the human: its last pusher
        world.control.protect(world.repo, "main", require_last_push_approval=True)
        approvals = {"type": "pull_request", "parameters": {"required_approving_review_count": 1}}
        world.control.create_ruleset(world.repo, "reviews", [approvals])

        world.control.review(world.repo, pull.number, "APPROVED", as_user=world.human.login)
        by_pusher = _view(world, pull.number)["pullRequest"]["reviewDecision"]
        other = new_account(world)
        world.control.review(world.repo, pull.number, "APPROVED", as_user=other.login)
        by_another = _view(world, pull.number)["pullRequest"]["reviewDecision"]

        # The ruleset's one approval is there from the start; the last push's is not.
        assert (by_pusher, by_another) == ("REVIEW_REQUIRED", "APPROVED")


def test_auto_merge_with_a_method_the_repository_refuses_is_refused_at_once(
    tmp_path: Path,
) -> None:
    with manual_world(tmp_path) as (world, _clock):
        world.control.set_merge_settings(
            world.repo, allow_auto_merge=True, allow_squash_merge=False
        )
        world.control.protect(world.repo, "main", required_checks=["ci"])
        pull = open_pull(world)
        world.settle_mergeability()
        node = str(pull_json(world, pull.number)["node_id"])

        refused = graphql(world, AUTO_MERGE, {"id": node})

        assert refused["errors"][0]["message"] == (
            "Squash merges are not allowed on this repository."
        )
        assert pull_json(world, pull.number)["merged"] is False
