"""Indexed reads and kept renderings follow every update, over HTTP.

A seeded world is changed the ways the daemon watches for (a head pushed to, a
check run created, re-run and completed, a review dismissed by the push, an
issue relabelled and closed, a comment deleted) and each read the daemon sends
must answer the new state at once.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from orchestrator.github import queries
from orchestrator_sim.testing import SimWorld, running_world


@pytest.fixture
def world(tmp_path: Path) -> Iterator[SimWorld]:
    with running_world(tmp_path / "sim", mergeability_delay=0) as running:
        yield running


def get(world: SimWorld, path: str, **params: Any) -> Any:
    answer = httpx.get(
        world.url + path,
        params=params,
        headers={"Authorization": f"token {world.bot.token}"},
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    return answer.json()


def fingerprint(world: SimWorld, number: int) -> dict[str, Any]:
    owner, name = world.repo.split("/")
    request = queries.fingerprint_request(owner, name, [number])
    answer = httpx.post(
        world.url + "/graphql",
        json=request.payload(),
        headers={"Authorization": f"bearer {world.bot.token}"},
        timeout=30,
    ).json()
    assert "errors" not in answer, answer
    node: dict[str, Any] = answer["data"]["repository"]["pr0"]
    return node


def test_a_push_moves_checks_reviews_and_fingerprint_to_the_new_head(world: SimWorld) -> None:
    repo = world.repo
    world.control.protect("acme/widgets", "main", dismiss_stale_reviews=True)
    first, second = world.seed(2, labels=["agent"], review="APPROVED")
    runs = get(world, f"/repos/{repo}/commits/{first.head_sha}/check-runs")
    assert [r["pull_requests"][0]["number"] for r in runs["check_runs"]] == [first.pull]
    assert fingerprint(world, first.pull or 0)["reviewDecision"] == "APPROVED"

    head = world.control.push(
        repo, first.branch or "", {"more.md": "more\n"}, as_user=world.bot.login
    )
    old = get(world, f"/repos/{repo}/commits/{first.head_sha}/check-runs")
    assert old["total_count"] == 1
    assert old["check_runs"][0]["pull_requests"] == []
    assert get(world, f"/repos/{repo}/commits/{head}/check-runs")["total_count"] == 0
    assert get(world, f"/repos/{repo}/pulls/{first.pull}")["head"]["sha"] == head
    reviews = get(world, f"/repos/{repo}/pulls/{first.pull}/reviews")
    assert [r["state"] for r in reviews] == ["DISMISSED"]
    assert [r["state"] for r in get(world, f"/repos/{repo}/pulls/{second.pull}/reviews")] == [
        "APPROVED"
    ]
    moved = fingerprint(world, first.pull or 0)
    assert moved["headRefOid"] == head
    assert moved["reviewDecision"] == "REVIEW_REQUIRED"
    assert moved["headRef"]["target"]["statusCheckRollup"] is None

    queued = world.control.check_run(repo, sha=head, name="ci", status="queued")
    assert (
        fingerprint(world, first.pull or 0)["headRef"]["target"]["statusCheckRollup"]["state"]
        == "PENDING"
    )
    world.control.check_run(repo, sha=head, name="ci", conclusion="failure", run_id=queued["id"])
    rerun = world.control.check_run(repo, sha=head, name="ci", conclusion="success")
    latest = get(world, f"/repos/{repo}/commits/{head}/check-runs")
    assert [(r["id"], r["conclusion"]) for r in latest["check_runs"]] == [(rerun["id"], "success")]
    every = get(world, f"/repos/{repo}/commits/{head}/check-runs", filter="all")
    assert [r["conclusion"] for r in every["check_runs"]] == ["success", "failure"]
    assert [r["pull_requests"][0]["number"] for r in every["check_runs"]] == [first.pull] * 2
    rollup = fingerprint(world, first.pull or 0)["headRef"]["target"]["statusCheckRollup"]
    assert rollup["state"] == "SUCCESS"
    assert [n["databaseId"] for n in rollup["contexts"]["nodes"]] == [rerun["id"]]


def test_relabelling_closing_and_comments_show_in_the_lists_at_once(world: SimWorld) -> None:
    repo, human = world.repo, world.human.login
    items = world.seed(3, labels=["agent"], pulls=False)
    numbers = [item.issue for item in items]

    def listed(**params: Any) -> list[int]:
        return [i["number"] for i in get(world, f"/repos/{repo}/issues", **params)]

    assert listed(labels="agent") == numbers[::-1]
    world.control.remove_label(repo, numbers[1], "agent", as_user=human)
    assert listed(labels="agent") == [numbers[2], numbers[0]]
    world.control.add_labels(repo, numbers[1], ["Agent", "blocked"], as_user=human)
    assert listed(labels="agent,blocked") == [numbers[1]]
    world.control.update_issue(repo, numbers[0], as_user=human, state="closed")
    assert listed(labels="agent") == [numbers[2], numbers[1]]
    assert listed(labels="agent", state="closed") == [numbers[0]]
    comment = world.control.comment(repo, numbers[2], "a question", as_user=human)
    assert get(world, f"/repos/{repo}/issues/{numbers[2]}")["comments"] == 1
    assert listed(labels="agent", sort="comments") == [numbers[2], numbers[1]]
    github = world.github(world.human)
    github.get_repo(repo).get_issue(numbers[2]).get_comment(comment).delete()
    assert get(world, f"/repos/{repo}/issues/{numbers[2]}")["comments"] == 0
    assert get(world, f"/repos/{repo}/issues/{numbers[2]}/comments") == []
