"""REST routes for repository rulesets and the rules in effect on a branch.

``GET .../rules/branches/{branch}`` lists every active rule that applies to a
branch, each naming its ruleset (``ruleset_source_type``, ``ruleset_source``,
``ruleset_id``); ``.../rulesets`` lists, reads, creates, replaces and deletes
rulesets (writing needs admin). Bodies and answers use GitHub's shapes.
"""

from __future__ import annotations

from typing import Any

from orchestrator_sim.api import Call, Reply, RouteSpec
from orchestrator_sim.errors import Unprocessable
from orchestrator_sim.records import Repo
from orchestrator_sim.records_rules import Ruleset, RulesetRule
from orchestrator_sim.rulesets import parse_ruleset

REPO = "/repos/{owner}/{repo}"
RULESET = REPO + "/rulesets/{ruleset_id:int}"
_TARGETS = ("branch", "tag", "push", "repository")


def rule_body(rule: RulesetRule) -> dict[str, Any]:
    """A rule as GitHub shows it (``required_status_checks`` as ``{"context"}`` objects)."""
    body: dict[str, Any] = {"type": rule.type}
    if rule.parameters:
        parameters: dict[str, Any] = dict(rule.parameters)
        contexts = parameters.get("required_status_checks")
        if rule.type == "required_status_checks" and isinstance(contexts, list):
            parameters["required_status_checks"] = [{"context": name} for name in contexts]
        for optional in ("name", "negate"):
            if parameters.get(optional) in ("", None):
                parameters.pop(optional, None)
        body["parameters"] = parameters
    return body


def ruleset_summary(call: Call, repo: Repo, ruleset: Ruleset) -> dict[str, Any]:
    """A ruleset as a list shows it."""
    return {
        "id": ruleset.id,
        "name": ruleset.name,
        "target": ruleset.target,
        "source_type": "Repository",
        "source": repo.full_name,
        "enforcement": ruleset.enforcement,
        "node_id": ruleset.node_id,
        "_links": {
            "self": {"href": f"{call.shapes.repo_url(repo)}/rulesets/{ruleset.id}"},
            "html": {"href": f"{call.shapes.repo_html(repo)}/rules/{ruleset.id}"},
        },
        "created_at": ruleset.created_at,
        "updated_at": ruleset.updated_at,
    }


def ruleset_body(call: Call, repo: Repo, ruleset: Ruleset) -> dict[str, Any]:
    """A whole ruleset; its bypass actors are shown to administrators only."""
    state = call.state
    body = ruleset_summary(call, repo, ruleset)
    body["conditions"] = {"ref_name": {"include": ruleset.include, "exclude": ruleset.exclude}}
    body["rules"] = [rule_body(rule) for rule in ruleset.rules]
    if call.allowed(repo, "admin"):
        body["bypass_actors"] = [
            {"actor_id": a.actor_id, "actor_type": a.actor_type, "bypass_mode": a.bypass_mode}
            for a in ruleset.bypass_actors
        ]
    if state.bypasses(repo, ruleset, call.user.login, for_merge=False):
        modes = {a.bypass_mode for a in ruleset.bypass_actors}
        body["current_user_can_bypass"] = "exempt" if "exempt" in modes else "always"
    elif state.bypasses(repo, ruleset, call.user.login, for_merge=True):
        body["current_user_can_bypass"] = "pull_requests_only"
    else:
        body["current_user_can_bypass"] = "never"
    return body


def branch_rules(call: Call) -> Reply:
    repo = call.repo()
    branch = call.params["branch"]
    with call.state.lock:
        found = call.state.branch_rules(repo, branch)

        def render(pair: tuple[Ruleset, RulesetRule]) -> dict[str, Any]:
            ruleset, rule = pair
            body = rule_body(rule)
            body.update(
                ruleset_source_type="Repository",
                ruleset_source=repo.full_name,
                ruleset_id=ruleset.id,
            )
            return body

        return call.paged(found, render)


def list_rulesets(call: Call) -> Reply:
    repo = call.repo()
    wanted = call.query.get("targets")
    kinds = [kind.strip() for kind in wanted.split(",")] if wanted else list(_TARGETS)
    for kind in kinds:
        if kind not in _TARGETS:
            raise Unprocessable(f"Invalid targets value: {kind}")
    with call.state.lock:
        rulesets = [r for r in sorted(repo.rulesets.values(), key=lambda r: r.id)]
        rulesets = [r for r in rulesets if r.target in kinds]
        return call.paged(rulesets, lambda r: ruleset_summary(call, repo, r))


def get_ruleset(call: Call) -> Reply:
    repo = call.repo()
    with call.state.lock:
        ruleset = call.state.ruleset(repo, call.number("ruleset_id"))
        return Reply(200, ruleset_body(call, repo, ruleset))


def create_ruleset(call: Call) -> Reply:
    repo = call.repo("admin")
    data = parse_ruleset(call.json_object())
    with call.state.lock:
        ruleset = call.state.create_ruleset(repo, data)
        return Reply(201, ruleset_body(call, repo, ruleset))


def update_ruleset(call: Call) -> Reply:
    """GitHub's PUT keeps what the body leaves out."""
    repo = call.repo("admin")
    changes = call.json_object()
    with call.state.lock:
        current = ruleset_body(call, repo, call.state.ruleset(repo, call.number("ruleset_id")))
        merged = {key: current.get(key) for key in ("name", "target", "enforcement")}
        merged["conditions"] = current["conditions"]
        merged["rules"] = current["rules"]
        merged["bypass_actors"] = current.get("bypass_actors", [])
        merged.update(changes)
        ruleset = call.state.update_ruleset(repo, call.number("ruleset_id"), parse_ruleset(merged))
        return Reply(200, ruleset_body(call, repo, ruleset))


def delete_ruleset(call: Call) -> Reply:
    repo = call.repo("admin")
    call.state.delete_ruleset(repo, call.number("ruleset_id"))
    return Reply(204)


ROUTES: tuple[RouteSpec, ...] = (
    RouteSpec("GET", REPO + "/rules/branches/{branch:path}", branch_rules),
    RouteSpec("GET", REPO + "/rulesets", list_rulesets),
    RouteSpec("POST", REPO + "/rulesets", create_ruleset),
    RouteSpec("GET", RULESET, get_ruleset),
    RouteSpec("PUT", RULESET, update_ruleset),
    RouteSpec("DELETE", RULESET, delete_ruleset),
)
