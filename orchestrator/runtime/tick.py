"""One tick: snapshot, reconcile, plan, execute.

The snapshot reads GitHub, the store and the open turn claims of every replica; reconciliation
cancels turns nobody wants any more; the pure planner turns the snapshot into
actions; the executor applies them (side effects only through the gate).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from orchestrator.agent import RepoSource
from orchestrator.domain.planner import plan
from orchestrator.domain.reconcile import stale_turns
from orchestrator.domain.snapshot import IssueRef
from orchestrator.logs import get_logger
from orchestrator.runtime.claimer import TurnClaimer
from orchestrator.runtime.executor import ExecutionReport, Executor
from orchestrator.runtime.gather import SnapshotBuilder
from orchestrator.runtime.wiring import AgentWiring, PolicyView
from orchestrator.store.fencing import Fence

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


def combined(passes: list[TickReport], *, issues: int) -> TickReport:
    """The passes of one tick as one report."""
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

    def run(
        self,
        *,
        view: PolicyView,
        agents: AgentWiring,
        source: RepoSource,
        now: datetime,
        dispatching: bool,
        fence: Fence | None = None,
        only: frozenset[IssueRef] | None = None,
        on_dispatched: Callable[[], object] | None = None,
        follow_moved: bool = False,
    ) -> TickReport:
        """One tick; raises RateLimited when GitHub's budget is spent while reading.

        With ``only``, a follow-up tick: those issues alone are read, planned and acted
        on (what the previous tick changed), so a move that enables the next one (ready
        to merge, then the merge) is not held up by a whole pass over every issue. A
        whole tick first does the same for what the issue feed saw move (a new label,
        an approval), then the rest; with ``follow_moved`` (the daemon's scheduled
        ticks) it also takes the steps that enables before the rest (an approval: ready
        to merge, then the merge). ``on_dispatched`` is called after each pass that
        started turns, so they are claimed at once.
        """

        started = time.monotonic()

        def run_pass(issues: frozenset[IssueRef] | None, kind: str) -> TickReport:
            report = self._pass(
                view,
                agents=agents,
                source=source,
                # A later pass of the same tick is dated when it runs.
                now=now + timedelta(seconds=time.monotonic() - started),
                dispatching=dispatching,
                fence=fence,
                only=issues,
                kind=kind,
            )
            if report.execution.dispatched and on_dispatched is not None:
                on_dispatched()
            return report

        if only is not None:
            return run_pass(only, "follow_up")
        urgent = self.builder.urgent(view)
        if not urgent:
            return run_pass(None, "whole")
        # What moved is acted on first, with the steps it enables at once (an approval:
        # ready to merge, then the merge), before the pass over every issue.
        passes = [run_pass(urgent, "moved")]
        for _ in range(MAX_MOVED_FOLLOW_UPS if follow_moved else 0):
            last = passes[-1].execution
            if last.fenced or last.rate_limited is not None:
                return combined(passes, issues=passes[0].issues)
            if not last.changed or not last.touched:
                break
            passes.append(run_pass(frozenset(last.touched), "follow_up"))
        if passes[-1].execution.fenced or passes[-1].execution.rate_limited is not None:
            return combined(passes, issues=passes[0].issues)
        whole = run_pass(None, "whole")
        return combined([*passes, whole], issues=whole.issues)

    def _pass(
        self,
        view: PolicyView,
        *,
        agents: AgentWiring,
        source: RepoSource,
        now: datetime,
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
