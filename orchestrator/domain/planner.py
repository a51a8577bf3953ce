"""The planner: one pure function from a snapshot and the policy to a list of actions.

Per issue it applies, in order: ownership, closed issues, kill switches, the
phase's rules, then the issue's rollout mode; across issues it orders candidates
and respects the global and per-phase agent limits. Every issue of the snapshot gets an
Observe action saying what the planner sees and would do next.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from orchestrator.domain import effects
from orchestrator.domain.actions import (
    Action,
    Cancel,
    Dispatch,
    Observe,
    SideEffect,
    allowed_in,
    side_effect,
)
from orchestrator.domain.approval import ApprovalView, approval_view, head_sighting
from orchestrator.domain.flow import IssueContext, IssueDecision, move, pr_is_gone, wait
from orchestrator.domain.flow_agent import decide_agent_phase
from orchestrator.domain.flow_blocked import decide_blocked
from orchestrator.domain.flow_merge import decide_merging, decide_ready_to_merge
from orchestrator.domain.flow_waiting import decide_waiting
from orchestrator.domain.gates import FAIL, PASS, Gates, evaluate_gates
from orchestrator.domain.phases import AGENT_PHASES, Phase, RolloutMode, WaitingReason, is_allowed
from orchestrator.domain.policy import FlowPolicy
from orchestrator.domain.record_updates import apply_transition, new_record
from orchestrator.domain.rollout import issue_mode
from orchestrator.domain.selection import candidate_order
from orchestrator.domain.side_effects import UpsertWorkpad
from orchestrator.domain.snapshot import IssueSnapshot, PRStatus, RunningAgent, Snapshot
from orchestrator.domain.workpad import (
    WORKPAD_COMMENT_MARKER,
    Observation,
    mirror_is_current,
    render_workpad,
    workpad_digest,
)

# The next-action prefix of a transition the planner refused because the table forbids it.
REFUSED = "refused an impossible move"

_PHASE_RULES = {
    Phase.IMPLEMENTING: decide_agent_phase,
    Phase.REVIEWING: decide_agent_phase,
    Phase.REWORK: decide_agent_phase,
    Phase.WAITING_FOR_CHECKS: decide_waiting,
    Phase.WAITING_FOR_HUMAN: decide_waiting,
    Phase.READY_TO_MERGE: decide_ready_to_merge,
    Phase.MERGING: decide_merging,
    Phase.BLOCKED: decide_blocked,
}


@dataclass(slots=True)
class _Planned:
    item: IssueSnapshot
    gates: Gates
    mode: RolloutMode
    decision: IssueDecision
    tracked: bool


def plan(snapshot: Snapshot, policy: FlowPolicy, now: datetime) -> list[Action]:
    """This tick's actions: cancels, then transitions and side effects, dispatches, observations."""
    # Keyed by plain tuples: hashing them is much cheaper than hashing IssueRef values.
    running = {(agent.issue.repo, agent.issue.number): agent for agent in snapshot.running}
    planned = []
    for item in snapshot.issues:
        ref = item.issue.ref
        agent = running.get((ref.repo, ref.number))
        planned.append(_plan_issue(item, snapshot, policy, now, agent))
    dispatches: list[Action] = list(_allocate_slots(planned, snapshot.running, policy))
    cancels: list[Action] = []
    changes: list[Action] = []
    observes: list[Action] = []
    for entry in planned:
        decision = entry.decision
        if decision.cancel is not None:
            cancels.append(decision.cancel)
        if decision.transition is not None:
            changes.append(decision.transition)
        changes.extend(decision.effects)
        observation = Observation(
            last_observed_at=now,
            next_intended_action=decision.next_action,
            rollout_mode=entry.mode,
            gates=entry.gates.as_mapping(),
        )
        workpad = _workpad_effect(entry, observation, policy, now)
        if workpad is not None:
            changes.append(workpad)
        observes.append(
            Observe(
                entry.item.ref,
                observation,
                decision.waiting_reason,
                head_seen=head_sighting(entry.item),
            )
        )
    return cancels + changes + dispatches + observes


def _plan_issue(
    item: IssueSnapshot,
    snapshot: Snapshot,
    policy: FlowPolicy,
    now: datetime,
    running: RunningAgent | None,
) -> _Planned:
    approval = approval_view(item, policy, snapshot.self_login)
    gates = evaluate_gates(item, policy, snapshot.kill_switches, snapshot.self_login, approval)
    mode = issue_mode(item, policy)
    # In observe mode the rules still decide as if allowed, to name the intended action.
    intent = RolloutMode.MERGE if mode is RolloutMode.OBSERVE else mode
    decision, tracked = _decide(
        item,
        policy=policy,
        now=now,
        gates=gates,
        approval=approval,
        mode=intent,
        running=running,
        self_login=snapshot.self_login,
    )
    if running is not None and decision.cancel is None and not tracked:
        decision.cancel = Cancel(item.ref, "issue_not_worked_on")
    _apply_limits(decision, gates, mode)
    if decision.transition is not None and item.record is not None:
        ctx = IssueContext(
            item, item.record, policy, now, gates, approval, intent, running, snapshot.self_login
        )
        _describe_after_move(decision, ctx)
    return _Planned(item, gates, mode, decision, tracked)


def _describe_after_move(decision: IssueDecision, ctx: IssueContext) -> None:
    """Say what comes once the move is made, and let the transition write it with the phase.

    A move that only names itself ("move to reviewing") is described by the target
    phase's own rules on the record as it will be, as the next tick would plan it.
    """
    move = decision.transition
    assert move is not None
    if decision.names_the_move:
        if move.to_phase is Phase.DONE:
            decision.next_action = "nothing: done"
        else:
            # A turn the move cancels is not the target phase's running turn.
            running = None if decision.cancel is not None else ctx.running
            moved = replace(
                ctx, record=apply_transition(ctx.record, move, ctx.now), running=running
            )
            decision.next_action = _PHASE_RULES[move.to_phase](moved).next_action
    decision.transition = replace(move, next_action=decision.next_action)


def _decide(
    item: IssueSnapshot,
    *,
    policy: FlowPolicy,
    now: datetime,
    gates: Gates,
    approval: ApprovalView,
    mode: RolloutMode,
    running: RunningAgent | None,
    self_login: str | None,
) -> tuple[IssueDecision, bool]:
    """The issue's decision before limits, and whether the daemon works on it at all."""
    issue = item.issue
    record = item.record
    merged = item.pr is not None and item.pr.status is PRStatus.MERGED
    if gates.ownership is not PASS:
        return IssueDecision("nothing: the issue is not owned"), False
    if not issue.is_open and not merged:
        return IssueDecision("nothing: the issue is closed"), False
    if record is None:
        if gates.kill_switch is FAIL:
            return _wait_new(
                "wait for the kill switch to be lifted", WaitingReason.KILL_SWITCH_ACTIVE
            ), True
        phase = policy.default_phase
        return (
            IssueDecision(
                next_action=f"claim the issue and run an agent turn ({phase})",
                dispatch=Dispatch(item.ref, phase, 1, "claim"),
            ),
            True,
        )
    if record.phase is Phase.DONE:
        return IssueDecision("nothing: done"), False
    ctx = IssueContext(item, record, policy, now, gates, approval, mode, running, self_login)
    if gates.kill_switch is FAIL:
        return _killed(ctx), True
    if running is not None and record.phase not in AGENT_PHASES:
        decision = _PHASE_RULES[record.phase](ctx)
        decision.cancel = Cancel(item.ref, "phase_changed")
        return decision, True
    if record.phase in AGENT_PHASES and item.pr is not None:
        if merged:
            decision = move(
                ctx, Phase.WAITING_FOR_CHECKS, "merged_outside", WaitingReason.CHECKS_PENDING
            )
            if running is not None:
                decision.cancel = Cancel(item.ref, "pull_request_merged")
            return decision, True
        if pr_is_gone(item.pr):
            decision = move(
                ctx,
                Phase.BLOCKED,
                "pull request closed without merge",
                WaitingReason.MISSING_CONTEXT,
            )
            if running is not None:
                decision.cancel = Cancel(item.ref, "pull_request_closed")
            return decision, True
    decision = _PHASE_RULES[record.phase](ctx)
    # Labels follow the stored phase; after a transition the next tick sets them.
    labels = effects.state_labels(ctx) if decision.transition is None else None
    if labels is not None and not ctx.completed(labels.idempotency_key):
        decision.effects.append(labels)
    for stale in effects.withdraw_stale_approvals(ctx):
        if not ctx.completed(stale.idempotency_key):
            decision.effects.append(stale)
    return decision, True


def _wait_new(next_action: str, reason: WaitingReason) -> IssueDecision:
    """A decision for an issue without a record that must not be claimed yet."""
    return IssueDecision(next_action=next_action, waiting_reason=reason)


def _killed(ctx: IssueContext) -> IssueDecision:
    if ctx.phase is Phase.BLOCKED:
        decision = wait(
            ctx, "wait for the kill switch to be lifted", WaitingReason.KILL_SWITCH_ACTIVE
        )
    else:
        decision = move(
            ctx,
            Phase.BLOCKED,
            "kill switch active",
            WaitingReason.KILL_SWITCH_ACTIVE,
            next_action="wait for the kill switch to be lifted",
        )
    if ctx.running is not None:
        decision.cancel = Cancel(ctx.ref, "kill_switch")
    return decision


def _apply_limits(decision: IssueDecision, gates: Gates, mode: RolloutMode) -> None:
    """Drop what the kill switch or the issue's rollout mode forbids; say why in the observation."""
    move = decision.transition
    if move is not None and not is_allowed(move.from_phase, move.to_phase):
        # A pair outside the table is a bug: keep the issue where it is and say so.
        decision.transition = None
        decision.next_action = f"{REFUSED} {move.from_phase} -> {move.to_phase}"
    if gates.kill_switch is FAIL:
        decision.effects = []
        decision.dispatch = None
        decision.waiting_reason = WaitingReason.KILL_SWITCH_ACTIVE
        if mode is RolloutMode.OBSERVE:
            decision.transition = None
        return
    if mode is RolloutMode.OBSERVE:
        intended = decision.next_action
        decision.transition = None
        decision.dispatch = None
        decision.effects = []
        decision.next_action = f"{intended} (observe only)"
        decision.waiting_reason = WaitingReason.OBSERVE_ONLY
        return
    if decision.effects:
        decision.effects = [e for e in decision.effects if allowed_in(e.kind, mode)]


def _allocate_slots(
    planned: list[_Planned], running: tuple[RunningAgent, ...], policy: FlowPolicy
) -> list[Dispatch]:
    """Give free agent slots to dispatches in candidate order, globally and per phase."""
    total = len(running)
    per_phase: dict[Phase, int] = {}
    for agent in running:
        per_phase[agent.phase] = per_phase.get(agent.phase, 0) + 1
    wanting = [entry for entry in planned if entry.decision.dispatch is not None]
    wanting.sort(key=lambda entry: candidate_order(entry.item, policy))
    granted: list[Dispatch] = []
    for entry in wanting:
        dispatch = entry.decision.dispatch
        assert dispatch is not None
        limit = policy.phase_limit(dispatch.phase)
        if total >= policy.max_concurrent_agents or (
            limit is not None and per_phase.get(dispatch.phase, 0) >= limit
        ):
            entry.decision.dispatch = None
            entry.decision.next_action = f"wait for a free agent slot ({dispatch.phase})"
            continue
        total += 1
        per_phase[dispatch.phase] = per_phase.get(dispatch.phase, 0) + 1
        granted.append(dispatch)
    return granted


def _workpad_effect(
    entry: _Planned, observation: Observation, policy: FlowPolicy, now: datetime
) -> SideEffect | None:
    """Rewrite the workpad comment when the record (not just the time) changed."""
    if not entry.tracked or entry.gates.kill_switch is FAIL:
        return None
    record = entry.item.record
    decision = entry.decision
    if record is None:
        # A claimed issue gets its comment once its record exists; observe mode writes it now.
        if entry.mode is not RolloutMode.OBSERVE:
            return None
        record = new_record(policy.default_phase, now)
    if decision.transition is not None:
        record = apply_transition(record, decision.transition, now)
    elif record.mirrored_workpad is not None and mirror_is_current(
        record.workpad, observation, record.mirrored_workpad
    ):
        return None
    body = render_workpad(
        replace(record.workpad, observation=observation), marker=policy.workpad_marker
    )
    return side_effect(
        entry.item.ref,
        workpad_digest(body),
        UpsertWorkpad(marker=WORKPAD_COMMENT_MARKER, heading=policy.workpad_marker, body=body),
    )
