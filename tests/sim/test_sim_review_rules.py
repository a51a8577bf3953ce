"""Protection rules on who must approve and what must be settled before a merge: the last
push approved by someone else, code owners, resolved conversations and successful
deployments, each refused with GitHub's message and shown as BLOCKED meanwhile."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from orchestrator_sim.control import ControlRequestError
from orchestrator_sim.testing import SimWorld
from tests.sim.strict import graphql, manual_world, new_account, open_pull, pull_json, rest

STATE = """query($n: Int!) { repository(owner: "acme", name: "widgets") {
  pullRequest(number: $n) { mergeStateStatus reviewDecision } } }"""
RESOLVE = """mutation($id: ID!) { resolveReviewThread(input: {threadId: $id}) {
  thread { isResolved } } }"""
LAST_PUSH = "New changes require approval from someone other than the last pusher."
CONVERSATION = "A conversation must be resolved before this pull request can be merged."


def _merge(world: SimWorld, number: int) -> httpx.Response:
    return rest(world, "PUT", f"/repos/{world.repo}/pulls/{number}/merge", {})


def _refusal(world: SimWorld, number: int) -> str:
    answer = _merge(world, number)
    assert answer.status_code == 405, answer.text
    return str(answer.json()["message"])


def _protection(world: SimWorld) -> dict[str, Any]:
    path = f"/repos/{world.repo}/branches/main/protection"
    shown: dict[str, Any] = rest(world, "GET", path, None, world.human).json()
    return shown


def _state(world: SimWorld, number: int) -> tuple[str, str]:
    node: dict[str, Any] = graphql(world, STATE, {"n": number})["data"]["repository"]
    pull = node["pullRequest"]
    return pull["mergeStateStatus"], pull["reviewDecision"]


def test_the_last_push_needs_an_approval_from_someone_else(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, clock):
        world.control.protect(
            world.repo, "main", required_approvals=1, require_last_push_approval=True
        )
        writer = new_account(world, "write")
        pull = open_pull(world)  # alice pushed the branch
        world.control.review(world.repo, pull.number, "APPROVED", as_user="alice")
        clock.advance(1)

        assert _refusal(world, pull.number) == LAST_PUSH
        assert _state(world, pull.number) == ("BLOCKED", "REVIEW_REQUIRED")
        reviews = _protection(world)["required_pull_request_reviews"]
        assert reviews["require_last_push_approval"] is True

        world.control.review(world.repo, pull.number, "APPROVED", as_user=writer.login)
        assert _state(world, pull.number) == ("CLEAN", "APPROVED")

        # The writer pushes: their own approval (of an older head) no longer covers it.
        world.control.push(world.repo, pull.branch, {"more.txt": "x\n"}, as_user=writer.login)
        clock.advance(1)
        assert _refusal(world, pull.number) == LAST_PUSH
        world.control.review(world.repo, pull.number, "APPROVED", as_user=writer.login)
        assert _refusal(world, pull.number) == LAST_PUSH
        world.control.review(world.repo, pull.number, "APPROVED", as_user="alice")
        assert _merge(world, pull.number).status_code == 200


def _owned_world(world: SimWorld, codeowners: str) -> None:
    world.control.push(
        world.repo,
        "main",
        {
            ".github/CODEOWNERS": codeowners,
            # Never read: the .github file comes first.
            "CODEOWNERS": "* @nobody-at-all\n",
        },
        as_user="alice",
    )
    world.control.protect(world.repo, "main", require_code_owner_reviews=True)


def test_code_owners_of_changed_files_must_approve(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, clock):
        member = new_account(world, "write")
        outsider = new_account(world, "write")
        world.control.set_team("acme", "core", [member.login])
        _owned_world(world, "* @alice\n/src/ @acme/core\n")
        pull = open_pull(world, {"src/widgets.py": "changed\n", "README.md": "# changed\n"})
        clock.advance(1)

        assert _refusal(world, pull.number) == (
            "Waiting on code owner review from acme/core and/or alice."
        )
        assert _state(world, pull.number) == ("BLOCKED", "REVIEW_REQUIRED")
        world.control.review(world.repo, pull.number, "APPROVED", as_user=outsider.login)
        world.control.review(world.repo, pull.number, "APPROVED", as_user="alice")
        # README.md is alice's; src/ is the team's alone (the last matching line wins).
        assert _refusal(world, pull.number) == "Waiting on code owner review from acme/core."
        world.control.review(world.repo, pull.number, "APPROVED", as_user=member.login)
        assert _state(world, pull.number) == ("CLEAN", "APPROVED")
        assert _merge(world, pull.number).status_code == 200


def test_codeowners_come_from_the_base_branch(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, clock):
        _owned_world(world, "*.py @alice\n")
        # The pull request rewrites CODEOWNERS to own nothing: the base's file still counts.
        pull = open_pull(world, {"src/widgets.py": "x\n", ".github/CODEOWNERS": "# none\n"})
        clock.advance(1)

        assert _refusal(world, pull.number) == "Waiting on code owner review from alice."


def test_an_author_who_owns_alone_needs_no_owner_review_and_emails_own_too(
    tmp_path: Path,
) -> None:
    with manual_world(tmp_path) as (world, clock):
        world.control.create_user("eve", "ghp_" + "e" * 36, email="eve@example.com")
        world.control.set_permission(world.repo, "eve", "write")
        _owned_world(world, f"*.md @{world.bot.login}\ndocs/ eve@example.com\n")
        own = open_pull(world, {"NOTES.md": "mine\n"})
        docs = open_pull(world, {"docs/guide.md": "guide\n"})
        clock.advance(1)

        assert _merge(world, own.number).status_code == 200
        clock.advance(1)  # the base moved
        assert _refusal(world, docs.number) == (
            "Waiting on code owner review from eve@example.com."
        )
        world.control.review(world.repo, docs.number, "APPROVED", as_user="eve")
        assert _merge(world, docs.number).status_code == 200


def test_unresolved_conversations_block_the_merge(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, clock):
        world.control.protect(world.repo, "main", required_conversation_resolution=True)
        pull = open_pull(world)
        review = world.control.review(
            world.repo,
            pull.number,
            "COMMENTED",
            as_user="alice",
            comments=[{"path": "src/widgets.py", "line": 1, "body": "Why this?"}],
        )
        clock.advance(1)

        assert _refusal(world, pull.number) == CONVERSATION
        assert _state(world, pull.number)[0] == "BLOCKED"
        assert _protection(world)["required_conversation_resolution"] == {"enabled": True}

        thread = review["threads"][0]["node_id"]
        resolved = graphql(world, RESOLVE, {"id": thread})
        assert resolved["data"]["resolveReviewThread"]["thread"]["isResolved"] is True
        assert pull_json(world, pull.number)["mergeable_state"] == "clean"
        assert _merge(world, pull.number).status_code == 200


def test_required_deployments_need_a_successful_deployment_of_the_head(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, clock):
        world.control.protect(world.repo, "main", required_deployments=["staging"])
        pull = open_pull(world)
        clock.advance(1)

        assert _refusal(world, pull.number) == 'Required deployment "staging" has not succeeded.'
        deployment = world.control.deploy(
            world.repo, "staging", as_user="alice", sha=pull.head, state="in_progress"
        )
        world.control.deploy(world.repo, "production", as_user="alice", sha=pull.head)
        assert _state(world, pull.number)[0] == "BLOCKED"

        world.control.deployment_status(world.repo, deployment["id"], "success", as_user="alice")
        listed = rest(world, "GET", f"/repos/{world.repo}/deployments?environment=staging").json()
        assert [(d["id"], d["sha"], d["environment"]) for d in listed] == [
            (deployment["id"], pull.head, "staging")
        ]
        path = f"/repos/{world.repo}/deployments/{deployment['id']}/statuses"
        assert [s["state"] for s in rest(world, "GET", path).json()] == ["success", "in_progress"]
        assert _merge(world, pull.number).status_code == 200


def test_the_control_api_refuses_unknown_rules_and_teams_of_people(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, _clock):
        with pytest.raises(ControlRequestError) as unknown:
            world.control.protect(world.repo, "main", require_signatures=True)
        with pytest.raises(ControlRequestError) as person:
            world.control.set_team("alice", "core", ["alice"])

        assert unknown.value.message == "unknown protection rule 'require_signatures'"
        assert person.value.status == 422
        assert world.control.set_team("acme", "core", None) == []
