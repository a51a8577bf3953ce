"""The emulator's GraphQL endpoint over HTTP: the product's documents, billing, errors."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from github import GithubException
from graphql import GraphQLObjectType, parse
from structlog.testing import capture_logs

from orchestrator.github.queries import (
    fingerprint_query,
    fingerprint_request,
    reply_to_thread_request,
    resolve_thread_request,
    state_request,
)
from orchestrator_sim.graphql_api import emulated_schema, resolvers
from orchestrator_sim.graphql_cost import load_github_schema, query_cost
from orchestrator_sim.testing import Account, SimWorld, make_token, running_world


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimWorld]:
    # Mergeability is known at once here; tests/sim/test_sim_strict.py covers the delay.
    with running_world(tmp_path_factory.mktemp("graphql"), mergeability_delay=0) as running:
        yield running


@dataclass(frozen=True)
class Pull:
    """A pull request a test opened: its number and head SHA."""

    number: int
    head: str


# Changes both lines of src/widgets.py, so review comments on them are part of the diff.
WIDGETS = 'def greet(name: str) -> str:  # changed\n    return f"hi {name}"\n'


def open_pull(world: SimWorld, files: dict[str, str] | None = None) -> Pull:
    """Push a new branch as the human and open a pull request from it as the bot."""
    branch = f"feature-{secrets.token_hex(4)}"
    head = world.control.push(
        world.repo,
        branch,
        files
        or {f"src/{branch}.py": "value = 1\nother = 2\nthird = 3\n", "src/widgets.py": WIDGETS},
        as_user=world.human.login,
    )
    number = world.control.create_pull(
        world.repo, f"Work on {branch}", branch, as_user=world.bot.login
    )
    return Pull(number, head)


def new_account(world: SimWorld, permission: str | None = "write") -> Account:
    account = Account(f"user-{secrets.token_hex(3)}", make_token())
    world.control.create_user(account.login, account.token)
    if permission is not None:
        world.control.set_permission(world.repo, account.login, permission)
    return account


def post(world: SimWorld, account: Account, payload: dict[str, Any]) -> httpx.Response:
    return httpx.post(
        f"{world.url}/graphql",
        json=payload,
        headers={"Authorization": f"bearer {account.token}"},
        timeout=30,
    )


def billed(world: SimWorld, account: Account) -> int:
    """GraphQL points the emulator charged this account (its REST calls are billed apart)."""
    routes = world.control.counters()["tokens"].get(account.login, {}).get("routes", {})
    return int(routes.get("POST /graphql", {}).get("billed", 0))


def points(query: str, variables: dict[str, Any] | None = None) -> int:
    return query_cost(parse(query), variables, schema=load_github_schema()).points


# ------------------------------------------------------------ product documents


def test_fingerprint_reports_head_rollup_reviews_and_unresolved_threads(world: SimWorld) -> None:
    first = open_pull(world)
    second = open_pull(world)
    control = world.control
    review = control.review(
        world.repo,
        first.number,
        "CHANGES_REQUESTED",
        as_user=world.human.login,
        body="Two things",
        comments=[
            {"path": "src/widgets.py", "line": 1, "body": "rename"},
            {"path": "src/widgets.py", "line": 2, "body": "why?"},
        ],
    )
    control.resolve_thread(world.repo, review["threads"][0]["id"], as_user=world.human.login)
    control.check_run(world.repo, sha=first.head, name="tests", conclusion="failure")
    control.check_run(world.repo, sha=second.head, name="tests", conclusion="success")
    control.review(world.repo, second.number, "APPROVED", as_user=world.human.login)
    account = new_account(world)
    request = fingerprint_request(world.owner, world.name, [first.number, second.number])
    before = billed(world, account)

    headers, data = world.github(account).requester.graphql_query(
        request.query, dict(request.variables)
    )

    pr0 = data["data"]["repository"]["pr0"]
    pr1 = data["data"]["repository"]["pr1"]
    assert (pr0["number"], pr0["headRefOid"], pr0["state"]) == (first.number, first.head, "OPEN")
    assert pr0["reviewDecision"] == "CHANGES_REQUESTED"
    assert pr0["mergeable"] == "MERGEABLE"
    head0 = pr0["headRef"]["target"]
    assert head0["oid"] == first.head
    assert head0["statusCheckRollup"]["state"] == "FAILURE"
    threads = pr0["reviewThreads"]
    assert threads["totalCount"] == 2
    assert sum(not t["isResolved"] for t in threads["nodes"]) == 1
    assert pr1["reviewDecision"] == "APPROVED"
    assert pr1["headRef"]["target"]["statusCheckRollup"]["state"] == "SUCCESS"
    assert pr1["reviewThreads"] == {"totalCount": 0, "nodes": []}
    # Two PRs x two connections = 4 requests -> 1 point, billed once and reported.
    cost = points(request.query, dict(request.variables))
    assert cost == 1
    assert data["data"]["rateLimit"]["cost"] == cost
    assert billed(world, account) - before == cost
    assert data["data"]["rateLimit"]["remaining"] == int(headers["x-ratelimit-remaining"])


def test_full_batch_of_100_fingerprints_costs_two_points(world: SimWorld) -> None:
    pulls = [open_pull(world) for _ in range(3)]
    account = new_account(world)
    # The cost is fixed by the document: 100 aliases x 2 connections = 200 requests.
    variables: dict[str, Any] = {"owner": world.owner, "name": world.name}
    variables.update({f"n{i}": pulls[i % 3].number for i in range(100)})
    query = fingerprint_query(100)

    _, data = world.github(account).requester.graphql_query(query, variables)

    assert data["data"]["rateLimit"]["cost"] == 2 == points(query, variables)
    assert data["data"]["rateLimit"]["remaining"] == 4998
    assert billed(world, account) == 2
    assert data["data"]["repository"]["pr99"]["number"] == pulls[0].number


def test_deep_query_costs_what_github_charges(world: SimWorld) -> None:
    pull = open_pull(world)
    account = new_account(world)
    # 100 PRs x reviewThreads(first: 50) x comments(first: 20):
    # 100 x (1 thread request + 50 comment requests) = 5,100 requests -> 51 points.
    aliases = "\n".join(
        f"p{i}: pullRequest(number: {pull.number}) {{ reviewThreads(first: 50) {{ nodes {{"
        " comments(first: 20) { nodes { body } } } } }"
        for i in range(100)
    )
    query = (
        f'{{ rateLimit {{ cost nodeCount }} repository(owner: "{world.owner}", '
        f'name: "{world.name}") {{ {aliases} }} }}'
    )

    response = post(world, account, {"query": query})

    body = response.json()
    assert response.status_code == 200
    assert "errors" not in body
    assert body["data"]["rateLimit"] == {"cost": 51, "nodeCount": 100 * (50 + 50 * 20)}
    assert points(query) == 51
    assert billed(world, account) == 51
    assert response.headers["x-ratelimit-used"] == "51"


def test_full_state_lists_reviews_threads_and_every_check(world: SimWorld) -> None:
    pull = open_pull(world)
    control = world.control
    control.review(
        world.repo,
        pull.number,
        "COMMENTED",
        as_user=world.human.login,
        body="Looks close",
        comments=[{"path": "src/widgets.py", "line": 2, "body": "Handle empty names"}],
    )
    control.check_run(
        world.repo, sha=pull.head, name="lint", status="in_progress", summary="running"
    )
    control.check_run(world.repo, sha=pull.head, name="tests", conclusion="success")
    control.status(world.repo, "success", as_user=world.human.login, sha=pull.head, context="ext")
    account = new_account(world)
    request = state_request(world.owner, world.name, [pull.number])

    _, data = world.github(account).requester.graphql_query(request.query, dict(request.variables))

    pr = data["data"]["repository"]["pr0"]
    review = pr["reviews"]["nodes"][0]
    assert review["author"] == {"__typename": "User", "login": world.human.login}
    assert (review["state"], review["body"]) == ("COMMENTED", "Looks close")
    assert review["commit"] == {"oid": pull.head}
    thread = pr["reviewThreads"]["nodes"][0]
    assert (thread["path"], thread["line"], thread["isResolved"]) == ("src/widgets.py", 2, False)
    comment = thread["comments"]["nodes"][0]
    assert comment["body"] == "Handle empty names"
    assert comment["author"]["login"] == world.human.login
    assert comment["diffHunk"].startswith("@@")
    assert isinstance(comment["databaseId"], int)
    rollup = pr["headRef"]["target"]["statusCheckRollup"]
    assert rollup["state"] == "PENDING"
    contexts = {
        f"{c['__typename']}:{c.get('name') or c.get('context')}": c
        for c in rollup["contexts"]["nodes"]
    }
    assert contexts["CheckRun:lint"]["status"] == "IN_PROGRESS"
    assert contexts["CheckRun:lint"]["conclusion"] is None
    assert contexts["CheckRun:tests"]["conclusion"] == "SUCCESS"
    assert isinstance(contexts["CheckRun:tests"]["databaseId"], int)
    assert contexts["StatusContext:ext"]["state"] == "SUCCESS"
    assert rollup["contexts"]["totalCount"] == 3
    # reviews 1 + threads 1 + 50 comment pages + contexts 1 (headRef and target are plain
    # objects) = 53 -> 1 point.
    assert data["data"]["rateLimit"]["cost"] == 1 == points(request.query, dict(request.variables))


def test_bot_review_author_is_typed_bot(world: SimWorld) -> None:
    pull = open_pull(world)
    reviewer = Account(f"review-bot-{secrets.token_hex(3)}", make_token())
    world.control.create_user(reviewer.login, reviewer.token, bot=True)
    world.control.set_permission(world.repo, reviewer.login, "write")
    world.control.review(
        world.repo, pull.number, "COMMENTED", as_user=reviewer.login, body="automated note"
    )
    request = state_request(world.owner, world.name, [pull.number])

    _, data = world.github().requester.graphql_query(request.query, dict(request.variables))

    authors = [r["author"] for r in data["data"]["repository"]["pr0"]["reviews"]["nodes"]]
    assert authors == [{"__typename": "Bot", "login": reviewer.login}]


def test_missing_pull_request_is_not_found_beside_the_others(world: SimWorld) -> None:
    pull = open_pull(world)
    request = state_request(world.owner, world.name, [pull.number, 99_999])
    requester = world.github().requester

    # graphql_query raises on any error; posting the payload keeps the other PRs' data.
    _, body = requester.requestJsonAndCheck("POST", requester.graphql_url, input=request.payload())

    assert body["data"]["repository"]["pr0"]["number"] == pull.number
    assert body["data"]["repository"]["pr1"] is None
    assert body["errors"] == [
        {
            "type": "NOT_FOUND",
            "path": ["repository", "pr1"],
            "locations": body["errors"][0]["locations"],
            "message": "Could not resolve to a PullRequest with the number of 99999.",
        }
    ]


def test_unknown_repository_is_not_found(world: SimWorld) -> None:
    request = fingerprint_request(world.owner, "no-such-repo", [1])

    with pytest.raises(GithubException) as caught:
        world.github().requester.graphql_query(request.query, dict(request.variables))

    assert caught.value.status == 404
    assert "Could not resolve to a Repository with the name" in str(caught.value)


# -------------------------------------------------------------------- mutations


def _first_thread_id(world: SimWorld, number: int, account: Account | None = None) -> str:
    request = state_request(world.owner, world.name, [number])
    _, data = world.github(account).requester.graphql_query(request.query, dict(request.variables))
    return str(data["data"]["repository"]["pr0"]["reviewThreads"]["nodes"][0]["id"])


def _pull_with_thread(world: SimWorld) -> Pull:
    pull = open_pull(world)
    world.control.review(
        world.repo,
        pull.number,
        "CHANGES_REQUESTED",
        as_user=world.human.login,
        body="Please fix",
        comments=[{"path": "src/widgets.py", "line": 1, "body": "Typo here"}],
    )
    return pull


def test_reply_then_resolve_a_thread(world: SimWorld) -> None:
    pull = _pull_with_thread(world)
    thread_id = _first_thread_id(world, pull.number)
    requester = world.github().requester
    world.control.reset_counters()

    reply = reply_to_thread_request(thread_id, "Fixed in the latest push.")
    _, replied = requester.graphql_query(reply.query, dict(reply.variables))
    resolve = resolve_thread_request(thread_id)
    _, resolved = requester.graphql_query(resolve.query, dict(resolve.variables))

    comment = replied["data"]["addPullRequestReviewThreadReply"]["comment"]
    assert comment["body"] == "Fixed in the latest push."
    # The product runs as a machine user (see tests/sim/test_sim_strict.py for bots).
    assert comment["author"] == {"__typename": "User", "login": world.bot.login}
    assert resolved["data"]["resolveReviewThread"]["thread"] == {
        "id": thread_id,
        "isResolved": True,
    }
    # The reply is a real review comment answering the thread's first comment.
    rest = world.github().get_repo(world.repo).get_pull(pull.number)
    comments = sorted(rest.get_review_comments(), key=lambda c: c.id)
    assert [c.body for c in comments] == ["Typo here", "Fixed in the latest push."]
    assert comments[1].in_reply_to_id == comments[0].id
    # Each mutation costs 1 point and is in the write log under its operation.
    operations = [w["operation"] for w in world.control.writes()]
    assert operations == ["addPullRequestReviewThreadReply", "resolveReviewThread"]
    assert billed(world, world.bot) == 2
    state = state_request(world.owner, world.name, [pull.number])
    _, after = requester.graphql_query(state.query, dict(state.variables))
    thread = after["data"]["repository"]["pr0"]["reviewThreads"]["nodes"][0]
    assert thread["isResolved"] is True
    assert len(thread["comments"]["nodes"]) == 2


def test_resolving_needs_write_permission(world: SimWorld) -> None:
    pull = _pull_with_thread(world)
    thread_id = _first_thread_id(world, pull.number)
    reader = new_account(world, permission="read")

    response = post(world, reader, resolve_thread_request(thread_id).payload())

    body = response.json()
    assert body["data"] == {"resolveReviewThread": None}
    assert body["errors"][0]["type"] == "FORBIDDEN"
    assert "does not have the correct permissions" in body["errors"][0]["message"]
    assert _first_thread_state(world, pull.number) is False


def _first_thread_state(world: SimWorld, number: int) -> bool:
    request = state_request(world.owner, world.name, [number])
    _, data = world.github().requester.graphql_query(request.query, dict(request.variables))
    return bool(data["data"]["repository"]["pr0"]["reviewThreads"]["nodes"][0]["isResolved"])


def test_unknown_thread_id_is_not_found(world: SimWorld) -> None:
    response = post(world, world.bot, resolve_thread_request("MDQ6Tm9wZTE=").payload())

    error = response.json()["errors"][0]
    assert error["type"] == "NOT_FOUND"
    assert "MDQ6Tm9wZTE=" in error["message"]


def test_empty_reply_is_refused_without_a_write(world: SimWorld) -> None:
    pull = _pull_with_thread(world)
    thread_id = _first_thread_id(world, pull.number)
    payload = {
        "query": reply_to_thread_request(thread_id, "x").query,
        "variables": {"threadId": thread_id, "body": ""},
    }

    response = post(world, world.bot, payload)

    body = response.json()
    assert body["data"] == {"addPullRequestReviewThreadReply": None}
    assert body["errors"][0]["type"] == "UNPROCESSABLE"
    assert "body" in body["errors"][0]["message"]


# ------------------------------------------------------------------- pagination


def test_threads_page_with_cursors(world: SimWorld) -> None:
    pull = open_pull(world)
    world.control.review(
        world.repo,
        pull.number,
        "COMMENTED",
        as_user=world.human.login,
        comments=[
            {"path": "src/widgets.py", "line": line, "body": f"note {line}"} for line in (1, 2)
        ],
    )
    query = """query($owner: String!, $name: String!, $n: Int!, $after: String) {
      repository(owner: $owner, name: $name) { pullRequest(number: $n) {
        reviewThreads(first: 1, after: $after) {
          totalCount pageInfo { hasNextPage hasPreviousPage endCursor }
          nodes { comments(first: 1) { nodes { body } } } } } } }"""
    variables: dict[str, Any] = {"owner": world.owner, "name": world.name, "n": pull.number}
    requester = world.github().requester

    _, first = requester.graphql_query(query, variables)
    page = first["data"]["repository"]["pullRequest"]["reviewThreads"]
    _, second = requester.graphql_query(
        query, {**variables, "after": page["pageInfo"]["endCursor"]}
    )
    next_page = second["data"]["repository"]["pullRequest"]["reviewThreads"]

    assert page["totalCount"] == next_page["totalCount"] == 2
    assert page["nodes"][0]["comments"]["nodes"][0]["body"] == "note 1"
    assert next_page["nodes"][0]["comments"]["nodes"][0]["body"] == "note 2"
    assert (page["pageInfo"]["hasNextPage"], page["pageInfo"]["hasPreviousPage"]) == (True, False)
    assert next_page["pageInfo"]["hasNextPage"] is False
    assert next_page["pageInfo"]["hasPreviousPage"] is True


def test_bad_cursor_is_a_graphql_error(world: SimWorld) -> None:
    pull = open_pull(world)
    query = f"""query($n: Int!) {{
      repository(owner: "{world.owner}", name: "{world.name}") {{ pullRequest(number: $n) {{
        reviewThreads(first: 1, after: "garbage") {{ totalCount }} }} }} }}"""

    response = post(world, world.bot, {"query": query, "variables": {"n": pull.number}})

    error = response.json()["errors"][0]
    assert error["type"] == "INVALID_CURSOR_ARGUMENTS"
    assert error["path"] == ["repository", "pullRequest", "reviewThreads"]


# ------------------------------------------------------ rate limits and billing


def test_rate_limit_field_matches_the_headers(world: SimWorld) -> None:
    account = new_account(world)
    query = "{ viewer { login } rateLimit { cost limit remaining used resetAt nodeCount } }"

    response = post(world, account, {"query": query})

    data = response.json()["data"]
    assert data["viewer"] == {"login": account.login}
    rate = data["rateLimit"]
    assert rate["cost"] == 1
    assert rate["nodeCount"] == 0
    assert rate["limit"] == int(response.headers["x-ratelimit-limit"]) == 5000
    assert rate["remaining"] == int(response.headers["x-ratelimit-remaining"]) == 4999
    assert rate["used"] == int(response.headers["x-ratelimit-used"]) == 1
    assert response.headers["x-ratelimit-resource"] == "graphql"
    assert rate["resetAt"].endswith("Z")


def test_spent_budget_answers_rate_limited_and_charges_nothing(world: SimWorld) -> None:
    pull = open_pull(world)
    account = new_account(world)
    world.control.set_rate_limit(login=account.login, resource="graphql", remaining=1)

    def threads_query(aliases: int) -> str:
        fields = " ".join(
            f"p{i}: pullRequest(number: {pull.number}) {{ reviewThreads(first: 100) {{ nodes {{"
            " comments(first: 100) { nodes { body } } } } }"
            for i in range(aliases)
        )
        return f'{{ repository(owner: "{world.owner}", name: "{world.name}") {{ {fields} }} }}'

    # One alias: 1 + 100 = 101 requests -> 1 point, which fits; two aliases:
    # (1 + 100) x 2 = 202 requests -> 2 points, more than the 1 left.
    deep, too_deep = threads_query(1), threads_query(2)
    assert (points(deep), points(too_deep)) == (1, 2)

    refused = post(world, account, {"query": too_deep})
    allowed = post(world, account, {"query": deep})
    spent = post(world, account, {"query": deep})

    assert refused.status_code == 200
    assert refused.json()["errors"][0]["type"] == "RATE_LIMITED"
    assert refused.headers["x-ratelimit-remaining"] == "1"
    assert "errors" not in allowed.json()
    assert allowed.headers["x-ratelimit-remaining"] == "0"
    assert spent.status_code == 200
    error = spent.json()["errors"][0]
    assert error["type"] == "RATE_LIMITED"
    assert error["message"].startswith("API rate limit exceeded")
    assert spent.headers["x-ratelimit-remaining"] == "0"
    assert billed(world, account) == 1


# ----------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("query", "error_type", "words"),
    [
        ("{ viewer { login ", None, "Syntax Error"),
        ("{ viewer { login notAField } }", None, "Cannot query field 'notAField' on type 'User'"),
        ("{ viewer { login bio } }", "EMULATOR_UNSUPPORTED", "outside the subset"),
        (
            '{ repository(owner: "o", name: "r") { pullRequests(first: 5) {'
            " nodes { timelineItems(first: 5) { totalCount } } } } }",
            "EMULATOR_UNSUPPORTED",
            "timelineItems",
        ),
        (
            '{ repository(owner: "o", name: "r") { pullRequest(number: 1) {'
            " reviewThreads { nodes { id } } } } }",
            "MISSING_PAGINATION_BOUNDARIES",
            "You must provide a `first` or `last` value",
        ),
        (
            '{ repository(owner: "o", name: "r") { pullRequest(number: 1) {'
            " reviewThreads(first: 101) { nodes { id } } } } }",
            "EXCESSIVE_PAGINATION",
            "exceeds the `first` limit of 100 records",
        ),
        ("", None, "A query attribute must be specified"),
    ],
    ids=[
        "syntax",
        "unknown_field",
        "outside_subset",
        "outside_subset_connection",
        "no_page_size",
        "page_too_large",
        "empty",
    ],
)
def test_refused_documents_answer_graphql_errors_and_cost_nothing(
    world: SimWorld, query: str, error_type: str | None, words: str
) -> None:
    account = new_account(world)

    response = post(world, account, {"query": query})

    assert response.status_code == 200
    body = response.json()
    assert "data" not in body
    assert words in body["errors"][0]["message"]
    assert body["errors"][0].get("type") == error_type
    assert billed(world, account) == 0


def test_query_over_the_node_limit_is_refused_before_billing(world: SimWorld) -> None:
    account = new_account(world)
    # 100 aliases x (100 threads + 100 x 100 comments) = 1,010,000 possible nodes.
    aliases = " ".join(
        f"p{i}: pullRequest(number: 1) {{ reviewThreads(first: 100) {{ nodes {{"
        " comments(first: 100) { nodes { id } } } } }"
        for i in range(100)
    )
    query = f'{{ repository(owner: "{world.owner}", name: "{world.name}") {{ {aliases} }} }}'

    response = post(world, account, {"query": query})

    error = response.json()["errors"][0]
    assert error["type"] == "MAX_NODE_LIMIT_EXCEEDED"
    assert "1,010,000" in error["message"]
    assert billed(world, account) == 0


def test_invalid_variables_are_refused_before_billing(world: SimWorld) -> None:
    account = new_account(world)
    request = fingerprint_request(world.owner, world.name, [1])
    variables = {**request.variables, "n0": "one"}

    response = post(world, account, {"query": request.query, "variables": variables})

    message = response.json()["errors"][0]["message"]
    assert "$n0" in message
    assert billed(world, account) == 0


def test_unsupported_object_expression_is_named(world: SimWorld) -> None:
    query = f"""{{ repository(owner: "{world.owner}", name: "{world.name}") {{
        object(expression: "main:README.md") {{ oid }} }} }}"""

    response = post(world, world.bot, {"query": query})

    error = response.json()["errors"][0]
    assert error["type"] == "EMULATOR_UNSUPPORTED"
    assert "branch name" in error["message"]


def test_without_githubs_schema_file_the_subset_still_guards(
    world: SimWorld, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("ORCHESTRATOR_GRAPHQL_SCHEMA", str(tmp_path / "absent.json"))
    pull = open_pull(world)
    request = fingerprint_request(world.owner, world.name, [pull.number])

    answered = post(world, world.bot, request.payload())
    refused = post(world, world.bot, {"query": "{ viewer { login notAField } }"})

    assert answered.json()["data"]["repository"]["pr0"]["number"] == pull.number
    error = refused.json()["errors"][0]
    assert error["type"] == "EMULATOR_UNSUPPORTED"
    assert "notAField" in error["message"]


def test_an_install_without_the_test_contracts_answers_quietly(
    world: SimWorld, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The schema file is a test contract (`make contracts`); the demo runs without it.
    monkeypatch.setenv("ORCHESTRATOR_GRAPHQL_SCHEMA", str(tmp_path / "absent.json"))
    pull = open_pull(world)
    with capture_logs() as logs:
        answered = post(
            world, world.bot, fingerprint_request(world.owner, world.name, [pull.number]).payload()
        )
    assert answered.json()["data"]["repository"]["pr0"]["number"] == pull.number
    absent = [e for e in logs if e["event"] == "graphql_schema_absent"]
    assert len(absent) == 1 and absent[0]["log_level"] == "debug"
    assert [e for e in logs if e["log_level"] not in ("debug", "info")] == []


def test_an_unreadable_schema_file_is_a_warning(
    world: SimWorld, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    damaged = tmp_path / "schema.json"
    damaged.write_text("{not json")
    monkeypatch.setenv("ORCHESTRATOR_GRAPHQL_SCHEMA", str(damaged))
    with capture_logs() as logs:
        post(world, world.bot, {"query": "{ viewer { login } }"})
    warnings = [e for e in logs if e["log_level"] == "warning"]
    assert [e["event"] for e in warnings] == ["graphql_schema_unavailable"]
    assert "cannot be read" in warnings[0]["error"]


def test_unauthenticated_request_is_refused(world: SimWorld) -> None:
    response = httpx.post(f"{world.url}/graphql", json={"query": "{ viewer { login } }"})

    assert response.status_code == 401


# --------------------------------------------------------------------- resolvers


def test_every_emulated_field_has_a_resolver() -> None:
    schema = emulated_schema()
    fields = {
        f"{name}.{field}"
        for name, kind in schema.type_map.items()
        if isinstance(kind, GraphQLObjectType) and not name.startswith("__")
        for field in kind.fields
    }
    assert fields == set(resolvers())
