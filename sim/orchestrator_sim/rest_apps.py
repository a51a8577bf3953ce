"""REST routes of GitHub Apps: the App itself, its installations and their tokens.

``JWT_ROUTES`` answer an App authenticated with its JSON web token (the
pipeline in `orchestrator_sim.app` verifies it and calls the handler with the
App's bot as ``call.user``); ``ROUTES`` answer an installation token.
"""

from __future__ import annotations

from typing import Any

from orchestrator_sim.api import Call, Reply, RouteSpec
from orchestrator_sim.apps import (
    AppRegistry,
    Installation,
    InstallationToken,
    SimApp,
    is_installation_actor,
)
from orchestrator_sim.clock import format_time
from orchestrator_sim.errors import BadRequest, Forbidden, NotFound

INSTALLATION_ONLY = (
    "You must authenticate with an installation access token in order to list "
    "repositories for an installation."
)


def _registry(call: Call) -> AppRegistry:
    return call.emulator.apps


def _app(call: Call) -> SimApp:
    return _registry(call).app_named(call.user.login)


def render_app(call: Call, app: SimApp) -> dict[str, Any]:
    html = f"{call.base_url}/apps/{app.slug}"
    with call.state.lock:
        owner = call.shapes.user(app.owner)
    installations = _registry(call).installations_of(app)
    return {
        "id": app.id,
        "slug": app.slug,
        "node_id": app.node_id,
        "client_id": app.client_id,
        "owner": owner,
        "name": app.name,
        "description": None,
        "external_url": html,
        "html_url": html,
        "created_at": app.created_at,
        "updated_at": app.created_at,
        "permissions": dict(app.permissions),
        "events": list(app.events),
        "installations_count": len(installations),
    }


def render_installation(call: Call, app: SimApp, installation: Installation) -> dict[str, Any]:
    with call.state.lock:
        account = call.state.user(installation.account)
        rendered_account = call.shapes.user(account)
    api = call.base_url
    return {
        "id": installation.id,
        "account": rendered_account,
        "repository_selection": "selected",
        "access_tokens_url": f"{api}/app/installations/{installation.id}/access_tokens",
        "repositories_url": f"{api}/installation/repositories",
        "html_url": f"{api}/settings/installations/{installation.id}",
        "app_id": app.id,
        "client_id": app.client_id,
        "target_id": account.id,
        "target_type": account.type,
        "permissions": dict(installation.permissions),
        "events": list(app.events),
        "created_at": installation.created_at,
        "updated_at": installation.created_at,
        "single_file_name": None,
        "has_multiple_single_files": False,
        "single_file_paths": [],
        "app_slug": app.slug,
        "suspended_by": None,
        "suspended_at": None,
        "contact_email": None,
    }


def render_token(call: Call, token: InstallationToken) -> dict[str, Any]:
    installation = _registry(call).installation(token.installation_id)
    with call.state.lock:
        repos = [call.shapes.repo(repo) for repo in _registry(call).repositories(installation)]
    return {
        "token": token.token,
        "expires_at": format_time(token.expires_at),
        "permissions": dict(token.permissions),
        "repository_selection": "selected",
        "repositories": repos,
    }


# ------------------------------------------------------------------ handlers


def get_app(call: Call) -> Reply:
    return Reply(200, render_app(call, _app(call)))


def create_installation_token(call: Call) -> Reply:
    app = _app(call)
    data = call.json_object()
    permissions = data.get("permissions")
    if permissions is not None and not (
        isinstance(permissions, dict) and all(isinstance(v, str) for v in permissions.values())
    ):
        raise BadRequest("permissions must map names to levels")
    token = _registry(call).issue_token(app, call.number("installation_id"), permissions)
    return Reply(201, render_token(call, token))


def get_repo_installation(call: Call) -> Reply:
    app = _app(call)
    repo = call.state.find_repo(call.params["owner"], call.params["repo"])
    if repo is None:
        raise NotFound("repository")
    installation = _registry(call).installation_for_repo(app, repo)
    return Reply(200, render_installation(call, app, installation))


def list_installation_repositories(call: Call) -> Reply:
    if not is_installation_actor(call.user):
        raise Forbidden(INSTALLATION_ONLY)
    registry = _registry(call)
    installation = registry.installation_of_actor(call.user)
    repos = registry.repositories(installation)
    chunk, headers = call.page(repos)
    with call.state.lock:
        rendered = [call.shapes.repo(repo, viewer=call.user) for repo in chunk]
    body = {"total_count": len(repos), "repositories": rendered, "repository_selection": "selected"}
    return Reply(200, body, headers)


JWT_ROUTES: tuple[RouteSpec, ...] = (
    RouteSpec("GET", "/app", get_app, free=True),
    RouteSpec(
        "POST",
        "/app/installations/{installation_id:int}/access_tokens",
        create_installation_token,
        free=True,
    ),
    RouteSpec("GET", "/repos/{owner}/{repo}/installation", get_repo_installation, free=True),
)

ROUTES: tuple[RouteSpec, ...] = (
    RouteSpec("GET", "/installation/repositories", list_installation_repositories),
)
