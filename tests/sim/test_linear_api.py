"""The Linear emulator's behaviour over HTTP: auth, reads, pagination, filters and mutations."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from orchestrator.tracker.linear_queries import DOCUMENTS
from orchestrator_sim.control import ControlRequestError
from tests.sim.linear_world import ALICE_TOKEN, BOT_KEY, LinearWorld, running_linear

ISSUE_PAGE = """
query Page($first: Int, $after: String, $filter: IssueFilter, $orderBy: PaginationOrderBy) {
  issues(first: $first, after: $after, filter: $filter, orderBy: $orderBy) {
    nodes { identifier updatedAt }
    edges { cursor node { id } }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
  }
}
"""


@pytest.fixture
def world(tmp_path: Path) -> Iterator[LinearWorld]:
    with running_linear(tmp_path / "sim") as found:
        yield found


def _codes(body: Any) -> list[str]:
    return [e["extensions"]["code"] for e in body["errors"]]


def _state_id(world: LinearWorld, name: str) -> str:
    states = world.data(DOCUMENTS["TeamStates"], {"teamKey": "ENG"})["workflowStates"]["nodes"]
    return str(next(s["id"] for s in states if s["name"] == name))


# ------------------------------------------------------------------- auth


def test_personal_keys_go_bare_and_oauth_tokens_with_bearer(world: LinearWorld) -> None:
    query = "{ viewer { displayName isMe } }"
    assert world.data(query)["viewer"] == {"displayName": "bot", "isMe": True}
    alice = world.gql(query, authorization=f"Bearer {ALICE_TOKEN}")
    assert alice.body["data"]["viewer"]["displayName"] == "alice"
    for wrong in (f"Bearer {BOT_KEY}", ALICE_TOKEN, "lin_api_nobody", None):
        answer = world.gql(query, authorization=wrong)
        assert answer.status == 400, wrong
        assert _codes(answer.body) == ["AUTHENTICATION_ERROR"], wrong
        assert "data" not in answer.body


def test_a_field_outside_the_subset_is_refused_by_name(world: LinearWorld) -> None:
    answer = world.gql("{ viewer { id avatarUrl } }")
    assert answer.status == 400
    assert _codes(answer.body) == ["GRAPHQL_VALIDATION_FAILED"]
    assert "avatarUrl" in answer.body["errors"][0]["message"]


def test_a_missing_variable_or_operation_name_is_the_requests_fault(world: LinearWorld) -> None:
    missing = world.gql(DOCUMENTS["Issue"], {})
    assert missing.status == 400
    assert _codes(missing.body) == ["INVALID_INPUT"]
    assert "$id" in missing.body["errors"][0]["message"]
    two = world.gql("query A { viewer { id } } query B { viewer { name } }")
    assert two.status == 400
    assert _codes(two.body) == ["INVALID_INPUT"]


# ------------------------------------------------------------------ reads


def test_issue_by_identifier_or_id_with_linears_branch_name(world: LinearWorld) -> None:
    query = "query($id: String!) { issue(id: $id) { id identifier branchName priorityLabel } }"
    by_key = world.data(query, {"id": "ENG-1"})["issue"]
    assert by_key["branchName"] == "bot/eng-1-fix-the-login-page"
    assert world.data(query, {"id": by_key["id"]})["issue"] == by_key
    as_alice = world.gql(query, {"id": "ENG-1"}, authorization=f"Bearer {ALICE_TOKEN}")
    assert as_alice.body["data"]["issue"]["branchName"] == "eng-1-fix-the-login-page"
    missing = world.gql(query, {"id": "ENG-99"})
    assert missing.status == 400
    assert _codes(missing.body) == ["INVALID_INPUT"]
    assert missing.body["data"] is None


def test_pagination_walks_every_issue_once_newest_first(world: LinearWorld) -> None:
    for number in range(5):
        world.clock.advance(1)
        world.control.create_issue("ENG", f"Chore {number}")
    seen: list[str] = []
    after = None
    pages = 0
    while True:
        page = world.data(ISSUE_PAGE, {"first": 3, "after": after})["issues"]
        pages += 1
        seen += [n["identifier"] for n in page["nodes"]]
        assert [e["cursor"] for e in page["edges"]] == [e["node"]["id"] for e in page["edges"]]
        assert page["pageInfo"]["endCursor"] == page["edges"][-1]["cursor"]
        assert page["pageInfo"]["hasPreviousPage"] is (after is not None)
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    assert pages == 3
    assert seen == [f"ENG-{n}" for n in range(7, 0, -1)]


def test_the_control_api_seeds_many_issues_in_one_call_after_checking_the_body(
    world: LinearWorld,
) -> None:
    made = world.control.seed(
        "ENG", 60, title="Task {issue}", state="In Progress", labels=["agent", "bug"]
    )
    assert made == [f"ENG-{n}" for n in range(3, 63)]
    shown = world.control.issue("ENG-62")
    assert shown["title"] == "Task 62"
    assert shown["state"] == "In Progress"
    assert shown["labels"] == ["agent", "bug"]
    found = world.data(
        ISSUE_PAGE, {"first": 100, "filter": {"state": {"name": {"eq": "In Progress"}}}}
    )
    assert len(found["issues"]["nodes"]) == 60
    for body, named in (
        ({"team": "ENG", "count": 0}, "count"),
        ({"team": "ENG", "count": 2, "state": "Nowhere"}, "Nowhere"),
        ({"team": "ENG", "count": 2, "labels": ["agent", "missing"]}, "missing"),
        ({"team": "OPS", "count": 2}, "OPS"),
    ):
        with pytest.raises(ControlRequestError, match=named):
            world.control.request("POST", "/seed", body)
    assert world.control.summary()["issues"] == 62


def test_updated_at_filter_returns_only_what_changed(world: LinearWorld) -> None:
    before = world.control.issue("ENG-2")["updated_at"]
    world.clock.advance(30)
    world.control.set_state("ENG-1", "In Progress")
    changed = world.data(
        ISSUE_PAGE, {"filter": {"updatedAt": {"gt": before}}, "orderBy": "updatedAt"}
    )
    assert [n["identifier"] for n in changed["issues"]["nodes"]] == ["ENG-1"]
    recent = world.data(ISSUE_PAGE, {"filter": {"updatedAt": {"gt": "-PT1M"}}})
    assert [n["identifier"] for n in recent["issues"]["nodes"]] == ["ENG-1"]
    bad = world.gql(ISSUE_PAGE, {"filter": {"updatedAt": {"gt": "yesterday"}}})
    assert bad.status == 400
    assert _codes(bad.body) == ["INVALID_INPUT"]


def test_filters_by_team_state_type_label_and_project(world: LinearWorld) -> None:
    def found(flt: dict[str, Any]) -> list[str]:
        nodes = world.data(ISSUE_PAGE, {"filter": flt})["issues"]["nodes"]
        return sorted(n["identifier"] for n in nodes)

    world.control.create_team("OPS", "Operations")
    world.control.create_issue("OPS", "Rotate keys", labels=["agent"])
    assert found({"team": {"key": {"eq": "ENG"}}}) == ["ENG-1", "ENG-2"]
    assert found({"labels": {"name": {"eq": "bug"}}}) == ["ENG-2"]
    assert found({"labels": {"some": {"name": {"in": ["agent"]}}}}) == ["ENG-1", "ENG-2", "OPS-1"]
    assert found({"project": {"slugId": {"eq": "website-1a2b"}}}) == ["ENG-1"]
    assert found({"project": {"null": True}, "team": {"key": {"eq": "ENG"}}}) == ["ENG-2"]
    world.control.set_state("ENG-2", "In Review")
    assert found({"state": {"type": {"eq": "started"}}}) == ["ENG-2"]
    assert found({"state": {"name": {"in": ["Todo"]}}}) == ["ENG-1", "OPS-1"]
    assert found({"assignee": {"isMe": {"eq": True}}}) == ["ENG-1"]


def test_the_tracker_page_carries_blockers_and_project(world: LinearWorld) -> None:
    data = world.data(DOCUMENTS["IssuesPage"], {"filter": {"team": {"key": {"eq": "ENG"}}}})
    nodes = data["issues"]["nodes"]
    assert {n["identifier"] for n in nodes} == {"ENG-1", "ENG-2"}
    blocked = next(n for n in nodes if n["identifier"] == "ENG-1")
    assert blocked["inverseRelations"]["nodes"][0]["type"] == "blocks"
    assert blocked["inverseRelations"]["nodes"][0]["issue"]["identifier"] == "ENG-2"
    assert blocked["project"]["slugId"] == "website-1a2b"


# -------------------------------------------------------------- mutations


def test_issue_update_moves_the_state_by_id(world: LinearWorld) -> None:
    issue_id = world.control.issue("ENG-1")["id"]
    before = world.control.issue("ENG-1")["updated_at"]
    world.clock.advance(5)
    moved = world.data(
        DOCUMENTS["SetState"], {"id": issue_id, "stateId": _state_id(world, "In Progress")}
    )["issueUpdate"]
    assert moved["success"] is True
    assert moved["issue"]["state"] == {
        "id": _state_id(world, "In Progress"),
        "name": "In Progress",
        "type": "started",
    }
    assert moved["issue"]["updatedAt"] > before
    assert world.control.issue("ENG-1")["state"] == "In Progress"
    world.control.create_team("OPS", "Operations")
    other_team = world.data(DOCUMENTS["TeamStates"], {"teamKey": "OPS"})["workflowStates"]
    refused = world.gql(
        DOCUMENTS["SetState"], {"id": issue_id, "stateId": other_team["nodes"][0]["id"]}
    )
    assert refused.status == 400
    assert _codes(refused.body) == ["INVALID_INPUT"]
    assert "not a workflow state of team ENG" in refused.body["errors"][0]["message"]
    assert world.control.issue("ENG-1")["state"] == "In Progress"


def test_issue_update_adds_and_removes_labels_by_id(world: LinearWorld) -> None:
    labels = world.data(DOCUMENTS["IssueLabels"], {"names": ["agent", "bug"]})["issueLabels"]
    ids = {n["name"]: n["id"] for n in labels["nodes"]}
    issue_id = world.control.issue("ENG-1")["id"]
    changed = world.data(
        DOCUMENTS["ChangeLabels"],
        {"id": issue_id, "added": [ids["bug"]], "removed": [ids["agent"]]},
    )
    names = [n["name"] for n in changed["issueUpdate"]["issue"]["labels"]["nodes"]]
    assert names == ["bug"]
    assert world.control.issue("ENG-1")["labels"] == ["bug"]


def test_every_state_and_label_change_is_in_the_history_with_its_actor(
    world: LinearWorld,
) -> None:
    issue_id = world.control.issue("ENG-1")["id"]
    labels = world.data(DOCUMENTS["IssueLabels"], {"names": ["bug"]})["issueLabels"]["nodes"]
    # The product's mutations are its API key's user's; the control API acts as someone or,
    # without ``as``, as an automation (no actor). A change that changes nothing is no entry.
    world.data(DOCUMENTS["SetState"], {"id": issue_id, "stateId": _state_id(world, "In Progress")})
    world.clock.advance(1)
    world.control.set_state("ENG-1", "In Review", as_user="alice")
    world.clock.advance(1)
    world.control.add_labels("ENG-1", "bug", as_user="alice")
    world.control.add_labels("ENG-1", "bug", as_user="alice")
    world.clock.advance(1)
    world.control.remove_label("ENG-1", "bug")
    world.data(DOCUMENTS["ChangeLabels"], {"id": issue_id, "added": [], "removed": []})

    shown = [
        (e["actor"], e["from_state"], e["to_state"], e["added_labels"], e["removed_labels"])
        for e in world.control.history("ENG-1")
    ]
    assert shown == [
        ("bot", "Todo", "In Progress", [], []),
        ("alice", "In Progress", "In Review", [], []),
        ("alice", None, None, ["bug"], []),
        (None, None, None, [], ["bug"]),
    ]
    nodes = world.data(DOCUMENTS["IssueHistory"], {"id": "ENG-1"})["issue"]["history"]["nodes"]
    # Newest first, as every connection: the automation's removal, then alice's label.
    assert nodes[0]["actor"] is None and nodes[0]["addedLabels"] is None
    assert nodes[1]["actor"]["displayName"] == "alice"
    assert nodes[1]["addedLabels"] == [{"id": labels[0]["id"], "name": "bug"}]
    assert nodes[2]["toState"]["name"] == "In Review"
    assert nodes[3]["actor"]["displayName"] == "bot"
    assert [n["createdAt"] for n in nodes] == sorted((n["createdAt"] for n in nodes), reverse=True)


def test_users_are_members_guests_admins_or_apps_and_may_be_suspended(
    world: LinearWorld,
) -> None:
    world.control.create_user("gus", guest=True)
    world.control.create_user("deploy-app", app=True)
    world.control.create_user("ada", admin=True)
    for name in ("gus", "deploy-app", "ada"):
        world.control.add_labels("ENG-2", "bug", as_user=name)
        world.control.remove_label("ENG-2", "bug", as_user=name)
    world.control.set_state("ENG-2", "In Progress", as_user="alice")
    # Suspended afterwards: her past change now names a user who is not active.
    suspended = world.control.update_user("alice", active=False)
    assert (suspended["active"], suspended["guest"]) == (False, False)
    nodes = world.data(DOCUMENTS["IssueHistory"], {"id": "ENG-2"})["issue"]["history"]["nodes"]
    flags = {
        n["actor"]["displayName"]: (n["actor"]["active"], n["actor"]["guest"], n["actor"]["app"])
        for n in nodes
    }
    assert flags == {
        "alice": (False, False, False),
        "gus": (True, True, False),
        "deploy-app": (True, False, True),
        "ada": (True, False, False),
    }
    admin = world.data("{ viewer { admin guest app } }")["viewer"]
    assert admin == {"admin": False, "guest": False, "app": False}
    with pytest.raises(ControlRequestError, match="cannot be changed"):
        world.control.update_user("alice", app=True)


USER_UPDATE = """
mutation Rename($id: String!, $input: UserUpdateInput!) {
  userUpdate(id: $id, input: $input) { success user { id name displayName email } }
}
"""


def test_each_user_renames_itself_and_only_an_admin_renames_another(world: LinearWorld) -> None:
    alice = f"Bearer {ALICE_TOKEN}"
    bot_id = world.data("{ viewer { id } }")["viewer"]["id"]
    # Alice takes the bot's email as her full name, and as her display name: both are hers.
    renamed = world.gql(
        USER_UPDATE,
        {"id": "me", "input": {"name": "bot@example.com", "displayName": "bot@example.com"}},
        authorization=alice,
    )
    assert renamed.status == 200, renamed.body
    user = renamed.body["data"]["userUpdate"]["user"]
    assert (user["name"], user["displayName"], user["email"]) == (
        "bot@example.com",
        "bot@example.com",
        "alice@example.com",
    )
    # A full name need not be unique; a display name held by another user is refused.
    again = world.gql(
        USER_UPDATE, {"id": user["id"], "input": {"name": "bot"}}, authorization=alice
    )
    assert again.body["data"]["userUpdate"]["user"]["name"] == "bot"
    taken = world.gql(
        USER_UPDATE, {"id": "me", "input": {"displayName": "BOT"}}, authorization=alice
    )
    assert _codes(taken.body) == ["INVALID_INPUT"]
    # Another user's profile: not hers to change.
    other = world.gql(USER_UPDATE, {"id": bot_id, "input": {"name": "x"}}, authorization=alice)
    assert other.status == 400
    assert _codes(other.body) == ["FORBIDDEN"]
    # A name given up is free for anyone: the bot renames itself, alice takes "bot".
    world.data(USER_UPDATE, {"id": "me", "input": {"displayName": "daemon"}})
    took = world.gql(
        USER_UPDATE, {"id": "me", "input": {"displayName": "bot"}}, authorization=alice
    )
    assert took.body["data"]["userUpdate"]["user"]["displayName"] == "bot"
    # The control API looks a user up by id, then email, then display name.
    assert world.control.update_user("bot@example.com")["id"] == bot_id
    assert world.control.update_user("bot")["email"] == "alice@example.com"
    world.control.create_user("ada", "lin_api_ada", admin=True)
    by_admin = world.gql(
        USER_UPDATE, {"id": bot_id, "input": {"name": "Bot"}}, authorization="lin_api_ada"
    )
    assert by_admin.body["data"]["userUpdate"]["user"]["name"] == "Bot"


def test_a_rename_through_the_control_api_is_all_or_nothing(world: LinearWorld) -> None:
    world.control.create_user("carol", email="carol@example.com")
    with pytest.raises(ControlRequestError, match="another user's"):
        world.control.update_user("alice", full_name="Carol", name="carol")
    with pytest.raises(ControlRequestError, match="cannot be changed"):
        world.control.update_user("alice", full_name="Carol", app=True)
    assert world.control.update_user("alice")["full_name"] == "alice"
    shown = world.control.update_user("alice", full_name="Alice A.", name="al")
    assert (shown["name"], shown["full_name"], shown["email"]) == (
        "al",
        "Alice A.",
        "alice@example.com",
    )
    with pytest.raises(ControlRequestError, match="already exists"):
        world.control.create_user("carol2", email="Carol@Example.com")


def test_comment_create_then_update_marks_it_edited(world: LinearWorld) -> None:
    issue_id = world.control.issue("ENG-1")["id"]
    created = world.data(DOCUMENTS["CreateComment"], {"issueId": issue_id, "body": "Workpad v1"})
    comment = created["commentCreate"]["comment"]
    world.clock.advance(10)
    updated = world.data(DOCUMENTS["UpdateComment"], {"id": comment["id"], "body": "Workpad v2"})
    after = updated["commentUpdate"]["comment"]
    assert after["body"] == "Workpad v2"
    assert after["editedAt"] == after["updatedAt"] > comment["updatedAt"]
    shown = world.control.issue("ENG-1")["comments"]
    assert [(c["user"], c["body"]) for c in shown] == [("bot", "Workpad v2")]
    human = world.control.comment("ENG-1", "alice", "Looks good")
    refused = world.gql(DOCUMENTS["UpdateComment"], {"id": human["id"], "body": "overwritten"})
    assert _codes(refused.body) == ["INVALID_INPUT"]
    listed = world.data(DOCUMENTS["Issue"], {"id": "ENG-1"})["issue"]["comments"]["nodes"]
    assert sorted(c["body"] for c in listed) == ["Looks good", "Workpad v2"]


def test_attachment_create_is_idempotent_by_url(world: LinearWorld) -> None:
    issue_id = world.control.issue("ENG-1")["id"]
    link = {"issueId": issue_id, "url": "https://github.com/acme/widgets/pull/7", "title": "PR"}
    first = world.data(DOCUMENTS["LinkPullRequest"], {**link, "subtitle": "Open"})
    again = world.data(
        DOCUMENTS["LinkPullRequest"], {**link, "subtitle": "Merged", "metadata": {"merged": True}}
    )
    one, two = first["attachmentCreate"]["attachment"], again["attachmentCreate"]["attachment"]
    assert one["id"] == two["id"]
    assert two["subtitle"] == "Merged"
    assert two["metadata"] == {"merged": True}
    linked = world.data(
        "mutation($i: String!, $u: String!) { attachmentLinkURL(issueId: $i, url: $u) "
        "{ success attachment { id title } } }",
        {"i": issue_id, "u": link["url"]},
    )
    assert linked["attachmentLinkURL"]["attachment"]["id"] == one["id"]
    world.data(DOCUMENTS["LinkPullRequest"], {**link, "url": link["url"] + "/files"})
    assert len(world.control.issue("ENG-1")["attachments"]) == 2
    operations = [w["operations"] for w in world.control.writes()]
    assert operations == [["attachmentCreate"]] * 2 + [["attachmentLinkURL"], ["attachmentCreate"]]
    assert {w["user"] for w in world.control.writes()} == {"bot"}


# ------------------------------------------------------------ rate limits


def test_every_answer_reports_both_budgets_and_the_query_complexity(world: LinearWorld) -> None:
    answer = world.gql("{ issues(first: 2) { nodes { id } } }")
    headers = answer.headers
    # One connection object (1) plus two nodes of one object and one property (2 x 1.1).
    assert headers["x-complexity"] == "4"
    assert headers["x-ratelimit-requests-limit"] == "5000"
    assert int(headers["x-ratelimit-requests-remaining"]) < 5000
    assert headers["x-ratelimit-complexity-limit"] == "3000000"
    assert int(headers["x-ratelimit-complexity-remaining"]) == 3_000_000 - 4
    assert int(headers["x-ratelimit-requests-reset"]) >= world.clock().timestamp() * 1000
    counted = world.control.counters()["bot"]
    assert counted == {"requests": 1, "complexity": 4, "rate_limited": 0}


def test_complexity_counts_a_page_size_from_a_variable_or_its_default(world: LinearWorld) -> None:
    def points(variables: dict[str, Any]) -> int:
        return int(world.gql(DOCUMENTS["IssuesPage"], variables).headers["x-complexity"])

    assert points({}) == points({"first": 25}) < points({"first": 50})
    assert points({"first": 50}) < 10_000


def test_an_empty_request_bucket_answers_ratelimited_until_it_refills(world: LinearWorld) -> None:
    world.control.set_rate_limit("bot", requests_limit=3600, requests_remaining=1)
    assert world.gql("{ viewer { id } }").status == 200
    limited = world.gql("{ viewer { id } }")
    assert limited.status == 400
    assert _codes(limited.body) == ["RATELIMITED"]
    assert limited.body["errors"][0]["extensions"]["statusCode"] == 429
    assert "data" not in limited.body
    assert limited.headers["x-ratelimit-requests-remaining"] == "0"
    assert int(limited.headers["x-ratelimit-requests-reset"]) > world.clock().timestamp() * 1000
    alice = world.gql("{ viewer { id } }", authorization=f"Bearer {ALICE_TOKEN}")
    assert alice.status == 200
    world.clock.advance(1)  # a leaky bucket of 3,600 an hour refills one a second
    assert world.gql("{ viewer { id } }").status == 200
    assert world.control.counters()["bot"]["rate_limited"] == 1


def test_complexity_budget_and_single_query_maximum(world: LinearWorld) -> None:
    heavy = "{ issues(first: 250) { nodes { labels(first: 250) { nodes { id name } } } } }"
    too_complex = world.gql(heavy)
    assert too_complex.status == 400
    assert "Query too complex" in too_complex.body["errors"][0]["message"]
    world.control.set_rate_limit("bot", complexity_remaining=3)
    limited = world.gql("{ issues(first: 2) { nodes { id } } }")
    assert limited.status == 400
    assert _codes(limited.body) == ["RATELIMITED"]
    assert limited.headers["x-complexity"] == "4"
    assert limited.headers["x-ratelimit-complexity-remaining"] == "3"
    assert world.gql("{ viewer { id } }").status == 200


# ----------------------------------------------------------- persistence


def test_ids_follow_the_seed_and_the_workspace_survives_a_restart(tmp_path: Path) -> None:
    with running_linear(tmp_path / "a", persist=True) as first:
        issue = first.control.issue("ENG-1")
        first.control.comment("ENG-1", "alice", "kept")
        first.control.set_state("ENG-1", "In Progress", as_user="alice")
    with running_linear(tmp_path / "b") as other:
        assert other.control.issue("ENG-1")["id"] == issue["id"]
    from orchestrator_sim.linear.client import LinearControl
    from orchestrator_sim.server import SimServer

    with SimServer(tmp_path / "a", persist=True) as server:
        again = LinearControl(server.url).issue("ENG-1")
    assert again["id"] == issue["id"]
    assert [c["body"] for c in again["comments"]] == ["kept"]
    assert [(e["actor"], e["to_state"]) for e in again["history"]] == [("alice", "In Progress")]
