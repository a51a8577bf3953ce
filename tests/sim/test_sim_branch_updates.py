"""Branches that must be up to date, and GitHub's "Update branch" that brings the base in:
REST ``PUT .../update-branch`` and GraphQL ``updatePullRequestBranch``, with GitHub's
refusals and everything a moved head sets off again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from orchestrator_sim.control import ControlRequestError
from orchestrator_sim.testing import SimWorld
from tests.sim.strict import graphql, manual_world, new_account, open_pull, pull_json, rest

STATE = """query($n: Int!) { repository(owner: "acme", name: "widgets") {
  pullRequest(number: $n) { headRefOid baseRefOid mergeable mergeStateStatus } } }"""
UPDATE = """mutation($id: ID!, $oid: GitObjectID, $how: PullRequestBranchUpdateMethod) {
  updatePullRequestBranch(input: {pullRequestId: $id, expectedHeadOid: $oid,
                                  updateMethod: $how, clientMutationId: "u"}) {
    clientMutationId pullRequest { headRefOid } } }"""


def _merge(world: SimWorld, number: int) -> httpx.Response:
    return rest(world, "PUT", f"/repos/{world.repo}/pulls/{number}/merge", {})


def _update(world: SimWorld, number: int, body: dict[str, str] | None = None) -> httpx.Response:
    return rest(world, "PUT", f"/repos/{world.repo}/pulls/{number}/update-branch", body)


def _state(world: SimWorld, number: int) -> dict[str, Any]:
    node: dict[str, Any] = graphql(world, STATE, {"n": number})["data"]["repository"]
    return dict(node["pullRequest"])


def test_strict_checks_need_a_head_that_contains_the_base(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, clock):
        rules = world.control.protect(world.repo, "main", required_checks=["ci"], strict=True)
        assert rules["strict"] is True
        pull = open_pull(world)
        world.control.check_run(world.repo, sha=pull.head, name="ci", conclusion="success")
        world.control.push(world.repo, "main", {"CHANGES.md": "moved on\n"}, as_user="alice")
        clock.advance(1)

        view = pull_json(world, pull.number)
        assert (view["mergeable"], view["mergeable_state"]) == (True, "behind")
        assert _state(world, pull.number)["mergeStateStatus"] == "BEHIND"
        # A green check on an out-of-date head counts for nothing: it is expected again.
        refused = _merge(world, pull.number)
        assert (refused.status_code, refused.json()["message"]) == (
            405,
            'Required status check "ci" is expected.',
        )
        shown = rest(
            world, "GET", f"/repos/{world.repo}/branches/main/protection", None, world.human
        )
        assert shown.json()["required_status_checks"]["strict"] is True

        world.control.protect(world.repo, "main", required_checks=["ci"])
        assert pull_json(world, pull.number)["mergeable_state"] == "clean"


def test_strict_without_required_checks_is_refused(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, _clock), pytest.raises(ControlRequestError) as caught:
        world.control.protect(world.repo, "main", strict=True)
    assert "strict needs at least one required status check" in caught.value.message


def test_update_branch_merges_the_base_in_and_the_head_starts_over(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, clock):
        world.control.protect(
            world.repo,
            "main",
            required_checks=["ci"],
            required_approvals=1,
            dismiss_stale_reviews=True,
            strict=True,
        )
        pull = open_pull(world)
        world.control.check_run(world.repo, sha=pull.head, name="ci", conclusion="success")
        world.control.review(world.repo, pull.number, "APPROVED", as_user="alice")
        base = world.control.push(world.repo, "main", {"CHANGES.md": "1\n"}, as_user="alice")
        clock.advance(1)

        fetched = world.github().get_repo(world.repo).get_pull(pull.number)
        assert fetched.update_branch(expected_head_sha=pull.head) is True

        new_head = _state(world, pull.number)["headRefOid"]
        commit = rest(world, "GET", f"/repos/{world.repo}/commits/{new_head}").json()
        assert [p["sha"] for p in commit["parents"]] == [pull.head, base]
        assert commit["commit"]["message"] == f"Merge branch 'main' into {pull.branch}"
        assert _state(world, pull.number)["baseRefOid"] == base
        assert _state(world, pull.number)["mergeStateStatus"] == "UNKNOWN"
        reviews = rest(world, "GET", f"/repos/{world.repo}/pulls/{pull.number}/reviews").json()
        assert [r["state"] for r in reviews] == ["DISMISSED"]
        clock.advance(1)
        assert _merge(world, pull.number).json()["message"] == (
            "At least 1 approving review is required by reviewers with write access."
        )
        world.control.review(world.repo, pull.number, "APPROVED", as_user="alice")
        assert _merge(world, pull.number).json()["message"] == (
            'Required status check "ci" is expected.'
        )
        world.control.check_run(world.repo, sha=new_head, name="ci", conclusion="success")
        assert _merge(world, pull.number).status_code == 200


def test_update_branch_refusals(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, clock):
        pull = open_pull(world)
        clock.advance(1)

        current = _update(world, pull.number)
        assert (current.status_code, current.json()["message"]) == (
            422,
            "There are no new commits on the base branch.",
        )
        world.control.push(world.repo, "main", {"CHANGES.md": "1\n"}, as_user="alice")
        stale = _update(world, pull.number, {"expected_head_sha": "0" * 40})
        assert (stale.status_code, stale.json()["message"]) == (
            422,
            "expected head sha didn't match current head ref.",
        )
        world.control.push(world.repo, "main", {"src/widgets.py": "clash\n"}, as_user="alice")
        conflict = _update(world, pull.number, {"expected_head_sha": pull.head})
        assert (conflict.status_code, conflict.json()["message"]) == (
            422,
            "merge conflict between base and head",
        )
        assert pull_json(world, pull.number)["head"]["sha"] == pull.head

        world.control.update_issue(world.repo, pull.number, as_user="alice", state="closed")
        # PyGithub reports a refused update as False rather than raising.
        assert world.github().get_repo(world.repo).get_pull(pull.number).update_branch() is False
        closed = _update(world, pull.number)
        assert (closed.status_code, closed.json()["message"]) == (
            422,
            "Cannot update the branch of a closed pull request.",
        )


def test_graphql_update_by_merge_and_by_rebase(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, clock):
        pull = open_pull(world)
        node_id = pull_json(world, pull.number)["node_id"]
        base = world.control.push(world.repo, "main", {"CHANGES.md": "1\n"}, as_user="alice")
        clock.advance(1)

        stale = graphql(world, UPDATE, {"id": node_id, "oid": "0" * 40})
        assert stale["data"] == {"updatePullRequestBranch": None}
        assert stale["errors"][0]["type"] == "UNPROCESSABLE"
        merged = graphql(world, UPDATE, {"id": node_id, "oid": pull.head})
        payload = merged["data"]["updatePullRequestBranch"]
        assert payload["clientMutationId"] == "u"
        merge_head = payload["pullRequest"]["headRefOid"]
        assert merge_head != pull.head

        base = world.control.push(world.repo, "main", {"MORE.md": "2\n"}, as_user="alice")
        rebased = graphql(world, UPDATE, {"id": node_id, "how": "REBASE"})
        rebase_head = rebased["data"]["updatePullRequestBranch"]["pullRequest"]["headRefOid"]
        commits = rest(world, "GET", f"/repos/{world.repo}/pulls/{pull.number}/commits").json()
        # Replayed onto the base: the merge commit is gone and the history is linear.
        assert all(len(c["parents"]) == 1 for c in commits)
        assert commits[0]["parents"][0]["sha"] == base
        assert rebase_head == commits[-1]["sha"]
        world.control.push(world.repo, "main", {"src/widgets.py": "clash\n"}, as_user="alice")
        conflict = graphql(world, UPDATE, {"id": node_id, "how": "REBASE"})
        assert conflict["errors"][0]["message"] == "Cannot update PR branch due to conflicts"


def test_graphql_update_needs_write(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, _clock):
        pull = open_pull(world)
        world.control.push(world.repo, "main", {"CHANGES.md": "1\n"}, as_user="alice")
        reader = new_account(world, "read")
        node_id = pull_json(world, pull.number)["node_id"]

        answer = graphql(world, UPDATE, {"id": node_id}, reader)
        assert answer["errors"][0]["type"] == "FORBIDDEN"
        path = f"/repos/{world.repo}/pulls/{pull.number}/update-branch"
        assert rest(world, "PUT", path, None, reader).status_code == 403
        assert pull_json(world, pull.number)["head"]["sha"] == pull.head


def test_an_update_by_a_person_makes_them_the_last_pusher(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, clock):
        world.control.protect(world.repo, "main", require_last_push_approval=True)
        pull = open_pull(world)
        world.control.review(world.repo, pull.number, "APPROVED", as_user="alice")
        clock.advance(1)
        assert _merge(world, pull.number).status_code == 405  # alice pushed the branch

        world.control.push(world.repo, "main", {"CHANGES.md": "1\n"}, as_user="alice")
        head = world.control.update_branch(world.repo, pull.number, as_user=world.bot.login)
        world.control.review(world.repo, pull.number, "APPROVED", as_user="alice")
        clock.advance(1)
        assert pull_json(world, pull.number)["head"]["sha"] == head
        assert _merge(world, pull.number).status_code == 200
