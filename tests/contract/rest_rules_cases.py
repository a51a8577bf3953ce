"""REST contract cases for rulesets, the rules on a branch and what rules refuse.

Each ruleset a case needs targets a branch of its own (``rules-...``), so the
shared scene's other cases never meet it.
"""

from __future__ import annotations

import secrets
from typing import Any

from tests.contract.rest_scene import Case, R, Scene

RULESET_BODY: dict[str, Any] = {
    "name": "contract",
    "target": "branch",
    "enforcement": "active",
    "conditions": {"ref_name": {"include": ["refs/heads/rules-*"], "exclude": []}},
    "rules": [
        {"type": "deletion"},
        {"type": "non_fast_forward"},
        {
            "type": "pull_request",
            "parameters": {
                "required_approving_review_count": 1,
                "dismiss_stale_reviews_on_push": True,
                "require_code_owner_review": False,
                "require_last_push_approval": False,
                "required_review_thread_resolution": False,
                "allowed_merge_methods": ["squash"],
            },
        },
        {
            "type": "required_status_checks",
            "parameters": {
                "required_status_checks": [{"context": "ci"}],
                "strict_required_status_checks_policy": True,
            },
        },
        {
            "type": "commit_message_pattern",
            "parameters": {"operator": "starts_with", "pattern": "JIRA-", "negate": False},
        },
        {
            "type": "merge_queue",
            "parameters": {
                "check_response_timeout_minutes": 60,
                "grouping_strategy": "ALLGREEN",
                "max_entries_to_build": 5,
                "max_entries_to_merge": 5,
                "merge_method": "SQUASH",
                "min_entries_to_merge": 1,
                "min_entries_to_merge_wait_minutes": 5,
            },
        },
    ],
    "bypass_actors": [{"actor_id": 5, "actor_type": "RepositoryRole", "bypass_mode": "always"}],
}


def _ruleset(s: Scene, rules: list[dict[str, Any]] | None = None) -> tuple[int, str]:
    """A new ruleset on a new ``rules-...`` branch; its id and the branch."""
    branch = f"rules-{secrets.token_hex(4)}"
    s.world.control.push(
        s.world.repo, branch, {f"{branch}.txt": "x\n"}, as_user=s.world.human.login
    )
    created = s.world.control.create_ruleset(
        s.world.repo,
        f"contract {branch}",
        rules if rules is not None else RULESET_BODY["rules"],
        include=[f"refs/heads/{branch}"],
        bypass_actors=RULESET_BODY["bypass_actors"],
    )
    return int(created["id"]), branch


def _branch_rules(s: Scene) -> tuple[str, Any]:
    _id, branch = _ruleset(s)
    return f"{s.repo}/rules/branches/{branch}", None


def _list(s: Scene) -> tuple[str, Any]:
    _ruleset(s)
    return f"{s.repo}/rulesets", None


def _get_one(s: Scene) -> tuple[str, Any]:
    ruleset_id, _branch = _ruleset(s)
    return f"{s.repo}/rulesets/{ruleset_id}", None


def _create(s: Scene) -> tuple[str, Any]:
    return f"{s.repo}/rulesets", dict(RULESET_BODY, name=f"contract {secrets.token_hex(4)}")


def _create_invalid(s: Scene) -> tuple[str, Any]:
    return f"{s.repo}/rulesets", dict(RULESET_BODY, enforcement="sometimes")


def _update(s: Scene) -> tuple[str, Any]:
    ruleset_id, _branch = _ruleset(s)
    return f"{s.repo}/rulesets/{ruleset_id}", {"enforcement": "evaluate"}


def _delete(s: Scene) -> tuple[str, Any]:
    ruleset_id, _branch = _ruleset(s)
    return f"{s.repo}/rulesets/{ruleset_id}", None


def _merge_through_queue(s: Scene) -> tuple[str, Any]:
    _id, branch = _ruleset(s, [{"type": "merge_queue"}])
    number, head = s.fresh_pull(base=branch)
    return f"{s.repo}/pulls/{number}/merge", {"sha": head}


def _create_ref_refused(s: Scene) -> tuple[str, Any]:
    name = f"norefs-{secrets.token_hex(4)}"
    s.world.control.create_ruleset(
        s.world.repo, f"contract {name}", [{"type": "creation"}], include=[f"refs/heads/{name}"]
    )
    return f"{s.repo}/git/refs", {"ref": f"refs/heads/{name}", "sha": s.head}


def _force_refused(s: Scene) -> tuple[str, Any]:
    _id, branch = _ruleset(s, [{"type": "non_fast_forward"}])
    return f"{s.repo}/git/refs/heads/{branch}", {"sha": s.head, "force": True}


def _delete_refused(s: Scene) -> tuple[str, Any]:
    _id, branch = _ruleset(s, [{"type": "deletion"}])
    return f"{s.repo}/git/refs/heads/{branch}", None


RULES_CASES = [
    Case("branch_rules", "GET", R + "/rules/branches/{branch}", 200, _branch_rules),
    Case("rulesets", "GET", R + "/rulesets", 200, _list),
    Case("ruleset", "GET", R + "/rulesets/{ruleset_id}", 200, _get_one),
    Case(
        "ruleset_missing",
        "GET",
        R + "/rulesets/{ruleset_id}",
        404,
        lambda s: (f"{s.repo}/rulesets/999999999", None),
    ),
    Case("create_ruleset", "POST", R + "/rulesets", 201, _create, who="human"),
    Case("create_ruleset_invalid", "POST", R + "/rulesets", 422, _create_invalid, who="human"),
    Case("update_ruleset", "PUT", R + "/rulesets/{ruleset_id}", 200, _update, who="human"),
    Case("delete_ruleset", "DELETE", R + "/rulesets/{ruleset_id}", 204, _delete, who="human"),
    Case(
        "merge_through_queue_only",
        "PUT",
        R + "/pulls/{pull_number}/merge",
        405,
        _merge_through_queue,
    ),
    Case("create_ref_refused_by_rules", "POST", R + "/git/refs", 422, _create_ref_refused),
    Case("force_refused_by_rules", "PATCH", R + "/git/refs/{ref}", 422, _force_refused),
    Case("delete_refused_by_rules", "DELETE", R + "/git/refs/{ref}", 422, _delete_refused),
]
