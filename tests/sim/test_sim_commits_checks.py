"""Commits and checks as GitHub reports them: a pull request's commits by date, updatedAt
untouched by CI, and more than 100 check contexts paged like GitHub pages them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from orchestrator_sim.testing import SimWorld
from tests.sim.strict import WIDGETS, graphql, manual_world, open_pull, pull_json, rest

COMMITS = """query($n: Int!, $last: Int!) { repository(owner: "acme", name: "widgets") {
  pullRequest(number: $n) { headRefOid updatedAt
    commits(last: $last) { totalCount nodes { commit { oid authoredDate } } } } } }"""


def test_commits_are_ordered_by_author_date_not_branch_order(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, clock):
        pull = open_pull(world)
        clock.advance(60)
        second = world.control.push(world.repo, pull.branch, {"b.txt": "b\n"}, as_user="alice")
        # Made an hour ago, pushed now: the head is the oldest-dated commit.
        head = world.control.push(
            world.repo,
            pull.branch,
            {"c.txt": "c\n"},
            as_user="alice",
            author_date="2025-12-31T23:00:00Z",
            committer_date="2025-12-31T23:00:00Z",
        )

        listed = rest(world, "GET", f"/repos/{world.repo}/pulls/{pull.number}/commits").json()
        assert [c["sha"] for c in listed] == [head, pull.head, second]
        assert listed[0]["commit"]["author"]["date"].startswith("2025-12-31T23:00:00")

        answer = graphql(world, COMMITS, {"n": pull.number, "last": 1})
        node = answer["data"]["repository"]["pullRequest"]
        assert node["headRefOid"] == head
        assert node["commits"]["totalCount"] == 3
        assert [c["commit"]["oid"] for c in node["commits"]["nodes"]] == [second]
        everything = graphql(world, COMMITS, {"n": pull.number, "last": 3})
        nodes = everything["data"]["repository"]["pullRequest"]["commits"]["nodes"]
        assert [c["commit"]["oid"] for c in nodes] == [head, pull.head, second]
        assert nodes[0]["commit"]["authoredDate"] == "2025-12-31T23:00:00Z"


def test_same_second_commits_keep_branch_order(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, _clock):
        pull = open_pull(world)
        second = world.control.push(world.repo, pull.branch, {"b.txt": "b\n"}, as_user="alice")
        third = world.control.push(world.repo, pull.branch, {"c.txt": "c\n"}, as_user="alice")
        listed = rest(world, "GET", f"/repos/{world.repo}/pulls/{pull.number}/commits").json()
        assert [c["sha"] for c in listed] == [pull.head, second, third]


def test_merged_pull_still_lists_its_commits(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, clock):
        pull = open_pull(world)
        clock.advance(1)
        world.control.merge(world.repo, pull.number, as_user="alice", method="squash")
        listed = rest(world, "GET", f"/repos/{world.repo}/pulls/{pull.number}/commits").json()
        assert [c["sha"] for c in listed] == [pull.head]


def _updated(world: SimWorld, number: int) -> tuple[str, str]:
    rest_view = pull_json(world, number)["updated_at"]
    answer = graphql(world, COMMITS, {"n": number, "last": 1})
    return rest_view, answer["data"]["repository"]["pullRequest"]["updatedAt"]


def test_check_runs_and_statuses_do_not_touch_updated_at(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, clock):
        pull = open_pull(world)
        before = _updated(world, pull.number)
        clock.advance(10)
        world.control.check_run(world.repo, sha=pull.head, name="ci", status="in_progress")
        run = world.control.check_run(world.repo, sha=pull.head, name="ci", conclusion="success")
        world.control.check_run(
            world.repo, sha=pull.head, name="ci", conclusion="failure", run_id=int(run["id"])
        )
        world.control.status(world.repo, "pending", as_user="alice", sha=pull.head)
        rest(world, "POST", f"/repos/{world.repo}/statuses/{pull.head}", {"state": "success"})
        assert _updated(world, pull.number) == before


@pytest.mark.parametrize("change", ["push", "comment", "review", "label", "title", "body"])
def test_what_does_touch_updated_at(tmp_path: Path, change: str) -> None:
    with manual_world(tmp_path) as (world, clock):
        pull = open_pull(world)
        before = _updated(world, pull.number)
        clock.advance(10)
        control, repo, number = world.control, world.repo, pull.number
        if change == "push":
            control.push(repo, pull.branch, {"x.txt": "x\n"}, as_user="alice")
        elif change == "comment":
            control.comment(repo, number, "hello", as_user="alice")
        elif change == "review":
            control.review(repo, number, "COMMENTED", as_user="alice", body="hm")
        elif change == "label":
            control.add_labels(repo, number, ["bug"], as_user="alice")
        else:
            rest(world, "PATCH", f"/repos/{repo}/pulls/{number}", {change: "changed"})
        after = _updated(world, pull.number)
        assert after[0] == after[1] == "2026-01-01T00:00:10Z" != before[0]


def _many_checks(world: SimWorld, sha: str, count: int) -> None:
    for index in range(count):
        world.control.check_run(
            world.repo, sha=sha, name=f"check-{index:03d}", conclusion="success"
        )


CONTEXTS = """query($oid: GitObjectID!, $after: String, $first: Int!) {
  repository(owner: "acme", name: "widgets") { object(oid: $oid) { __typename
    ... on Commit { oid statusCheckRollup { state contexts(first: $first, after: $after) {
      totalCount checkRunCount statusContextCount
      checkRunCountsByState { state count } statusContextCountsByState { state count }
      pageInfo { hasNextPage endCursor }
      nodes { __typename ... on CheckRun { name conclusion } ... on StatusContext { context } }
} } } } } }"""


def test_more_than_100_contexts_page_like_github(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, _clock):
        pull = open_pull(world)
        _many_checks(world, pull.head, 104)
        world.control.check_run(world.repo, sha=pull.head, name="late", status="in_progress")
        world.control.status(world.repo, "failure", as_user="alice", sha=pull.head, context="ext")

        names: list[str] = []
        cursor: str | None = None
        pages = 0
        while True:
            answer = graphql(world, CONTEXTS, {"oid": pull.head, "after": cursor, "first": 100})
            commit = answer["data"]["repository"]["object"]
            contexts = commit["statusCheckRollup"]["contexts"]
            names += [n.get("name") or n.get("context") for n in contexts["nodes"]]
            pages += 1
            if not contexts["pageInfo"]["hasNextPage"]:
                break
            cursor = contexts["pageInfo"]["endCursor"]

        assert pages == 2 and len(names) == len(set(names)) == 106
        assert contexts["totalCount"] == 106
        assert (contexts["checkRunCount"], contexts["statusContextCount"]) == (105, 1)
        assert contexts["checkRunCountsByState"] == [
            {"state": "IN_PROGRESS", "count": 1},
            {"state": "SUCCESS", "count": 104},
        ]
        assert contexts["statusContextCountsByState"] == [{"state": "FAILURE", "count": 1}]
        assert commit["statusCheckRollup"]["state"] == "FAILURE"

        too_many = graphql(world, CONTEXTS, {"oid": pull.head, "after": None, "first": 101})
        assert too_many["errors"][0]["type"] == "EXCESSIVE_PAGINATION"

        run_page = rest(
            world, "GET", f"/repos/{world.repo}/commits/{pull.head}/check-runs?per_page=500"
        )
        body: dict[str, Any] = run_page.json()
        assert body["total_count"] == 105 and len(body["check_runs"]) == 100
        assert 'rel="next"' in run_page.headers["link"] and "page=2" in run_page.headers["link"]
        second = rest(
            world, "GET", f"/repos/{world.repo}/commits/{pull.head}/check-runs?per_page=100&page=2"
        )
        assert len(second.json()["check_runs"]) == 5


def test_object_is_null_for_an_unknown_commit_and_head_ref_follows_the_branch(
    tmp_path: Path,
) -> None:
    with manual_world(tmp_path) as (world, _clock):
        pull = open_pull(world, {"src/widgets.py": WIDGETS})
        missing = graphql(world, CONTEXTS, {"oid": "0" * 40, "after": None, "first": 1})
        assert missing["data"]["repository"]["object"] is None

        query = """query($n: Int!) { repository(owner: "acme", name: "widgets") {
          pullRequest(number: $n) { headRefOid headRef { name prefix
            target { __typename ... on Commit { oid abbreviatedOid message } } } } } }"""
        node = graphql(world, query, {"n": pull.number})["data"]["repository"]["pullRequest"]
        assert node["headRef"]["name"] == pull.branch
        assert node["headRef"]["target"]["oid"] == pull.head == node["headRefOid"]
        assert node["headRef"]["target"]["abbreviatedOid"] == pull.head[:7]
        assert node["headRef"]["target"]["__typename"] == "Commit"

        deleted = rest(world, "DELETE", f"/repos/{world.repo}/git/refs/heads/{pull.branch}")
        assert deleted.status_code == 204
        gone = graphql(world, query, {"n": pull.number})["data"]["repository"]["pullRequest"]
        assert gone["headRef"] is None and gone["headRefOid"] == pull.head
