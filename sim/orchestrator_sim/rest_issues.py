"""REST routes for issues, labels, issue comments and issue events."""

from __future__ import annotations

from typing import Any

from orchestrator_sim.api import Call, Reply, RouteSpec, sort_key
from orchestrator_sim.errors import NotFound, Unprocessable
from orchestrator_sim.records import IssueComment
from orchestrator_sim.state_issues import IssueQuery

REPO = "/repos/{owner}/{repo}"
ISSUE = REPO + "/issues/{number:int}"


def _label_names(data: Any) -> list[str]:
    """Label names from a body that is a list, or an object with ``labels``."""
    items = data.get("labels") if isinstance(data, dict) else data
    if items is None:
        items = []
    if not isinstance(items, list):
        raise Unprocessable.field("Label", "labels", message="labels must be a list")
    names = []
    for item in items:
        name = item.get("name") if isinstance(item, dict) else item
        if not isinstance(name, str) or not name.strip():
            raise Unprocessable.field("Label", "labels", message="each label must be a name")
        names.append(name)
    return names


def _logins(call: Call, data: dict[str, Any]) -> list[str] | None:
    raw = data.get("assignees")
    single = data.get("assignee")
    if raw is None and single is None:
        return None
    items = raw if raw is not None else [single]
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        raise Unprocessable.field("Issue", "assignees", message="assignees must be logins")
    for login in items:
        if call.state.find_user(login) is None:
            raise Unprocessable.field("Issue", "assignees", "invalid", f"unknown user {login}")
    return list(items)


# ------------------------------------------------------------------ issues


def list_issues(call: Call) -> Reply:
    repo = call.repo()
    query = IssueQuery(
        state=call.query_choice("state", ("open", "closed", "all"), "open"),
        labels=tuple(n.strip() for n in call.query.get("labels", "").split(",") if n.strip()),
        since=call.since(),
        creator=call.query.get("creator") or None,
        assignee=call.query.get("assignee") or None,
        sort=call.query_choice("sort", ("created", "updated", "comments"), "created"),
        direction=call.query_choice("direction", ("asc", "desc"), "desc"),
    )
    with call.state.lock:
        items = call.state.list_issues(repo, query)
        return call.paged(items, lambda issue: call.shapes.issue(repo, issue))


def create_issue(call: Call) -> Reply:
    repo = call.repo()
    data = call.json_object()
    title = data.get("title")
    if isinstance(title, int) and not isinstance(title, bool):
        title = str(title)
    if not isinstance(title, str) or not title.strip():
        raise Unprocessable.field("Issue", "title", "missing_field")
    body = call.field(data, "body", str, "Issue")
    # Like GitHub, labels and assignees from someone without triage are dropped silently.
    triage = call.allowed(repo, "triage")
    labels = _label_names(data) if triage else []
    assignees = (_logins(call, data) or []) if triage else []
    with call.state.lock:
        issue = call.state.create_issue(
            repo, call.user.login, title, body=body, labels=labels, assignees=assignees
        )
        return Reply(201, call.shapes.issue(repo, issue))


def get_issue(call: Call) -> Reply:
    repo = call.repo()
    with call.state.lock:
        issue = call.state.issue(repo, call.number("number"))
        return Reply(200, call.shapes.issue(repo, issue))


def update_issue(call: Call) -> Reply:
    repo = call.repo()
    data = call.json_object()
    number = call.number("number")
    with call.state.lock:
        issue = call.state.issue(repo, number)
        call.require(repo, "triage", unless_author=issue.author)
        title = call.field(data, "title", str, "Issue")
        body = call.field(data, "body", str, "Issue")
        state = call.field(data, "state", str, "Issue")
        reason = call.field(data, "state_reason", str, "Issue")
        if reason is not None and reason not in (
            "completed",
            "not_planned",
            "reopened",
            "duplicate",
        ):
            raise Unprocessable.field("Issue", "state_reason", message="unknown state_reason")
        labels = _label_names(data) if "labels" in data else None
        assignees = _logins(call, data)
        if labels is not None or assignees is not None:
            call.require(repo, "triage")
        call.state.update_issue(
            repo,
            number,
            call.user.login,
            title=title,
            body=body,
            state=state,
            state_reason=reason,
        )
        if labels is not None:
            call.state.set_labels(repo, number, call.user.login, labels)
        if assignees is not None:
            issue.assignees = [call.state.user(a).login for a in assignees]
        return Reply(200, call.shapes.issue(repo, issue))


# ------------------------------------------------------------------ labels


def list_issue_labels(call: Call) -> Reply:
    repo = call.repo()
    with call.state.lock:
        issue = call.state.issue(repo, call.number("number"))
        labels = call.state.issue_labels(repo, issue)
        return call.paged(labels, lambda label: call.shapes.label(repo, label))


def add_labels(call: Call) -> Reply:
    repo = call.repo("triage")
    names = _label_names(call.json())
    if not names:
        raise Unprocessable.field("Label", "labels", "missing_field")
    with call.state.lock:
        labels = call.state.add_labels(repo, call.number("number"), call.user.login, names)
        return Reply(200, [call.shapes.label(repo, label) for label in labels])


def set_labels(call: Call) -> Reply:
    repo = call.repo("triage")
    names = _label_names(call.json())
    with call.state.lock:
        labels = call.state.set_labels(repo, call.number("number"), call.user.login, names)
        return Reply(200, [call.shapes.label(repo, label) for label in labels])


def remove_label(call: Call) -> Reply:
    repo = call.repo("triage")
    with call.state.lock:
        try:
            labels = call.state.remove_label(
                repo, call.number("number"), call.user.login, call.params["name"]
            )
        except NotFound as exc:
            raise NotFound("label") from exc
        return Reply(200, [call.shapes.label(repo, label) for label in labels])


def remove_all_labels(call: Call) -> Reply:
    repo = call.repo("triage")
    with call.state.lock:
        call.state.set_labels(repo, call.number("number"), call.user.login, [])
        return Reply(204)


def list_repo_labels(call: Call) -> Reply:
    repo = call.repo()
    with call.state.lock:
        labels = sorted(repo.labels.values(), key=lambda label: label.id)
        return call.paged(labels, lambda label: call.shapes.label(repo, label))


def get_repo_label(call: Call) -> Reply:
    repo = call.repo()
    with call.state.lock:
        label = call.state.find_label(repo, call.params["name"])
        if label is None:
            raise NotFound("label")
        return Reply(200, call.shapes.label(repo, label))


def create_repo_label(call: Call) -> Reply:
    repo = call.repo("write")
    data = call.json_object()
    name = call.required(data, "name", str, "Label")
    color = call.field(data, "color", str, "Label") or "ededed"
    description = call.field(data, "description", str, "Label")
    with call.state.lock:
        label = call.state.create_label(repo, name, color, description)
        return Reply(201, call.shapes.label(repo, label))


def delete_repo_label(call: Call) -> Reply:
    repo = call.repo("write")
    call.state.delete_label(repo, call.user.login, call.params["name"])
    return Reply(204, None)


# ---------------------------------------------------------------- comments


def _comment_sorted(call: Call, items: list[IssueComment]) -> list[IssueComment]:
    sort = call.query_choice("sort", ("created", "updated"), "created")
    direction = call.query_choice("direction", ("asc", "desc"), "asc")
    items.sort(key=sort_key(sort))
    if direction == "desc":
        items.reverse()
    return items


def list_comments(call: Call) -> Reply:
    repo = call.repo()
    since = call.since()
    with call.state.lock:
        items = call.state.issue_comments(repo, call.number("number"))
        items = [c for c in items if not since or c.updated_at >= since]
        return call.paged(items, lambda c: call.shapes.comment(repo, c))


def list_repo_comments(call: Call) -> Reply:
    repo = call.repo()
    since = call.since()
    with call.state.lock:
        items = [c for c in repo.comments.values() if not since or c.updated_at >= since]
        items = _comment_sorted(call, items)
        return call.paged(items, lambda c: call.shapes.comment(repo, c))


def create_comment(call: Call) -> Reply:
    repo = call.repo()
    data = call.json_object()
    body = call.required(data, "body", str, "IssueComment")
    with call.state.lock:
        comment = call.state.add_comment(repo, call.number("number"), call.user.login, body)
        return Reply(201, call.shapes.comment(repo, comment))


def get_comment(call: Call) -> Reply:
    repo = call.repo()
    with call.state.lock:
        comment = call.state.comment(repo, call.number("comment_id"))
        return Reply(200, call.shapes.comment(repo, comment))


def update_comment(call: Call) -> Reply:
    repo = call.repo()
    data = call.json_object()
    body = call.required(data, "body", str, "IssueComment")
    with call.state.lock:
        comment = call.state.comment(repo, call.number("comment_id"))
        call.require(repo, "write", unless_author=comment.author)
        call.state.update_comment(repo, comment.id, body, editor=call.user.login)
        return Reply(200, call.shapes.comment(repo, comment))


def delete_comment(call: Call) -> Reply:
    repo = call.repo()
    with call.state.lock:
        comment = call.state.comment(repo, call.number("comment_id"))
        call.require(repo, "write", unless_author=comment.author)
        call.state.delete_comment(repo, comment.id)
        return Reply(204)


# ------------------------------------------------------------------ events


def list_events(call: Call) -> Reply:
    repo = call.repo()
    with call.state.lock:
        events = call.state.issue_events(repo, call.number("number"))
        return call.paged(events, lambda e: call.shapes.event(repo, e))


ROUTES: tuple[RouteSpec, ...] = (
    RouteSpec("GET", REPO + "/issues", list_issues, cacheable=True),
    RouteSpec("POST", REPO + "/issues", create_issue),
    RouteSpec("GET", REPO + "/issues/comments", list_repo_comments, cacheable=True),
    RouteSpec("GET", REPO + "/issues/comments/{comment_id:int}", get_comment, cacheable=True),
    RouteSpec("PATCH", REPO + "/issues/comments/{comment_id:int}", update_comment),
    RouteSpec("DELETE", REPO + "/issues/comments/{comment_id:int}", delete_comment),
    RouteSpec("GET", ISSUE, get_issue, cacheable=True),
    RouteSpec("PATCH", ISSUE, update_issue),
    RouteSpec("GET", ISSUE + "/labels", list_issue_labels, cacheable=True),
    RouteSpec("POST", ISSUE + "/labels", add_labels),
    RouteSpec("PUT", ISSUE + "/labels", set_labels),
    RouteSpec("DELETE", ISSUE + "/labels", remove_all_labels),
    RouteSpec("DELETE", ISSUE + "/labels/{name:path}", remove_label),
    RouteSpec("GET", ISSUE + "/comments", list_comments, cacheable=True),
    RouteSpec("POST", ISSUE + "/comments", create_comment),
    RouteSpec("GET", ISSUE + "/events", list_events, cacheable=True),
    RouteSpec("GET", REPO + "/labels", list_repo_labels, cacheable=True),
    RouteSpec("POST", REPO + "/labels", create_repo_label),
    RouteSpec("GET", REPO + "/labels/{name:path}", get_repo_label, cacheable=True),
    RouteSpec("DELETE", REPO + "/labels/{name:path}", delete_repo_label),
)
