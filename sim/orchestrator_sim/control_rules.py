"""The control API's steps for the rules a merge meets, and for those who satisfy them.

Branch protection and merge settings as a repository's administrator sets
them, teams (code owners by ``@org/team``), deployments and their statuses as a
deployment system reports them, and a person pressing "Update branch". The
handlers share the shape of `orchestrator_sim.control_steps`.
"""

from __future__ import annotations

from typing import Any

from orchestrator_sim.control_steps import (
    ControlError,
    actor_login,
    field_value,
    repo_of,
    sha_of,
)
from orchestrator_sim.emulator import Emulator
from orchestrator_sim.pull_update import update_branch
from orchestrator_sim.snapshot import to_json
from orchestrator_sim.state_protection import MERGE_SETTINGS

# The protection switches the control API takes, each off unless the body turns it on.
_PROTECTION_SWITCHES = (
    "dismiss_stale_reviews",
    "enforce_admins",
    "strict",
    "required_linear_history",
    "require_last_push_approval",
    "require_code_owner_reviews",
    "required_conversation_resolution",
)


def _names(data: dict[str, Any], field: str) -> list[str]:
    names = field_value(data, field, list) or []
    if not all(isinstance(name, str) for name in names):
        raise ControlError(f"{field} must be a list of names")
    return list(names)


def protect_branch(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    lists = ("required_checks", "required_approvals", "required_deployments")
    unknown = set(data) - {*_PROTECTION_SWITCHES, *lists}
    if unknown:
        raise ControlError(f"unknown protection rule {sorted(unknown)[0]!r}")
    switches = {name: bool(field_value(data, name, bool)) for name in _PROTECTION_SWITCHES}
    rules = emulator.state.protect_branch(
        repo_of(emulator, params),
        params["branch"],
        required_checks=_names(data, "required_checks"),
        required_approvals=field_value(data, "required_approvals", int) or 0,
        required_deployments=_names(data, "required_deployments"),
        **switches,
    )
    return {"branch": params["branch"], **to_json(rules)}


def unprotect_branch(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    emulator.state.unprotect_branch(repo_of(emulator, params), params["branch"])
    return {"branch": params["branch"], "protected": False}


def set_merge_settings(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    unknown = set(data) - set(MERGE_SETTINGS.values())
    if unknown:
        raise ControlError(f"unknown setting {sorted(unknown)[0]!r}")
    allowed = {name: bool(field_value(data, name, bool)) for name in data}
    return emulator.state.set_merge_settings(repo_of(emulator, params), **allowed)


def set_team(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    members = data.get("members")
    if members is not None and (
        not isinstance(members, list) or not all(isinstance(m, str) for m in members)
    ):
        raise ControlError("members must be a list of logins, or null to remove the team")
    logins = emulator.state.set_team(params["org"], params["slug"], members)
    return {"team": f"{params['org']}/{params['slug']}", "members": logins}


def create_deployment(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    repo = repo_of(emulator, params)
    creator = actor_login(emulator, data)
    ref = field_value(data, "ref", str)
    with emulator.state.lock:
        deployment = emulator.state.create_deployment(
            repo,
            sha_of(emulator, repo, data),
            field_value(data, "environment", str) or "production",
            creator,
            ref=ref,
            description=field_value(data, "description", str),
        )
        state = field_value(data, "state", str)
        if state is not None:
            emulator.state.add_deployment_status(repo, deployment.id, state, creator)
    return {"id": deployment.id, "node_id": deployment.node_id, "sha": deployment.sha}


def add_deployment_status(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    status = emulator.state.add_deployment_status(
        repo_of(emulator, params),
        int(params["deployment_id"]),
        field_value(data, "state", str, required=True),
        actor_login(emulator, data),
        description=field_value(data, "description", str),
    )
    return {"id": status.id, "state": status.state}


def update_pull_branch(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    sha = update_branch(
        emulator,
        repo_of(emulator, params),
        int(params["number"]),
        actor_login(emulator, data),
        expected_head_sha=field_value(data, "expected_head_sha", str),
        method=field_value(data, "method", str) or "merge",
    )
    return {"sha": sha}
