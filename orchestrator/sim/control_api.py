"""The control API under ``/_control``: scenario steps, limits, faults and counters.

It is how tests and the demo play the humans and CI around the product: create
accounts and repositories, open issues and label them as someone, review,
report check runs, push commits, force mergeability, set rate budgets, add
fault rules, and read the counters and the write log. It is never billed and
needs no token; the server listens on 127.0.0.1 only. Errors use the envelope
``{"error": {"code", "message"}}``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from orchestrator.sim.billing import RESOURCES, SecondaryPolicy
from orchestrator.sim.emulator import Emulator
from orchestrator.sim.errors import SimError
from orchestrator.sim.gitstore import GitError
from orchestrator.sim.records import CheckAnnotation, Repo
from orchestrator.sim.state import InlineComment

PREFIX = "/_control"
REPO = PREFIX + "/repos/{owner}/{repo}"

ControlHandler = Callable[[Emulator, dict[str, Any], dict[str, Any]], Any]


class ControlError(Exception):
    """A control request that cannot be done; answered with ``status`` and a message."""

    def __init__(self, message: str, status: int = 422) -> None:
        super().__init__(message)
        self.status = status


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


def _get(data: dict[str, Any], name: str, kind: type, *, required: bool = False) -> Any:
    value = data.get(name)
    if value is None:
        if required:
            raise ControlError(f"field {name!r} is required")
        return None
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ControlError(f"field {name!r} must be {kind.__name__}")
    return value


def _actor(emulator: Emulator, data: dict[str, Any]) -> str:
    login = _get(data, "as", str, required=True)
    return str(emulator.state.user(login).login)


def _repo(emulator: Emulator, params: dict[str, Any]) -> Repo:
    return emulator.state.repo(params["owner"], params["repo"])


def _sha(emulator: Emulator, repo: Repo, data: dict[str, Any]) -> str:
    sha = _get(data, "sha", str)
    ref = _get(data, "ref", str)
    if sha:
        return str(sha)
    if ref:
        if ref in repo.branches:
            return repo.branches[ref]
        resolved = emulator.git.resolve(emulator.repo_path(repo), ref)
        if resolved:
            return resolved
        raise ControlError(f"unknown ref {ref!r}")
    raise ControlError("give 'sha' or 'ref'")


# ---------------------------------------------------------------- accounts


def create_user(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    user = emulator.state.add_user(
        _get(data, "login", str, required=True),
        token=_get(data, "token", str),
        bot=bool(_get(data, "bot", bool)),
        organization=bool(_get(data, "organization", bool)),
        name=_get(data, "name", str),
        email=_get(data, "email", str),
    )
    return {"login": user.login, "id": user.id, "node_id": user.node_id, "type": user.type}


def create_repo(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    files = _get(data, "files", dict) or None
    if files is not None and not all(isinstance(v, str) for v in files.values()):
        raise ControlError("files must map paths to text")
    permissions = _get(data, "permissions", dict) or {}
    for login in permissions:
        emulator.state.user(login)
    try:
        repo = emulator.create_repo(
            _get(data, "owner", str, required=True),
            _get(data, "name", str, required=True),
            files=files,
            default_branch=_get(data, "default_branch", str) or "main",
            private=bool(_get(data, "private", bool)),
            description=_get(data, "description", str),
            require_review=_get(data, "require_review", bool) is not False,
        )
    except GitError as exc:
        raise ControlError(str(exc)) from exc
    for login, level in permissions.items():
        emulator.state.set_permission(repo, login, level)
    return _repo_summary(emulator, repo)


def _repo_summary(emulator: Emulator, repo: Repo) -> dict[str, Any]:
    return {
        "full_name": repo.full_name,
        "id": repo.id,
        "node_id": repo.node_id,
        "default_branch": repo.default_branch,
        "branches": dict(repo.branches),
        "permissions": dict(repo.permissions),
    }


def get_repo(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    with emulator.state.lock:
        return _repo_summary(emulator, _repo(emulator, params))


def set_permission(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    repo = _repo(emulator, params)
    level = data.get("permission")
    if level is not None and not isinstance(level, str):
        raise ControlError("permission must be a level name or null")
    emulator.state.set_permission(repo, params["login"], level)
    return {"login": params["login"], "permission": level}


# ------------------------------------------------------------------ issues


def create_issue(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    repo = _repo(emulator, params)
    issue = emulator.state.create_issue(
        repo,
        _actor(emulator, data),
        _get(data, "title", str, required=True),
        body=_get(data, "body", str),
        labels=_get(data, "labels", list) or [],
        assignees=_get(data, "assignees", list) or [],
    )
    return {"number": issue.number, "id": issue.id, "node_id": issue.node_id}


def update_issue(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    repo = _repo(emulator, params)
    issue = emulator.state.update_issue(
        repo,
        int(params["number"]),
        _actor(emulator, data),
        title=_get(data, "title", str),
        body=_get(data, "body", str),
        state=_get(data, "state", str),
        state_reason=_get(data, "state_reason", str),
    )
    return {"number": issue.number, "state": issue.state}


def add_labels(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    repo = _repo(emulator, params)
    labels = emulator.state.add_labels(
        repo,
        int(params["number"]),
        _actor(emulator, data),
        _get(data, "labels", list, required=True),
    )
    return {"labels": [label.name for label in labels]}


def remove_label(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    repo = _repo(emulator, params)
    labels = emulator.state.remove_label(
        repo, int(params["number"]), _actor(emulator, data), params["name"]
    )
    return {"labels": [label.name for label in labels]}


def add_comment(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    repo = _repo(emulator, params)
    comment = emulator.state.add_comment(
        repo, int(params["number"]), _actor(emulator, data), _get(data, "body", str, required=True)
    )
    return {"id": comment.id, "node_id": comment.node_id}


# ------------------------------------------------------------------- pulls


def create_pull(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    repo = _repo(emulator, params)
    _issue, pr = emulator.state.create_pull(
        repo,
        _actor(emulator, data),
        _get(data, "title", str, required=True),
        head=_get(data, "head", str, required=True),
        base=_get(data, "base", str) or repo.default_branch,
        body=_get(data, "body", str),
        draft=bool(_get(data, "draft", bool)),
    )
    return {"number": pr.number, "id": pr.id, "node_id": pr.node_id, "head_sha": pr.head_sha}


def submit_review(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    repo = _repo(emulator, params)
    state = _get(data, "state", str, required=True)
    inline = []
    for index, item in enumerate(_get(data, "comments", list) or []):
        if not isinstance(item, dict):
            raise ControlError(f"comments[{index}] must be an object")
        try:
            inline.append(
                InlineComment(
                    path=str(item["path"]),
                    line=int(item["line"]),
                    body=str(item["body"]),
                    side=str(item.get("side", "RIGHT")),
                    diff_hunk=item.get("diff_hunk"),
                )
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ControlError(f"comments[{index}] needs path, line and body") from exc
    with emulator.state.lock:
        review = emulator.state.submit_review(
            repo,
            int(params["number"]),
            _actor(emulator, data),
            state,
            body=_get(data, "body", str) or "",
            commit_id=_get(data, "commit_id", str),
            comments=inline,
        )
        threads = [
            {
                "id": thread.id,
                "node_id": thread.node_id,
                "comment_id": thread.comment_ids[0],
                "path": thread.path,
                "line": thread.line,
            }
            for thread in repo.threads.values()
            if thread.comment_ids
            and repo.review_comments[thread.comment_ids[0]].review_id == review.id
        ]
    return {"id": review.id, "node_id": review.node_id, "state": review.state, "threads": threads}


def reply_thread(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    repo = _repo(emulator, params)
    comment = emulator.state.reply_to_thread(
        repo,
        int(params["thread_id"]),
        _actor(emulator, data),
        _get(data, "body", str, required=True),
    )
    return {"id": comment.id, "node_id": comment.node_id}


def resolve_thread(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    repo = _repo(emulator, params)
    resolved = _get(data, "resolved", bool)
    thread = emulator.state.resolve_thread(
        repo, int(params["thread_id"]), _actor(emulator, data), resolved is not False
    )
    outdated = _get(data, "outdated", bool)
    if outdated is not None:
        with emulator.state.lock:
            thread.outdated = outdated
    return {"id": thread.id, "resolved": thread.resolved, "resolved_by": thread.resolved_by}


def set_mergeable(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    repo = _repo(emulator, params)
    value = data.get("mergeable")
    if value is not None and not isinstance(value, bool):
        raise ControlError("mergeable must be true, false or null")
    emulator.state.set_mergeable_override(repo, int(params["number"]), value)
    return {"number": int(params["number"]), "mergeable": value}


def merge_pull(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    repo = _repo(emulator, params)
    sha = emulator.merge_pull(
        repo,
        int(params["number"]),
        _actor(emulator, data),
        sha=_get(data, "sha", str),
        method=_get(data, "method", str) or "merge",
    )
    return {"sha": sha}


# ------------------------------------------------------------- git and CI


def push_commit(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    repo = _repo(emulator, params)
    files = _get(data, "files", dict, required=True)
    if not all(v is None or isinstance(v, str) for v in files.values()):
        raise ControlError("files must map paths to text (or null to delete)")
    sha = emulator.push_commit(
        repo,
        _actor(emulator, data),
        _get(data, "branch", str) or repo.default_branch,
        files,
        message=_get(data, "message", str) or "Update files",
        start=_get(data, "start", str),
    )
    return {"sha": sha}


def set_check_run(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    repo = _repo(emulator, params)
    notes = []
    for index, item in enumerate(_get(data, "annotations", list) or []):
        if not isinstance(item, dict):
            raise ControlError(f"annotations[{index}] must be an object")
        try:
            notes.append(
                CheckAnnotation(
                    path=str(item["path"]),
                    start_line=int(item["start_line"]),
                    end_line=int(item.get("end_line") or item["start_line"]),
                    annotation_level=str(item.get("annotation_level", "failure")),
                    message=str(item["message"]),
                    title=item.get("title"),
                    raw_details=item.get("raw_details"),
                )
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ControlError(f"annotations[{index}] needs path, start_line and message") from exc
    run = emulator.state.set_check_run(
        repo,
        _sha(emulator, repo, data),
        _get(data, "name", str) or "ci",
        _get(data, "status", str) or "completed",
        conclusion=_get(data, "conclusion", str),
        title=_get(data, "title", str),
        summary=_get(data, "summary", str),
        text=_get(data, "text", str),
        annotations=notes,
        log=_get(data, "log", str),
        check_run_id=_get(data, "id", int),
        details_url=_get(data, "details_url", str),
    )
    return {"id": run.id, "job_id": run.job_id, "node_id": run.node_id, "head_sha": run.head_sha}


def set_status(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    repo = _repo(emulator, params)
    status = emulator.state.set_commit_status(
        repo,
        _sha(emulator, repo, data),
        state=_get(data, "state", str, required=True),
        context=_get(data, "context", str) or "default",
        creator=_actor(emulator, data),
        description=_get(data, "description", str),
        target_url=_get(data, "target_url", str),
    )
    return {"id": status.id}


# ---------------------------------------------------------- limits, faults


def _token_of(emulator: Emulator, login: str | None) -> str | None:
    if login is None:
        return None
    user = emulator.state.user(login)
    if user.token is None:
        raise ControlError(f"{login} has no token")
    return user.token


def set_rate_limit(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    resource = _get(data, "resource", str) or "core"
    if resource not in RESOURCES:
        raise ControlError(f"resource must be one of {RESOURCES}")
    reset = _get(data, "reset", int)
    reset_in = _get(data, "reset_in", int)
    if reset is None and isinstance(reset_in, int):
        reset = int(emulator.clock().timestamp()) + reset_in
    token = _token_of(emulator, _get(data, "login", str))
    try:
        emulator.billing.set_budget(
            token,
            resource,
            limit=_get(data, "limit", int),
            remaining=_get(data, "remaining", int),
            reset=reset,
        )
    except ValueError as exc:
        raise ControlError(str(exc)) from exc
    if token is not None:
        return emulator.billing.snapshot(token, resource).as_json()
    return {"resource": resource}


def set_secondary_limit(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    policy = SecondaryPolicy(
        per_minute=_get(data, "per_minute", int),
        concurrency=_get(data, "concurrency", int),
        status=_get(data, "status", int) or 403,
        retry_after=_get(data, "retry_after", int) or 60,
    )
    try:
        emulator.billing.set_secondary(policy)
    except ValueError as exc:
        raise ControlError(str(exc)) from exc
    return {
        "per_minute": policy.per_minute,
        "concurrency": policy.concurrency,
        "status": policy.status,
        "retry_after": policy.retry_after,
    }


def list_faults(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    return {"rules": emulator.faults.rules()}


def add_fault(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    try:
        return emulator.faults.add(data).as_json()
    except ValueError as exc:
        raise ControlError(str(exc)) from exc


def delete_fault(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    if not emulator.faults.remove(int(params["rule_id"])):
        raise ControlError(f"no fault rule {params['rule_id']}", status=404)
    return {"deleted": int(params["rule_id"])}


def clear_faults(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    emulator.faults.clear(_get(data, "seed", int))
    return {"rules": []}


def counters(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    return emulator.billing.counters()


def writes(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    return {"writes": emulator.billing.write_log()}


def reset_counters(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    emulator.billing.reset_counters()
    return {"reset": True}


def save(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    if not emulator.persist:
        raise ControlError("this emulator was started without a persistent state directory", 409)
    emulator.save()
    return {"saved": str(emulator.snapshot_path)}


def health(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    return {"ok": True}


def _endpoint(emulator: Emulator, handler: ControlHandler) -> Callable[[Request], Any]:
    async def endpoint(request: Request) -> Response:
        raw = await request.body()
        try:
            data = json.loads(raw) if raw.strip() else {}
        except ValueError:
            return _error(400, "bad_json", "request body is not valid JSON")
        if not isinstance(data, dict):
            return _error(400, "bad_json", "request body must be a JSON object")
        for key, value in request.query_params.items():
            data.setdefault(key, value)
        params = dict(request.path_params)
        try:
            result = await anyio.to_thread.run_sync(handler, emulator, params, data)
        except ControlError as exc:
            return _error(exc.status, "invalid", str(exc))
        except SimError as exc:
            code = "not_found" if exc.status == 404 else "refused"
            detail = getattr(exc, "what", None) or exc.message
            extra = "; ".join(str(e.get("message", e)) for e in exc.errors)
            return _error(exc.status, code, f"{detail}: {extra}" if extra else detail)
        except ValueError as exc:
            return _error(422, "invalid", str(exc))
        return JSONResponse(result)

    return endpoint


def control_routes(emulator: Emulator) -> list[Route]:
    """The control API's routes for one emulator."""
    table: list[tuple[str, str, ControlHandler]] = [
        ("GET", PREFIX + "/health", health),
        ("POST", PREFIX + "/users", create_user),
        ("POST", PREFIX + "/repos", create_repo),
        ("GET", REPO, get_repo),
        ("PUT", REPO + "/permissions/{login}", set_permission),
        ("POST", REPO + "/issues", create_issue),
        ("PATCH", REPO + "/issues/{number:int}", update_issue),
        ("POST", REPO + "/issues/{number:int}/labels", add_labels),
        ("DELETE", REPO + "/issues/{number:int}/labels/{name:path}", remove_label),
        ("POST", REPO + "/issues/{number:int}/comments", add_comment),
        ("POST", REPO + "/pulls", create_pull),
        ("POST", REPO + "/pulls/{number:int}/reviews", submit_review),
        ("POST", REPO + "/pulls/{number:int}/merge", merge_pull),
        ("PUT", REPO + "/pulls/{number:int}/mergeable", set_mergeable),
        ("POST", REPO + "/threads/{thread_id:int}/replies", reply_thread),
        ("POST", REPO + "/threads/{thread_id:int}/resolve", resolve_thread),
        ("POST", REPO + "/commits", push_commit),
        ("POST", REPO + "/check-runs", set_check_run),
        ("POST", REPO + "/statuses", set_status),
        ("PUT", PREFIX + "/rate-limit", set_rate_limit),
        ("PUT", PREFIX + "/secondary-limit", set_secondary_limit),
        ("GET", PREFIX + "/faults", list_faults),
        ("POST", PREFIX + "/faults", add_fault),
        ("DELETE", PREFIX + "/faults", clear_faults),
        ("DELETE", PREFIX + "/faults/{rule_id:int}", delete_fault),
        ("GET", PREFIX + "/counters", counters),
        ("DELETE", PREFIX + "/counters", reset_counters),
        ("GET", PREFIX + "/writes", writes),
        ("POST", PREFIX + "/save", save),
    ]
    grouped: dict[str, dict[str, ControlHandler]] = {}
    for method, path, handler in table:
        grouped.setdefault(path, {})[method] = handler
    routes = []
    for path, handlers in grouped.items():
        routes.append(Route(path, _dispatch(emulator, handlers), methods=list(handlers)))
    return routes


def _dispatch(emulator: Emulator, handlers: dict[str, ControlHandler]) -> Callable[[Request], Any]:
    endpoints = {method: _endpoint(emulator, handler) for method, handler in handlers.items()}

    async def endpoint(request: Request) -> Response:
        chosen = endpoints.get(request.method)
        if chosen is None:
            return _error(405, "method_not_allowed", f"{request.method} is not supported here")
        response: Response = await chosen(request)
        return response

    return endpoint
