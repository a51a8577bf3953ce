"""The GraphQL reads a merge decision leans on: issues and their comments with who edited
them, pull request lists, node lookups, and every list paged with real cursors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from orchestrator_sim.testing import SimWorld
from tests.sim.strict import WIDGETS, graphql, manual_world, new_account, open_pull, rest

COMMENTS = """query($n: Int!, $after: String) { repository(owner: "acme", name: "widgets") {
  issue(number: $n) { number title state comments(first: 2, after: $after) {
    totalCount pageInfo { hasNextPage endCursor }
    nodes { id databaseId body author { __typename login } createdAt lastEditedAt
            editor { __typename login } } } } } }"""


def test_issue_comments_record_who_edited_them(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, clock):
        issue = world.control.create_issue(world.repo, "Broken", as_user="alice")
        mine = world.control.comment(world.repo, issue, "workpad v1", as_user=world.bot.login)
        world.control.comment(world.repo, issue, "second", as_user="alice")
        world.control.comment(world.repo, issue, "third", as_user="alice")
        clock.advance(5)
        edited = rest(
            world,
            "PATCH",
            f"/repos/{world.repo}/issues/comments/{mine}",
            {"body": "workpad v1 (tampered)"},
            world.human,
        )
        assert edited.status_code == 200

        first = graphql(world, COMMENTS, {"n": issue})["data"]["repository"]["issue"]
        page = first["comments"]
        assert (first["state"], page["totalCount"]) == ("OPEN", 3)
        assert page["pageInfo"]["hasNextPage"] is True
        workpad, untouched = page["nodes"]
        assert workpad["databaseId"] == mine
        assert workpad["author"] == {"__typename": "User", "login": world.bot.login}
        assert workpad["editor"] == {"__typename": "User", "login": "alice"}
        assert workpad["lastEditedAt"] == "2026-01-01T00:00:05Z"
        assert (untouched["editor"], untouched["lastEditedAt"]) == (None, None)
        after = page["pageInfo"]["endCursor"]
        second = graphql(world, COMMENTS, {"n": issue, "after": after})
        rest_page = second["data"]["repository"]["issue"]["comments"]
        assert [n["body"] for n in rest_page["nodes"]] == ["third"]
        assert rest_page["pageInfo"]["hasNextPage"] is False

        # An edit by the author names the author; the same body again is no edit.
        world.control.edit_comment(world.repo, mine, "workpad v2", as_user=world.bot.login)
        again = graphql(world, COMMENTS, {"n": issue})["data"]["repository"]["issue"]
        assert again["comments"]["nodes"][0]["editor"]["login"] == world.bot.login


def test_issue_number_of_a_pull_request_is_not_an_issue(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, _clock):
        pull = open_pull(world)
        answer = graphql(world, COMMENTS, {"n": pull.number})
        assert answer["data"]["repository"]["issue"] is None
        assert answer["errors"][0]["message"] == (
            f"Could not resolve to an Issue with the number of {pull.number}."
        )


def test_node_lookup_finds_comments_threads_and_pulls(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, _clock):
        pull = open_pull(world)
        comment = world.control.comment(world.repo, pull.number, "hello", as_user="alice")
        node_id = rest(world, "GET", f"/repos/{world.repo}/issues/comments/{comment}").json()[
            "node_id"
        ]
        query = """query($id: ID!) { node(id: $id) { __typename id
          ... on IssueComment { body lastEditedAt } ... on PullRequest { number } } }"""
        found = graphql(world, query, {"id": node_id})["data"]["node"]
        assert found == {
            "__typename": "IssueComment",
            "id": node_id,
            "body": "hello",
            "lastEditedAt": None,
        }
        pull_id = rest(world, "GET", f"/repos/{world.repo}/pulls/{pull.number}").json()["node_id"]
        assert graphql(world, query, {"id": pull_id})["data"]["node"]["number"] == pull.number
        missing = graphql(world, query, {"id": "MDQ6Tm9wZTE="})
        assert missing["data"]["node"] is None
        assert missing["errors"][0]["type"] == "NOT_FOUND"


def _reviews(world: SimWorld, number: int, args: str, variables: dict[str, Any]) -> Any:
    query = f"""query($n: Int!, $after: String, $before: String) {{
      repository(owner: "acme", name: "widgets") {{ pullRequest(number: $n) {{
        reviews({args}) {{ totalCount
          pageInfo {{ hasNextPage hasPreviousPage startCursor endCursor }}
          nodes {{ body }} }} }} }} }}"""
    answer = graphql(world, query, {"n": number, **variables})
    return answer["data"]["repository"]["pullRequest"]["reviews"]


def test_reviews_page_forwards_and_backwards_with_cursors(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, _clock):
        pull = open_pull(world)
        for index in range(5):
            world.control.review(
                world.repo, pull.number, "COMMENTED", as_user="alice", body=f"r{index}"
            )

        last = _reviews(
            world, pull.number, "last: 2, before: $before, after: $after", {"before": None}
        )
        assert [n["body"] for n in last["nodes"]] == ["r3", "r4"]
        info = last["pageInfo"]
        assert (info["hasPreviousPage"], info["hasNextPage"]) == (True, False)
        earlier = _reviews(
            world,
            pull.number,
            "last: 2, before: $before, after: $after",
            {"before": info["startCursor"]},
        )
        assert [n["body"] for n in earlier["nodes"]] == ["r1", "r2"]
        first = _reviews(
            world, pull.number, "first: 2, after: $after, before: $before", {"after": None}
        )
        assert [n["body"] for n in first["nodes"]] == ["r0", "r1"]
        following = _reviews(
            world,
            pull.number,
            "first: 2, after: $after, before: $before",
            {"after": first["pageInfo"]["endCursor"]},
        )
        assert [n["body"] for n in following["nodes"]] == ["r2", "r3"]
        # A new review does not move a page boundary already handed out.
        world.control.review(world.repo, pull.number, "COMMENTED", as_user="alice", body="r5")
        again = _reviews(
            world,
            pull.number,
            "first: 2, after: $after, before: $before",
            {"after": first["pageInfo"]["endCursor"]},
        )
        assert [n["body"] for n in again["nodes"]] == ["r2", "r3"]
        assert again["totalCount"] == 6


def test_thread_comments_page_through_node_lookup(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, _clock):
        pull = open_pull(world, {"src/widgets.py": WIDGETS})
        review = world.control.review(
            world.repo,
            pull.number,
            "COMMENTED",
            as_user="alice",
            comments=[{"path": "src/widgets.py", "line": 1, "body": "c0"}],
        )
        thread = review["threads"][0]
        for index in range(1, 4):
            world.control.reply_thread(world.repo, thread["id"], f"c{index}", as_user="alice")
        query = """query($id: ID!, $after: String) { node(id: $id) { __typename
          ... on PullRequestReviewThread { comments(first: 3, after: $after) {
            totalCount pageInfo { hasNextPage endCursor } nodes { body } } } } }"""

        first = graphql(world, query, {"id": thread["node_id"]})["data"]["node"]["comments"]
        cursor = first["pageInfo"]["endCursor"]
        second = graphql(world, query, {"id": thread["node_id"], "after": cursor})
        rest_page = second["data"]["node"]["comments"]

        assert [n["body"] for n in first["nodes"]] == ["c0", "c1", "c2"]
        assert first["pageInfo"]["hasNextPage"] is True
        assert [n["body"] for n in rest_page["nodes"]] == ["c3"]
        assert rest_page["totalCount"] == 4


@pytest.mark.parametrize(
    ("connection", "error_type"),
    [
        ("reviews(first: 101) { totalCount nodes { id } }", "EXCESSIVE_PAGINATION"),
        ("reviews(last: 500) { nodes { id } }", "EXCESSIVE_PAGINATION"),
        ("reviewThreads { nodes { id } }", "MISSING_PAGINATION_BOUNDARIES"),
        ("comments(first: 200) { nodes { id } }", "EXCESSIVE_PAGINATION"),
        ("commits(first: 101) { nodes { commit { oid } } }", "EXCESSIVE_PAGINATION"),
    ],
)
def test_page_sizes_follow_githubs_limits(tmp_path: Path, connection: str, error_type: str) -> None:
    with manual_world(tmp_path) as (world, _clock):
        query = f"""{{ repository(owner: "acme", name: "widgets") {{ pullRequest(number: 1) {{
          {connection} }} }} }}"""
        answer = graphql(world, query)
        assert "data" not in answer
        assert answer["errors"][0]["type"] == error_type


def test_pull_request_lists_filter_and_order(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, clock):
        first = open_pull(world)
        clock.advance(5)
        second = open_pull(world)
        clock.advance(5)
        third = open_pull(world)
        world.control.add_labels(world.repo, first.number, ["agent"], as_user="alice")
        world.control.add_labels(world.repo, third.number, ["agent"], as_user="alice")
        clock.advance(5)
        rest(world, "PATCH", f"/repos/{world.repo}/pulls/{second.number}", {"state": "closed"})
        clock.advance(5)
        world.control.comment(world.repo, first.number, "bump", as_user="alice")
        query = """query($states: [PullRequestState!], $labels: [String!], $order: IssueOrder,
                         $after: String) {
          repository(owner: "acme", name: "widgets") {
            pullRequests(first: 1, after: $after, states: $states, labels: $labels,
                         orderBy: $order) {
              totalCount pageInfo { hasNextPage endCursor } nodes { number } } } }"""

        def numbers(variables: dict[str, Any]) -> tuple[int, list[int]]:
            found: list[int] = []
            cursor = None
            while True:
                answer = graphql(world, query, {**variables, "after": cursor})
                page = answer["data"]["repository"]["pullRequests"]
                found += [n["number"] for n in page["nodes"]]
                if not page["pageInfo"]["hasNextPage"]:
                    return page["totalCount"], found
                cursor = page["pageInfo"]["endCursor"]

        assert numbers({}) == (3, [first.number, second.number, third.number])
        assert numbers({"states": ["OPEN"]}) == (2, [first.number, third.number])
        assert numbers({"states": ["CLOSED"]}) == (1, [second.number])
        assert numbers({"labels": ["agent"], "states": ["OPEN"]})[1] == [first.number, third.number]
        newest_update = {"field": "UPDATED_AT", "direction": "DESC"}
        assert numbers({"order": newest_update})[1] == [first.number, second.number, third.number]
        newest = {"field": "CREATED_AT", "direction": "DESC"}
        assert numbers({"order": newest})[1] == [third.number, second.number, first.number]


def test_a_reader_cannot_resolve_threads_or_see_private_nodes(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, _clock):
        outsider = new_account(world, None)
        pull = open_pull(world)
        node_id = rest(world, "GET", f"/repos/{world.repo}/pulls/{pull.number}").json()["node_id"]
        query = "query($id: ID!) { node(id: $id) { id } }"
        # A public repository is readable by anyone signed in.
        assert graphql(world, query, {"id": node_id}, outsider)["data"]["node"] == {"id": node_id}
