"""What the server does around ``POST /graphql``: auth, budget, headers, counters, write log."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from orchestrator_sim.testing import SimWorld


def _post(world: SimWorld, body: bytes, token: str | None) -> tuple[int, dict[str, str], Any]:
    headers = {"content-type": "application/json"}
    if token is not None:
        headers["authorization"] = f"bearer {token}"
    request = urllib.request.Request(
        f"{world.url}/graphql", data=body, headers=headers, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return (
                answer.status,
                {k.lower(): v for k, v in answer.headers.items()},
                json.loads(answer.read()),
            )
    except urllib.error.HTTPError as exc:
        return exc.code, {k.lower(): v for k, v in exc.headers.items()}, json.loads(exc.read())


def _query(text: str) -> bytes:
    return json.dumps({"query": text}).encode()


def test_graphql_needs_a_token_and_a_json_object(sim_world: SimWorld) -> None:
    status, _h, body = _post(sim_world, _query("{ viewer { login } }"), None)
    assert status == 401
    assert "authenticated" in body["message"]
    status, _h, body = _post(sim_world, b"not json", sim_world.bot.token)
    assert status == 400
    assert body["message"] == "Problems parsing JSON"


def test_spent_graphql_budget_is_rate_limited_with_headers(sim_world: SimWorld, gh: Any) -> None:
    sim_world.control.set_rate_limit(login=sim_world.bot.login, resource="graphql", remaining=0)
    status, headers, body = _post(
        sim_world, _query("{ rateLimit { remaining } }"), sim_world.bot.token
    )
    assert status == 200
    assert body["errors"][0]["type"] == "RATE_LIMITED"
    assert headers["x-ratelimit-remaining"] == "0"
    assert headers["x-ratelimit-resource"] == "graphql"
    assert gh.get_repo(sim_world.repo).name == "widgets"


def test_units_charged_by_the_executor_are_counted(sim_world: SimWorld) -> None:
    status, headers, _body = _post(
        sim_world, _query("query { rateLimit { cost remaining } }"), sim_world.bot.token
    )
    assert status == 200
    assert headers["x-ratelimit-resource"] == "graphql"
    counted = sim_world.control.counters()["routes"]["POST /graphql"]
    assert counted["requests"] == 1
    assert counted["billed"] == int(headers["x-ratelimit-used"])
    assert counted["writes"] == 0


@pytest.mark.parametrize(
    ("document", "operation"),
    [
        (
            'mutation { resolveReviewThread(input: {threadId: "x"}) { thread { id } } }',
            "resolveReviewThread",
        ),
        (
            "mutation Reply($id: ID!) { addPullRequestReviewThreadReply("
            'input: {pullRequestReviewThreadId: $id, body: "ok"}) { comment { id } } }',
            "addPullRequestReviewThreadReply",
        ),
    ],
)
def test_mutations_enter_the_write_log(sim_world: SimWorld, document: str, operation: str) -> None:
    _post(sim_world, _query(document), sim_world.bot.token)
    writes = sim_world.control.writes()
    assert [(w["method"], w["path"], w["operation"]) for w in writes] == [
        ("POST", "/graphql", operation)
    ]
    assert writes[0]["login"] == sim_world.bot.login


def test_a_documents_cost_follows_its_paging_variables_not_its_others(
    sim_world: SimWorld,
) -> None:
    """Costs are remembered per document; the page sizes passed as variables still count."""
    items = sim_world.seed(2, labels=["agent"])
    text = """
    query Sized($owner: String!, $name: String!, $n: Int!, $size: Int!, $threads: Int = 7) {
      rateLimit { nodeCount }
      repository(owner: $owner, name: $name) {
        pullRequest(number: $n) {
          number
          reviews(first: $size) { nodes { id } }
          reviewThreads(first: $threads) { nodes { id } }
        }
      }
    }
    """
    owner, name = sim_world.repo.split("/")

    def node_count(**variables: Any) -> int:
        body = json.dumps({"query": text, "variables": {"owner": owner, "name": name, **variables}})
        status, _h, answer = _post(sim_world, body.encode(), sim_world.bot.token)
        assert status == 200, answer
        assert "errors" not in answer, answer
        return int(answer["data"]["rateLimit"]["nodeCount"])

    first, second = (item.pull for item in items)
    assert node_count(n=first, size=10) == 17
    assert node_count(n=second, size=10) == 17
    assert node_count(n=first, size=3) == 10
    assert node_count(n=first, size=3, threads=20) == 23
