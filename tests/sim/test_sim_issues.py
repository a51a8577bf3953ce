"""Issues, labels, comments and events through PyGithub, as the product uses them."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from github import GithubException

from orchestrator_sim.clock import ManualClock
from orchestrator_sim.testing import SimWorld, running_world


def _request(gh: Any, method: str, path: str, **params: Any) -> tuple[int, dict[str, str], Any]:
    status, headers, body = gh.requester.requestJson(method, path, parameters=params or None)
    return status, {k.lower(): v for k, v in headers.items()}, json.loads(body) if body else None


def test_create_get_update_close_an_issue(sim_world: SimWorld, gh: Any) -> None:
    repo = gh.get_repo(sim_world.repo)
    issue = repo.create_issue(title="Broken widget", body="It breaks", labels=["bug"])
    assert issue.number == 1
    assert issue.user.login == sim_world.bot.login
    assert [label.name for label in issue.labels] == ["bug"]
    issue.edit(title="Broken widget (again)", body="Still breaks")
    fetched = repo.get_issue(1)
    assert (fetched.title, fetched.body, fetched.state) == (
        "Broken widget (again)",
        "Still breaks",
        "open",
    )
    fetched.edit(state="closed", state_reason="not_planned")
    closed = repo.get_issue(1)
    assert closed.state == "closed"
    assert closed.state_reason == "not_planned"
    assert closed.closed_by.login == sim_world.bot.login
    events = [e.event for e in closed.get_events()]
    assert events == ["labeled", "renamed", "closed"]


def test_missing_issue_is_404_and_bad_input_422(sim_world: SimWorld, gh: Any) -> None:
    repo = gh.get_repo(sim_world.repo)
    with pytest.raises(GithubException) as missing:
        repo.get_issue(99)
    assert missing.value.status == 404
    status, _headers, body = _request(gh, "POST", f"/repos/{sim_world.repo}/issues", body="x")
    assert status == 422
    assert body["errors"][0]["field"] == "title"


def test_issue_list_includes_pulls_marked_and_filters(sim_world: SimWorld, gh: Any) -> None:
    control = sim_world.control
    human = sim_world.human.login
    control.create_issue(sim_world.repo, "todo one", as_user=human, labels=["todo", "p1"])
    control.create_issue(sim_world.repo, "todo two", as_user=human, labels=["todo"])
    done = control.create_issue(sim_world.repo, "done", as_user=human)
    control.update_issue(sim_world.repo, done, as_user=human, state="closed")
    control.push(sim_world.repo, "feature", {"x.txt": "x\n"}, as_user=human)
    control.create_pull(sim_world.repo, "A change", "feature", as_user=human)
    repo = gh.get_repo(sim_world.repo)
    listed = list(repo.get_issues())
    assert [i.title for i in listed] == ["A change", "todo two", "todo one"]
    assert listed[0].pull_request is not None
    assert listed[1].pull_request is None
    assert [i.title for i in repo.get_issues(labels=["todo", "p1"])] == ["todo one"]
    assert [i.title for i in repo.get_issues(state="closed")] == ["done"]
    assert len(list(repo.get_issues(state="all"))) == 4
    ascending = repo.get_issues(state="all", sort="created", direction="asc")
    assert next(i.title for i in ascending) == "todo one"
    assert [i.title for i in repo.get_issues(creator=human, state="all")][-1] == "todo one"


def test_since_filter_uses_updated_at(tmp_path: Path) -> None:
    clock = ManualClock(datetime(2026, 3, 1, tzinfo=UTC))
    with running_world(tmp_path / "sim", clock=clock) as world:
        world.control.create_issue(world.repo, "old", as_user=world.human.login)
        clock.advance(3600)
        world.control.create_issue(world.repo, "new", as_user=world.human.login)
        repo = world.github().get_repo(world.repo)
        since = datetime(2026, 3, 1, tzinfo=UTC) + timedelta(minutes=30)
        assert [i.title for i in repo.get_issues(since=since)] == ["new"]
        status, _h, body = _request(
            world.github(), "GET", f"/repos/{world.repo}/issues", since="yesterday"
        )
        assert status == 422
        assert body["errors"][0]["field"] == "since"


def test_pagination_follows_link_headers(sim_world: SimWorld, gh: Any) -> None:
    for n in range(7):
        sim_world.control.create_issue(sim_world.repo, f"issue {n}", as_user=sim_world.human.login)
    status, headers, body = _request(
        gh, "GET", f"/repos/{sim_world.repo}/issues", per_page=3, page=2
    )
    assert status == 200
    assert [i["title"] for i in body] == ["issue 3", "issue 2", "issue 1"]
    link = headers["link"]
    assert 'rel="next"' in link
    assert 'rel="prev"' in link
    assert "page=3" in link
    assert 'rel="last"' in link
    gh.per_page = 2
    titles = [i.title for i in gh.get_repo(sim_world.repo).get_issues()]
    assert titles == [f"issue {n}" for n in range(6, -1, -1)]


def test_labels_add_set_remove_and_repo_labels(sim_world: SimWorld, gh: Any) -> None:
    repo = gh.get_repo(sim_world.repo)
    repo.create_label("orchestrator:todo", "0e8a16", "Ready for the bot")
    with pytest.raises(GithubException) as taken:
        repo.create_label("orchestrator:todo", "0e8a16")
    assert taken.value.status == 422
    issue = repo.create_issue(title="Labels")
    issue.add_to_labels("orchestrator:todo", "extra")
    assert sorted(label.name for label in repo.get_issue(issue.number).labels) == [
        "extra",
        "orchestrator:todo",
    ]
    issue.set_labels("in progress")
    assert [label.name for label in repo.get_issue(issue.number).labels] == ["in progress"]
    issue.remove_from_labels("in progress")
    assert repo.get_issue(issue.number).labels == []
    with pytest.raises(GithubException) as absent:
        issue.remove_from_labels("in progress")
    assert absent.value.status == 404
    names = sorted(label.name for label in repo.get_labels())
    assert names == ["extra", "in progress", "orchestrator:todo"]
    assert repo.get_label("orchestrator:todo").description == "Ready for the bot"
    issue.add_to_labels("extra")
    issue.delete_labels()
    assert repo.get_issue(issue.number).labels == []


def test_labeled_event_names_the_human_who_labelled(sim_world: SimWorld, gh: Any) -> None:
    number = sim_world.control.create_issue(
        sim_world.repo, "Approve me", as_user=sim_world.bot.login
    )
    sim_world.control.add_labels(sim_world.repo, number, ["Merging"], as_user=sim_world.human.login)
    sim_world.control.remove_label(sim_world.repo, number, "Merging", as_user=sim_world.bot.login)
    events = list(gh.get_repo(sim_world.repo).get_issue(number).get_events())
    assert [(e.event, e.actor.login, e.label.name) for e in events] == [
        ("labeled", sim_world.human.login, "Merging"),
        ("unlabeled", sim_world.bot.login, "Merging"),
    ]


def test_comments_list_create_update_delete(sim_world: SimWorld, gh: Any) -> None:
    repo = gh.get_repo(sim_world.repo)
    issue = repo.create_issue(title="Talk")
    first = issue.create_comment("## Orchestrator Workpad\n\nphase: implementing")
    sim_world.control.comment(sim_world.repo, issue.number, "human says hi", as_user="alice")
    comments = list(issue.get_comments())
    assert [(c.user.login, c.body.splitlines()[0]) for c in comments] == [
        (sim_world.bot.login, "## Orchestrator Workpad"),
        ("alice", "human says hi"),
    ]
    first.edit("## Orchestrator Workpad\n\nphase: reviewing")
    assert repo.get_issue(issue.number).get_comment(first.id).body.endswith("reviewing")
    assert repo.get_issue(issue.number).comments == 2
    repo_wide = list(repo.get_issues_comments())
    assert len(repo_wide) == 2
    first.delete()
    assert [c.user.login for c in issue.get_comments()] == ["alice"]
    with pytest.raises(GithubException) as gone:
        repo.get_issue(issue.number).get_comment(first.id)
    assert gone.value.status == 404


def test_cannot_edit_someone_elses_comment_without_write(sim_world: SimWorld) -> None:
    sim_world.control.set_permission(sim_world.repo, sim_world.bot.login, "triage")
    number = sim_world.control.create_issue(sim_world.repo, "x", as_user="alice")
    comment_id = sim_world.control.comment(sim_world.repo, number, "mine", as_user="alice")
    gh = sim_world.github()
    comment = gh.get_repo(sim_world.repo).get_issue(number).get_comment(comment_id)
    with pytest.raises(GithubException) as refused:
        comment.edit("hijacked")
    assert refused.value.status == 403
