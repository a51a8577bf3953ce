"""Repository rulesets as GitHub's REST API spells them: validation, targeting, rule texts.

`parse_ruleset` checks a create or update body (``name``, ``target``,
``enforcement``, ``bypass_actors``, ``conditions.ref_name``, ``rules``) and
refuses what GitHub refuses with a message naming the property, as
``Invalid property /rules/0/parameters/merge_method: ...``; rule types the
emulator does not model are refused by name instead of being ignored. Ref
name patterns follow GitHub's fnmatch: ``*`` stays inside one path segment,
``**`` crosses them, ``~DEFAULT_BRANCH`` and ``~ALL`` are the special names.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from orchestrator_sim.errors import Unprocessable
from orchestrator_sim.records_rules import (
    BYPASS_ACTOR_TYPES,
    BYPASS_MODES,
    ENFORCEMENTS,
    BypassActor,
    RuleParameter,
    RulesetRule,
)

RULES_DOCS = "https://docs.github.com/rest/repos/rules#create-a-repository-ruleset"
PATTERN_OPERATORS = ("starts_with", "ends_with", "contains", "regex")
PATTERN_RULES = (
    "branch_name_pattern",
    "commit_message_pattern",
    "commit_author_email_pattern",
    "committer_email_pattern",
)
MERGE_METHODS = ("merge", "squash", "rebase")


@dataclass(frozen=True)
class _Param:
    """One parameter of a rule type: its kind, whether GitHub requires it, its default."""

    kind: str  # "bool", "int", "enum", "methods", "contexts", "str"
    required: bool
    default: RuleParameter
    low: int = 0
    high: int = 0
    choices: tuple[str, ...] = ()


def _bool(required: bool = True) -> _Param:
    return _Param("bool", required, False)


def _int(low: int, high: int, default: int) -> _Param:
    return _Param("int", True, default, low, high)


def _enum(choices: tuple[str, ...], default: str) -> _Param:
    return _Param("enum", True, default, choices=choices)


_PATTERN = {
    "operator": _enum(PATTERN_OPERATORS, "starts_with"),
    "pattern": _Param("str", True, ""),
    "name": _Param("str", False, ""),
    "negate": _bool(required=False),
}

# The modelled rule types and their parameters, as GitHub's OpenAPI description names them.
RULE_PARAMETERS: dict[str, dict[str, _Param]] = {
    "creation": {},
    "update": {"update_allows_fetch_and_merge": _bool(required=False)},
    "deletion": {},
    "required_linear_history": {},
    "required_signatures": {},
    "non_fast_forward": {},
    "pull_request": {
        "dismiss_stale_reviews_on_push": _bool(),
        "require_code_owner_review": _bool(),
        "require_last_push_approval": _bool(),
        "required_approving_review_count": _int(0, 10, 0),
        "required_review_thread_resolution": _bool(),
        "allowed_merge_methods": _Param("methods", False, list(MERGE_METHODS)),
    },
    "required_status_checks": {
        "required_status_checks": _Param("contexts", True, []),
        "strict_required_status_checks_policy": _bool(),
        "do_not_enforce_on_create": _bool(required=False),
    },
    "merge_queue": {
        "check_response_timeout_minutes": _int(1, 360, 60),
        "grouping_strategy": _enum(("ALLGREEN", "HEADGREEN"), "ALLGREEN"),
        "max_entries_to_build": _int(0, 100, 5),
        "max_entries_to_merge": _int(0, 100, 5),
        "merge_method": _enum(("MERGE", "SQUASH", "REBASE"), "MERGE"),
        "min_entries_to_merge": _int(0, 100, 1),
        "min_entries_to_merge_wait_minutes": _int(0, 360, 5),
    },
    **{name: dict(_PATTERN) for name in PATTERN_RULES},
}


@dataclass(frozen=True)
class RulesetInput:
    """A validated ruleset body, ready to be stored."""

    name: str
    target: str
    enforcement: str
    include: list[str]
    exclude: list[str]
    rules: list[RulesetRule]
    bypass_actors: list[BypassActor]


def _refuse(where: str, problem: str) -> Unprocessable:
    return Unprocessable(
        f"Invalid request.\n\nInvalid property {where}: {problem}",
        documentation_url=RULES_DOCS,
    )


def _typed(value: Any, kind: type, where: str) -> Any:
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise _refuse(where, f"must be {'a boolean' if kind is bool else kind.__name__}")
    return value


def _strings(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise _refuse(where, "must be a list of strings")
    return list(value)


def _parameter(spec: _Param, value: Any, where: str) -> RuleParameter:
    if spec.kind == "bool":
        return bool(_typed(value, bool, where))
    if spec.kind == "str":
        return str(_typed(value, str, where))
    if spec.kind == "int":
        number = int(_typed(value, int, where))
        if not spec.low <= number <= spec.high:
            raise _refuse(where, f"must be between {spec.low} and {spec.high}")
        return number
    if spec.kind == "enum":
        if value not in spec.choices:
            raise _refuse(where, f"must be one of {', '.join(spec.choices)}")
        return str(value)
    if spec.kind == "methods":
        methods = _strings(value, where)
        if not methods or any(method not in MERGE_METHODS for method in methods):
            raise _refuse(where, "must name at least one of merge, squash, rebase")
        return methods
    if not isinstance(value, list):
        raise _refuse(where, "must be a list of {context, integration_id}")
    contexts: list[str] = []
    for index, item in enumerate(value):
        if not isinstance(item, dict) or not isinstance(item.get("context"), str):
            raise _refuse(f"{where}/{index}", "must be an object with a string context")
        if set(item) - {"context", "integration_id"}:
            raise _refuse(f"{where}/{index}", "only context and integration_id are allowed")
        if item.get("integration_id") is not None:
            raise _refuse(
                f"{where}/{index}/integration_id",
                "the emulator does not model checks bound to an integration",
            )
        contexts.append(item["context"])
    return contexts


def parse_rule(data: Any, where: str, *, fill_defaults: bool) -> RulesetRule:
    """One rule; with ``fill_defaults`` missing parameters take GitHub's form defaults."""
    if not isinstance(data, dict) or not isinstance(data.get("type"), str):
        raise _refuse(where, "data matches no possible input (a rule needs a type)")
    kind = data["type"]
    specs = RULE_PARAMETERS.get(kind)
    if specs is None:
        raise _refuse(f"{where}/type", f"rule type {kind!r} is not modelled by the emulator")
    raw = data.get("parameters") or {}
    if not isinstance(raw, dict):
        raise _refuse(f"{where}/parameters", "must be an object")
    unknown = sorted(set(raw) - set(specs))
    if unknown:
        raise _refuse(f"{where}/parameters/{unknown[0]}", f"is not a parameter of {kind}")
    parameters: dict[str, RuleParameter] = {}
    for name, spec in specs.items():
        spot = f"{where}/parameters/{name}"
        if name in raw and raw[name] is not None:
            parameters[name] = _parameter(spec, raw[name], spot)
        elif spec.required and not fill_defaults:
            raise _refuse(spot, "is required")
        else:
            default = spec.default
            parameters[name] = list(default) if isinstance(default, list) else default
    if kind in PATTERN_RULES and parameters["operator"] == "regex":
        try:
            re.compile(str(parameters["pattern"]))
        except re.error as exc:
            raise _refuse(f"{where}/parameters/pattern", f"is not a valid regex: {exc}") from exc
    return RulesetRule(type=kind, parameters=parameters)


def _bypass_actor(data: Any, where: str) -> BypassActor:
    if not isinstance(data, dict) or data.get("actor_type") not in BYPASS_ACTOR_TYPES:
        raise _refuse(f"{where}/actor_type", f"must be one of {', '.join(BYPASS_ACTOR_TYPES)}")
    mode = data.get("bypass_mode", "always")
    if mode not in BYPASS_MODES:
        raise _refuse(f"{where}/bypass_mode", f"must be one of {', '.join(BYPASS_MODES)}")
    actor_id = data.get("actor_id")
    if actor_id is not None:
        _typed(actor_id, int, f"{where}/actor_id")
    elif data["actor_type"] in ("Integration", "RepositoryRole", "Team", "User"):
        raise _refuse(f"{where}/actor_id", f"is required for {data['actor_type']}")
    return BypassActor(actor_type=data["actor_type"], actor_id=actor_id, bypass_mode=mode)


def parse_ruleset(data: Mapping[str, Any], *, fill_defaults: bool = False) -> RulesetInput:
    """A validated ruleset body (REST create/update, or the control API with defaults)."""
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        raise _refuse("/name", "is required and must be a non-empty string")
    target = data.get("target", "branch")
    if target != "branch":
        raise _refuse("/target", "the emulator models branch rulesets only")
    enforcement = data.get("enforcement")
    if enforcement not in ENFORCEMENTS:
        raise _refuse("/enforcement", f"must be one of {', '.join(ENFORCEMENTS)}")
    conditions = data.get("conditions") or {}
    if not isinstance(conditions, dict) or set(conditions) - {"ref_name"}:
        raise _refuse("/conditions", "only ref_name conditions are modelled")
    ref_name = conditions.get("ref_name") or {}
    if not isinstance(ref_name, dict):
        raise _refuse("/conditions/ref_name", "must be an object")
    include = _strings(ref_name.get("include", []), "/conditions/ref_name/include")
    exclude = _strings(ref_name.get("exclude", []), "/conditions/ref_name/exclude")
    raw_rules = data.get("rules", [])
    if not isinstance(raw_rules, list):
        raise _refuse("/rules", "must be a list")
    rules = [
        parse_rule(item, f"/rules/{index}", fill_defaults=fill_defaults)
        for index, item in enumerate(raw_rules)
    ]
    kinds = [rule.type for rule in rules]
    for kind in kinds:
        if kinds.count(kind) > 1:
            raise _refuse("/rules", f"rule type {kind} appears more than once")
    raw_actors = data.get("bypass_actors", [])
    if not isinstance(raw_actors, list):
        raise _refuse("/bypass_actors", "must be a list")
    actors = [_bypass_actor(item, f"/bypass_actors/{i}") for i, item in enumerate(raw_actors)]
    return RulesetInput(name.strip(), target, str(enforcement), include, exclude, rules, actors)


# ------------------------------------------------------------------ targeting


@lru_cache(maxsize=512)
def _pattern_regex(pattern: str) -> re.Pattern[str]:
    """GitHub's ref-name fnmatch (File::FNM_PATHNAME): ``*`` within a segment, ``**`` across."""
    out = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if pattern.startswith("**", index):
            out.append(".*")
            index += 2
            continue
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            end = pattern.find("]", index + 1)
            if end == -1:
                out.append(re.escape(char))
            else:
                body = pattern[index + 1 : end].replace("\\", "\\\\")
                out.append(f"[{'^' + body[1:] if body.startswith('!') else body}]")
                index = end
        else:
            out.append(re.escape(char))
        index += 1
    return re.compile("".join(out) + r"\Z")


def _ref_matches(pattern: str, ref: str, default_branch: str) -> bool:
    if pattern == "~ALL":
        return True
    if pattern == "~DEFAULT_BRANCH":
        return ref == f"refs/heads/{default_branch}"
    full = pattern if pattern.startswith("refs/") else f"refs/heads/{pattern}"
    return _pattern_regex(full).match(ref) is not None


def targets(include: list[str], exclude: list[str], branch: str, default_branch: str) -> bool:
    """Whether ref_name conditions ``include``/``exclude`` select ``branch``."""
    ref = f"refs/heads/{branch}"
    if not any(_ref_matches(p, ref, default_branch) for p in include):
        return False
    return not any(_ref_matches(p, ref, default_branch) for p in exclude)


# -------------------------------------------------------------- rule texts


def rule_int(rule: RulesetRule, name: str, default: int) -> int:
    """An integer parameter of a rule (``default`` when absent)."""
    value = rule.parameters.get(name, default)
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def pattern_holds(parameters: Mapping[str, RuleParameter], text: str) -> bool:
    """Whether ``text`` satisfies a metadata pattern rule (``negate`` turns it around)."""
    pattern = str(parameters["pattern"])
    checks: dict[str, Callable[[], bool]] = {
        "starts_with": lambda: text.startswith(pattern),
        "ends_with": lambda: text.endswith(pattern),
        "contains": lambda: pattern in text,
        "regex": lambda: re.search(pattern, text) is not None,
    }
    matched = checks[str(parameters["operator"])]()
    return not matched if parameters.get("negate") else matched


_SUBJECTS = {
    "branch_name_pattern": "Branch name",
    "commit_message_pattern": "Commit message",
    "commit_author_email_pattern": "Commit author email",
    "committer_email_pattern": "Committer email",
}
_PHRASES = {
    "starts_with": "start with a matching pattern",
    "ends_with": "end with a matching pattern",
    "contains": "contain a matching pattern",
    "regex": "match a given regex pattern",
}


def pattern_text(rule: RulesetRule) -> str:
    """The line a broken metadata pattern rule shows (its ``name`` when it has one)."""
    parameters = rule.parameters
    if parameters.get("name"):
        return str(parameters["name"])
    must = "must not" if parameters.get("negate") else "must"
    phrase = _PHRASES[str(parameters["operator"])]
    return f"{_SUBJECTS[rule.type]} {must} {phrase}: {parameters['pattern']}"
