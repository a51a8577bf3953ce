"""Identity and permissions: who may read and write, answered 401/403/404 as GitHub does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from github import BadCredentialsException, GithubException

from orchestrator_sim.testing import Account, SimWorld
from tests.sim.gitops import push_branch


@pytest.fixture
def reader(sim_world: SimWorld) -> Account:
    account = Account("rita", "ghp_reader000000000000000000000000000000")
    sim_world.control.create_user(account.login, account.token)
    sim_world.control.set_permission(sim_world.repo, account.login, "read")
    return account


def test_unknown_and_missing_tokens_are_401(sim_world: SimWorld) -> None:
    stranger = sim_world.github(Account("nobody", "ghp_not_a_real_token_0000000000000"))
    with pytest.raises(BadCredentialsException) as caught:
        stranger.get_repo(sim_world.repo)
    assert caught.value.status == 401
    from github import Github

    anonymous = Github(base_url=sim_world.url, retry=0)
    with pytest.raises(GithubException) as missing:
        anonymous.get_repo(sim_world.repo)
    assert missing.value.status == 401
    assert missing.value.data["message"] == "Requires authentication"


def test_reader_may_read_comment_and_open_issues_but_not_label_or_merge(
    sim_world: SimWorld, reader: Account, tmp_path: Path
) -> None:
    gh = sim_world.github(reader)
    repo = gh.get_repo(sim_world.repo)
    issue = repo.create_issue(title="From a reader", labels=["dropped"])
    assert issue.labels == []
    issue.create_comment("a reader may comment")
    with pytest.raises(GithubException) as label:
        issue.add_to_labels("bug")
    assert label.value.status == 403
    with pytest.raises(GithubException) as create_label:
        repo.create_label("bug", "ff0000")
    assert create_label.value.status == 403
    push_branch(sim_world, tmp_path / "work", "feature", {"f.txt": "f\n"})
    pr = (
        sim_world.github()
        .get_repo(sim_world.repo)
        .create_pull(title="t", body="", head="feature", base="main")
    )
    with pytest.raises(GithubException) as merge:
        repo.get_pull(pr.number).merge()
    assert merge.value.status == 403
    with pytest.raises(GithubException) as close:
        repo.get_pull(pr.number).edit(state="closed")
    assert close.value.status == 403


def test_author_may_close_own_issue_without_triage(sim_world: SimWorld, reader: Account) -> None:
    repo = sim_world.github(reader).get_repo(sim_world.repo)
    issue = repo.create_issue(title="Mine")
    issue.edit(state="closed")
    assert repo.get_issue(issue.number).state == "closed"
    other = sim_world.control.create_issue(sim_world.repo, "Not mine", as_user="alice")
    with pytest.raises(GithubException) as refused:
        repo.get_issue(other).edit(state="closed")
    assert refused.value.status == 403


def test_private_repository_is_404_without_access(sim_world: SimWorld, reader: Account) -> None:
    sim_world.control.create_repo("acme/private", private=True, permissions={"alice": "admin"})
    with pytest.raises(GithubException) as hidden:
        sim_world.github(reader).get_repo("acme/private")
    assert hidden.value.status == 404
    assert sim_world.github(sim_world.human).get_repo("acme/private").private is True


def test_triage_may_label_but_not_create_labels(sim_world: SimWorld, gh: Any) -> None:
    sim_world.control.set_permission(sim_world.repo, sim_world.bot.login, "triage")
    repo = gh.get_repo(sim_world.repo)
    number = sim_world.control.create_issue(sim_world.repo, "triage me", as_user="alice")
    repo.get_issue(number).add_to_labels("needs-info")
    with pytest.raises(GithubException) as refused:
        repo.create_label("other", "00ff00")
    assert refused.value.status == 403
    assert refused.value.data["message"] == "Resource not accessible by personal access token"
