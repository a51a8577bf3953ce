"""Billing like GitHub: budgets per token and resource, free 304s, 403/429 answers, counters."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from github import GithubException, RateLimitExceededException

from orchestrator_sim.billing import (
    Billing,
    RateLimited,
    SecondaryLimited,
    SecondaryPolicy,
    charge_tally,
)
from orchestrator_sim.clock import ManualClock
from orchestrator_sim.testing import SimWorld, running_world

# ------------------------------------------------------------------ unit level


def test_charge_refund_and_exhaustion() -> None:
    billing = Billing(ManualClock())
    billing.set_budget("t", "core", limit=3)
    assert billing.charge("t").remaining == 2
    assert billing.charge("t", units=2).remaining == 0
    with pytest.raises(RateLimited) as caught:
        billing.charge("t", user_id=7)
    assert caught.value.snapshot.remaining == 0
    assert caught.value.body()["message"] == "API rate limit exceeded for user ID 7."
    assert billing.refund("t").remaining == 1


def test_a_charge_larger_than_what_remains_charges_nothing() -> None:
    billing = Billing(ManualClock())
    billing.set_budget("t", "graphql", limit=10)
    billing.charge("t", "graphql", 8)
    with pytest.raises(RateLimited):
        billing.charge("t", "graphql", 5)
    assert billing.snapshot("t", "graphql").used == 8


def test_resources_are_separate_and_windows_reset() -> None:
    clock = ManualClock()
    billing = Billing(clock)
    billing.charge("t", "core", 10)
    graphql = billing.snapshot("t", "graphql")
    assert (graphql.limit, graphql.used) == (5000, 0)
    reset = billing.snapshot("t", "core").reset
    assert reset == int(clock().timestamp()) + 3600
    clock.advance(3600)
    assert billing.snapshot("t", "core").used == 0


def test_default_budget_applies_to_new_and_existing_tokens() -> None:
    billing = Billing(ManualClock())
    billing.charge("old")
    billing.set_budget(None, "core", limit=100)
    assert billing.snapshot("old").limit == 100
    assert billing.snapshot("new").limit == 100
    with pytest.raises(ValueError, match="unknown rate-limit resource"):
        billing.set_budget(None, "nope", limit=1)


def test_secondary_limits_per_minute_and_concurrency() -> None:
    clock = ManualClock()
    billing = Billing(clock)
    billing.set_secondary(SecondaryPolicy(per_minute=2, status=429, retry_after=30))
    billing.admit("t")
    billing.release("t")
    clock.advance(20)
    billing.admit("t")
    billing.release("t")
    with pytest.raises(SecondaryLimited) as caught:
        billing.admit("t")
    assert (caught.value.status, caught.value.retry_after) == (429, 40)
    clock.advance(41)
    billing.admit("t")
    billing.release("t")
    billing.set_secondary(SecondaryPolicy(concurrency=1))
    billing.admit("u")
    with pytest.raises(SecondaryLimited):
        billing.admit("u")
    billing.release("u")
    billing.admit("u")
    with pytest.raises(ValueError):
        billing.set_secondary(SecondaryPolicy(status=500))


def test_charge_tally_sees_units_charged_in_its_context() -> None:
    billing = Billing(ManualClock())
    tally: list[int] = []
    token = charge_tally.set(tally)
    try:
        billing.charge("t", "graphql", 7)
    finally:
        charge_tally.reset(token)
    billing.charge("t", "graphql", 1)
    assert tally == [7]


# ------------------------------------------------------------------ over HTTP


def _get(gh: object, path: str, etag: str | None = None) -> tuple[int, dict[str, str], str]:
    headers = {"If-None-Match": etag} if etag else {}
    status, answer, body = gh.requester.requestJson("GET", path, headers=headers)  # type: ignore[attr-defined]
    return status, {k.lower(): v for k, v in answer.items()}, body


def test_rate_limit_headers_on_every_answer(sim_world: SimWorld, gh: object) -> None:
    status, headers, _ = _get(gh, f"/repos/{sim_world.repo}")
    assert status == 200
    assert headers["x-ratelimit-limit"] == "5000"
    assert headers["x-ratelimit-resource"] == "core"
    used = int(headers["x-ratelimit-used"])
    assert int(headers["x-ratelimit-remaining"]) == 5000 - used
    assert int(headers["x-ratelimit-reset"]) > time.time() - 5
    _, again, _ = _get(gh, f"/repos/{sim_world.repo}")
    assert int(again["x-ratelimit-used"]) == used + 1


def test_second_identical_get_is_304_and_free(sim_world: SimWorld, gh: object) -> None:
    path = f"/repos/{sim_world.repo}/issues"
    sim_world.control.create_issue(sim_world.repo, "One", as_user=sim_world.human.login)
    status, first, _ = _get(gh, path)
    assert status == 200
    etag = first["etag"]
    sim_world.control.reset_counters()
    status, second, body = _get(gh, path, etag)
    assert status == 304
    assert body in ("", None)
    assert second["x-ratelimit-remaining"] == first["x-ratelimit-remaining"]
    assert second["etag"] == etag
    counters = sim_world.control.counters()["tokens"][sim_world.bot.login]
    assert (counters["requests"], counters["billed"], counters["not_modified"]) == (1, 0, 1)
    sim_world.control.create_issue(sim_world.repo, "Two", as_user=sim_world.human.login)
    status, third, _ = _get(gh, path, etag)
    assert status == 200
    assert third["etag"] != etag


def test_rate_limit_endpoint_is_free_and_reports_both_budgets(
    sim_world: SimWorld, gh: object
) -> None:
    before = gh.get_rate_limit()  # type: ignore[attr-defined]
    after = gh.get_rate_limit()  # type: ignore[attr-defined]
    assert before.resources.core.remaining == after.resources.core.remaining
    assert after.resources.graphql.limit == 5000
    assert after.resources.graphql.remaining == 5000
    routes = sim_world.control.counters()["routes"]
    assert routes["GET /rate_limit"]["billed"] == 0


def test_spent_budget_answers_403_primary_message(sim_world: SimWorld, gh: object) -> None:
    sim_world.control.set_rate_limit(login=sim_world.bot.login, remaining=0)
    with pytest.raises(RateLimitExceededException) as caught:
        gh.get_repo(sim_world.repo)  # type: ignore[attr-defined]
    assert caught.value.status == 403
    assert caught.value.data["message"].startswith("API rate limit exceeded for user ID")
    headers = {k.lower(): v for k, v in caught.value.headers.items()}
    assert headers["x-ratelimit-remaining"] == "0"
    human = sim_world.github(sim_world.human)
    assert human.get_repo(sim_world.repo).name == "widgets"


def test_budget_comes_back_after_the_reset_time(tmp_path: Path) -> None:
    clock = ManualClock()
    with running_world(tmp_path / "sim", clock=clock) as world:
        world.control.set_rate_limit(login=world.bot.login, remaining=0, reset_in=120)
        gh = world.github()
        with pytest.raises(RateLimitExceededException) as caught:
            gh.get_repo(world.repo)
        reset = int({k.lower(): v for k, v in caught.value.headers.items()}["x-ratelimit-reset"])
        assert reset == int(clock().timestamp()) + 120
        clock.advance(121)
        assert gh.get_repo(world.repo).name == "widgets"


def test_secondary_limit_per_minute_answers_429_with_retry_after(
    sim_world: SimWorld, gh: object
) -> None:
    sim_world.control.set_secondary_limit(per_minute=2, status=429, retry_after=30)
    _get(gh, "/user")
    _get(gh, "/user")
    with pytest.raises(GithubException) as caught:
        gh.get_repo(sim_world.repo)  # type: ignore[attr-defined]
    assert caught.value.status == 429
    assert "secondary rate limit" in caught.value.data["message"]
    headers = {k.lower(): v for k, v in caught.value.headers.items()}
    assert 1 <= int(headers["retry-after"]) <= 60
    assert "x-ratelimit-remaining" in headers


def test_secondary_concurrency_limit_answers_403(sim_world: SimWorld, gh: object) -> None:
    control = sim_world.control
    control.set_secondary_limit(concurrency=1, status=403, retry_after=5)
    rule = control.add_fault(path="/user", method="GET", action="latency", latency_ms=1500)
    results: list[int] = []
    slow = threading.Thread(target=lambda: results.append(_get(gh, "/user")[0]))
    slow.start()
    while not any(r["id"] == rule["id"] and r["fired"] for r in control.faults()):
        time.sleep(0.01)
    status, headers, body = _get(gh, f"/repos/{sim_world.repo}")
    slow.join()
    assert status == 403
    assert headers["retry-after"] == "5"
    assert "secondary rate limit" in body
    assert results == [200]


def test_counters_per_token_and_route_and_the_write_log(sim_world: SimWorld, gh: object) -> None:
    repo = gh.get_repo(sim_world.repo)  # type: ignore[attr-defined]
    issue = repo.create_issue(title="Counted")
    issue.create_comment("hello")
    counters = sim_world.control.counters()
    bot = counters["tokens"][sim_world.bot.login]
    assert bot["writes"] == 2
    assert bot["routes"]["POST /repos/{owner}/{repo}/issues"]["billed"] == 1
    assert counters["routes"]["GET /repos/{owner}/{repo}"]["requests"] == 1
    writes = sim_world.control.writes()
    assert [(w["method"], w["login"], w["status"]) for w in writes] == [
        ("POST", sim_world.bot.login, 201),
        ("POST", sim_world.bot.login, 201),
    ]
    assert writes[1]["path"] == f"/repos/{sim_world.repo}/issues/{issue.number}/comments"
    sim_world.control.reset_counters()
    assert sim_world.control.writes() == []
    assert sim_world.control.counters()["tokens"] == {}


def test_graphql_budget_is_not_spent_by_rest(sim_world: SimWorld, gh: object) -> None:
    for _ in range(3):
        _get(gh, "/user")
    assert gh.get_rate_limit().resources.graphql.used == 0  # type: ignore[attr-defined]
