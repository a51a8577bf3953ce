"""The control API and its client: scenario steps in one line each, clear refusals."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from orchestrator_sim.control import ControlClient, ControlRequestError
from orchestrator_sim.testing import SimWorld


def test_scenario_steps_are_visible_through_the_api(sim_world: SimWorld, gh: Any) -> None:
    control, repo_name = sim_world.control, sim_world.repo
    number = control.create_issue(
        repo_name, "Feature", as_user="alice", body="Please", labels=["todo"]
    )
    control.comment(repo_name, number, "More context", as_user="alice")
    head = control.push(repo_name, "feature", {"f.py": "x = 1\n"}, as_user="alice")
    pull = control.create_pull(
        repo_name, "Implement feature", "feature", as_user=sim_world.bot.login
    )
    review = control.review(
        repo_name,
        pull,
        "CHANGES_REQUESTED",
        as_user="alice",
        body="One thing",
        comments=[{"path": "f.py", "line": 1, "body": "x is a poor name"}],
    )
    thread = review["threads"][0]
    control.reply_thread(repo_name, thread["id"], "Renamed", as_user=sim_world.bot.login)
    control.resolve_thread(repo_name, thread["id"], as_user=sim_world.bot.login)
    control.check_run(repo_name, ref="feature", name="ci", conclusion="success", log="ok")
    repo = gh.get_repo(repo_name)
    issue = repo.get_issue(number)
    assert (issue.body, [lbl.name for lbl in issue.labels]) == ("Please", ["todo"])
    assert [c.body for c in issue.get_comments()] == ["More context"]
    pr = repo.get_pull(pull)
    assert pr.head.sha == head
    bodies = [c.body for c in pr.get_review_comments()]
    assert bodies == ["x is a poor name", "Renamed"]
    assert [r.conclusion for r in repo.get_commit(head).get_check_runs()] == ["success"]
    control.review(repo_name, pull, "APPROVED", as_user="alice")
    sim_world.settle_mergeability()
    merged = control.merge(repo_name, pull, as_user="alice", method="squash")
    assert repo.get_branch("main").commit.sha == merged
    assert repo.get_pull(pull).merged_by.login == "alice"


def test_control_requests_are_not_billed(sim_world: SimWorld) -> None:
    sim_world.control.create_issue(sim_world.repo, "x", as_user="alice")
    assert sim_world.control.counters()["tokens"] == {}
    assert sim_world.control.writes() == []


def test_refusals_use_the_error_envelope(sim_world: SimWorld) -> None:
    request = urllib.request.Request(
        f"{sim_world.url}/_control/repos/acme/nothing/issues",
        data=json.dumps({"as": "alice", "title": "x"}).encode(),
        method="POST",
    )
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=10)
    body = json.loads(caught.value.read())
    assert caught.value.code == 404
    assert body["error"]["code"] == "not_found"
    assert "acme/nothing" in body["error"]["message"]


def test_client_errors_name_the_problem(sim_world: SimWorld) -> None:
    control = sim_world.control
    with pytest.raises(ControlRequestError) as duplicate:
        control.create_user("alice", "ghp_another_token_000000000000000000")
    assert duplicate.value.status == 422
    assert "alice exists" in duplicate.value.message
    with pytest.raises(ControlRequestError, match="field 'as' is required"):
        control.request("POST", f"/repos/{sim_world.repo}/issues", {"title": "x"})
    with pytest.raises(ControlRequestError, match="conclusion"):
        control.check_run(sim_world.repo, ref="main", status="completed")
    with pytest.raises(ControlRequestError, match="unknown ref"):
        control.check_run(sim_world.repo, ref="nope", conclusion="success")
    with pytest.raises(ControlRequestError) as not_persisting:
        control.request("POST", "/save", {})
    assert not_persisting.value.status == 409
    with pytest.raises(ValueError, match="http"):
        ControlClient("ftp://127.0.0.1:1")


def test_rate_limit_and_secondary_settings(sim_world: SimWorld, gh: Any) -> None:
    control = sim_world.control
    budget = control.set_rate_limit(login=sim_world.bot.login, limit=100, remaining=40)
    assert (budget["limit"], budget["remaining"]) == (100, 40)
    core = gh.get_rate_limit().resources.core
    assert (core.limit, core.remaining) == (100, 40)
    control.set_rate_limit(login=sim_world.bot.login, resource="graphql", remaining=3)
    assert gh.get_rate_limit().resources.graphql.remaining == 3
    with pytest.raises(ControlRequestError, match="resource"):
        control.set_rate_limit(resource="nope", limit=1)
    with pytest.raises(ControlRequestError, match="403 or 429"):
        control.set_secondary_limit(per_minute=5, status=500)


def test_mergeability_override_and_issue_updates(sim_world: SimWorld, gh: Any) -> None:
    control = sim_world.control
    control.push(sim_world.repo, "feature", {"f.txt": "f\n"}, as_user="alice")
    pull = control.create_pull(sim_world.repo, "t", "feature", as_user="alice")
    control.set_mergeable(sim_world.repo, pull, False)
    assert gh.get_repo(sim_world.repo).get_pull(pull).mergeable is False
    with pytest.raises(ControlRequestError) as refused:
        control.merge(sim_world.repo, pull, as_user="alice")
    assert refused.value.status == 405
    control.update_issue(sim_world.repo, pull, as_user="alice", state="closed")
    assert gh.get_repo(sim_world.repo).get_pull(pull).state == "closed"
    info = control.repo_info(sim_world.repo)
    assert sorted(info["branches"]) == ["feature", "main"]
