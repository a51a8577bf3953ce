"""REST routes for pull requests: list, create, update, merge, update the branch, reviews,
review comments and requested reviewers."""

from __future__ import annotations

from typing import Any

from orchestrator_sim.api import Call, Reply, RouteSpec, sort_key
from orchestrator_sim.errors import NotFound, Unprocessable
from orchestrator_sim.pull_update import update_branch as update_pull_branch
from orchestrator_sim.records import PullRequest
from orchestrator_sim.state import InlineComment, LineNotInDiff

REPO = "/repos/{owner}/{repo}"
PULL = REPO + "/pulls/{number:int}"

REVIEW_LINE_NOT_IN_DIFF = (
    "Pull request review thread line must be part of the diff and "
    "Pull request review thread diff hunk can't be blank"
)
NOT_COLLABORATOR = (
    "Reviews may only be requested from collaborators. One or more of the users or teams "
    "you specified is not a collaborator of the {repo} repository."
)

_REVIEW_EVENTS = {
    "APPROVE": "APPROVED",
    "REQUEST_CHANGES": "CHANGES_REQUESTED",
    "COMMENT": "COMMENTED",
}


def _branch_name(call: Call, value: str, owner: str) -> str:
    """``branch`` or ``owner:branch`` (forks are not emulated: another owner is a 422)."""
    if ":" in value:
        prefix, _, branch = value.partition(":")
        if prefix.lower() != owner.lower():
            raise Unprocessable.field("PullRequest", "head", "invalid", "forks are not emulated")
        return branch
    return value


def list_pulls(call: Call) -> Reply:
    repo = call.repo()
    state = call.query_choice("state", ("open", "closed", "all"), "open")
    sort = call.query_choice(
        "sort", ("created", "updated", "popularity", "long-running"), "created"
    )
    direction = call.query_choice("direction", ("asc", "desc"), "desc")
    head = call.query.get("head")
    base = call.query.get("base")
    head_owner, head_branch = None, None
    if head:
        head_owner, _, head_branch = head.partition(":") if ":" in head else (head, "", "")
    with call.state.lock:
        items: list[PullRequest] = []
        for pr in call.state.index(repo).pulls_on(head_branch, base):
            issue = repo.issues[pr.number]
            if state not in ("all", issue.state):
                continue
            if head_owner is not None:
                if head_owner.lower() != repo.owner.lower():
                    continue
                if head_branch and pr.head_ref != head_branch:
                    continue
            if base and pr.base_ref != base:
                continue
            items.append(pr)
        key = sort_key("updated" if sort == "updated" else "created")
        items.sort(key=lambda pr: key(repo.issues[pr.number]))
        if direction == "desc":
            items.reverse()
        return call.paged(items, lambda pr: call.shapes.pull(repo, pr, full=False))


def create_pull(call: Call) -> Reply:
    repo = call.repo("write")
    data = call.json_object()
    title = call.required(data, "title", str, "PullRequest")
    head = _branch_name(call, call.required(data, "head", str, "PullRequest"), repo.owner)
    base = call.required(data, "base", str, "PullRequest")
    body = call.field(data, "body", str, "PullRequest")
    draft = bool(call.field(data, "draft", bool, "PullRequest"))
    with call.state.lock:
        _issue, pr = call.state.create_pull(
            repo, call.user.login, title, head=head, base=base, body=body, draft=draft
        )
        pr.maintainer_can_modify = bool(data.get("maintainer_can_modify", False))
        return Reply(201, call.shapes.pull(repo, pr, full=True))


def get_pull(call: Call) -> Reply:
    repo = call.repo()
    with call.state.lock:
        pr = call.state.pull(repo, call.number("number"))
        return Reply(200, call.shapes.pull(repo, pr, full=True))


def update_pull(call: Call) -> Reply:
    repo = call.repo()
    data = call.json_object()
    number = call.number("number")
    with call.state.lock:
        issue = call.state.issue(repo, number)
        call.require(repo, "write", unless_author=issue.author)
        pr = call.state.update_pull(
            repo,
            number,
            call.user.login,
            title=call.field(data, "title", str, "PullRequest"),
            body=call.field(data, "body", str, "PullRequest"),
            state=call.field(data, "state", str, "PullRequest"),
            base=call.field(data, "base", str, "PullRequest"),
        )
        return Reply(200, call.shapes.pull(repo, pr, full=True))


def merge_pull(call: Call) -> Reply:
    repo = call.repo("write")
    data = call.json_object()
    method = call.field(data, "merge_method", str, "PullRequest") or "merge"
    new_sha = call.emulator.merge_pull(
        repo,
        call.number("number"),
        call.user.login,
        sha=call.field(data, "sha", str, "PullRequest"),
        method=method,
        title=call.field(data, "commit_title", str, "PullRequest"),
        message=call.field(data, "commit_message", str, "PullRequest"),
    )
    return Reply(
        200, {"sha": new_sha, "merged": True, "message": "Pull Request successfully merged"}
    )


def update_branch(call: Call) -> Reply:
    """GitHub's "Update branch": 202 once the base is merged into the head (done at once)."""
    repo = call.repo("write")
    # The body is optional and may be null.
    data: dict[str, Any] = {} if call.json() is None else call.json_object()
    number = call.number("number")
    update_pull_branch(
        call.emulator,
        repo,
        number,
        call.user.login,
        expected_head_sha=call.field(data, "expected_head_sha", str, "PullRequest"),
    )
    url = f"{call.base_url}/repos/{repo.owner}/{repo.name}/pulls/{number}"
    return Reply(202, {"message": "Updating pull request branch.", "url": url})


def check_merged(call: Call) -> Reply:
    repo = call.repo()
    with call.state.lock:
        pr = call.state.pull(repo, call.number("number"))
        if not pr.merged:
            raise NotFound("merge")
        return Reply(204)


def list_pull_commits(call: Call) -> Reply:
    """The pull request's commits as GitHub lists them: by author date, not branch order."""
    repo = call.repo()
    with call.state.lock:
        pr = call.state.pull(repo, call.number("number"))
    infos = call.state.pull_commits(repo, pr)
    with call.state.lock:
        return call.paged(infos, lambda info: call.shapes.commit(repo, info))


# ----------------------------------------------------------------- reviews


def _inline_comments(data: dict[str, Any]) -> list[InlineComment]:
    raw = data.get("comments") or []
    if not isinstance(raw, list):
        raise Unprocessable.field("PullRequestReview", "comments", message="must be a list")
    result = []
    for index, item in enumerate(raw):
        if not isinstance(item, dict):
            raise Unprocessable.field("PullRequestReview", f"comments[{index}]", message="object")
        path, body = item.get("path"), item.get("body")
        line = item.get("line", item.get("position"))
        side = item.get("side", "RIGHT")
        if not isinstance(path, str) or not isinstance(body, str) or not isinstance(line, int):
            raise Unprocessable.field(
                "PullRequestReview",
                f"comments[{index}]",
                "missing_field",
                "inline comments need path, line and body",
            )
        result.append(InlineComment(path=path, line=line, body=body, side=str(side)))
    return result


def list_reviews(call: Call) -> Reply:
    repo = call.repo()
    with call.state.lock:
        call.state.pull(repo, call.number("number"))
        reviews = call.state.pull_reviews(repo, call.number("number"))
        return call.paged(reviews, lambda r: call.shapes.review(repo, r))


def get_review(call: Call) -> Reply:
    repo = call.repo()
    with call.state.lock:
        review = repo.reviews.get(call.number("review_id"))
        if review is None or review.pull_number != call.number("number"):
            raise NotFound("review")
        return Reply(200, call.shapes.review(repo, review))


def create_review(call: Call) -> Reply:
    repo = call.repo()
    data = call.json_object()
    event = call.field(data, "event", str, "PullRequestReview")
    if event not in _REVIEW_EVENTS:
        raise Unprocessable.field(
            "PullRequestReview",
            "event",
            "invalid",
            "event must be APPROVE, REQUEST_CHANGES or COMMENT (pending reviews are not emulated)",
        )
    with call.state.lock:
        try:
            review = call.state.submit_review(
                repo,
                call.number("number"),
                call.user.login,
                _REVIEW_EVENTS[event],
                body=call.field(data, "body", str, "PullRequestReview") or "",
                commit_id=call.field(data, "commit_id", str, "PullRequestReview"),
                comments=_inline_comments(data),
            )
        except LineNotInDiff as exc:
            # The reviews endpoint words it as sentences, not field objects.
            raise Unprocessable("Unprocessable Entity", errors=[REVIEW_LINE_NOT_IN_DIFF]) from exc
        return Reply(200, call.shapes.review(repo, review))


def list_review_comments(call: Call) -> Reply:
    repo = call.repo()
    since = call.since()
    sort = call.query_choice("sort", ("created", "updated"), "created")
    direction = call.query_choice("direction", ("asc", "desc"), "asc")
    with call.state.lock:
        call.state.pull(repo, call.number("number"))
        items = [
            c
            for c in call.state.pull_review_comments(repo, call.number("number"))
            if not since or c.updated_at >= since
        ]
        items.sort(key=sort_key(sort))
        if direction == "desc":
            items.reverse()
        return call.paged(items, lambda c: call.shapes.review_comment(repo, c))


def get_review_comment(call: Call) -> Reply:
    repo = call.repo()
    with call.state.lock:
        comment = repo.review_comments.get(call.number("comment_id"))
        if comment is None:
            raise NotFound("review comment")
        return Reply(200, call.shapes.review_comment(repo, comment))


def create_review_comment(call: Call) -> Reply:
    repo = call.repo()
    data = call.json_object()
    number = call.number("number")
    body = call.required(data, "body", str, "PullRequestReviewComment")
    reply_to = call.field(data, "in_reply_to", int, "PullRequestReviewComment")
    with call.state.lock:
        if reply_to is not None:
            comment = call.state.reply_to_comment(repo, number, call.user.login, reply_to, body)
        else:
            path = call.required(data, "path", str, "PullRequestReviewComment")
            line = call.field(data, "line", int, "PullRequestReviewComment")
            line = (
                line
                if line is not None
                else call.field(data, "position", int, "PullRequestReviewComment")
            )
            if line is None:
                raise Unprocessable.field("PullRequestReviewComment", "line", "missing_field")
            side = call.field(data, "side", str, "PullRequestReviewComment") or "RIGHT"
            comment = call.state.add_review_comment(
                repo,
                number,
                call.user.login,
                InlineComment(path=path, line=line, body=body, side=side),
                commit_id=call.field(data, "commit_id", str, "PullRequestReviewComment"),
            )
        return Reply(201, call.shapes.review_comment(repo, comment))


def reply_review_comment(call: Call) -> Reply:
    repo = call.repo()
    data = call.json_object()
    body = call.required(data, "body", str, "PullRequestReviewComment")
    with call.state.lock:
        comment = call.state.reply_to_comment(
            repo, call.number("number"), call.user.login, call.number("comment_id"), body
        )
        return Reply(201, call.shapes.review_comment(repo, comment))


# ------------------------------------------------------- requested reviewers


def _reviewer_logins(data: dict[str, Any]) -> list[str]:
    raw = data.get("reviewers") or []
    if not isinstance(raw, list) or not all(isinstance(r, str) for r in raw):
        raise Unprocessable.field("PullRequest", "reviewers", message="reviewers must be logins")
    return list(raw)


def list_requested_reviewers(call: Call) -> Reply:
    repo = call.repo()
    with call.state.lock:
        pr = call.state.pull(repo, call.number("number"))
        return Reply(200, call.shapes.review_requests(pr))


def request_reviewers(call: Call) -> Reply:
    repo = call.repo()
    data = call.json_object()
    number = call.number("number")
    logins = _reviewer_logins(data)
    with call.state.lock:
        issue = call.state.issue(repo, number)
        call.require(repo, "triage", unless_author=issue.author)
        for login in logins:
            user = call.state.find_user(login)
            if user is None or not call.state.is_collaborator(repo, user.login):
                raise Unprocessable(NOT_COLLABORATOR.format(repo=repo.full_name))
        pr = call.state.request_reviewers(repo, number, call.user.login, logins)
        return Reply(201, call.shapes.pull(repo, pr, full=False))


def remove_requested_reviewers(call: Call) -> Reply:
    repo = call.repo()
    data = call.json_object()
    number = call.number("number")
    with call.state.lock:
        issue = call.state.issue(repo, number)
        call.require(repo, "triage", unless_author=issue.author)
        pr = call.state.remove_requested_reviewers(
            repo, number, call.user.login, _reviewer_logins(data)
        )
        return Reply(200, call.shapes.pull(repo, pr, full=False))


ROUTES: tuple[RouteSpec, ...] = (
    RouteSpec("GET", REPO + "/pulls", list_pulls, cacheable=True),
    RouteSpec("POST", REPO + "/pulls", create_pull),
    RouteSpec("GET", REPO + "/pulls/comments/{comment_id:int}", get_review_comment, cacheable=True),
    RouteSpec("GET", PULL, get_pull),
    RouteSpec("PATCH", PULL, update_pull),
    RouteSpec("PUT", PULL + "/merge", merge_pull),
    RouteSpec("GET", PULL + "/merge", check_merged),
    RouteSpec("PUT", PULL + "/update-branch", update_branch),
    RouteSpec("GET", PULL + "/commits", list_pull_commits),
    RouteSpec("GET", PULL + "/reviews", list_reviews, cacheable=True),
    RouteSpec("POST", PULL + "/reviews", create_review),
    RouteSpec("GET", PULL + "/reviews/{review_id:int}", get_review, cacheable=True),
    RouteSpec("GET", PULL + "/comments", list_review_comments, cacheable=True),
    RouteSpec("POST", PULL + "/comments", create_review_comment),
    RouteSpec("POST", PULL + "/comments/{comment_id:int}/replies", reply_review_comment),
    RouteSpec("GET", PULL + "/requested_reviewers", list_requested_reviewers, cacheable=True),
    RouteSpec("POST", PULL + "/requested_reviewers", request_reviewers),
    RouteSpec("DELETE", PULL + "/requested_reviewers", remove_requested_reviewers),
)
