"""The Linear control API under ``/_control/linear``: the humans and the budget around the tracker.

Tests, the demo and ``orchestrator sim linear`` use it to create users (with
API keys; members, guests, admins or app users), change their role or rename
them (as each user may), teams with workflow states, projects, labels and
issues, to move an issue or label it as someone (``as``: the user whose change
the issue's history records; without it, an automation's), comment as someone,
relate issues, set rate limits and read the counters. ``POST
/_control/linear/seed`` creates thousands of issues in one call, as the GitHub
side's bulk seed does. Like the GitHub control API it is never billed, needs no
key, and answers errors as ``{"error": {"code", "message"}}``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from orchestrator_sim.control_steps import ControlError, field_value
from orchestrator_sim.linear.records import LinearIssue, LinearUser
from orchestrator_sim.linear.state import LinearInputError
from orchestrator_sim.linear.world import LinearWorld
from orchestrator_sim.method_routes import method_routes

PREFIX = "/_control/linear"
# The most issues one seed call creates; ``{issue}`` in a seed's title is each one's number.
MAX_SEED = 50_000
SEED_NUMBER = "{issue}"
ISSUE = PREFIX + "/issues/{ref}"

Handler = Callable[[LinearWorld, dict[str, Any], dict[str, Any]], Any]


def user_json(user: LinearUser) -> dict[str, Any]:
    """A user as the control API shows it (never its key or token)."""
    return {
        "id": user.id,
        "name": user.display_name,
        "full_name": user.name,
        "email": user.email,
        "git_username": user.git_username,
        "has_api_key": user.api_key is not None,
        "has_oauth_token": user.oauth_token is not None,
        "active": user.active,
        "guest": user.guest,
        "admin": user.admin,
        "app": user.app,
    }


def issue_json(world: LinearWorld, issue: LinearIssue) -> dict[str, Any]:
    """An issue with its state, labels, comments, attachments and blockers."""
    state = world.state
    with state.lock:
        blockers = [
            state.issues[r.issue_id].identifier
            for r in state.relations.values()
            if r.type == "blocks" and r.related_issue_id == issue.id
        ]
        return {
            "id": issue.id,
            "identifier": issue.identifier,
            "title": issue.title,
            "description": issue.description,
            "priority": issue.priority,
            "state": state.states[issue.state_id].name,
            "state_type": state.states[issue.state_id].type,
            "team": state.teams[issue.team_id].key,
            "project": state.projects[issue.project_id].name if issue.project_id else None,
            "assignee": state.users[issue.assignee_id].display_name if issue.assignee_id else None,
            "labels": [state.labels[i].name for i in issue.label_ids if i in state.labels],
            "branch_name": state.branch_name(issue, None),
            "url": state.issue_url(issue),
            "created_at": issue.created_at,
            "updated_at": issue.updated_at,
            "blocked_by": blockers,
            "comments": [
                {
                    "id": c.id,
                    "user": state.users[c.user_id].display_name,
                    "body": c.body,
                    "created_at": c.created_at,
                    "updated_at": c.updated_at,
                    "edited_at": c.edited_at,
                }
                for c in sorted(state.comments.values(), key=lambda c: (c.created_at, c.id))
                if c.issue_id == issue.id
            ],
            "history": history_json(world, issue),
            "attachments": [
                {
                    "id": a.id,
                    "url": a.url,
                    "title": a.title,
                    "subtitle": a.subtitle,
                    "metadata": json.loads(a.metadata_json),
                }
                for a in state.attachments.values()
                if a.issue_id == issue.id
            ],
        }


def history_json(world: LinearWorld, issue: LinearIssue) -> list[dict[str, Any]]:
    """The issue's history, oldest first: who moved it or changed its labels, and how."""
    state = world.state

    def names(ids: list[str]) -> list[str]:
        return [state.labels[i].name for i in ids if i in state.labels]

    def state_name(state_id: str | None) -> str | None:
        return state.states[state_id].name if state_id in state.states else None

    entries = sorted(
        (h for h in state.history.values() if h.issue_id == issue.id),
        key=lambda h: (h.created_at, h.id),
    )
    return [
        {
            "id": h.id,
            "actor": state.users[h.actor_id].display_name if h.actor_id in state.users else None,
            "created_at": h.created_at,
            "from_state": state_name(h.from_state_id),
            "to_state": state_name(h.to_state_id),
            "added_labels": names(h.added_label_ids),
            "removed_labels": names(h.removed_label_ids),
        }
        for h in entries
    ]


def _text(data: dict[str, Any], name: str, *, required: bool = False) -> Any:
    return field_value(data, name, str, required=required)


def create_user(world: LinearWorld, params: dict[str, Any], data: dict[str, Any]) -> Any:
    user = world.state.create_user(
        _text(data, "name", required=True),
        name=_text(data, "full_name"),
        email=_text(data, "email"),
        api_key=_text(data, "api_key"),
        oauth_token=_text(data, "oauth_token"),
        git_username=_text(data, "git_username"),
        guest=bool(field_value(data, "guest", bool)),
        admin=bool(field_value(data, "admin", bool)),
        app=bool(field_value(data, "app", bool)),
        active=field_value(data, "active", bool) is not False,
    )
    return user_json(user)


# The names a user edits in Linear (``userUpdate``), as the control API calls them.
PROFILE_FIELDS = ("name", "full_name")


def update_user(world: LinearWorld, params: dict[str, Any], data: dict[str, Any]) -> Any:
    """Suspend or restore a user, or make it a guest or an admin (``active``, ``guest``,
    ``admin``); rename it as the user may (``name``: the display name, ``full_name``)."""
    changes = {}
    for name in data:
        if name in PROFILE_FIELDS:
            continue
        value = field_value(data, name, bool)
        if value is not None:
            changes[name] = value
    user = world.state.update_user(
        params["ref"], changes, name=_text(data, "full_name"), display_name=_text(data, "name")
    )
    return user_json(user)


def _actor(world: LinearWorld, data: dict[str, Any]) -> LinearUser | None:
    """The user a change is made as (``as``), or None: an automation's change."""
    who = _text(data, "as")
    return world.state.user(who) if who else None


def create_team(world: LinearWorld, params: dict[str, Any], data: dict[str, Any]) -> Any:
    states = field_value(data, "states", list)
    pairs = None
    if states is not None:
        pairs = []
        for index, item in enumerate(states):
            if not isinstance(item, dict) or not isinstance(item.get("name"), str):
                raise ControlError(f"states[{index}] must be an object with 'name' and 'type'")
            pairs.append((item["name"], str(item.get("type", ""))))
    key = _text(data, "key", required=True)
    team = world.state.create_team(key, _text(data, "name") or key, pairs)
    return team_json(world, team.id)


def team_json(world: LinearWorld, team_id: str) -> dict[str, Any]:
    team = world.state.teams[team_id]
    return {
        "id": team.id,
        "key": team.key,
        "name": team.name,
        "states": [
            {"id": s.id, "name": s.name, "type": s.type, "position": s.position}
            for s in world.state.team_states(team.id)
        ],
    }


def create_project(world: LinearWorld, params: dict[str, Any], data: dict[str, Any]) -> Any:
    project = world.state.create_project(_text(data, "name", required=True), _text(data, "slug_id"))
    return {"id": project.id, "name": project.name, "slug_id": project.slug_id}


def create_label(world: LinearWorld, params: dict[str, Any], data: dict[str, Any]) -> Any:
    label = world.state.create_label(
        _text(data, "name", required=True),
        color=_text(data, "color") or "#bec2c8",
        team=_text(data, "team"),
    )
    return {"id": label.id, "name": label.name, "color": label.color, "team_id": label.team_id}


def create_issue(world: LinearWorld, params: dict[str, Any], data: dict[str, Any]) -> Any:
    labels = field_value(data, "labels", list) or []
    if not all(isinstance(name, str) for name in labels):
        raise ControlError("labels must be a list of label names")
    issue = world.state.create_issue(
        _text(data, "team", required=True),
        _text(data, "title", required=True),
        description=_text(data, "description"),
        state=_text(data, "state"),
        priority=field_value(data, "priority", int) or 0,
        project=_text(data, "project"),
        labels=labels,
        assignee=_text(data, "assignee"),
        creator=_text(data, "creator"),
    )
    return issue_json(world, issue)


def seed_issues(world: LinearWorld, params: dict[str, Any], data: dict[str, Any]) -> Any:
    """Create ``count`` issues in one team as ``create_issue`` would; their identifiers.

    Everything the body names (team, state, labels, project, assignee) is
    checked before the first issue is created.
    """
    state = world.state
    count = field_value(data, "count", int, required=True)
    if not 1 <= count <= MAX_SEED:
        raise ControlError(f"count must be between 1 and {MAX_SEED}")
    title = _text(data, "title") or "Issue {issue}"
    if not title.strip():
        raise ControlError("title must not be blank")
    labels = field_value(data, "labels", list) or []
    if not all(isinstance(name, str) and name.strip() for name in labels):
        raise ControlError("labels must be a list of label names")
    fields: dict[str, Any] = {
        "description": _text(data, "description"),
        "state": _text(data, "state"),
        "priority": field_value(data, "priority", int) or 0,
        "project": _text(data, "project"),
        "labels": labels,
        "assignee": _text(data, "assignee"),
        "creator": _text(data, "creator"),
    }
    with state.lock:
        team = state.team(_text(data, "team", required=True))
        if fields["state"] is not None:
            state.state_of(team, fields["state"])
        for name in labels:
            state.label(name, team.id)
        if fields["project"] is not None:
            state.project(fields["project"])
        for who in (fields["assignee"], fields["creator"]):
            if who is not None:
                state.user(who)
        first = team.last_number + 1
        created = [
            state.create_issue(team.key, title.replace(SEED_NUMBER, str(number)), **fields)
            for number in range(first, first + count)
        ]
    return {"issues": [issue.identifier for issue in created]}


def get_issue(world: LinearWorld, params: dict[str, Any], data: dict[str, Any]) -> Any:
    return issue_json(world, world.state.issue(params["ref"]))


def set_state(world: LinearWorld, params: dict[str, Any], data: dict[str, Any]) -> Any:
    issue = world.state.set_state(
        params["ref"], _text(data, "state", required=True), actor=_actor(world, data)
    )
    return issue_json(world, issue)


def add_labels(world: LinearWorld, params: dict[str, Any], data: dict[str, Any]) -> Any:
    labels = field_value(data, "labels", list, required=True)
    if not all(isinstance(name, str) for name in labels):
        raise ControlError("labels must be a list of label names")
    issue = world.state.update_issue(
        params["ref"], {"addedLabelIds": labels}, actor=_actor(world, data)
    )
    return issue_json(world, issue)


def remove_label(world: LinearWorld, params: dict[str, Any], data: dict[str, Any]) -> Any:
    issue = world.state.update_issue(
        params["ref"], {"removedLabelIds": [params["name"]]}, actor=_actor(world, data)
    )
    return issue_json(world, issue)


def add_comment(world: LinearWorld, params: dict[str, Any], data: dict[str, Any]) -> Any:
    comment = world.state.add_comment(
        params["ref"], _text(data, "as", required=True), _text(data, "body", required=True)
    )
    return {"id": comment.id, "body": comment.body, "created_at": comment.created_at}


def edit_comment(world: LinearWorld, params: dict[str, Any], data: dict[str, Any]) -> Any:
    comment = world.state.update_comment(params["comment_id"], _text(data, "body", required=True))
    return {"id": comment.id, "body": comment.body, "edited_at": comment.edited_at}


def relate(world: LinearWorld, params: dict[str, Any], data: dict[str, Any]) -> Any:
    relation = world.state.relate(
        params["ref"], _text(data, "type") or "blocks", _text(data, "related", required=True)
    )
    return {"id": relation.id, "type": relation.type}


def set_rate_limit(world: LinearWorld, params: dict[str, Any], data: dict[str, Any]) -> Any:
    who = _text(data, "user")
    key = world.state.user(who).id if who else None
    world.limits.configure(
        key,
        requests_limit=field_value(data, "requests_limit", int),
        requests_remaining=field_value(data, "requests_remaining", int),
        complexity_limit=field_value(data, "complexity_limit", int),
        complexity_remaining=field_value(data, "complexity_remaining", int),
        max_query_complexity=field_value(data, "max_query_complexity", int),
    )
    if key is not None:
        return world.limits.report(key).headers()
    return {
        "requests_per_hour": world.limits.requests_per_hour,
        "complexity_per_hour": world.limits.complexity_per_hour,
        "max_query_complexity": world.limits.max_query_complexity,
    }


def counters(world: LinearWorld, params: dict[str, Any], data: dict[str, Any]) -> Any:
    """Requests, complexity points spent and refusals, per user name."""
    users = world.state.users
    return {
        (users[key].display_name if key in users else key): value
        for key, value in world.limits.counters().items()
    }


def reset_counters(world: LinearWorld, params: dict[str, Any], data: dict[str, Any]) -> Any:
    world.limits.reset_counters()
    return {"reset": True}


def writes(world: LinearWorld, params: dict[str, Any], data: dict[str, Any]) -> Any:
    """Every mutation request answered: when, by whom, its root fields and HTTP status."""
    return {"writes": world.writes()}


def clear_writes(world: LinearWorld, params: dict[str, Any], data: dict[str, Any]) -> Any:
    world.clear_writes()
    return {"writes": []}


def summary(world: LinearWorld, params: dict[str, Any], data: dict[str, Any]) -> Any:
    """Teams with their states and issue counts, users, projects and labels."""
    state = world.state
    with state.lock:
        teams = []
        for team in sorted(state.teams.values(), key=lambda t: t.key):
            shown = team_json(world, team.id)
            for entry in shown["states"]:
                entry["issues"] = sorted(
                    (i.identifier for i in state.issues.values() if i.state_id == entry["id"]),
                    key=lambda ident: int(ident.rpartition("-")[2]),
                )
            teams.append(shown)
        return {
            "teams": teams,
            "users": [user_json(u) for u in state.users.values()],
            "projects": [{"name": p.name, "slug_id": p.slug_id} for p in state.projects.values()],
            "labels": sorted(lab.name for lab in state.labels.values()),
            "issues": len(state.issues),
        }


def _endpoint(world: LinearWorld, handler: Handler) -> Callable[[Request], Any]:
    async def endpoint(request: Request) -> Response:
        raw = await request.body()
        try:
            data = json.loads(raw) if raw.strip() else {}
        except ValueError:
            return _error(400, "bad_json", "request body is not valid JSON")
        if not isinstance(data, dict):
            return _error(400, "bad_json", "request body must be a JSON object")
        try:
            result = await anyio.to_thread.run_sync(handler, world, dict(request.path_params), data)
        except ControlError as exc:
            return _error(exc.status, "invalid", str(exc))
        except LinearInputError as exc:
            code = "not_found" if str(exc).startswith("no ") else "invalid"
            return _error(404 if code == "not_found" else 422, code, str(exc))
        except ValueError as exc:
            return _error(422, "invalid", str(exc))
        return JSONResponse(result)

    return endpoint


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


def linear_control_routes(world: LinearWorld) -> list[Route]:
    """The Linear control API's routes."""
    table: list[tuple[str, str, Handler]] = [
        ("GET", PREFIX + "/state", summary),
        ("POST", PREFIX + "/users", create_user),
        ("PATCH", PREFIX + "/users/{ref}", update_user),
        ("POST", PREFIX + "/teams", create_team),
        ("POST", PREFIX + "/projects", create_project),
        ("POST", PREFIX + "/labels", create_label),
        ("POST", PREFIX + "/issues", create_issue),
        ("POST", PREFIX + "/seed", seed_issues),
        ("GET", ISSUE, get_issue),
        ("PUT", ISSUE + "/state", set_state),
        ("POST", ISSUE + "/labels", add_labels),
        ("DELETE", ISSUE + "/labels/{name:path}", remove_label),
        ("POST", ISSUE + "/comments", add_comment),
        ("POST", ISSUE + "/relations", relate),
        ("PATCH", PREFIX + "/comments/{comment_id}", edit_comment),
        ("PUT", PREFIX + "/rate-limit", set_rate_limit),
        ("GET", PREFIX + "/counters", counters),
        ("DELETE", PREFIX + "/counters", reset_counters),
        ("GET", PREFIX + "/writes", writes),
        ("DELETE", PREFIX + "/writes", clear_writes),
    ]
    return method_routes(table, lambda handler: _endpoint(world, handler))
