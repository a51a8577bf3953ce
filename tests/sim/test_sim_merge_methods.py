"""Which merge methods a repository accepts, and a base branch that requires a linear
history: shown in REST and GraphQL, refused with GitHub's 405 messages."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from orchestrator_sim.control import ControlRequestError
from orchestrator_sim.testing import SimWorld
from tests.sim.strict import graphql, manual_world, open_pull, rest

SETTINGS = """{ repository(owner: "acme", name: "widgets") {
  mergeCommitAllowed squashMergeAllowed rebaseMergeAllowed } }"""


def _merge(world: SimWorld, number: int, method: str) -> httpx.Response:
    path = f"/repos/{world.repo}/pulls/{number}/merge"
    return rest(world, "PUT", path, {"merge_method": method})


def test_every_method_is_allowed_by_default(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, _clock):
        repo = rest(world, "GET", f"/repos/{world.repo}").json()
        answer = graphql(world, SETTINGS)["data"]["repository"]

        flags = (repo["allow_merge_commit"], repo["allow_squash_merge"], repo["allow_rebase_merge"])
        assert flags == (True, True, True)
        assert answer == {
            "mergeCommitAllowed": True,
            "squashMergeAllowed": True,
            "rebaseMergeAllowed": True,
        }


@pytest.mark.parametrize(
    ("method", "setting", "message"),
    [
        ("merge", "allow_merge_commit", "Merge commits are not allowed on this repository."),
        ("squash", "allow_squash_merge", "Squash merges are not allowed on this repository."),
        ("rebase", "allow_rebase_merge", "Rebase merges are not allowed on this repository."),
    ],
)
def test_a_forbidden_method_is_refused(
    tmp_path: Path, method: str, setting: str, message: str
) -> None:
    with manual_world(tmp_path) as (world, clock):
        settings = world.control.set_merge_settings(world.repo, **{setting: False})
        assert settings[setting] is False
        pull = open_pull(world)
        clock.advance(1)

        refused = _merge(world, pull.number, method)
        shown = rest(world, "GET", f"/repos/{world.repo}").json()

        assert (refused.status_code, refused.json()["message"]) == (405, message)
        assert shown[setting] is False
        other = "squash" if method != "squash" else "merge"
        assert _merge(world, pull.number, other).status_code == 200


def test_graphql_shows_the_settings_and_one_method_must_stay(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, _clock):
        world.control.set_merge_settings(
            world.repo, allow_merge_commit=False, allow_rebase_merge=False
        )
        answer = graphql(world, SETTINGS)["data"]["repository"]
        assert answer == {
            "mergeCommitAllowed": False,
            "squashMergeAllowed": True,
            "rebaseMergeAllowed": False,
        }
        with pytest.raises(ControlRequestError) as caught:
            world.control.set_merge_settings(world.repo, allow_squash_merge=False)
        assert caught.value.status == 422
        assert world.control.repo_info(world.repo)["merge_settings"]["allow_squash_merge"] is True


def test_linear_history_refuses_merge_commits_only(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, clock):
        world.control.protect(world.repo, "main", required_linear_history=True)
        pull = open_pull(world)
        clock.advance(1)

        refused = _merge(world, pull.number, "merge")
        # Administrators are held to it too: it is a property of the branch's history.
        by_admin = rest(
            world,
            "PUT",
            f"/repos/{world.repo}/pulls/{pull.number}/merge",
            {"merge_method": "merge"},
            world.human,
        )
        protection = rest(
            world, "GET", f"/repos/{world.repo}/branches/main/protection", None, world.human
        ).json()

        assert (refused.status_code, refused.json()["message"]) == (
            405,
            "Merge commits are not allowed on this repository.",
        )
        assert by_admin.status_code == 405
        assert protection["required_linear_history"] == {"enabled": True}
        assert _merge(world, pull.number, "rebase").status_code == 200
