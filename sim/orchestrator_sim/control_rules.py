"""Control API steps for rulesets, repository merge settings, the merge queue and auto-merge.

They play the repository's administrators (who write rulesets and settings)
and the people who press "Merge when ready", "Enable auto-merge" or remove a
pull request from the queue in GitHub's web interface. A ruleset body is
GitHub's REST body; parameters it leaves out take GitHub's form defaults.
"""

from __future__ import annotations

from typing import Any

from orchestrator_sim.control_steps import ControlError, ControlHandler, actor_login, field_value
from orchestrator_sim.emulator import Emulator
from orchestrator_sim.records import CHECK_CONCLUSIONS, CHECK_STATUSES, Repo
from orchestrator_sim.records_rules import QueueEntry, Ruleset
from orchestrator_sim.rulesets import parse_ruleset
from orchestrator_sim.snapshot import to_json

_GROUP_RESULTS = CHECK_CONCLUSIONS | (CHECK_STATUSES - {"completed"})


def _repo(emulator: Emulator, params: dict[str, Any]) -> Repo:
    return emulator.state.repo(params["owner"], params["repo"])


def _ruleset(ruleset: Ruleset) -> dict[str, Any]:
    data: dict[str, Any] = to_json(ruleset)
    return data


def _entry(emulator: Emulator, repo: Repo, entry: QueueEntry) -> dict[str, Any]:
    data: dict[str, Any] = to_json(entry)
    data["position"] = emulator.state.queue_position(repo, entry)
    return data


def create_ruleset(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    repo = _repo(emulator, params)
    return _ruleset(emulator.state.create_ruleset(repo, parse_ruleset(data, fill_defaults=True)))


def list_rulesets(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    repo = _repo(emulator, params)
    with emulator.state.lock:
        return {
            "rulesets": [_ruleset(r) for r in sorted(repo.rulesets.values(), key=lambda r: r.id)]
        }


def delete_ruleset(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    emulator.state.delete_ruleset(_repo(emulator, params), int(params["ruleset_id"]))
    return {"deleted": int(params["ruleset_id"])}


def set_merge_settings(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    """``allow_auto_merge`` (GitHub's repository setting, off by default) and
    ``merge_group_checks`` (what the emulated CI reports on each merge group)."""
    repo = _repo(emulator, params)
    allow = field_value(data, "allow_auto_merge", bool)
    checks = field_value(data, "merge_group_checks", dict)
    if checks is not None and not all(
        isinstance(name, str) and value in _GROUP_RESULTS for name, value in checks.items()
    ):
        raise ControlError(
            "merge_group_checks must map check names to a conclusion or a pending status "
            f"({', '.join(sorted(_GROUP_RESULTS))})"
        )
    with emulator.state.lock:
        emulator.state.set_merge_settings(repo, allow_auto_merge=allow, merge_group_checks=checks)
        return {
            "allow_auto_merge": repo.allow_auto_merge,
            "merge_group_checks": dict(repo.merge_group_checks),
        }


def merge_queue(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    """The entries of one base's queue (``branch``, default the default branch)."""
    repo = _repo(emulator, params)
    branch = field_value(data, "branch", str) or repo.default_branch
    with emulator.state.lock:
        entries = emulator.state.queue_entries(repo, branch)
        return {"branch": branch, "entries": [_entry(emulator, repo, e) for e in entries]}


def enqueue(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    repo = _repo(emulator, params)
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
    repo = _repo(emulator, params)
    entry = emulator.state.dequeue(repo, int(params["number"]), actor_login(emulator, data))
    if entry is None:
        raise ControlError(f"pull request {params['number']} is not in the merge queue", 404)
    return {"number": entry.number, "dequeued": True}


def enable_auto_merge(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    repo = _repo(emulator, params)
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
    repo = _repo(emulator, params)
    with emulator.state.lock:
        pr = emulator.state.pull(repo, int(params["number"]))
        emulator.state.disable_auto_merge(repo, pr, actor_login(emulator, data))
        return {"number": pr.number, "auto_merge": False}


def rules_routes(repo_prefix: str) -> list[tuple[str, str, ControlHandler]]:
    """The routes of these steps under the control API's repository prefix."""
    pulls = repo_prefix + "/pulls/{number:int}"
    return [
        ("POST", repo_prefix + "/rulesets", create_ruleset),
        ("GET", repo_prefix + "/rulesets", list_rulesets),
        ("DELETE", repo_prefix + "/rulesets/{ruleset_id:int}", delete_ruleset),
        ("PATCH", repo_prefix + "/merge-settings", set_merge_settings),
        ("GET", repo_prefix + "/merge-queue", merge_queue),
        ("POST", pulls + "/queue", enqueue),
        ("DELETE", pulls + "/queue", dequeue),
        ("PUT", pulls + "/auto-merge", enable_auto_merge),
        ("DELETE", pulls + "/auto-merge", disable_auto_merge),
    ]
