"""Rules of the ``review`` section."""

from __future__ import annotations

from collections.abc import Iterator

from orchestrator.workflow.problems import Problem
from orchestrator.workflow.rules.context import RuleContext


def check_review(ctx: RuleContext) -> Iterator[Problem]:
    """A self-review that can lead to fixes."""
    review = ctx.policy.review
    if review.enabled and not review.fix_consideration_severities:
        yield ctx.warning(
            "review.fix_consideration_severities", "is empty: no finding will ever be fixed"
        )
