"""The control API's steps for the rules a merge meets, and for those who satisfy them.

Branch protection, rulesets and the repository's merge settings as its
administrators set them; teams (code owners by ``@org/team``); deployments and
their statuses as a deployment system reports them; and the people who press
"Update branch", "Merge when ready" or "Enable auto-merge", or remove a pull
request from the merge queue in GitHub's web interface. A ruleset body is
GitHub's REST body; parameters it leaves out take GitHub's form defaults. The
handlers share the shape of `orchestrator_sim.control_steps`; `rules_routes`
lists them.
"""

from __future__ import annotations

from typing import Any

from orchestrator_sim.control_steps import (
    ControlError,
    ControlHandler,
    actor_login,
    field_value,
    repo_of,
    sha_of,
)
from orchestrator_sim.emulator import Emulator
from orchestrator_sim.pull_update import update_branch
from orchestrator_sim.records import CHECK_CONCLUSIONS, CHECK_STATUSES, Repo
from orchestrator_sim.records_rules import QueueEntry, Ruleset
from orchestrator_sim.rulesets import parse_ruleset
from orchestrator_sim.snapshot import to_json
from orchestrator_sim.state_protection import MERGE_SETTING_NAMES

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
# What the emulated CI may report on a merge group: a conclusion, or a pending status.
_GROUP_RESULTS = CHECK_CONCLUSIONS | (CHECK_STATUSES - {"completed"})


def _names(data: dict[str, Any], field: str) -> list[str]:
    names = field_value(data, field, list) or []
    if not all(isinstance(name, str) for name in names):
        raise ControlError(f"{field} must be a list of names")
    return list(names)


def _ruleset(ruleset: Ruleset) -> dict[str, Any]:
    data: dict[str, Any] = to_json(ruleset)
    return data


def _entry(emulator: Emulator, repo: Repo, entry: QueueEntry) -> dict[str, Any]:
    data: dict[str, Any] = to_json(entry)
    data["position"] = emulator.state.queue_position(repo, entry)
    return data


# ------------------------------------------------------------ protection


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
    """The merge methods the repository accepts (``allow_merge_commit``,
    ``allow_squash_merge``, ``allow_rebase_merge``; one must stay allowed),
    ``allow_auto_merge`` (off by default, as on GitHub) and ``merge_group_checks``
    (what the emulated CI reports on each merge group). Absent or null settings keep
    their value; the answer is every setting."""
    unknown = set(data) - set(MERGE_SETTING_NAMES)
    if unknown:
        raise ControlError(f"unknown setting {sorted(unknown)[0]!r}")
    checks = field_value(data, "merge_group_checks", dict)
    if checks is not None and not all(
        isinstance(name, str) and value in _GROUP_RESULTS for name, value in checks.items()
    ):
        raise ControlError(
            "merge_group_checks must map check names to a conclusion or a pending status "
            f"({', '.join(sorted(_GROUP_RESULTS))})"
        )
    return emulator.state.set_merge_settings(
        repo_of(emulator, params),
        allow_merge_commit=field_value(data, "allow_merge_commit", bool),
        allow_squash_merge=field_value(data, "allow_squash_merge", bool),
        allow_rebase_merge=field_value(data, "allow_rebase_merge", bool),
        allow_auto_merge=field_value(data, "allow_auto_merge", bool),
        merge_group_checks=checks,
    )


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


# -------------------------------------------------------------- rulesets


def create_ruleset(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    repo = repo_of(emulator, params)
    return _ruleset(emulator.state.create_ruleset(repo, parse_ruleset(data, fill_defaults=True)))


def list_rulesets(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    repo = repo_of(emulator, params)
    with emulator.state.lock:
        return {
            "rulesets": [_ruleset(r) for r in sorted(repo.rulesets.values(), key=lambda r: r.id)]
        }


def delete_ruleset(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    emulator.state.delete_ruleset(repo_of(emulator, params), int(params["ruleset_id"]))
    return {"deleted": int(params["ruleset_id"])}


# ------------------------------------------------ merge queue and auto-merge


def merge_queue(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    """The entries of one base's queue (``branch``, default the default branch)."""
    repo = repo_of(emulator, params)
    branch = field_value(data, "branch", str) or repo.default_branch
    with emulator.state.lock:
        entries = emulator.state.queue_entries(repo, branch)
        return {"branch": branch, "entries": [_entry(emulator, repo, e) for e in entries]}


def enqueue(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    repo = repo_of(emulator, params)
    with emulator.state.lock:
        pr = emulator.state.pull(repo, int(params["number"]))
        entry = emulator.state.enqueue(
            repo,
            pr,
            actor_login(emulator, data),
            expected_head=field_value(data, "sha", str),
            jump=bool(field_value(data, "jump", bool)),
        )
        return _entry(emulator, repo, entry)


def dequeue(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    repo = repo_of(emulator, params)
    entry = emulator.state.dequeue(repo, int(params["number"]), actor_login(emulator, data))
    if entry is None:
        raise ControlError(f"pull request {params['number']} is not in the merge queue", 404)
    return {"number": entry.number, "dequeued": True}


def enable_auto_merge(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    repo = repo_of(emulator, params)
    method = field_value(data, "method", str) or "merge"
    if method not in ("merge", "squash", "rebase"):
        raise ControlError("method must be merge, squash or rebase")
    with emulator.state.lock:
        pr = emulator.state.pull(repo, int(params["number"]))
        result = emulator.state.enable_auto_merge(
            repo, pr, actor_login(emulator, data), method=method
        )
        if isinstance(result, QueueEntry):
            return {"queued": True, **_entry(emulator, repo, result)}
        return {"queued": False, **to_json(result)}


def disable_auto_merge(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    repo = repo_of(emulator, params)
    with emulator.state.lock:
        pr = emulator.state.pull(repo, int(params["number"]))
        emulator.state.disable_auto_merge(repo, pr, actor_login(emulator, data))
        return {"number": pr.number, "auto_merge": False}


def rules_routes(prefix: str) -> list[tuple[str, str, ControlHandler]]:
    """The routes of these steps under the control API's ``prefix``."""
    repo = prefix + "/repos/{owner}/{repo}"
    pulls = repo + "/pulls/{number:int}"
    return [
        ("PUT", repo + "/branches/{branch:path}/protection", protect_branch),
        ("DELETE", repo + "/branches/{branch:path}/protection", unprotect_branch),
        ("PATCH", repo + "/merge-settings", set_merge_settings),
        ("PUT", prefix + "/orgs/{org}/teams/{slug}", set_team),
        ("POST", repo + "/deployments", create_deployment),
        ("POST", repo + "/deployments/{deployment_id:int}/statuses", add_deployment_status),
        ("POST", pulls + "/update-branch", update_pull_branch),
        ("POST", repo + "/rulesets", create_ruleset),
        ("GET", repo + "/rulesets", list_rulesets),
        ("DELETE", repo + "/rulesets/{ruleset_id:int}", delete_ruleset),
        ("GET", repo + "/merge-queue", merge_queue),
        ("POST", pulls + "/queue", enqueue),
        ("DELETE", pulls + "/queue", dequeue),
        ("PUT", pulls + "/auto-merge", enable_auto_merge),
        ("DELETE", pulls + "/auto-merge", disable_auto_merge),
    ]
