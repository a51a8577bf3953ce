"""Every REST operation the emulator serves answers what GitHub's OpenAPI description says.

Each case makes a real request through a running emulator and validates the
answer against the schema GitHub publishes for that operation and status. A
last test fails when the emulator gains a route no case covers. The cases
about what a merge needs (update-branch, merge settings, deployments) live in
`tests.contract.rest_cases_merging`, those about rulesets in
`tests.contract.rest_rules_cases`; the scene is the ``scene`` fixture of
``tests/contract/conftest.py``.
"""

from __future__ import annotations

import secrets
from typing import Any
from urllib.parse import quote

import pytest

from orchestrator_sim.app import all_routes
from tests.contract.openapi_contract import (
    assert_is_basic_error,
    assert_matches_openapi,
    load_contract,
)
from tests.contract.rest_cases_merging import MERGING_CASES
from tests.contract.rest_rules_cases import RULES_CASES
from tests.contract.rest_scene import Case, R, Scene, fetch, send


def _merge_unknown(s: Scene) -> tuple[str, Any]:
    number, head = s.fresh_pull(settle=False)
    return f"{s.repo}/pulls/{number}/merge", {"sha": head}


def _merge_draft(s: Scene) -> tuple[str, Any]:
    number, head = s.fresh_pull(draft=True)
    return f"{s.repo}/pulls/{number}/merge", {"sha": head}


def _merge_protected(s: Scene) -> tuple[str, Any]:
    number, head = s.fresh_pull(base=s.protected_base())
    return f"{s.repo}/pulls/{number}/merge", {"sha": head}


def _protection(s: Scene) -> tuple[str, Any]:
    return f"{s.repo}/branches/{s.protected_base()}/protection", None


def _outside_diff_comment(s: Scene) -> tuple[str, Any]:
    body = {"body": "Far away", "commit_id": s.head, "path": "README.md", "line": 1}
    return f"{s.repo}/pulls/{s.pull}/comments", body


def _outside_diff_review(s: Scene) -> tuple[str, Any]:
    comments = [{"path": "README.md", "line": 1, "body": "Far away"}]
    body = {"event": "COMMENT", "body": "Notes", "comments": comments}
    return f"{s.repo}/pulls/{s.pull}/reviews", body


def _merge_stale(s: Scene) -> tuple[str, Any]:
    number, _head = s.fresh_pull()
    return f"{s.repo}/pulls/{number}/merge", {"sha": "0" * 40}


def _merge_ok(s: Scene) -> tuple[str, Any]:
    number, head = s.fresh_pull()
    return f"{s.repo}/pulls/{number}/merge", {"sha": head, "merge_method": "squash"}


def _merge_refused(s: Scene) -> tuple[str, Any]:
    number, head = s.fresh_pull()
    s.world.control.set_mergeable(s.world.repo, number, False)
    return f"{s.repo}/pulls/{number}/merge", {"sha": head}


def _merged_check(s: Scene) -> tuple[str, Any]:
    number, _head = s.fresh_pull()
    s.world.control.merge(s.world.repo, number, as_user=s.world.human.login)
    return f"{s.repo}/pulls/{number}/merge", None


def _delete_label(s: Scene) -> tuple[str, Any]:
    # A label carried by an issue: deleting it takes it off the issue too.
    name = f"gone-{secrets.token_hex(3)}"
    s.world.control.create_issue(s.world.repo, "t", as_user="alice", labels=[name])
    return f"{s.repo}/labels/{name}", None


def _new_pull(s: Scene) -> tuple[str, Any]:
    branch = s.fresh_branch()
    return f"{s.repo}/pulls", {"title": "Contract PR", "head": branch, "base": "main"}


def _new_ref(s: Scene) -> tuple[str, Any]:
    return f"{s.repo}/git/refs", {"ref": f"refs/heads/new-{secrets.token_hex(4)}", "sha": s.head}


def _update_ref(s: Scene) -> tuple[str, Any]:
    branch = s.fresh_branch()
    return f"{s.repo}/git/refs/heads/{branch}", {"sha": s.head, "force": True}


def _delete_ref(s: Scene) -> tuple[str, Any]:
    return f"{s.repo}/git/refs/heads/{s.fresh_branch()}", None


def _review_comment(s: Scene) -> tuple[str, Any]:
    body = {"body": "Inline note", "commit_id": s.head, "path": "src/widgets.py", "line": 1}
    return f"{s.repo}/pulls/{s.pull}/comments", body


CASES = [
    Case("authenticated_user", "GET", "/user", 200, fetch(lambda s: "/user")),
    Case("user", "GET", "/users/{username}", 200, fetch(lambda s: "/users/alice")),
    Case("rate_limit", "GET", "/rate_limit", 200, fetch(lambda s: "/rate_limit")),
    Case("repository", "GET", R, 200, fetch(lambda s: s.repo)),
    Case(
        "permission",
        "GET",
        R + "/collaborators/{username}/permission",
        200,
        fetch(lambda s: f"{s.repo}/collaborators/alice/permission"),
    ),
    Case("branches", "GET", R + "/branches", 200, fetch(lambda s: f"{s.repo}/branches")),
    Case(
        "permission_without_push",
        "GET",
        R + "/collaborators/{username}/permission",
        403,
        fetch(lambda s: f"{s.repo}/collaborators/alice/permission"),
        who="reader",
        documented=False,
    ),
    Case(
        "branch", "GET", R + "/branches/{branch}", 200, fetch(lambda s: f"{s.repo}/branches/main")
    ),
    Case(
        "protected_branch",
        "GET",
        R + "/branches/{branch}",
        200,
        lambda s: (f"{s.repo}/branches/{s.protected_base()}", None),
    ),
    Case("protection", "GET", R + "/branches/{branch}/protection", 200, _protection, who="human"),
    Case(
        "not_protected",
        "GET",
        R + "/branches/{branch}/protection",
        404,
        fetch(lambda s: f"{s.repo}/branches/main/protection"),
        who="human",
    ),
    Case(
        "protection_needs_admin",
        "GET",
        R + "/branches/{branch}/protection",
        404,
        _protection,
    ),
    Case("ref", "GET", R + "/git/ref/{ref}", 200, fetch(lambda s: f"{s.repo}/git/ref/heads/main")),
    Case(
        "matching_refs",
        "GET",
        R + "/git/matching-refs/{ref}",
        200,
        fetch(lambda s: f"{s.repo}/git/matching-refs/heads/"),
    ),
    Case("create_ref", "POST", R + "/git/refs", 201, _new_ref),
    Case("update_ref", "PATCH", R + "/git/refs/{ref}", 200, _update_ref),
    Case("delete_ref", "DELETE", R + "/git/refs/{ref}", 204, _delete_ref),
    Case("commit", "GET", R + "/commits/{ref}", 200, fetch(lambda s: f"{s.repo}/commits/{s.head}")),
    Case(
        "check_runs",
        "GET",
        R + "/commits/{ref}/check-runs",
        200,
        fetch(lambda s: f"{s.repo}/commits/{s.head}/check-runs"),
    ),
    Case(
        "combined_status",
        "GET",
        R + "/commits/{ref}/status",
        200,
        fetch(lambda s: f"{s.repo}/commits/{s.head}/status"),
    ),
    Case(
        "statuses",
        "GET",
        R + "/commits/{ref}/statuses",
        200,
        fetch(lambda s: f"{s.repo}/commits/{s.head}/statuses"),
    ),
    Case(
        "statuses_older_spelling",
        "GET",
        R + "/commits/{ref}/statuses",
        200,
        fetch(lambda s: f"{s.repo}/statuses/{s.head}"),
        served_as=R + "/statuses/{sha}",
    ),
    Case(
        "create_status",
        "POST",
        R + "/statuses/{sha}",
        201,
        lambda s: (f"{s.repo}/statuses/{s.head}", {"state": "success", "context": "contract"}),
    ),
    Case(
        "check_run",
        "GET",
        R + "/check-runs/{check_run_id}",
        200,
        fetch(lambda s: f"{s.repo}/check-runs/{s.check_run_id}"),
    ),
    Case(
        "annotations",
        "GET",
        R + "/check-runs/{check_run_id}/annotations",
        200,
        fetch(lambda s: f"{s.repo}/check-runs/{s.check_run_id}/annotations"),
    ),
    Case(
        "job",
        "GET",
        R + "/actions/jobs/{job_id}",
        200,
        fetch(lambda s: f"{s.repo}/actions/jobs/{s.job_id}"),
    ),
    Case(
        "job_logs",
        "GET",
        R + "/actions/jobs/{job_id}/logs",
        302,
        fetch(lambda s: f"{s.repo}/actions/jobs/{s.job_id}/logs"),
    ),
    Case("issues", "GET", R + "/issues", 200, fetch(lambda s: f"{s.repo}/issues?state=all")),
    Case(
        "create_issue",
        "POST",
        R + "/issues",
        201,
        lambda s: (f"{s.repo}/issues", {"title": "New", "body": "text", "labels": ["bug"]}),
    ),
    Case(
        "create_issue_without_title",
        "POST",
        R + "/issues",
        422,
        lambda s: (f"{s.repo}/issues", {"body": "no title"}),
    ),
    Case(
        "repo_comments",
        "GET",
        R + "/issues/comments",
        200,
        fetch(lambda s: f"{s.repo}/issues/comments"),
    ),
    Case(
        "comment",
        "GET",
        R + "/issues/comments/{comment_id}",
        200,
        fetch(lambda s: f"{s.repo}/issues/comments/{s.comment_id}"),
    ),
    Case(
        "update_comment",
        "PATCH",
        R + "/issues/comments/{comment_id}",
        200,
        lambda s: (f"{s.repo}/issues/comments/{s.fresh_comment()}", {"body": "edited"}),
    ),
    Case(
        "delete_comment",
        "DELETE",
        R + "/issues/comments/{comment_id}",
        204,
        lambda s: (f"{s.repo}/issues/comments/{s.fresh_comment()}", None),
    ),
    Case(
        "issue",
        "GET",
        R + "/issues/{issue_number}",
        200,
        fetch(lambda s: f"{s.repo}/issues/{s.issue}"),
    ),
    Case(
        "issue_of_a_pull",
        "GET",
        R + "/issues/{issue_number}",
        200,
        fetch(lambda s: f"{s.repo}/issues/{s.pull}"),
    ),
    Case(
        "missing_issue",
        "GET",
        R + "/issues/{issue_number}",
        404,
        fetch(lambda s: f"{s.repo}/issues/999999"),
    ),
    Case(
        "update_issue",
        "PATCH",
        R + "/issues/{issue_number}",
        200,
        lambda s: (f"{s.repo}/issues/{s.issue}", {"title": "Widgets break on empty names!"}),
    ),
    Case(
        "issue_labels",
        "GET",
        R + "/issues/{issue_number}/labels",
        200,
        fetch(lambda s: f"{s.repo}/issues/{s.issue}/labels"),
    ),
    Case(
        "add_labels",
        "POST",
        R + "/issues/{issue_number}/labels",
        200,
        lambda s: (f"{s.repo}/issues/{s.issue}/labels", {"labels": ["triaged"]}),
    ),
    Case(
        "set_labels",
        "PUT",
        R + "/issues/{issue_number}/labels",
        200,
        lambda s: (f"{s.repo}/issues/{s.issue}/labels", {"labels": ["bug", "triaged"]}),
    ),
    Case(
        "remove_all_labels",
        "DELETE",
        R + "/issues/{issue_number}/labels",
        204,
        lambda s: (
            f"{s.repo}/issues/"
            f"{s.world.control.create_issue(s.world.repo, 't', as_user='alice', labels=['x'])}"
            "/labels",
            None,
        ),
    ),
    Case(
        "remove_label",
        "DELETE",
        R + "/issues/{issue_number}/labels/{name}",
        200,
        lambda s: (
            f"{s.repo}/issues/"
            f"{s.world.control.create_issue(s.world.repo, 't', as_user='alice', labels=['y z'])}"
            f"/labels/{quote('y z')}",
            None,
        ),
    ),
    Case(
        "issue_comments",
        "GET",
        R + "/issues/{issue_number}/comments",
        200,
        fetch(lambda s: f"{s.repo}/issues/{s.issue}/comments"),
    ),
    Case(
        "create_comment",
        "POST",
        R + "/issues/{issue_number}/comments",
        201,
        lambda s: (f"{s.repo}/issues/{s.issue}/comments", {"body": "A new comment"}),
    ),
    Case(
        "issue_events",
        "GET",
        R + "/issues/{issue_number}/events",
        200,
        fetch(lambda s: f"{s.repo}/issues/{s.issue}/events"),
    ),
    Case("labels", "GET", R + "/labels", 200, fetch(lambda s: f"{s.repo}/labels")),
    Case(
        "create_label",
        "POST",
        R + "/labels",
        201,
        lambda s: (f"{s.repo}/labels", {"name": f"l-{secrets.token_hex(3)}", "color": "00ff00"}),
    ),
    Case("label", "GET", R + "/labels/{name}", 200, fetch(lambda s: f"{s.repo}/labels/bug")),
    Case("delete_label", "DELETE", R + "/labels/{name}", 204, _delete_label),
    Case("pulls", "GET", R + "/pulls", 200, fetch(lambda s: f"{s.repo}/pulls?state=all")),
    Case("create_pull", "POST", R + "/pulls", 201, _new_pull),
    Case(
        "review_comment",
        "GET",
        R + "/pulls/comments/{comment_id}",
        200,
        fetch(lambda s: f"{s.repo}/pulls/comments/{s.review_comment_id}"),
    ),
    Case(
        "pull", "GET", R + "/pulls/{pull_number}", 200, fetch(lambda s: f"{s.repo}/pulls/{s.pull}")
    ),
    Case(
        "update_pull",
        "PATCH",
        R + "/pulls/{pull_number}",
        200,
        lambda s: (f"{s.repo}/pulls/{s.pull}", {"body": "Fixes the empty name case."}),
    ),
    Case("merge", "PUT", R + "/pulls/{pull_number}/merge", 200, _merge_ok),
    Case("merge_stale_sha", "PUT", R + "/pulls/{pull_number}/merge", 409, _merge_stale),
    Case("merge_unmergeable", "PUT", R + "/pulls/{pull_number}/merge", 405, _merge_refused),
    Case("merge_unknown", "PUT", R + "/pulls/{pull_number}/merge", 405, _merge_unknown),
    Case("merge_draft", "PUT", R + "/pulls/{pull_number}/merge", 405, _merge_draft),
    Case("merge_protected", "PUT", R + "/pulls/{pull_number}/merge", 405, _merge_protected),
    Case(
        "create_draft_pull",
        "POST",
        R + "/pulls",
        201,
        lambda s: (
            f"{s.repo}/pulls",
            {"title": "Draft", "head": s.fresh_branch(), "base": "main", "draft": True},
        ),
    ),
    Case("merged_check", "GET", R + "/pulls/{pull_number}/merge", 204, _merged_check),
    Case(
        "not_merged_check",
        "GET",
        R + "/pulls/{pull_number}/merge",
        404,
        fetch(lambda s: f"{s.repo}/pulls/{s.pull}/merge"),
    ),
    Case(
        "pull_commits",
        "GET",
        R + "/pulls/{pull_number}/commits",
        200,
        fetch(lambda s: f"{s.repo}/pulls/{s.pull}/commits"),
    ),
    Case(
        "reviews",
        "GET",
        R + "/pulls/{pull_number}/reviews",
        200,
        fetch(lambda s: f"{s.repo}/pulls/{s.pull}/reviews"),
    ),
    Case(
        "create_review",
        "POST",
        R + "/pulls/{pull_number}/reviews",
        200,
        lambda s: (f"{s.repo}/pulls/{s.pull}/reviews", {"event": "COMMENT", "body": "Noted."}),
    ),
    Case(
        "review",
        "GET",
        R + "/pulls/{pull_number}/reviews/{review_id}",
        200,
        fetch(lambda s: f"{s.repo}/pulls/{s.pull}/reviews/{s.review_id}"),
    ),
    Case(
        "review_comments",
        "GET",
        R + "/pulls/{pull_number}/comments",
        200,
        fetch(lambda s: f"{s.repo}/pulls/{s.pull}/comments"),
    ),
    Case(
        "create_review_comment", "POST", R + "/pulls/{pull_number}/comments", 201, _review_comment
    ),
    Case(
        "review_comment_outside_diff",
        "POST",
        R + "/pulls/{pull_number}/comments",
        422,
        _outside_diff_comment,
    ),
    Case(
        "review_outside_diff",
        "POST",
        R + "/pulls/{pull_number}/reviews",
        422,
        _outside_diff_review,
    ),
    Case(
        "reply_review_comment",
        "POST",
        R + "/pulls/{pull_number}/comments/{comment_id}/replies",
        201,
        lambda s: (
            f"{s.repo}/pulls/{s.pull}/comments/{s.review_comment_id}/replies",
            {"body": "Done."},
        ),
    ),
    Case(
        "requested_reviewers",
        "GET",
        R + "/pulls/{pull_number}/requested_reviewers",
        200,
        fetch(lambda s: f"{s.repo}/pulls/{s.pull}/requested_reviewers"),
    ),
    Case(
        "request_reviewers",
        "POST",
        R + "/pulls/{pull_number}/requested_reviewers",
        201,
        lambda s: (f"{s.repo}/pulls/{s.pull}/requested_reviewers", {"reviewers": ["alice"]}),
    ),
    Case(
        "request_review_from_outsider",
        "POST",
        R + "/pulls/{pull_number}/requested_reviewers",
        422,
        lambda s: (f"{s.repo}/pulls/{s.pull}/requested_reviewers", {"reviewers": ["nobody"]}),
    ),
    Case(
        "remove_requested_reviewers",
        "DELETE",
        R + "/pulls/{pull_number}/requested_reviewers",
        200,
        lambda s: (f"{s.repo}/pulls/{s.pull}/requested_reviewers", {"reviewers": ["alice"]}),
    ),
    *MERGING_CASES,
    *RULES_CASES,
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_answer_matches_githubs_description(scene: Scene, case: Case) -> None:
    status, body = send(scene, case)

    assert status == case.status, f"expected {case.status}, got {status}: {body}"
    if case.documented:
        assert_matches_openapi(case.method, case.template, status, body)
    else:
        assert_is_basic_error(body)


def _github_template(path: str) -> str:
    """Starlette's ``{number:int}`` becomes GitHub's ``{…}`` at the same position."""
    return "/".join("{}" if part.startswith("{") else part for part in path.split("/"))


def test_every_emulated_operation_has_a_contract_case() -> None:
    covered = {(c.method, _github_template(c.served_as or c.template)) for c in CASES}
    missing = sorted(
        f"{route.method} {route.path}"
        for route in all_routes()
        if (route.method, _github_template(route.path)) not in covered
    )
    assert missing == []


def test_every_case_names_an_operation_github_documents() -> None:
    contract = load_contract()
    for case in CASES:
        if case.documented:
            contract.response_pointer(case.method, case.template, case.status)
        else:
            contract.operation(case.method, case.template)
