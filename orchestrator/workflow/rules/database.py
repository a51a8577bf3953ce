"""Rules of the ``database`` section."""

from __future__ import annotations

from collections.abc import Iterator

from orchestrator.workflow.problems import Problem
from orchestrator.workflow.rules.context import RuleContext


def check_database(ctx: RuleContext) -> Iterator[Problem]:
    """The database URL names a backend the store supports."""
    scheme = ctx.policy.database.url.split(":", 1)[0]
    if not (scheme == "sqlite" or scheme.startswith(("sqlite+", "postgresql"))):
        yield ctx.error(
            "database.url",
            f"expected a sqlite:/// or postgresql+psycopg:// URL, got scheme {scheme!r}",
        )
