"""Rules of the ``orchestration`` section: the starting phase, passive phases, workpad marker."""

from __future__ import annotations

import re
from collections.abc import Iterator

from orchestrator.domain.phases import AGENT_PHASES, Phase
from orchestrator.workflow.problems import Problem
from orchestrator.workflow.rules.context import RuleContext
from orchestrator.workflow.schema import DEFAULT_PASSIVE_PHASES

_HEADING = re.compile(r"^#{1,6} \S")


def check_orchestration(ctx: RuleContext) -> Iterator[Problem]:
    """Where the flow starts, which phases wait, and the workpad heading."""
    orchestration = ctx.policy.orchestration
    agent_phases = ", ".join(p.value for p in Phase if p in AGENT_PHASES)
    if orchestration.default_phase not in AGENT_PHASES:
        yield ctx.error(
            "orchestration.default_phase",
            f"must be an agent phase ({agent_phases}), got '{orchestration.default_phase}'",
        )
    missing = [p for p in DEFAULT_PASSIVE_PHASES if p not in orchestration.passive_phases]
    if missing:
        yield ctx.error(
            "orchestration.passive_phases",
            "must contain " + ", ".join(missing) + " (they wait on the outside world)",
        )
    for index, phase in enumerate(orchestration.passive_phases):
        if phase in AGENT_PHASES or phase in (Phase.MERGING, Phase.DONE):
            yield ctx.error(
                f"orchestration.passive_phases[{index}]",
                f"'{phase}' cannot be passive: it must run when due",
            )
    marker = orchestration.ownership.required_workpad_marker
    if not _HEADING.match(marker):
        yield ctx.error(
            "orchestration.ownership.required_workpad_marker",
            f"must be a Markdown heading such as '## Orchestrator Workpad', got {marker!r}",
        )
