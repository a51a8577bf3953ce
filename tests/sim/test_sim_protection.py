"""Branch protection and drafts: what a merge into a protected branch needs, with GitHub's
own refusals, and how the pull request reports it meanwhile."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator_sim.control import ControlRequestError
from tests.sim.strict import graphql, manual_world, new_account, open_pull, pull_json, rest

STATE = """query($n: Int!) { repository(owner: "acme", name: "widgets") {
  pullRequest(number: $n) { isDraft mergeable mergeStateStatus reviewDecision } } }"""
DOCS = "https://docs.github.com/articles/about-protected-branches"


def _merge(world, number, account=None):  # type: ignore[no-untyped-def]
    path = f"/repos/{world.repo}/pulls/{number}/merge"
    return rest(world, "PUT", path, {"merge_method": "squash"}, account)


def test_protection_is_readable_by_admins_only(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, _clock):
        world.control.protect(
            world.repo,
            "main",
            required_checks=["ci"],
            required_approvals=2,
            dismiss_stale_reviews=True,
            enforce_admins=True,
        )
        path = f"/repos/{world.repo}/branches/main/protection"

        as_admin = rest(world, "GET", path, account=world.human)
        as_writer = rest(world, "GET", path)

        body = as_admin.json()
        assert as_admin.status_code == 200
        assert body["required_status_checks"]["contexts"] == ["ci"]
        reviews = body["required_pull_request_reviews"]
        assert (reviews["required_approving_review_count"], reviews["dismiss_stale_reviews"]) == (
            2,
            True,
        )
        assert body["enforce_admins"]["enabled"] is True
        assert as_writer.status_code == 404
        branch = rest(world, "GET", f"/repos/{world.repo}/branches/main").json()
        assert branch["protected"] is True
        assert branch["protection"]["required_status_checks"]["contexts"] == ["ci"]

        world.control.unprotect(world.repo, "main")
        gone = rest(world, "GET", path, account=world.human)
        assert (gone.status_code, gone.json()["message"]) == (404, "Branch not protected")
        with pytest.raises(ControlRequestError):
            world.control.unprotect(world.repo, "main")


def test_required_check_must_pass_on_the_head(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, clock):
        world.control.protect(world.repo, "main", required_checks=["ci"])
        pull = open_pull(world)
        clock.advance(1)

        missing = _merge(world, pull.number)
        assert (missing.status_code, missing.json()["message"]) == (
            405,
            'Required status check "ci" is expected.',
        )
        assert missing.json()["documentation_url"] == DOCS
        view = pull_json(world, pull.number)
        assert (view["mergeable"], view["mergeable_state"]) == (True, "blocked")
        answer = graphql(world, STATE, {"n": pull.number})["data"]["repository"]
        assert answer["pullRequest"]["mergeStateStatus"] == "BLOCKED"

        world.control.check_run(world.repo, sha=pull.head, name="ci", status="in_progress")
        pending = _merge(world, pull.number)
        assert pending.json()["message"] == 'Required status check "ci" is expected.'

        world.control.check_run(world.repo, sha=pull.head, name="ci", conclusion="failure")
        failing = _merge(world, pull.number)
        assert (failing.status_code, failing.json()["message"]) == (
            405,
            'Required status check "ci" is failing.',
        )

        world.control.check_run(world.repo, sha=pull.head, name="ci", conclusion="success")
        world.control.review(world.repo, pull.number, "APPROVED", as_user="alice")
        assert pull_json(world, pull.number)["mergeable_state"] == "clean"
        assert _merge(world, pull.number).status_code == 200


def test_several_missing_checks_are_counted_and_a_status_counts_by_context(
    tmp_path: Path,
) -> None:
    with manual_world(tmp_path) as (world, clock):
        world.control.protect(world.repo, "main", required_checks=["ci", "lint", "deploy"])
        pull = open_pull(world)
        clock.advance(1)
        world.control.check_run(world.repo, sha=pull.head, name="ci", conclusion="success")

        assert _merge(world, pull.number).json()["message"] == (
            "2 of 3 required status checks are expected."
        )
        world.control.check_run(world.repo, sha=pull.head, name="lint", conclusion="skipped")
        world.control.status(
            world.repo, "success", as_user="alice", sha=pull.head, context="deploy"
        )
        assert _merge(world, pull.number).status_code == 200


def test_approvals_count_only_from_writers(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, clock):
        world.control.protect(world.repo, "main", required_approvals=2)
        pull = open_pull(world)
        clock.advance(1)
        reader = new_account(world, "read")
        writer = new_account(world, "write")

        world.control.review(world.repo, pull.number, "APPROVED", as_user=reader.login)
        world.control.review(world.repo, pull.number, "APPROVED", as_user="alice")
        one_short = _merge(world, pull.number)
        assert (one_short.status_code, one_short.json()["message"]) == (
            405,
            "At least 2 approving reviews are required by reviewers with write access.",
        )
        answer = graphql(world, STATE, {"n": pull.number})["data"]["repository"]
        assert answer["pullRequest"]["reviewDecision"] == "REVIEW_REQUIRED"

        world.control.review(
            world.repo, pull.number, "CHANGES_REQUESTED", as_user=writer.login, body="No"
        )
        assert _merge(world, pull.number).json()["message"] == "Changes have been requested."

        world.control.review(world.repo, pull.number, "APPROVED", as_user=writer.login)
        answer = graphql(world, STATE, {"n": pull.number})["data"]["repository"]
        assert answer["pullRequest"]["reviewDecision"] == "APPROVED"
        assert _merge(world, pull.number).status_code == 200


def test_one_approval_message_and_approvals_on_any_commit(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, clock):
        world.control.protect(world.repo, "main", required_approvals=1)
        pull = open_pull(world)
        clock.advance(1)
        assert _merge(world, pull.number).json()["message"] == (
            "At least 1 approving review is required by reviewers with write access."
        )
        world.control.review(world.repo, pull.number, "APPROVED", as_user="alice")
        world.control.push(world.repo, pull.branch, {"more.txt": "x\n"}, as_user="alice")
        clock.advance(1)
        # Without dismissal, an approval of an older head still counts.
        assert _merge(world, pull.number).status_code == 200


def test_stale_approvals_are_dismissed_on_push(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, clock):
        world.control.protect(world.repo, "main", required_approvals=1, dismiss_stale_reviews=True)
        pull = open_pull(world)
        world.control.review(world.repo, pull.number, "APPROVED", as_user="alice")
        world.control.push(world.repo, pull.branch, {"more.txt": "x\n"}, as_user="alice")
        clock.advance(1)

        reviews = rest(world, "GET", f"/repos/{world.repo}/pulls/{pull.number}/reviews").json()
        assert [r["state"] for r in reviews] == ["DISMISSED"]
        refused = _merge(world, pull.number)
        assert refused.json()["message"] == (
            "At least 1 approving review is required by reviewers with write access."
        )
        events = rest(world, "GET", f"/repos/{world.repo}/issues/{pull.number}/events").json()
        assert "review_dismissed" in [e["event"] for e in events]


def test_admins_pass_unless_protection_enforces_admins(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, clock):
        world.control.protect(world.repo, "main", required_checks=["ci"])
        first = open_pull(world)
        clock.advance(1)
        assert _merge(world, first.number).status_code == 405
        assert _merge(world, first.number, world.human).status_code == 200

        world.control.protect(world.repo, "main", required_checks=["ci"], enforce_admins=True)
        second = open_pull(world)
        clock.advance(1)
        refused = _merge(world, second.number, world.human)
        assert refused.json()["message"] == 'Required status check "ci" is expected.'


def test_draft_pulls_cannot_merge_until_ready(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, clock):
        branch = "drafty"
        world.control.push(world.repo, branch, {"src/widgets.py": "x\n"}, as_user="alice")
        created = rest(
            world,
            "POST",
            f"/repos/{world.repo}/pulls",
            {"title": "WIP", "head": branch, "base": "main", "draft": True},
        )
        number = created.json()["number"]
        assert created.json()["draft"] is True
        clock.advance(1)

        view = pull_json(world, number)
        assert (view["draft"], view["mergeable_state"]) == (True, "draft")
        answer = graphql(world, STATE, {"n": number})["data"]["repository"]["pullRequest"]
        assert (answer["isDraft"], answer["mergeStateStatus"]) == (True, "DRAFT")
        refused = _merge(world, number)
        assert (refused.status_code, refused.json()["message"]) == (
            405,
            "Pull Request is still a draft",
        )

        node_id = created.json()["node_id"]
        ready = graphql(
            world,
            """mutation($id: ID!) { markPullRequestReadyForReview(input: {pullRequestId: $id}) {
                 pullRequest { id isDraft } } }""",
            {"id": node_id},
        )
        payload = ready["data"]["markPullRequestReadyForReview"]["pullRequest"]
        assert payload == {"id": node_id, "isDraft": False}
        assert pull_json(world, number)["draft"] is False
        assert _merge(world, number).status_code == 200


def test_ready_for_review_needs_write(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, _clock):
        pull = open_pull(world, draft=True)
        reader = new_account(world, "read")
        node_id = pull_json(world, pull.number)["node_id"]

        answer = graphql(
            world,
            """mutation($id: ID!) { markPullRequestReadyForReview(input: {pullRequestId: $id}) {
                 pullRequest { isDraft } } }""",
            {"id": node_id},
            reader,
        )

        assert answer["data"] == {"markPullRequestReadyForReview": None}
        assert answer["errors"][0]["type"] == "FORBIDDEN"
        assert pull_json(world, pull.number)["draft"] is True
