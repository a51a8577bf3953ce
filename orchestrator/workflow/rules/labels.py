"""The rule across sections that keeps every control label meaning one thing."""

from __future__ import annotations

from collections.abc import Iterator

from orchestrator.workflow.problems import Problem
from orchestrator.workflow.rules.context import RuleContext


def check_labels(ctx: RuleContext) -> Iterator[Problem]:
    """Control labels must be distinct: one label cannot mean two things."""
    policy = ctx.policy
    roles: list[tuple[str, str]] = [
        ("orchestration.ownership.required_label", policy.orchestration.ownership.required_label),
        ("rollout.observe_label", policy.rollout.observe_label),
        ("rollout.mutate_label", policy.rollout.mutate_label),
        ("rollout.kill_switch_label", policy.rollout.kill_switch_label),
        ("rollout.repo_kill_switch_label", policy.rollout.repo_kill_switch_label),
    ]
    roles += [
        (f"tracker.state_labels.{s}", label) for s, label in policy.tracker.state_labels.items()
    ]
    owners: dict[str, str] = {}
    for path, label in roles:
        folded = label.casefold()
        if folded in owners and not (
            path.startswith("tracker.state_labels.")
            and owners[folded].startswith("tracker.state_labels.")
        ):
            yield ctx.error(path, f"label '{label}' is also used by {owners[folded]}")
        owners.setdefault(folded, path)
