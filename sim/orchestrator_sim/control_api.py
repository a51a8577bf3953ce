"""The control API under ``/_control``: scenario steps, limits, faults and counters.

It is how tests and the demo play the humans and CI around the product: create
accounts and repositories, open issues and label them as someone, review,
report check runs, push commits, protect branches, write rulesets, set merge
settings, teams and deployments, update a pull request's branch, queue it or
set it to auto-merge, force mergeability or set how long it takes to work
out, set rate budgets, add fault rules, and read the
counters and the write log. It is never billed and needs no token; the server
listens on 127.0.0.1 only. Errors use the envelope ``{"error": {"code",
"message"}}``. The scenario steps themselves live in
`orchestrator_sim.control_steps` and (for the rules a merge meets: protection,
rulesets, merge settings, the merge queue and auto-merge)
`orchestrator_sim.control_rules`, the bulk seed of thousands of issues and
pull requests in one call in `orchestrator_sim.control_seed`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from orchestrator_sim import control_steps as steps
from orchestrator_sim.apps import billing_key
from orchestrator_sim.billing import RESOURCES, SecondaryPolicy
from orchestrator_sim.control_rules import rules_routes
from orchestrator_sim.control_seed import seed
from orchestrator_sim.control_steps import (
    ControlError,
    ControlHandler,
    create_repo,
    create_user,
    field_value,
)
from orchestrator_sim.emulator import Emulator
from orchestrator_sim.errors import SimError
from orchestrator_sim.method_routes import method_routes

__all__ = ["PREFIX", "ControlError", "control_routes", "create_repo", "create_user"]

PREFIX = "/_control"
REPO = PREFIX + "/repos/{owner}/{repo}"


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


# ---------------------------------------------------------- limits, faults


def _token_of(emulator: Emulator, login: str | None) -> str | None:
    if login is None:
        return None
    user = emulator.state.user(login)
    if user.bot and user.token is None:
        # An App's bot: its budget is its installation's.
        app = emulator.apps.app_named(user.login)
        installations = emulator.apps.installations_of(app)
        if installations:
            return billing_key(installations[0].id)
    if user.token is None:
        raise ControlError(f"{login} has no token")
    return user.token


def set_rate_limit(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    resource = field_value(data, "resource", str) or "core"
    if resource not in RESOURCES:
        raise ControlError(f"resource must be one of {RESOURCES}")
    reset = field_value(data, "reset", int)
    reset_in = field_value(data, "reset_in", int)
    if reset is None and isinstance(reset_in, int):
        reset = int(emulator.clock().timestamp()) + reset_in
    token = _token_of(emulator, field_value(data, "login", str))
    try:
        emulator.billing.set_budget(
            token,
            resource,
            limit=field_value(data, "limit", int),
            remaining=field_value(data, "remaining", int),
            reset=reset,
        )
    except ValueError as exc:
        raise ControlError(str(exc)) from exc
    if token is not None:
        return emulator.billing.snapshot(token, resource).as_json()
    return {"resource": resource}


def set_secondary_limit(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    policy = SecondaryPolicy(
        per_minute=field_value(data, "per_minute", int),
        concurrency=field_value(data, "concurrency", int),
        status=field_value(data, "status", int) or 403,
        retry_after=field_value(data, "retry_after", int) or 60,
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
    emulator.faults.clear(field_value(data, "seed", int))
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


def create_app(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    """Register an App; the answer carries its private key (PEM), the only time it is shown."""
    permissions = field_value(data, "permissions", dict)
    if permissions is not None and not all(isinstance(v, str) for v in permissions.values()):
        raise ControlError("permissions must map names to 'read' or 'write'")
    app, private_pem = emulator.apps.create_app(
        field_value(data, "slug", str, required=True),
        owner=field_value(data, "owner", str, required=True),
        name=field_value(data, "name", str),
        permissions=permissions,
    )
    return {**emulator.apps.describe(app), "private_key": private_pem}


def install_app(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    repos = field_value(data, "repositories", list, required=True)
    if not repos or not all(isinstance(r, str) and "/" in r for r in repos):
        raise ControlError("repositories must be a non-empty list of 'owner/name'")
    app = emulator.apps.app_named(params["slug"])
    installation = emulator.apps.install(app, repos)
    return {
        "id": installation.id,
        "app_id": app.id,
        "account": installation.account,
        "repositories": list(installation.repos),
        "rate_limit": emulator.apps.hourly_limit(installation),
    }


def expire_app_tokens(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    """End an App's installation tokens now, or make them ``age_s`` seconds older."""
    slug = field_value(data, "app", str)
    age = data.get("age_s")
    if age is not None and (not isinstance(age, int | float) or isinstance(age, bool) or age < 0):
        raise ControlError("field 'age_s' must be a non-negative number")
    app = emulator.apps.app_named(slug) if slug else None
    return {"expired": emulator.apps.expire_tokens(app=app, age_s=age)}


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
            # A step's consequences (a merge group's checks passing ...) show in its answer's wake.
            if emulator.settle_needed():
                await anyio.to_thread.run_sync(emulator.settle)
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
        ("GET", PREFIX + "/users/{login}", steps.get_user),
        ("GET", PREFIX + "/repos", steps.list_repos),
        ("POST", PREFIX + "/repos", create_repo),
        ("GET", REPO, steps.get_repo),
        ("PUT", REPO + "/permissions/{login}", steps.set_permission),
        ("POST", REPO + "/issues", steps.create_issue),
        ("POST", REPO + "/seed", seed),
        ("PATCH", REPO + "/issues/{number:int}", steps.update_issue),
        ("POST", REPO + "/issues/{number:int}/labels", steps.add_labels),
        ("DELETE", REPO + "/issues/{number:int}/labels/{name:path}", steps.remove_label),
        ("POST", REPO + "/issues/{number:int}/comments", steps.add_comment),
        ("PATCH", REPO + "/comments/{comment_id:int}", steps.edit_comment),
        ("POST", REPO + "/pulls", steps.create_pull),
        ("POST", REPO + "/pulls/{number:int}/reviews", steps.submit_review),
        ("POST", REPO + "/pulls/{number:int}/merge", steps.merge_pull),
        ("PUT", REPO + "/pulls/{number:int}/mergeable", steps.set_mergeable),
        ("POST", REPO + "/threads/{thread_id:int}/replies", steps.reply_thread),
        ("POST", REPO + "/threads/{thread_id:int}/resolve", steps.resolve_thread),
        ("POST", REPO + "/commits", steps.push_commit),
        ("GET", PREFIX + "/mergeability", steps.get_mergeability_delay),
        ("PUT", PREFIX + "/mergeability", steps.set_mergeability_delay),
        ("POST", REPO + "/check-runs", steps.set_check_run),
        ("POST", REPO + "/statuses", steps.set_status),
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
        ("POST", PREFIX + "/apps", create_app),
        ("POST", PREFIX + "/apps/{slug}/installations", install_app),
        ("POST", PREFIX + "/app-tokens/expire", expire_app_tokens),
        *rules_routes(PREFIX),
    ]
    return method_routes(table, lambda handler: _endpoint(emulator, handler))
