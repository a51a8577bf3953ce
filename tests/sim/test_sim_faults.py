"""Fault rules: server errors, resets, lost responses, secondary limits, seeded probability."""

from __future__ import annotations

from typing import Any

import pytest
import requests
from github import GithubException

from orchestrator_sim.control import ControlRequestError
from orchestrator_sim.testing import SimWorld


def _status(gh: Any, path: str, method: str = "GET", body: Any = None) -> int:
    status, _headers, _body = gh.requester.requestJson(method, path, input=body)
    return int(status)


def test_error_rule_fires_count_times_then_goes_away(sim_world: SimWorld, gh: Any) -> None:
    control = sim_world.control
    control.add_fault(path="/repos/*/issues", action="error", status=503, count=2)
    path = f"/repos/{sim_world.repo}/issues"
    assert [_status(gh, path) for _ in range(3)] == [503, 503, 200]
    assert control.faults() == []
    control.add_fault(path="/user", action="error", status=500, count=1)
    with pytest.raises(GithubException) as caught:
        gh.get_user().login  # noqa: B018 (the property fetches)
    assert caught.value.status == 500
    routes = control.counters()["routes"]
    assert routes["GET /repos/{owner}/{repo}/issues"]["billed"] == 1


def test_method_filter(sim_world: SimWorld, gh: Any) -> None:
    sim_world.control.add_fault(path="*/issues", method="POST", action="error", status=502)
    path = f"/repos/{sim_world.repo}/issues"
    assert _status(gh, path) == 200
    assert _status(gh, path, "POST", {"title": "x"}) == 502


def test_reset_drops_the_connection_without_running_the_request(
    sim_world: SimWorld, gh: Any
) -> None:
    sim_world.control.add_fault(path="*/issues", method="POST", action="reset", count=1)
    repo = gh.get_repo(sim_world.repo)
    with pytest.raises(requests.exceptions.ConnectionError):
        repo.create_issue(title="never")
    assert list(repo.get_issues()) == []
    assert sim_world.control.writes() == []


def test_lost_response_runs_the_write_but_the_client_fails(sim_world: SimWorld, gh: Any) -> None:
    repo = gh.get_repo(sim_world.repo)
    issue = repo.create_issue(title="Workpad")
    sim_world.control.add_fault(path="*/comments", method="POST", action="lost_response", count=1)
    with pytest.raises(requests.exceptions.ConnectionError):
        issue.create_comment("## Orchestrator Workpad")
    assert [c.body for c in issue.get_comments()] == ["## Orchestrator Workpad"]
    statuses = [w["status"] for w in sim_world.control.writes() if w["path"].endswith("comments")]
    assert statuses == [201]


def test_secondary_rule_answers_429_with_retry_after(sim_world: SimWorld, gh: Any) -> None:
    sim_world.control.add_fault(path="/user", action="secondary", status=429, retry_after=7)
    status, headers, body = gh.requester.requestJson("GET", "/user")
    assert status == 429
    assert {k.lower(): v for k, v in headers.items()}["retry-after"] == "7"
    assert "secondary rate limit" in body


def test_latency_rule_fires_and_the_request_still_succeeds(sim_world: SimWorld, gh: Any) -> None:
    rule = sim_world.control.add_fault(path="/user", action="latency", latency_ms=30)
    assert gh.get_user().login == sim_world.bot.login
    fired = {r["id"]: r["fired"] for r in sim_world.control.faults()}
    assert fired[rule["id"]] == 1


def test_a_rule_with_after_lets_that_many_requests_through_first(
    sim_world: SimWorld, gh: Any
) -> None:
    sim_world.control.add_fault(path="/user", action="error", status=502, after=2, count=1)

    assert [_status(gh, "/user") for _ in range(4)] == [200, 200, 502, 200]


def test_probability_is_reproducible_with_a_seed(sim_world: SimWorld, gh: Any) -> None:
    control = sim_world.control

    def pattern() -> list[int]:
        control.clear_faults(seed=1234)
        control.add_fault(path="/user", action="error", status=502, probability=0.5)
        return [_status(gh, "/user") for _ in range(16)]

    first = pattern()
    assert pattern() == first
    assert set(first) == {200, 502}


def test_bad_rules_are_refused_with_the_field_named(sim_world: SimWorld) -> None:
    with pytest.raises(ControlRequestError) as caught:
        sim_world.control.add_fault(path="/user", action="error", status=404)
    assert caught.value.status == 422
    assert "error status" in caught.value.message
    with pytest.raises(ControlRequestError, match="probability"):
        sim_world.control.add_fault(path="/user", action="error", probability=2)
    with pytest.raises(ControlRequestError, match="unknown fields"):
        sim_world.control.add_fault(path="/user", action="error", when="now")
