"""Auto-merge: enabled where the repository allows it on a pull request that cannot merge
yet, it merges once the base's rules pass (or queues where a merge queue is required); a
push by someone without write access cancels it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from orchestrator_sim.testing import Account, SimWorld
from tests.sim.strict import (
    Pull,
    graphql,
    manual_world,
    new_account,
    open_pull,
    pull_json,
    rest,
)

ENABLE = """mutation($id: ID!, $oid: GitObjectID, $method: PullRequestMergeMethod) {
  enablePullRequestAutoMerge(input: {pullRequestId: $id, expectedHeadOid: $oid,
      mergeMethod: $method, commitHeadline: "Ship it"}) {
    actor { login } pullRequest { autoMergeRequest { mergeMethod commitHeadline
      enabledBy { login } enabledAt } } } }"""
DISABLE = """mutation($id: ID!) { disablePullRequestAutoMerge(input: {pullRequestId: $id}) {
  pullRequest { autoMergeRequest { mergeMethod } } } }"""
VIEW = """query($n: Int!) { repository(owner: "acme", name: "widgets") { autoMergeAllowed
  pullRequest(number: $n) { state isInMergeQueue autoMergeRequest { mergeMethod } } } }"""


def _enable(
    world: SimWorld,
    node: str,
    oid: str | None = None,
    method: str = "SQUASH",
    account: Account | None = None,
) -> dict[str, Any]:
    return graphql(world, ENABLE, {"id": node, "oid": oid, "method": method}, account)


def _waiting_pull(world: SimWorld) -> tuple[Pull, str]:
    """Auto-merge allowed, main requiring ``ci``, and a pull request without it: the pull
    request and its node id."""
    world.control.set_merge_settings(world.repo, allow_auto_merge=True)
    world.control.protect(world.repo, "main", required_checks=["ci"])
    pull = open_pull(world)
    world.settle_mergeability()
    return pull, str(pull_json(world, pull.number)["node_id"])


def _view(world: SimWorld, number: int) -> dict[str, Any]:
    repository: dict[str, Any] = graphql(world, VIEW, {"n": number})["data"]["repository"]
    return repository


def test_auto_merge_is_off_until_the_repository_allows_it(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, _clock):
        world.control.protect(world.repo, "main", required_checks=["ci"])
        pull = open_pull(world)
        node = str(pull_json(world, pull.number)["node_id"])

        refused = _enable(world, node)

        assert refused["errors"][0]["message"] == "Auto merge is not allowed for this repository"
        assert _view(world, pull.number)["autoMergeAllowed"] is False


def test_auto_merge_merges_once_required_checks_pass(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, _clock):
        pull, node = _waiting_pull(world)

        stale = _enable(world, node, "0" * 40)
        enabled = _enable(world, node, pull.head)

        assert stale["errors"][0]["message"] == (
            "Head branch was modified. Review and try the merge again."
        )
        payload = enabled["data"]["enablePullRequestAutoMerge"]
        request = payload["pullRequest"]["autoMergeRequest"]
        assert (request["mergeMethod"], request["commitHeadline"]) == ("SQUASH", "Ship it")
        assert request["enabledBy"]["login"] == payload["actor"]["login"]
        assert pull_json(world, pull.number)["merged"] is False

        world.control.check_run(world.repo, sha=pull.head, name="ci", conclusion="success")

        merged = pull_json(world, pull.number)
        assert (merged["merged"], merged["merged_by"]["login"]) == (True, world.bot.login)
        commit = rest(world, "GET", f"/repos/{world.repo}/commits/{merged['merge_commit_sha']}")
        assert commit.json()["commit"]["message"].startswith("Ship it")
        assert len(commit.json()["parents"]) == 1
        assert _view(world, pull.number)["pullRequest"]["autoMergeRequest"] is None


def test_a_pull_request_that_can_merge_now_is_refused(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, _clock):
        world.control.set_merge_settings(world.repo, allow_auto_merge=True)
        pull = open_pull(world)
        world.settle_mergeability()
        node = str(pull_json(world, pull.number)["node_id"])

        refused = _enable(world, node)

        assert refused["errors"][0]["message"] == "Pull request Pull request is in clean status"


def test_a_push_without_write_access_cancels_auto_merge(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, _clock):
        outsider = new_account(world, "read")
        pull, node = _waiting_pull(world)
        _enable(world, node)

        world.control.push(world.repo, pull.branch, {"w.txt": "w\n"}, as_user="alice")
        assert _view(world, pull.number)["pullRequest"]["autoMergeRequest"] is not None
        world.control.push(world.repo, pull.branch, {"o.txt": "o\n"}, as_user=outsider.login)

        assert _view(world, pull.number)["pullRequest"]["autoMergeRequest"] is None
        events = rest(world, "GET", f"/repos/{world.repo}/issues/{pull.number}/events").json()
        kinds = [event["event"] for event in events]
        assert kinds.count("auto_merge_enabled") == kinds.count("auto_merge_disabled") == 1


def test_disabling_auto_merge(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, _clock):
        reader = new_account(world, "read")
        pull, node = _waiting_pull(world)
        _enable(world, node)

        forbidden = graphql(world, DISABLE, {"id": node}, reader)
        disabled = graphql(world, DISABLE, {"id": node})
        again = graphql(world, DISABLE, {"id": node})

        assert forbidden["errors"][0]["type"] == "FORBIDDEN"
        assert disabled["data"]["disablePullRequestAutoMerge"]["pullRequest"] == {
            "autoMergeRequest": None
        }
        assert again["errors"][0]["message"] == "Pull request auto merge is not enabled"
        world.control.check_run(world.repo, sha=pull.head, name="ci", conclusion="success")
        assert pull_json(world, pull.number)["merged"] is False


def test_auto_merge_enters_a_required_merge_queue(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, _clock):
        world.control.set_merge_settings(world.repo, allow_auto_merge=True)
        checks = {
            "type": "required_status_checks",
            "parameters": {
                "required_status_checks": [{"context": "ci"}],
                "strict_required_status_checks_policy": False,
            },
        }
        world.control.create_ruleset(world.repo, "queue", [{"type": "merge_queue"}, checks])
        waiting = open_pull(world, {"one.txt": "1\n"})
        ready = open_pull(world, {"two.txt": "2\n"})
        world.control.check_run(world.repo, sha=ready.head, name="ci", conclusion="success")
        world.settle_mergeability()

        _enable(world, str(pull_json(world, ready.number)["node_id"]))
        _enable(world, str(pull_json(world, waiting.number)["node_id"]))
        assert _view(world, ready.number)["pullRequest"]["isInMergeQueue"] is True
        view = _view(world, waiting.number)["pullRequest"]
        assert (view["isInMergeQueue"], view["autoMergeRequest"]) == (
            False,
            {"mergeMethod": "SQUASH"},
        )

        world.control.check_run(world.repo, sha=waiting.head, name="ci", conclusion="success")
        assert _view(world, waiting.number)["pullRequest"]["isInMergeQueue"] is True
