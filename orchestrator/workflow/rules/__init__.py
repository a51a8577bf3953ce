"""Semantic rules over a typed policy: relations between keys that types alone cannot check.

Each rule is a small function that yields problems with the reason in the
message, located at the value the operator has to change. Errors make the
policy unusable; warnings (``merge disabled by rollout mode``, a token written
in the file, ...) are shown by ``orchestrator validate`` and logged on load.

One module per policy section holds that section's rules; this module lists
them in the order their problems are reported.
"""

from __future__ import annotations

from collections.abc import Iterable

from orchestrator.workflow.problems import Problem
from orchestrator.workflow.rules.agent import GITHUB_CREDENTIAL_NAMES, check_agent, check_sandbox
from orchestrator.workflow.rules.context import Rule, RuleContext
from orchestrator.workflow.rules.database import check_database
from orchestrator.workflow.rules.hooks import check_hooks
from orchestrator.workflow.rules.labels import check_labels
from orchestrator.workflow.rules.merge import check_merge
from orchestrator.workflow.rules.orchestration import check_orchestration
from orchestrator.workflow.rules.pr import check_pr
from orchestrator.workflow.rules.review import check_review
from orchestrator.workflow.rules.server import LOOPBACK_HOSTS, check_server
from orchestrator.workflow.rules.tracker import check_app_auth, check_tracker

__all__ = [
    "GITHUB_CREDENTIAL_NAMES",
    "LOOPBACK_HOSTS",
    "RULES",
    "Rule",
    "RuleContext",
    "check_rules",
]

RULES: tuple[Rule, ...] = (
    check_tracker,
    check_app_auth,
    check_labels,
    check_agent,
    check_sandbox,
    check_orchestration,
    check_pr,
    check_review,
    check_merge,
    check_server,
    check_database,
    check_hooks,
)


def check_rules(ctx: RuleContext, rules: Iterable[Rule] = RULES) -> list[Problem]:
    """Every problem the rules find, in rule order."""
    return [problem for rule in rules for problem in rule(ctx)]
