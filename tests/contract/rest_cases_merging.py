"""REST contract cases for what a merge needs: update-branch, refused merge methods,
out-of-date heads under strict checks, and deployments."""

from __future__ import annotations

import secrets
from typing import Any

from tests.contract.rest_scene import Case, R, Scene, fetch

PULL = R + "/pulls/{pull_number}"


def _base_with(s: Scene, **rules: Any) -> str:
    """A new branch off main protected by ``rules``."""
    name = f"rules-{secrets.token_hex(4)}"
    control = s.world.control
    control.push(s.world.repo, name, {f"{name}.txt": "x\n"}, as_user=s.world.human.login)
    control.protect(s.world.repo, name, **rules)
    return name


def _move(s: Scene, branch: str = "main") -> None:
    """A commit on ``branch`` that touches nothing a pull request does."""
    name = f"moved-{secrets.token_hex(4)}.txt"
    s.world.control.push(s.world.repo, branch, {name: "x\n"}, as_user=s.world.human.login)


def _update_behind(s: Scene) -> tuple[str, Any]:
    number, head = s.fresh_pull()
    _move(s)
    return f"{s.repo}/pulls/{number}/update-branch", {"expected_head_sha": head}


def _update_stale(s: Scene) -> tuple[str, Any]:
    number, _head = s.fresh_pull()
    _move(s)
    return f"{s.repo}/pulls/{number}/update-branch", {"expected_head_sha": "0" * 40}


def _update_current(s: Scene) -> tuple[str, Any]:
    number, _head = s.fresh_pull()
    return f"{s.repo}/pulls/{number}/update-branch", None


def _merge_commit_on_linear_history(s: Scene) -> tuple[str, Any]:
    number, head = s.fresh_pull(base=_base_with(s, required_linear_history=True))
    return f"{s.repo}/pulls/{number}/merge", {"sha": head, "merge_method": "merge"}


def _merge_behind(s: Scene) -> tuple[str, Any]:
    base = _base_with(s, required_checks=["ci"], strict=True)
    number, head = s.fresh_pull(base=base, settle=False)
    s.world.control.check_run(s.world.repo, sha=head, name="ci", conclusion="success")
    _move(s, base)
    s.world.settle_mergeability()
    return f"{s.repo}/pulls/{number}/merge", {"sha": head}


def _deployment(s: Scene) -> int:
    created = s.world.control.deploy(
        s.world.repo, "staging", as_user=s.world.human.login, sha=s.head, state="success"
    )
    return int(created["id"])


def _deployments(s: Scene) -> tuple[str, Any]:
    _deployment(s)
    return f"{s.repo}/deployments?sha={s.head}&environment=staging", None


MERGING_CASES = [
    Case("update_branch", "PUT", PULL + "/update-branch", 202, _update_behind),
    Case("update_branch_stale_head", "PUT", PULL + "/update-branch", 422, _update_stale),
    Case("update_branch_up_to_date", "PUT", PULL + "/update-branch", 422, _update_current),
    Case(
        "update_branch_without_write",
        "PUT",
        PULL + "/update-branch",
        403,
        _update_behind,
        who="reader",
    ),
    Case(
        "merge_commit_on_linear_history",
        "PUT",
        PULL + "/merge",
        405,
        _merge_commit_on_linear_history,
    ),
    Case("merge_behind_strict_checks", "PUT", PULL + "/merge", 405, _merge_behind),
    Case(
        "deployments",
        "GET",
        R + "/deployments",
        200,
        _deployments,
    ),
    Case(
        "deployment_statuses",
        "GET",
        R + "/deployments/{deployment_id}/statuses",
        200,
        lambda s: (f"{s.repo}/deployments/{_deployment(s)}/statuses", None),
    ),
    Case(
        "deployment_statuses_unknown",
        "GET",
        R + "/deployments/{deployment_id}/statuses",
        404,
        fetch(lambda s: f"{s.repo}/deployments/999999999/statuses"),
    ),
]
