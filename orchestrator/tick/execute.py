"""The tick's last step: apply the planner's actions in order.

Cancellations reach the turn claims, transitions go through the store's
compare-and-set, side effects through the one gate, dispatches to the turn
queue, observations into the records. An issue whose transition lost a race, or
whose side effect failed, gets nothing more this tick (its workpad excepted):
the next tick plans again from what really happened.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import cached_property

from structlog.contextvars import bound_contextvars

from orchestrator.agent import IssueRef as WorkspaceIssue
from orchestrator.agent import RepoSource, branch_name
from orchestrator.agent.errors import AgentLayerError
from orchestrator.domain.actions import (
    Action,
    Cancel,
    Dispatch,
    Observe,
    SideEffect,
    SideEffectKind,
    Transition,
)
from orchestrator.domain.phases import Phase
from orchestrator.domain.record_updates import apply_dispatch, apply_observation
from orchestrator.domain.side_effects import SetLabels
from orchestrator.domain.snapshot import IssueRef, IssueSnapshot, TrackedIssue
from orchestrator.domain.workpad import Observation
from orchestrator.effects.gate import SideEffectGate, Verdict
from orchestrator.github.errors import RateLimited
from orchestrator.logs import get_logger
from orchestrator.store.fencing import Fence
from orchestrator.store.issues import Applied, Illegal
from orchestrator.store.records import RecordRow, RecordStore
from orchestrator.tick.gather import Gathered
from orchestrator.tracker.base import TrackerSettings
from orchestrator.turns.claimer import TurnClaimer
from orchestrator.wiring.access import tracker_settings
from orchestrator.wiring.agents import AgentWiring
from orchestrator.wiring.policy_view import PolicyView

log = get_logger(__name__)


@dataclass
class ExecutionReport:
    """What one execution changed (a change asks for an immediate follow-up tick)."""

    transitions: int = 0
    effects_done: int = 0
    effects_failed: int = 0
    refused: int = 0
    dispatched: int = 0
    cancelled: int = 0
    rate_limited: RateLimited | None = None
    # The tick's poll lease was found lost at a write: the rest of the plan was dropped.
    fenced: bool = False
    # The issues a transition or a write changed: the follow-up tick looks at these only.
    touched: set[IssueRef] = field(default_factory=set)

    @property
    def changed(self) -> bool:
        return bool(self.transitions or self.effects_done)

    def merged(self, other: ExecutionReport) -> ExecutionReport:
        """Both executions of one tick as one (``other`` the later)."""
        return ExecutionReport(
            transitions=self.transitions + other.transitions,
            effects_done=self.effects_done + other.effects_done,
            effects_failed=self.effects_failed + other.effects_failed,
            refused=self.refused + other.refused,
            dispatched=self.dispatched + other.dispatched,
            cancelled=self.cancelled + other.cancelled,
            rate_limited=other.rate_limited or self.rate_limited,
            fenced=self.fenced or other.fenced,
            touched=self.touched | other.touched,
        )


def _same_observation(a: Observation, b: Observation) -> bool:
    return (
        a.next_intended_action == b.next_intended_action
        and a.rollout_mode is b.rollout_mode
        and dict(a.gates) == dict(b.gates)
    )


def _note_tracker_write(run: _Execution, effect: SideEffect, read: TrackedIssue) -> None:
    """Keep what a done label or close write changed on the issue itself."""
    issue = run.written.get(effect.issue, read)
    payload = effect.payload
    if isinstance(payload, SetLabels):
        target = payload.on_number
        if target is not None and target > 0 and target != effect.issue.number:
            return  # a label on the pull request
        labels = (issue.labels - frozenset(payload.remove)) | frozenset(payload.add)
        issue = replace(issue, labels=labels)
    elif effect.kind is SideEffectKind.CLOSE_ISSUE:
        issue = replace(issue, is_open=False)
    else:
        return
    shown = run.tracker.shown_state(issue.labels, issue.is_open)
    run.written[effect.issue] = replace(issue, tracker_state=shown)


def workpad_before_close(actions: Sequence[Action]) -> list[Action]:
    """The actions with each issue's workpad rewrite moved before its close (record, then close)."""
    ordered = list(actions)
    closes = [
        a for a in ordered if isinstance(a, SideEffect) and a.kind is SideEffectKind.CLOSE_ISSUE
    ]
    for close in closes:
        position = ordered.index(close)
        for later in ordered[position + 1 :]:
            if (
                isinstance(later, SideEffect)
                and later.kind is SideEffectKind.UPSERT_WORKPAD
                and later.issue == close.issue
            ):
                ordered.remove(later)
                ordered.insert(position, later)
                break
    return ordered


@dataclass
class _Execution:
    """The state of one execution: the rows as they change, and the issues to leave alone."""

    gathered: Gathered
    view: PolicyView
    agents: AgentWiring
    source: RepoSource
    dispatching: bool
    # The poll lease this tick acts under; once it is found lost, nothing more is done.
    fence: Fence | None = None
    report: ExecutionReport = field(default_factory=ExecutionReport)
    # Issues whose transition failed: nothing more for them this tick.
    halted: set[IssueRef] = field(default_factory=set)
    # Issues whose side effect failed or was refused: only their workpad is still written.
    failed: set[IssueRef] = field(default_factory=set)
    # The issues as this execution's own label and close writes left them on the tracker:
    # their observation records the tracker state shown now, not the one read before.
    written: dict[IssueRef, TrackedIssue] = field(default_factory=dict)

    @property
    def rows(self) -> dict[IssueRef, RecordRow]:
        return self.gathered.rows

    @cached_property
    def tracker(self) -> TrackerSettings:
        return tracker_settings(self.view.policy, self.view.flow, self.view.repo)


class Executor:
    """Applies one tick's plan."""

    def __init__(
        self,
        *,
        records: RecordStore,
        gate: SideEffectGate,
        claimer: TurnClaimer,
        clock: Callable[[], datetime],
    ) -> None:
        self.records = records
        self.gate = gate
        self.claimer = claimer
        self.clock = clock

    def execute(
        self,
        actions: Sequence[Action],
        gathered: Gathered,
        *,
        view: PolicyView,
        agents: AgentWiring,
        source: RepoSource,
        dispatching: bool,
        fence: Fence | None = None,
    ) -> ExecutionReport:
        run = _Execution(gathered, view, agents, source, dispatching, fence)
        items = {item.ref: item for item in gathered.snapshot.issues}
        for action in workpad_before_close(actions):
            ref = action.issue
            row = run.rows.get(ref)
            phase = row.record.phase.value if row is not None else None
            with bound_contextvars(repo=ref.repo, issue=str(ref), phase=phase):
                self._apply(run, action, items.get(ref))
        return run.report

    def _apply(self, run: _Execution, action: Action, item: IssueSnapshot | None) -> None:
        ref = action.issue
        if run.report.fenced:
            return
        if isinstance(action, Cancel):
            if self.claimer.cancel(ref, action.reason):
                run.report.cancelled += 1
        elif isinstance(action, Transition):
            if ref not in run.halted and ref in run.rows:
                self._transition(run, action)
        elif isinstance(action, SideEffect):
            if ref in run.halted or run.report.rate_limited is not None:
                return
            if ref in run.failed and action.kind is not SideEffectKind.UPSERT_WORKPAD:
                return
            self._side_effect(run, action, item)
        elif isinstance(action, Dispatch):
            blocked = ref in run.halted or ref in run.failed
            if not blocked and run.dispatching and item is not None:
                self._dispatch(run, action, item)
        elif isinstance(action, Observe) and item is not None and ref in run.rows:
            self._observe(run, action, item)

    # ----------------------------------------------------------------- steps

    def _transition(self, run: _Execution, action: Transition) -> None:
        row = run.rows[action.issue]
        result, updated = self.records.transition(row.issue_id, action, now=self.clock())
        if isinstance(result, Applied):
            assert updated is not None
            run.rows[action.issue] = updated
            run.report.transitions += 1
            run.report.touched.add(action.issue)
            if action.to_phase is Phase.DONE:
                self._remove_workspace(action.issue, row, run.agents)
            return
        run.halted.add(action.issue)
        if updated is not None:
            run.rows[action.issue] = updated
        if isinstance(result, Illegal):
            log.error(
                "transition_refused",
                from_phase=action.from_phase.value,
                to_phase=action.to_phase.value,
                reason=action.reason,
            )
        else:
            log.warning(
                "transition_lost_race",
                from_phase=action.from_phase.value,
                to_phase=action.to_phase.value,
                actual=result.actual.value if result.actual else None,
            )

    def _side_effect(self, run: _Execution, action: SideEffect, item: IssueSnapshot | None) -> None:
        row = run.rows.get(action.issue)
        title = item.issue.title if item is not None else (row.title if row is not None else "")
        try:
            outcome = self.gate.apply(action, view=run.view, row=row, title=title, fence=run.fence)
        except RateLimited as limited:
            run.report.rate_limited = limited
            run.failed.add(action.issue)
            return
        if outcome.row is not None:
            run.rows[action.issue] = outcome.row
        if outcome.verdict is Verdict.DONE:
            run.report.effects_done += 1
            run.report.touched.add(action.issue)
            if item is not None:
                _note_tracker_write(run, action, item.issue)
        elif outcome.verdict is Verdict.FAILED:
            run.report.effects_failed += 1
            run.failed.add(action.issue)
        elif outcome.verdict is Verdict.FENCED:
            # Another replica leads now: it plans from its own snapshot.
            run.report.fenced = True
        elif outcome.verdict in (Verdict.REFUSED_BY_MODE, Verdict.REFUSED_BY_KILL_SWITCH):
            run.report.refused += 1
            run.failed.add(action.issue)

    def _dispatch(self, run: _Execution, action: Dispatch, item: IssueSnapshot) -> None:
        now = self.clock()
        row = run.rows.get(action.issue)
        if row is None:
            row = self.records.create(
                action.issue,
                title=item.issue.title,
                record=apply_dispatch(
                    None,
                    action,
                    now,
                    branch_name(
                        run.view.flow.pr.branch_prefix, action.issue.number, item.issue.title
                    ),
                ),
                now=now,
                reason="claimed",
                labels=sorted(item.issue.labels),
            )
            run.rows[action.issue] = row
        # Queued, not started: whichever replica claims it runs it (this one first).
        if self.claimer.queue(action, issue_id=row.issue_id, issue=item.issue, pr=item.pr):
            run.report.dispatched += 1
            # The phase bound for this action was read before the dispatch created the
            # issue's record (none for a newly claimed issue): name the record's phase now.
            log.info(
                "dispatch",
                phase=row.record.phase.value,
                dispatched_phase=action.phase.value,
                attempt=action.attempt,
                reason=action.reason,
            )

    def _observe(self, run: _Execution, action: Observe, item: IssueSnapshot) -> None:
        row = run.rows[action.issue]
        issue = run.written.get(action.issue, item.issue)
        labels = tuple(sorted(issue.labels))
        if (
            _same_observation(row.record.workpad.observation, action.observation)
            and (action.head_seen is None or action.head_seen == row.record.head_seen)
            and row.tracker_state == issue.tracker_state
            and row.labels == labels
            and row.title == issue.title
        ):
            return
        updated = self.records.update(
            row.issue_id,
            lambda record: apply_observation(record, action),
            now=self.clock(),
            labels=list(labels),
            tracker_state=issue.tracker_state,
            title=issue.title,
        )
        if updated is not None:
            run.rows[action.issue] = replace(updated, title=issue.title)

    def _remove_workspace(self, ref: IssueRef, row: RecordRow, agents: AgentWiring) -> None:
        workspace = WorkspaceIssue(
            f"{ref.repo}#{ref.number}", ref.number, row.title, branch=row.record.workpad.branch
        )
        try:
            agents.workspaces.remove(workspace)
        except (AgentLayerError, OSError) as error:
            log.warning("workspace_not_removed", error=str(error))
