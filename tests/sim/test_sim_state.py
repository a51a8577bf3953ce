"""The in-memory model: numbering, events, reviews and threads, checks, snapshots."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator_sim.clock import ManualClock
from orchestrator_sim.errors import NotFound, Unprocessable
from orchestrator_sim.records import make_node_id, parse_node_id
from orchestrator_sim.state import CheckAnnotation, InlineComment, Repo, SimState

SHA_A = "a" * 40
SHA_B = "b" * 40
SHA_C = "c" * 40


def make_state() -> tuple[SimState, Repo]:
    state = SimState(ManualClock())
    state.add_user("bot", token="t-bot", bot=True)
    state.add_user("alice", token="t-alice")
    repo = state.add_repo("acme", "widgets")
    state.set_permission(repo, "bot", "write")
    state.set_permission(repo, "alice", "admin")
    state.set_branch(repo, "main", SHA_A)
    state.set_branch(repo, "feature", SHA_B)
    return state, repo


def test_issues_and_pulls_share_one_number_line() -> None:
    state, repo = make_state()
    first = state.create_issue(repo, "alice", "First")
    _issue, pr = state.create_pull(repo, "bot", "Change", head="feature", base="main")
    second = state.create_issue(repo, "alice", "Second")
    assert (first.number, pr.number, second.number) == (1, 2, 3)
    assert repo.issues[2].is_pull
    with pytest.raises(NotFound):
        state.pull(repo, 1)


def test_ids_are_monotonic_and_node_ids_decode() -> None:
    state, repo = make_state()
    ids = [state.create_issue(repo, "alice", f"issue {n}").id for n in range(5)]
    assert ids == sorted(ids)
    assert len(set(ids)) == 5
    node = make_node_id("PullRequest", 42)
    assert parse_node_id(node) == ("PullRequest", 42)
    assert parse_node_id("not a node id") is None


def test_label_events_carry_actor_and_label() -> None:
    state, repo = make_state()
    issue = state.create_issue(repo, "alice", "Labelled", labels=["todo"])
    state.add_labels(repo, issue.number, "bot", ["in progress"])
    state.remove_label(repo, issue.number, "alice", "TODO")
    events = [(e.event, e.actor, e.label) for e in state.issue_events(repo, issue.number)]
    assert events == [
        ("labeled", "alice", "todo"),
        ("labeled", "bot", "in progress"),
        ("unlabeled", "alice", "todo"),
    ]
    with pytest.raises(NotFound):
        state.remove_label(repo, issue.number, "alice", "todo")


def test_set_labels_writes_only_the_difference() -> None:
    state, repo = make_state()
    issue = state.create_issue(repo, "alice", "Labelled", labels=["a", "b"])
    state.set_labels(repo, issue.number, "bot", ["b", "c"])
    assert issue.labels == ["b", "c"]
    tail = [(e.event, e.label) for e in state.issue_events(repo, issue.number)][2:]
    assert tail == [("unlabeled", "a"), ("labeled", "c")]


def test_pull_head_follows_branch_while_open() -> None:
    state, repo = make_state()
    issue, pr = state.create_pull(repo, "bot", "Change", head="feature", base="main")
    state.set_branch(repo, "feature", SHA_C)
    assert pr.head_sha == SHA_C
    state.update_issue(repo, issue.number, "bot", state="closed")
    state.set_branch(repo, "feature", SHA_B)
    assert pr.head_sha == SHA_C


def test_create_pull_refuses_bad_branches_and_duplicates() -> None:
    state, repo = make_state()
    with pytest.raises(Unprocessable):
        state.create_pull(repo, "bot", "x", head="missing", base="main")
    state.set_branch(repo, "same", SHA_A)
    with pytest.raises(Unprocessable, match="Validation Failed"):
        state.create_pull(repo, "bot", "x", head="same", base="main")
    state.create_pull(repo, "bot", "x", head="feature", base="main")
    with pytest.raises(Unprocessable) as caught:
        state.create_pull(repo, "bot", "again", head="feature", base="main")
    assert "already exists" in caught.value.errors[0]["message"]


def test_review_decision_uses_each_reviewers_latest_decision() -> None:
    state, repo = make_state()
    state.add_user("carol", token="t-carol")
    _issue, pr = state.create_pull(repo, "bot", "Change", head="feature", base="main")
    assert state.review_decision(repo, pr) == "REVIEW_REQUIRED"
    state.submit_review(repo, pr.number, "alice", "CHANGES_REQUESTED", body="no")
    state.submit_review(repo, pr.number, "carol", "APPROVED")
    assert state.review_decision(repo, pr) == "CHANGES_REQUESTED"
    state.submit_review(repo, pr.number, "alice", "APPROVED")
    assert state.review_decision(repo, pr) == "APPROVED"
    state.submit_review(repo, pr.number, "alice", "COMMENTED", body="nit")
    assert state.review_decision(repo, pr) == "APPROVED"


def test_author_cannot_approve_own_pull() -> None:
    state, repo = make_state()
    _issue, pr = state.create_pull(repo, "bot", "Change", head="feature", base="main")
    with pytest.raises(Unprocessable, match="your own pull request"):
        state.submit_review(repo, pr.number, "bot", "APPROVED")


def test_inline_comments_open_threads_that_collect_replies() -> None:
    state, repo = make_state()
    _issue, pr = state.create_pull(repo, "bot", "Change", head="feature", base="main")
    review = state.submit_review(
        repo,
        pr.number,
        "alice",
        "CHANGES_REQUESTED",
        body="see inline",
        comments=[InlineComment("src/a.py", 3, "rename this"), InlineComment("b.py", 1, "why?")],
    )
    threads = state.pull_threads(repo, pr.number)
    assert [t.path for t in threads] == ["src/a.py", "b.py"]
    first = threads[0]
    reply = state.reply_to_comment(repo, pr.number, "bot", first.comment_ids[0], "done")
    assert reply.in_reply_to_id == first.comment_ids[0]
    assert reply.thread_id == first.id
    assert reply.review_id is None
    assert repo.review_comments[first.comment_ids[0]].review_id == review.id
    state.resolve_thread(repo, first.id, "bot")
    assert (first.resolved, first.resolved_by) == (True, "bot")
    found = state.find_thread_by_node_id(first.node_id)
    assert found is not None
    assert found[1] is first


def test_check_runs_latest_per_name_and_rollup() -> None:
    state, repo = make_state()
    state.set_check_run(repo, SHA_B, "tests", "completed", conclusion="failure", log="boom")
    assert state.rollup_state(repo, SHA_B) == "FAILURE"
    run = state.set_check_run(repo, SHA_B, "tests", "in_progress")
    assert state.rollup_state(repo, SHA_B) == "PENDING"
    state.set_check_run(
        repo, SHA_B, "tests", "completed", conclusion="success", check_run_id=run.id
    )
    assert state.rollup_state(repo, SHA_B) == "SUCCESS"
    assert len(state.check_runs_for(repo, SHA_B)) == 1
    assert len(state.check_runs_for(repo, SHA_B, latest_only=False)) == 2
    assert state.check_run_for_job(repo, run.job_id) is run
    assert state.rollup_state(repo, SHA_C) is None


def test_check_run_validation_names_the_field() -> None:
    state, repo = make_state()
    with pytest.raises(Unprocessable) as caught:
        state.set_check_run(repo, SHA_B, "tests", "completed")
    assert caught.value.errors[0]["field"] == "conclusion"
    with pytest.raises(Unprocessable):
        state.set_check_run(
            repo,
            SHA_B,
            "tests",
            "completed",
            conclusion="failure",
            annotations=[CheckAnnotation("a.py", 1, 1, "fatal", "bad level")],
        )


def test_combined_status_takes_newest_per_context() -> None:
    state, repo = make_state()
    state.set_commit_status(repo, SHA_B, state="failure", context="lint", creator="bot")
    state.set_commit_status(repo, SHA_B, state="success", context="lint", creator="bot")
    state.set_commit_status(repo, SHA_B, state="success", context="build", creator="bot")
    assert state.combined_status(repo, SHA_B) == "success"
    assert state.combined_status(repo, SHA_C) == "pending"


def test_mergeable_state_reflects_override_reviews_and_checks() -> None:
    state, repo = make_state()
    _issue, pr = state.create_pull(repo, "bot", "Change", head="feature", base="main")
    assert (state.mergeable(repo, pr), state.mergeable_state(repo, pr)) == (None, "unknown")
    assert isinstance(state.clock, ManualClock)
    state.clock.advance(state.mergeability_delay)
    # Only branch protection blocks; the review decision alone does not.
    assert state.mergeable_state(repo, pr) == "clean"
    assert state.review_decision(repo, pr) == "REVIEW_REQUIRED"
    state.protect_branch(repo, "main", required_approvals=1)
    assert state.mergeable_state(repo, pr) == "blocked"
    state.submit_review(repo, pr.number, "alice", "APPROVED")
    assert state.mergeable_state(repo, pr) == "clean"
    state.set_check_run(repo, SHA_B, "ci", "completed", conclusion="failure")
    assert state.mergeable_state(repo, pr) == "unstable"
    state.set_mergeable_override(repo, pr.number, False)
    assert state.mergeable(repo, pr) is False
    assert state.mergeable_state(repo, pr) == "dirty"


def test_permissions_public_and_private() -> None:
    state, repo = make_state()
    state.add_user("mallory", token="t-m")
    assert state.permission(repo, "mallory") == "read"
    assert not state.has_permission(repo, "mallory", "triage")
    secret = state.add_repo("acme", "secret", private=True)
    assert state.permission(secret, "mallory") is None
    with pytest.raises(Unprocessable):
        state.set_permission(repo, "mallory", "superuser")


def test_tokens_are_unique_and_map_to_users() -> None:
    state, _repo = make_state()
    user = state.user_for_token("t-alice")
    assert user is not None
    assert user.login == "alice"
    assert state.user_for_token("nope") is None
    with pytest.raises(Unprocessable):
        state.add_user("eve", token="t-alice")


def test_snapshot_round_trip(tmp_path: Path) -> None:
    state, repo = make_state()
    issue = state.create_issue(repo, "alice", "Persist me", labels=["todo"])
    _pull_issue, pr = state.create_pull(repo, "bot", "Change", head="feature", base="main")
    state.submit_review(
        repo, pr.number, "alice", "COMMENTED", comments=[InlineComment("a.py", 1, "hm")]
    )
    state.set_check_run(repo, SHA_B, "ci", "completed", conclusion="success", log="ok")
    state.protect_branch(repo, "main", required_checks=["ci"], required_approvals=1)
    comment = state.add_comment(repo, issue.number, "bot", "v1")
    state.update_comment(repo, comment.id, "v2", editor="alice")
    path = tmp_path / "state.json"
    state.save(path)
    loaded = SimState()
    loaded.load(path)
    assert loaded.to_json() == state.to_json()
    assert path.stat().st_mode & 0o777 == 0o600
    again = loaded.repo("ACME", "Widgets")
    assert again.issues[issue.number].labels == ["todo"]
    assert again.protections["main"].required_checks == ["ci"]
    assert again.comments[comment.id].editor == "alice"
    assert loaded.new_id() == state.new_id()


def test_snapshot_keeps_merge_rules_teams_pushers_and_deployments() -> None:
    state, repo = make_state()
    state.set_branch(repo, "feature", SHA_C, "alice")
    state.set_team("acme", "core", ["alice"])
    deployment = state.create_deployment(repo, SHA_C, "staging", "bot")
    state.add_deployment_status(repo, deployment.id, "success", "bot")
    state.set_merge_settings(repo, allow_rebase_merge=False)
    state.protect_branch(
        repo, "main", required_checks=["ci"], strict=True, required_deployments=["staging"]
    )

    loaded = SimState()
    loaded.load_json(state.to_json())

    again = loaded.repo("acme", "widgets")
    assert loaded.to_json() == state.to_json()
    assert (again.pushers["feature"], again.allow_rebase_merge) == ("alice", False)
    assert loaded.team_members("acme/core") == ["alice"]
    assert loaded.deployed(again, SHA_C, "staging") is True
    rules = again.protections["main"]
    assert (rules.strict, rules.required_deployments) == (True, ["staging"])


def test_bad_snapshot_names_the_problem_and_changes_nothing(tmp_path: Path) -> None:
    state, repo = make_state()
    data = state.to_json()
    data["repos"][0]["issues"] = {"x": {}}
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=r"broken.json: repos\[0\]\.issues: key 'x'"):
        state.load(path)
    assert state.find_repo("acme", "widgets") is repo
