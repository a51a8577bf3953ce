"""The runtime helpers against the emulator, over HTTP through PyGithub."""

from __future__ import annotations

import time

import pytest

from orchestrator.domain.snapshot import Actor, PRStatus
from orchestrator.github.checks import failing_check_details, log_tail
from orchestrator.github.client import GitHubClient
from orchestrator.github.errors import GitHubError, RateLimited
from orchestrator.github.gateway import GitHubGateway
from orchestrator.github.outcomes import (
    ApprovalActor,
    CommentAction,
    CommentUpserted,
    HeadMoved,
    Merged,
    NotMergeable,
    PRClosed,
    PROpen,
)
from orchestrator.github.prstate import inspect_pr_state
from orchestrator_sim.testing import SimWorld
from tests.github.conftest import SleepRecorder

MARKER = "<!-- orchestrator-workpad -->"


def _branch(world: SimWorld, name: str = "agent/1-fix", content: str = "x = 1\n") -> str:
    return world.control.push(world.repo, name, {"src/fix.py": content}, as_user=world.human.login)


def _open_pr(gateway: GitHubGateway, world: SimWorld, branch: str = "agent/1-fix") -> PROpen:
    result = gateway.find_or_create_pr(
        world.repo, branch=branch, base="main", title="Fix", body="b"
    )
    assert isinstance(result, PROpen)
    return result


def _pulls(world: SimWorld) -> list[object]:
    return list(world.github().get_repo(world.repo).get_pulls(state="all"))


def test_find_or_create_pr_creates_once_then_reuses(
    gateway: GitHubGateway, world: SimWorld
) -> None:
    head = _branch(world)
    first = _open_pr(gateway, world)
    assert first.created and first.pr.head_sha == head and first.pr.head_branch == "agent/1-fix"
    second = _open_pr(gateway, world)
    assert not second.created and second.pr.number == first.pr.number
    assert len(_pulls(world)) == 1


def test_lost_response_on_pr_create_still_one_pr(gateway: GitHubGateway, world: SimWorld) -> None:
    _branch(world)
    world.control.add_fault(
        path=f"/repos/{world.repo}/pulls", method="POST", action="lost_response", count=1
    )
    result = _open_pr(gateway, world)
    assert result.pr.number > 0
    assert len(_pulls(world)) == 1
    creates = [
        w
        for w in world.control.writes()
        if w["method"] == "POST" and w["path"] == f"/repos/{world.repo}/pulls"
    ]
    assert len(creates) == 1


@pytest.mark.parametrize(("policy", "expected"), [("stop", "stop"), ("new_branch", "new_branch")])
def test_closed_branch_pr_follows_policy(
    gateway: GitHubGateway, world: SimWorld, policy: str, expected: str
) -> None:
    _branch(world)
    number = _open_pr(gateway, world).pr.number
    world.control.update_issue(world.repo, number, as_user=world.human.login, state="closed")
    result = gateway.find_or_create_pr(
        world.repo, branch="agent/1-fix", base="main", title="t", body="b", closed_pr_policy=policy
    )
    assert isinstance(result, PRClosed) and result.action == expected
    assert len(_pulls(world)) == 1


def test_closed_branch_pr_reopened_by_policy(gateway: GitHubGateway, world: SimWorld) -> None:
    _branch(world)
    number = _open_pr(gateway, world).pr.number
    world.control.update_issue(world.repo, number, as_user=world.human.login, state="closed")
    result = gateway.find_or_create_pr(
        world.repo,
        branch="agent/1-fix",
        base="main",
        title="t",
        body="b",
        closed_pr_policy="reopen",
    )
    assert isinstance(result, PROpen) and result.pr.is_open and result.pr.number == number


def test_upsert_comment_create_unchanged_update(gateway: GitHubGateway, world: SimWorld) -> None:
    issue = world.control.create_issue(world.repo, "Fix", as_user=world.human.login)
    world.control.comment(world.repo, issue, f"a human quoting {MARKER}", as_user=world.human.login)
    created = gateway.upsert_comment(world.repo, issue, MARKER, f"{MARKER}\nv1")
    assert isinstance(created, CommentUpserted) and created.action is CommentAction.CREATED
    same = gateway.upsert_comment(world.repo, issue, MARKER, f"{MARKER}\nv1")
    assert same == CommentUpserted(created.comment_id, CommentAction.UNCHANGED, same.url)
    updated = gateway.upsert_comment(world.repo, issue, MARKER, f"{MARKER}\nv2")
    assert isinstance(updated, CommentUpserted) and updated.action is CommentAction.UPDATED
    bodies = [c.body for c in world.github().get_repo(world.repo).get_issue(issue).get_comments()]
    assert bodies == [f"a human quoting {MARKER}", f"{MARKER}\nv2"]


def test_lost_response_on_comment_create_still_one_comment(
    gateway: GitHubGateway, world: SimWorld
) -> None:
    issue = world.control.create_issue(world.repo, "Fix", as_user=world.human.login)
    world.control.add_fault(
        path=f"/repos/{world.repo}/issues/{issue}/comments",
        method="POST",
        action="lost_response",
        count=1,
    )
    result = gateway.upsert_comment(world.repo, issue, MARKER, f"{MARKER}\nbody")
    assert isinstance(result, CommentUpserted)
    comments = list(world.github().get_repo(world.repo).get_issue(issue).get_comments())
    assert len(comments) == 1


def _wait_mergeable(world: SimWorld, number: int) -> None:
    repo = world.github(world.human).get_repo(world.repo)
    for _ in range(100):
        if repo.get_pull(number).mergeable is not None:
            return
        time.sleep(0.05)
    raise AssertionError(f"pull request #{number} never settled its mergeability")


def test_merge_with_stale_sha_is_head_moved_and_nothing_merges(
    gateway: GitHubGateway, world: SimWorld
) -> None:
    old = _branch(world)
    number = _open_pr(gateway, world).pr.number
    new = world.control.push(
        world.repo, "agent/1-fix", {"src/fix.py": "x = 2\n"}, as_user=world.human.login
    )
    result = gateway.merge_if_head_matches(world.repo, number, old, "squash")
    assert result == HeadMoved(old, new)
    pr = world.github().get_repo(world.repo).get_pull(number)
    assert not pr.merged
    # GitHub computes mergeability after a push; a merge before it settles is refused.
    _wait_mergeable(world, number)
    merged = gateway.merge_if_head_matches(world.repo, number, new, "squash")
    assert isinstance(merged, Merged) and len(merged.commit_sha) == 40
    again = gateway.merge_if_head_matches(world.repo, number, new, "squash")
    assert isinstance(again, Merged) and again.already


def test_merge_refused_when_not_mergeable(gateway: GitHubGateway, world: SimWorld) -> None:
    head = _branch(world)
    number = _open_pr(gateway, world).pr.number
    world.control.set_mergeable(world.repo, number, False)
    result = gateway.merge_if_head_matches(world.repo, number, head, "merge")
    assert isinstance(result, NotMergeable)


def test_approval_actor_counts_only_humans_with_write(
    gateway: GitHubGateway, world: SimWorld
) -> None:
    control = world.control
    control.create_user("reader", "ghp_" + "r" * 36)
    control.set_permission(world.repo, "reader", "read")
    issue = control.create_issue(world.repo, "Fix", as_user=world.human.login)
    assert gateway.approval_actor(world.repo, issue, "merge-ok") is None

    control.add_labels(world.repo, issue, ["merge-ok"], as_user="reader")
    by_reader = gateway.approval_actor(world.repo, issue, "merge-ok")
    assert isinstance(by_reader, ApprovalActor) and not by_reader.counts

    control.remove_label(world.repo, issue, "merge-ok", as_user="reader")
    control.add_labels(world.repo, issue, ["merge-ok"], as_user=world.bot.login)
    by_bot = gateway.approval_actor(world.repo, issue, "merge-ok")
    assert isinstance(by_bot, ApprovalActor) and by_bot.is_bot and not by_bot.counts

    control.remove_label(world.repo, issue, "merge-ok", as_user=world.human.login)
    assert gateway.approval_actor(world.repo, issue, "merge-ok") is None
    control.add_labels(world.repo, issue, ["merge-ok"], as_user=world.human.login)
    by_human = gateway.approval_actor(world.repo, issue, "merge-ok")
    assert isinstance(by_human, ApprovalActor) and by_human.counts
    assert by_human.login == world.human.login


def test_labels_close_and_ensure(gateway: GitHubGateway, world: SimWorld) -> None:
    issue = world.control.create_issue(
        world.repo, "Fix", as_user=world.human.login, labels=["agent"]
    )
    created = gateway.ensure_labels_exist(world.repo, {"In Progress": "0e8a16", "agent": "ededed"})
    assert created == ["In Progress"]
    assert gateway.ensure_labels_exist(world.repo, {"In Progress": "0e8a16"}) == []
    labels = gateway.set_issue_labels(world.repo, issue, add=["In Progress"], remove=["Todo"])
    assert labels == frozenset({"agent", "In Progress"})
    assert gateway.set_issue_labels(world.repo, issue, remove=["In Progress"]) == {"agent"}
    assert gateway.close_issue(world.repo, issue) is True
    assert gateway.close_issue(world.repo, issue) is False
    gh_issue = world.github().get_repo(world.repo).get_issue(issue)
    assert gh_issue.state == "closed" and gh_issue.state_reason == "completed"


def test_pr_body_review_request_and_threads(gateway: GitHubGateway, world: SimWorld) -> None:
    head = _branch(world)
    number = _open_pr(gateway, world).pr.number
    assert gateway.update_pr_body(world.repo, number, "## Summary\nnew") is True
    assert gateway.update_pr_body(world.repo, number, "## Summary\nnew") is False
    review = world.control.review(
        world.repo,
        number,
        "CHANGES_REQUESTED",
        as_user=world.human.login,
        commit_id=head,
        comments=[{"path": "src/fix.py", "line": 1, "body": "use a constant"}],
    )
    assert review
    pr = inspect_pr_state(gateway.client, world.repo, number, _actor(gateway, world))
    assert pr is not None and len(pr.threads) == 1
    thread = pr.threads[0]
    assert (thread.path, thread.body, thread.is_resolved) == ("src/fix.py", "use a constant", False)
    assert thread.author == Actor(world.human.login, is_bot=False, can_write=True)
    marker = "<!-- reply:k1 -->"
    reply = gateway.reply_to_thread(
        world.repo, number, thread.id, f"Addressed.\n\n{marker}", marker
    )
    assert isinstance(reply, str)
    assert (
        gateway.reply_to_thread(world.repo, number, thread.id, f"Again\n\n{marker}", marker)
        == reply
    )
    assert gateway.resolve_thread(thread.id) is True
    assert gateway.request_review(world.repo, number, [world.human.login, world.bot.login]) is True
    after = inspect_pr_state(gateway.client, world.repo, number, _actor(gateway, world))
    assert after is not None and after.threads[0].is_resolved
    assert after.reviews[0].verdict.value == "changes_requested"
    requested = world.github().get_repo(world.repo).get_pull(number).get_review_requests()[0]
    assert [u.login for u in requested] == [world.human.login]


def _actor(gateway: GitHubGateway, world: SimWorld):  # type: ignore[no-untyped-def]
    def lookup(login: str, typename: str | None) -> Actor:
        bot = typename == "Bot" or login == gateway.client.login
        return Actor(login, is_bot=bot, can_write=not bot and gateway.can_write(world.repo, login))

    return lookup


def test_inspect_pr_state_checks_and_mergeability(gateway: GitHubGateway, world: SimWorld) -> None:
    head = _branch(world)
    number = _open_pr(gateway, world).pr.number
    control = world.control
    control.check_run(world.repo, sha=head, name="lint", conclusion="success")
    run = control.check_run(world.repo, sha=head, name="tests", conclusion="failure")
    control.check_run(world.repo, sha=head, name="build", status="in_progress")
    control.status(world.repo, "success", as_user=world.human.login, sha=head, context="ext")
    pr = inspect_pr_state(gateway.client, world.repo, number, _actor(gateway, world))
    assert pr is not None and pr.status is PRStatus.OPEN and pr.head_sha == head
    assert pr.checks is not None
    assert pr.checks.passed == {"lint", "ext"}
    assert pr.checks.failing == {"tests"}
    assert pr.checks.pending == {"build"}
    # A re-run of the failing check that passes replaces the failure.
    control.check_run(world.repo, sha=head, name="tests", conclusion="success")
    rerun = inspect_pr_state(gateway.client, world.repo, number, _actor(gateway, world))
    assert rerun is not None and rerun.checks is not None and "tests" in rerun.checks.passed
    assert run


def test_failing_check_details_are_bounded(gateway: GitHubGateway, world: SimWorld) -> None:
    head = _branch(world)
    log = "\n".join(f"line {i}" for i in range(500)) + "\nFAILED test_fix.py::test_x\n"
    world.control.check_run(
        world.repo,
        sha=head,
        name="tests",
        conclusion="failure",
        title="1 failed",
        summary="test_x failed",
        log=log,
        annotations=[
            {
                "path": "src/fix.py",
                "start_line": 1,
                "end_line": 1,
                "annotation_level": "failure",
                "message": "assert 1 == 2",
            }
        ],
    )
    world.control.check_run(world.repo, sha=head, name="lint", conclusion="success")
    details = failing_check_details(gateway.client, world.repo, head)
    assert [d.name for d in details] == ["tests"]
    detail = details[0]
    assert "test_x failed" in detail.summary
    assert detail.annotations[0].path == "src/fix.py" and detail.annotations[0].line == 1
    assert detail.log_tail.endswith("FAILED test_fix.py::test_x")
    assert len(detail.log_tail.splitlines()) <= 80


def test_log_tail_bounds() -> None:
    assert log_tail("a\nb\nc\n", max_lines=2) == "b\nc"
    assert log_tail("x" * 100, max_chars=10) == "x" * 10


def test_rate_limit_exhaustion_is_a_value_with_reset_and_no_sleep(
    gateway: GitHubGateway, world: SimWorld, sleeps: SleepRecorder
) -> None:
    issue = world.control.create_issue(world.repo, "Fix", as_user=world.human.login)
    world.control.set_rate_limit(login=world.bot.login, remaining=0, reset_in=3000)
    result = gateway.close_issue(world.repo, issue)
    assert isinstance(result, RateLimited)
    assert result.resource == "core" and result.reset_at.year >= 2026
    assert sleeps.calls == []
    assert gateway.client.accounting.rate_limited == 1


def test_5xx_burst_retried_within_bounds(
    client: GitHubClient, world: SimWorld, sleeps: SleepRecorder
) -> None:
    world.control.add_fault(
        path=f"/repos/{world.repo}", method="GET", action="error", status=502, count=2
    )
    assert client.request("GET", f"/repos/{world.repo}").data["full_name"] == world.repo
    assert len(sleeps.calls) == 2
    world.control.add_fault(
        path=f"/repos/{world.repo}", method="GET", action="error", status=503, count=50
    )
    with pytest.raises(GitHubError) as excinfo:
        client.request("GET", f"/repos/{world.repo}")
    assert excinfo.value.retryable and excinfo.value.route == "GET /repos/{owner}/{repo}"
    assert len(sleeps.calls) == 2 + 3


def test_secondary_limit_honours_retry_after(
    client: GitHubClient, world: SimWorld, sleeps: SleepRecorder
) -> None:
    world.control.add_fault(
        path="/user", method="GET", action="secondary", status=429, retry_after=3, count=1
    )
    assert client.login == world.bot.login
    assert sleeps.calls == [3.0]


def test_errors_name_route_and_status_without_token(client: GitHubClient, world: SimWorld) -> None:
    with pytest.raises(GitHubError) as excinfo:
        client.request("GET", f"/repos/{world.repo}/issues/999")
    error = excinfo.value
    assert (error.route, error.status) == ("GET /repos/{owner}/{repo}/issues/{n}", 404)
    assert world.bot.token not in str(error) and world.bot.token not in repr(error)


def test_conditional_get_is_free_on_304(client: GitHubClient, world: SimWorld) -> None:
    path = f"/repos/{world.repo}/issues"
    world.control.reset_counters()
    first = client.request("GET", path, conditional=True)
    second = client.request("GET", path, conditional=True)
    assert not first.from_cache and second.from_cache and second.data == first.data
    tokens = world.control.counters()["tokens"][world.bot.login]
    assert tokens["requests"] == 2 and tokens["billed"] == 1 and tokens["not_modified"] == 1
