"""Check runs, statuses, job logs, and the repository-level routes (user, repo, branches, refs)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest
from github import GithubException

from orchestrator_sim.testing import SimWorld


def _head(world: SimWorld) -> str:
    return world.control.push(world.repo, "feature", {"a.txt": "a\n"}, as_user="alice")


def test_check_runs_for_a_ref_with_output_and_annotations(sim_world: SimWorld, gh: Any) -> None:
    sha = _head(sim_world)
    control = sim_world.control
    control.check_run(sim_world.repo, sha=sha, name="lint", conclusion="success")
    failed = control.check_run(
        sim_world.repo,
        ref="feature",
        name="tests",
        conclusion="failure",
        title="2 tests failed",
        summary="test_a, test_b",
        text="long text",
        annotations=[
            {"path": "src/a.py", "start_line": 3, "message": "assert 1 == 2"},
            {"path": "src/b.py", "start_line": 7, "end_line": 9, "message": "boom"},
        ],
        log="line 1\nFAILED test_a\n",
    )
    commit = gh.get_repo(sim_world.repo).get_commit(sha)
    runs = {run.name: run for run in commit.get_check_runs()}
    assert set(runs) == {"lint", "tests"}
    tests = runs["tests"]
    assert (tests.status, tests.conclusion) == ("completed", "failure")
    assert tests.output.title == "2 tests failed"
    assert tests.output.annotations_count == 2
    notes = list(tests.get_annotations())
    assert [(n.path, n.start_line, n.end_line) for n in notes] == [
        ("src/a.py", 3, 3),
        ("src/b.py", 7, 9),
    ]
    assert tests.id == failed["id"]
    only_failed = list(commit.get_check_runs(check_name="tests"))
    assert [r.name for r in only_failed] == ["tests"]


def test_rerun_replaces_latest_unless_filter_all(sim_world: SimWorld, gh: Any) -> None:
    sha = _head(sim_world)
    control = sim_world.control
    control.check_run(sim_world.repo, sha=sha, name="tests", conclusion="failure")
    run = control.check_run(sim_world.repo, sha=sha, name="tests", status="in_progress")
    commit = gh.get_repo(sim_world.repo).get_commit(sha)
    assert [(r.status, r.conclusion) for r in commit.get_check_runs()] == [("in_progress", None)]
    assert len(list(commit.get_check_runs(filter="all"))) == 2
    control.check_run(sim_world.repo, sha=sha, name="tests", conclusion="success", run_id=run["id"])
    assert gh.get_repo(sim_world.repo).get_check_run(run["id"]).conclusion == "success"


def test_job_log_follows_the_redirect(sim_world: SimWorld, gh: Any) -> None:
    sha = _head(sim_world)
    run = sim_world.control.check_run(
        sim_world.repo, sha=sha, name="tests", conclusion="failure", log="E   assert 1 == 2\n"
    )
    path = f"/repos/{sim_world.repo}/actions/jobs/{run['job_id']}/logs"
    status, headers, _body = gh.requester.requestJson("GET", path, follow_302_redirect=False)
    assert status == 302
    location = {k.lower(): v for k, v in headers.items()}["location"]
    with urllib.request.urlopen(location, timeout=10) as answer:
        assert answer.read().decode() == "E   assert 1 == 2\n"
    forged = location.rsplit("sig=", 1)[0] + "sig=0000"
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(forged, timeout=10)
    assert refused.value.code == 403
    job = json.loads(gh.requester.requestJson("GET", path[: -len("/logs")])[2])
    assert (job["id"], job["conclusion"]) == (run["job_id"], "failure")


def test_combined_status_and_creating_statuses(sim_world: SimWorld, gh: Any) -> None:
    sha = _head(sim_world)
    commit = gh.get_repo(sim_world.repo).get_commit(sha)
    assert commit.get_combined_status().state == "pending"
    commit.create_status("failure", context="ci/build", description="red")
    sim_world.control.status(sim_world.repo, "success", as_user="alice", sha=sha, context="ci/lint")
    combined = gh.get_repo(sim_world.repo).get_commit(sha).get_combined_status()
    assert combined.state == "failure"
    assert sorted(s.context for s in combined.statuses) == ["ci/build", "ci/lint"]
    commit.create_status("success", context="ci/build")
    assert gh.get_repo(sim_world.repo).get_commit(sha).get_combined_status().state == "success"
    assert [s.state for s in commit.get_statuses()][:2] == ["success", "success"]


def test_unknown_ref_is_422(sim_world: SimWorld, gh: Any) -> None:
    status, _h, body = gh.requester.requestJson(
        "GET", f"/repos/{sim_world.repo}/commits/no-such-branch/check-runs"
    )
    assert status == 422
    assert "No commit found" in json.loads(body)["message"]


def test_user_and_repository(sim_world: SimWorld, gh: Any) -> None:
    me = gh.get_user()
    assert me.login == sim_world.bot.login
    # The product's account is a machine user; bot accounts: tests/sim/test_sim_strict.py.
    assert me.type == "User"
    repo = gh.get_repo(sim_world.repo)
    assert (repo.full_name, repo.default_branch, repo.private) == ("acme/widgets", "main", False)
    assert repo.permissions.push is True
    assert repo.permissions.admin is False
    assert repo.clone_url == sim_world.server.git_url("acme", "widgets")
    assert gh.get_user("alice").name == "Alice Example"
    with pytest.raises(GithubException) as missing:
        gh.get_repo("acme/nothing")
    assert missing.value.status == 404


def test_collaborator_permission(sim_world: SimWorld, gh: Any) -> None:
    repo = gh.get_repo(sim_world.repo)
    assert repo.get_collaborator_permission("alice") == "admin"
    assert repo.get_collaborator_permission(sim_world.bot.login) == "write"
    sim_world.control.create_user("visitor", "ghp_visitor_token_0000000000")
    assert repo.get_collaborator_permission("visitor") == "read"
    sim_world.control.set_permission(sim_world.repo, "visitor", "triage")
    raw = json.loads(
        gh.requester.requestJson(
            "GET", f"/repos/{sim_world.repo}/collaborators/visitor/permission"
        )[2]
    )
    assert (raw["permission"], raw["role_name"]) == ("read", "triage")


def test_branches_and_commits(sim_world: SimWorld, gh: Any) -> None:
    sha = _head(sim_world)
    repo = gh.get_repo(sim_world.repo)
    assert sorted(b.name for b in repo.get_branches()) == ["feature", "main"]
    branch = repo.get_branch("feature")
    assert branch.commit.sha == sha
    assert branch.commit.commit.author.name == "Alice Example"
    assert branch.commit.author.login == "alice"
    assert repo.get_commit("feature").sha == sha
    with pytest.raises(GithubException) as missing:
        repo.get_branch("nope")
    assert missing.value.status == 404


def test_git_refs_create_update_delete(sim_world: SimWorld, gh: Any) -> None:
    repo = gh.get_repo(sim_world.repo)
    main_sha = repo.get_branch("main").commit.sha
    created = repo.create_git_ref("refs/heads/topic", main_sha)
    assert (created.ref, created.object.sha) == ("refs/heads/topic", main_sha)
    with pytest.raises(GithubException) as exists:
        repo.create_git_ref("refs/heads/topic", main_sha)
    assert exists.value.status == 422
    newer = sim_world.control.push(sim_world.repo, "main", {"n.txt": "n\n"}, as_user="alice")
    ref = repo.get_git_ref("heads/topic")
    ref.edit(newer)
    assert repo.get_branch("topic").commit.sha == newer
    assert [r.ref for r in repo.get_git_matching_refs("heads/to")] == ["refs/heads/topic"]
    with pytest.raises(GithubException) as backwards:
        ref.edit(main_sha)
    assert backwards.value.status == 422
    ref.edit(main_sha, force=True)
    ref.delete()
    with pytest.raises(GithubException) as gone:
        repo.get_git_ref("heads/topic")
    assert gone.value.status == 404


def test_unknown_route_is_github_404(sim_world: SimWorld, gh: Any) -> None:
    status, _h, body = gh.requester.requestJson("GET", "/nothing/here")
    assert status == 404
    assert json.loads(body)["message"] == "Not Found"
