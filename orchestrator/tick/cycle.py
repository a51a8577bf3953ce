"""One tick: snapshot, reconcile, plan, execute.

The snapshot reads GitHub, the store and the open turn claims of every replica; reconciliation
cancels turns nobody wants any more; the pure planner turns the snapshot into
actions; the executor applies them (side effects only through the gate).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from orchestrator.agent import RepoSource
from orchestrator.domain.planner import plan
from orchestrator.domain.reconcile import stale_turns
from orchestrator.domain.snapshot import IssueRef
from orchestrator.logs import get_logger
from orchestrator.store.fencing import Fence
from orchestrator.tick.execute import ExecutionReport, Executor
from orchestrator.tick.gather import SnapshotBuilder
from orchestrator.tick.request import CycleKind, CycleRequest
from orchestrator.turns.claimer import TurnClaimer
from orchestrator.wiring.agents import AgentWiring
from orchestrator.wiring.policy_view import PolicyView

log = get_logger(__name__)

# Follow-up passes a whole tick may run over what moved before its pass over every issue.
MAX_MOVED_FOLLOW_UPS = 4


@dataclass
class TickReport:
    """What one tick saw and did."""

    issues: int = 0
    actions: int = 0
    reconciled: int = 0
    duration_s: float = 0.0
    execution: ExecutionReport = field(default_factory=ExecutionReport)
    # The pass: "whole" (every issue), "moved" or "follow_up".
    kind: str = "whole"


def _stopped(report: TickReport) -> bool:
    """Whether a pass ended the tick: the poll lease was lost, or GitHub's budget spent."""
    return report.execution.fenced or report.execution.rate_limited is not None


def combined(passes: list[TickReport], *, issues: int | None = None) -> TickReport:
    """The passes of one tick as one report; it saw what its pass over every issue saw
    (else its first pass), unless ``issues`` says otherwise."""
    if issues is None:
        wholes = [p.issues for p in passes if p.kind == "whole"]
        issues = wholes[-1] if wholes else passes[0].issues
    execution = passes[0].execution
    for later in passes[1:]:
        execution = execution.merged(later.execution)
    return TickReport(
        issues=issues,
        actions=sum(p.actions for p in passes),
        reconciled=sum(p.reconciled for p in passes),
        duration_s=sum(p.duration_s for p in passes),
        execution=execution,
    )


class Tick:
    """Runs ticks; one at a time (the daemon's scheduler guarantees it)."""

    def __init__(
        self, *, builder: SnapshotBuilder, executor: Executor, claimer: TurnClaimer
    ) -> None:
        self.builder = builder
        self.executor = executor
        self.claimer = claimer

    def passes(
        self,
        request: CycleRequest,
        *,
        view: PolicyView,
        agents: AgentWiring,
        source: RepoSource,
        now: datetime,
        dispatching: bool,
        fence: Fence | None = None,
    ) -> Iterator[TickReport]:
        """The passes of one tick of ``request``'s kind, each reported as it ends (the
        caller starts the turns a pass dispatched before the next pass); raises
        RateLimited when GitHub's budget is spent while reading.

        A follow-up reads, plans and acts on its issues alone (what the previous tick
        changed), so a move that enables the next one (ready to merge, then the merge)
        is not held up by a whole pass over every issue. A whole tick first does the
        same for what the issue feed saw move (a new label, an approval), then the
        rest; a scheduled one also takes the steps that enables before the rest.
        """
        started = time.monotonic()

        def run_pass(issues: frozenset[IssueRef] | None, kind: str) -> TickReport:
            # A later pass of the same tick is dated when it runs.
            at = now + timedelta(seconds=time.monotonic() - started)
            return self._pass(
                view,
                agents,
                source,
                at,
                dispatching=dispatching,
                fence=fence,
                only=issues,
                kind=kind,
            )

        if not request.whole:
            yield run_pass(request.issues, "follow_up")
            return
        urgent = self.builder.urgent(view)
        if urgent:
            # What moved is acted on first, with the steps it enables at once (an approval:
            # ready to merge, then the merge), before the pass over every issue.
            last = run_pass(urgent, "moved")
            yield last
            follow_ups = MAX_MOVED_FOLLOW_UPS if request.kind is CycleKind.SCHEDULED else 0
            for _ in range(follow_ups):
                if _stopped(last) or not last.execution.changed or not last.execution.touched:
                    break
                last = run_pass(frozenset(last.execution.touched), "follow_up")
                yield last
            if _stopped(last):
                return
        yield run_pass(None, "whole")

    def _pass(
        self,
        view: PolicyView,
        agents: AgentWiring,
        source: RepoSource,
        now: datetime,
        *,
        dispatching: bool,
        fence: Fence | None,
        only: frozenset[IssueRef] | None,
        kind: str,
    ) -> TickReport:
        started = time.monotonic()
        # Turns run on any replica: the open claims in the database are the running ones.
        gathered = self.builder.build(view, now, self.claimer.running(view.repo), only)
        snapshot = gathered.snapshot
        reconciled = 0
        for stale in stale_turns(snapshot, view.flow):
            if only is not None and stale.issue not in only:
                continue  # not in this snapshot, not gone
            if self.claimer.cancel(stale.issue, stale.reason):
                reconciled += 1
        actions = plan(snapshot, view.flow, now)
        execution = self.executor.execute(
            actions,
            gathered,
            view=view,
            agents=agents,
            source=source,
            dispatching=dispatching,
            fence=fence,
        )
        report = TickReport(
            issues=len(snapshot.issues),
            actions=len(actions),
            reconciled=reconciled,
            duration_s=time.monotonic() - started,
            execution=execution,
            kind=kind,
        )
        log.info(
            "tick",
            issues=report.issues,
            actions=report.actions,
            running=len(snapshot.running),
            reconciled=reconciled,
            transitions=execution.transitions,
            effects=execution.effects_done,
            effects_failed=execution.effects_failed,
            refused=execution.refused,
            dispatched=execution.dispatched,
            duration_ms=round(report.duration_s * 1000),
            kind=kind,
            focus=len(only) if only is not None else None,
            catching_up="; ".join(c.describe() for c in self.builder.catching_up.values() if c.left)
            or None,
        )
        return report
