"""Pull requests through PyGithub and git: create, follow pushes, review, merge for real."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from github import GithubException

from orchestrator_sim.testing import SimWorld
from tests.sim.gitops import git, push_branch


def _open_pull(world: SimWorld, gh: Any, tmp_path: Path, branch: str = "feature") -> Any:
    push_branch(world, tmp_path / "work", branch, {"src/widgets.py": "VALUE = 2\n"})
    return gh.get_repo(world.repo).create_pull(
        title="Change value", body="Closes #1", head=branch, base="main"
    )


def test_create_and_get_pull_with_head_and_mergeability(
    sim_world: SimWorld, gh: Any, tmp_path: Path
) -> None:
    pr = _open_pull(sim_world, gh, tmp_path)
    fetched = gh.get_repo(sim_world.repo).get_pull(pr.number)
    assert fetched.head.ref == "feature"
    assert fetched.head.sha == git(
        "rev-parse", "HEAD", cwd=tmp_path / "work", env=sim_world.git_env()
    )
    assert fetched.base.ref == "main"
    # GitHub works mergeability out in the background: unknown at first, then settled.
    assert (fetched.mergeable, fetched.mergeable_state) == (None, "unknown")
    sim_world.settle_mergeability()
    fetched = gh.get_repo(sim_world.repo).get_pull(pr.number)
    assert fetched.mergeable is True
    # Only branch protection blocks; an unreviewed pull request without it is clean.
    assert fetched.mergeable_state == "clean"
    assert fetched.merged is False
    assert (fetched.commits, fetched.changed_files) == (1, 1)
    assert fetched.user.login == sim_world.bot.login


def test_push_moves_the_pull_head(sim_world: SimWorld, gh: Any, tmp_path: Path) -> None:
    pr = _open_pull(sim_world, gh, tmp_path)
    before = pr.head.sha
    after = push_branch(sim_world, tmp_path / "work", "feature", {"src/more.py": "x = 1\n"})
    assert after != before
    assert gh.get_repo(sim_world.repo).get_pull(pr.number).head.sha == after


def test_list_pulls_filters_by_state_head_and_base(
    sim_world: SimWorld, gh: Any, tmp_path: Path
) -> None:
    first = _open_pull(sim_world, gh, tmp_path, "one")
    _open_pull(sim_world, gh, tmp_path, "two")
    repo = gh.get_repo(sim_world.repo)
    assert [p.number for p in repo.get_pulls()] == [2, 1]
    owner = sim_world.owner
    assert [p.number for p in repo.get_pulls(head=f"{owner}:one")] == [first.number]
    assert list(repo.get_pulls(head="someone-else:one")) == []
    assert len(list(repo.get_pulls(base="main"))) == 2
    first.edit(state="closed")
    assert [p.number for p in repo.get_pulls()] == [2]
    assert [p.number for p in repo.get_pulls(state="closed")] == [1]


def test_update_pull_title_body_state(sim_world: SimWorld, gh: Any, tmp_path: Path) -> None:
    pr = _open_pull(sim_world, gh, tmp_path)
    pr.edit(title="New title", body="New body")
    fetched = gh.get_repo(sim_world.repo).get_pull(pr.number)
    assert (fetched.title, fetched.body) == ("New title", "New body")
    fetched.edit(state="closed")
    assert gh.get_repo(sim_world.repo).get_pull(pr.number).state == "closed"


@pytest.mark.parametrize("method", ["merge", "squash", "rebase"])
def test_merge_really_merges(sim_world: SimWorld, gh: Any, tmp_path: Path, method: str) -> None:
    pr = _open_pull(sim_world, gh, tmp_path)
    sim_world.control.review(sim_world.repo, pr.number, "APPROVED", as_user="alice")
    sim_world.settle_mergeability()
    result = pr.merge(sha=pr.head.sha, merge_method=method, commit_title="Ship it")
    assert result.merged is True
    repo = gh.get_repo(sim_world.repo)
    assert repo.get_branch("main").commit.sha == result.sha
    merged = repo.get_pull(pr.number)
    assert (merged.merged, merged.state, merged.merge_commit_sha) == (True, "closed", result.sha)
    assert merged.merged_by.login == sim_world.bot.login
    assert merged.is_merged()
    clone = tmp_path / "check"
    env = sim_world.git_env()
    git("clone", "-q", sim_world.clone_url(), str(clone), env=env)
    assert (clone / "src/widgets.py").read_text() == "VALUE = 2\n"
    parents = git("log", "-1", "--format=%P", cwd=clone, env=env).split()
    assert len(parents) == (2 if method == "merge" else 1)
    events = [e.event for e in repo.get_issue(pr.number).get_events()]
    assert events[-2:] == ["merged", "closed"]


def test_merge_with_stale_sha_is_409(sim_world: SimWorld, gh: Any, tmp_path: Path) -> None:
    pr = _open_pull(sim_world, gh, tmp_path)
    stale = pr.head.sha
    push_branch(sim_world, tmp_path / "work", "feature", {"late.txt": "late\n"})
    with pytest.raises(GithubException) as caught:
        pr.merge(sha=stale)
    assert caught.value.status == 409
    assert "Head branch was modified" in caught.value.data["message"]
    assert gh.get_repo(sim_world.repo).get_pull(pr.number).merged is False


def test_unmergeable_pull_is_405(sim_world: SimWorld, gh: Any, tmp_path: Path) -> None:
    pr = _open_pull(sim_world, gh, tmp_path)
    sim_world.control.set_mergeable(sim_world.repo, pr.number, False)
    fetched = gh.get_repo(sim_world.repo).get_pull(pr.number)
    assert (fetched.mergeable, fetched.mergeable_state) == (False, "dirty")
    with pytest.raises(GithubException) as caught:
        fetched.merge(sha=fetched.head.sha)
    assert caught.value.status == 405
    sim_world.control.set_mergeable(sim_world.repo, pr.number, None)
    sim_world.settle_mergeability()
    assert gh.get_repo(sim_world.repo).get_pull(pr.number).mergeable is True


def test_real_conflict_makes_pull_unmergeable(sim_world: SimWorld, gh: Any, tmp_path: Path) -> None:
    pr = _open_pull(sim_world, gh, tmp_path)
    sim_world.control.push(
        sim_world.repo, "main", {"src/widgets.py": "VALUE = 3\n"}, as_user="alice"
    )
    sim_world.settle_mergeability()
    fetched = gh.get_repo(sim_world.repo).get_pull(pr.number)
    assert fetched.mergeable is False
    with pytest.raises(GithubException) as caught:
        fetched.merge(sha=fetched.head.sha)
    assert caught.value.status == 405


def test_reviews_list_and_create(sim_world: SimWorld, gh: Any, tmp_path: Path) -> None:
    pr = _open_pull(sim_world, gh, tmp_path)
    sim_world.control.review(
        sim_world.repo, pr.number, "CHANGES_REQUESTED", as_user="alice", body="Please fix"
    )
    pr.create_review(body="Self-review done", event="COMMENT")
    reviews = list(pr.get_reviews())
    assert [(r.user.login, r.state) for r in reviews] == [
        ("alice", "CHANGES_REQUESTED"),
        (sim_world.bot.login, "COMMENTED"),
    ]
    assert reviews[0].commit_id == pr.head.sha
    with pytest.raises(GithubException) as own:
        pr.create_review(event="APPROVE")
    assert own.value.status == 422


def test_review_threads_list_and_reply(sim_world: SimWorld, gh: Any, tmp_path: Path) -> None:
    pr = _open_pull(sim_world, gh, tmp_path)
    review = sim_world.control.review(
        sim_world.repo,
        pr.number,
        "CHANGES_REQUESTED",
        as_user="alice",
        body="See inline",
        comments=[{"path": "src/widgets.py", "line": 1, "body": "Use a constant name"}],
    )
    comments = list(pr.get_review_comments())
    assert len(comments) == 1
    opening = comments[0]
    assert (opening.path, opening.line, opening.user.login) == ("src/widgets.py", 1, "alice")
    assert opening.pull_request_review_id == review["id"]
    assert opening.diff_hunk.startswith("@@")
    assert opening.diff_hunk.endswith("+VALUE = 2")
    reply = pr.create_review_comment_reply(opening.id, "Renamed in the next push")
    assert reply.in_reply_to_id == opening.id
    replies = [c for c in pr.get_review_comments() if c.in_reply_to_id == opening.id]
    assert [c.body for c in replies] == ["Renamed in the next push"]
    assert review["threads"][0]["comment_id"] == opening.id


def test_requested_reviewers_add_and_remove(sim_world: SimWorld, gh: Any, tmp_path: Path) -> None:
    pr = _open_pull(sim_world, gh, tmp_path)
    pr.create_review_request(reviewers=["alice"])
    users, teams = pr.get_review_requests()
    assert [u.login for u in users] == ["alice"]
    assert list(teams) == []
    pr.delete_review_request(reviewers=["alice"])
    users, _teams = pr.get_review_requests()
    assert list(users) == []
    with pytest.raises(GithubException) as outsider:
        pr.create_review_request(reviewers=["nobody-here"])
    assert outsider.value.status == 422


def test_pull_commits_and_merge_check(sim_world: SimWorld, gh: Any, tmp_path: Path) -> None:
    pr = _open_pull(sim_world, gh, tmp_path)
    commits = list(pr.get_commits())
    assert [c.sha for c in commits] == [pr.head.sha]
    assert commits[0].commit.message == "change feature"
    status, _headers, _body = gh.requester.requestJson(
        "GET", f"/repos/{sim_world.repo}/pulls/{pr.number}/merge"
    )
    assert status == 404


def test_duplicate_pull_for_a_branch_is_422(sim_world: SimWorld, gh: Any, tmp_path: Path) -> None:
    _open_pull(sim_world, gh, tmp_path)
    status, _headers, body = gh.requester.requestJson(
        "POST",
        f"/repos/{sim_world.repo}/pulls",
        input={"title": "again", "head": "feature", "base": "main"},
    )
    assert status == 422
    assert "already exists" in json.loads(body)["errors"][0]["message"]
