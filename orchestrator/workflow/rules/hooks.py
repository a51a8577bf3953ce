"""Rules of the ``hooks`` section."""

from __future__ import annotations

import re
from collections.abc import Iterator

from orchestrator.workflow.problems import Problem
from orchestrator.workflow.rules.context import RuleContext

_GIT_CLONE = re.compile(r"^\s*(?:[^#\n]*(?:&&|;|\|\|)\s*)?git\s+clone\b", re.M)


def check_hooks(ctx: RuleContext) -> Iterator[Problem]:
    """Hooks that cannot work where they run."""
    hooks = ctx.policy.hooks
    script = hooks.after_create
    if script is not None and not hooks.after_create_in_empty_dir and _GIT_CLONE.search(script):
        yield ctx.warning(
            "hooks.after_create",
            "runs `git clone`, but after_create runs in the workspace after the runtime has "
            "checked out tracker.repo into it: the clone would fail or nest a second checkout; "
            "set hooks.after_create_in_empty_dir: true to run it first, in an empty folder, as "
            "Symphony does, or remove the clone",
        )
