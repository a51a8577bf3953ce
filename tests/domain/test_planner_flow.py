"""Across issues and across ticks: ordering, agent slots, determinism, reducers, a full run."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from benchmarks import planner as planner_bench
from orchestrator.domain.actions import (
    Action,
    Dispatch,
    Observe,
    SideEffect,
    SideEffectKind,
    Transition,
)
from orchestrator.domain.agent_files.fix_summary import FixStatus
from orchestrator.domain.outcomes import turn_failure
from orchestrator.domain.phases import Phase, RolloutMode, WaitingReason
from orchestrator.domain.planner import plan
from orchestrator.domain.policy import FlowPolicy, MergePolicy, ReviewPolicy
from orchestrator.domain.record_updates import (
    EffectResult,
    apply_dispatch,
    apply_effect_result,
    apply_observation,
    apply_transition,
    new_record,
    record_outcome,
)
from orchestrator.domain.side_effects import MergePR, PushBranch
from orchestrator.domain.snapshot import (
    ChecksSummary,
    IssueSnapshot,
    LabelAction,
    LabelEvent,
    OutcomeKind,
    PRStatus,
    PullRequest,
    Snapshot,
    StoredRecord,
)
from orchestrator.domain.workpad import MergeState, WorkpadStatus, parse_workpad, render_workpad
from tests.domain.builders import (
    APPROVAL,
    EARLIER,
    HEAD_A,
    HEAD_B,
    HUMAN,
    NOW,
    OWNED,
    SELF,
    approved_issue,
    dispatches,
    effects_of,
    fix_summary,
    make_issue,
    make_item,
    make_outcome,
    make_policy,
    make_record,
    make_review,
    make_snapshot,
    observes,
    ref,
    run_plan,
    running,
    thread,
    transitions,
)


def new_issue(number: int, *labels: str, minutes_old: int = 0) -> IssueSnapshot:
    issue = make_issue(
        number,
        labels=OWNED | set(labels),
        created_at=EARLIER - timedelta(minutes=minutes_old),
    )
    return IssueSnapshot(issue=issue)


def test_candidates_go_by_priority_then_age_then_number() -> None:
    items = (
        new_issue(1, minutes_old=10),
        new_issue(2, "priority:low", minutes_old=5),
        new_issue(3, "priority:critical", minutes_old=1),
        new_issue(4, minutes_old=50),
        new_issue(5, minutes_old=50),
        new_issue(6, "priority:low", minutes_old=9),
    )
    actions = run_plan(make_snapshot(*items), make_policy(max_concurrent_agents=10))
    assert [d.issue.number for d in dispatches(actions)] == [3, 6, 2, 4, 5, 1]


def test_global_agent_limit_counts_running_agents() -> None:
    items = tuple(new_issue(n, minutes_old=n) for n in range(1, 6))
    snapshot = make_snapshot(*items, running=(running(Phase.REWORK, number=99),))
    actions = run_plan(snapshot, make_policy(max_concurrent_agents=3))
    assert [d.issue.number for d in dispatches(actions)] == [5, 4]
    waiting = {o.issue.number: o.observation.next_intended_action for o in observes(actions)}
    assert waiting[1] == "wait for a free agent slot (implementing)"


def test_per_phase_limit() -> None:
    items = (
        make_item(Phase.REWORK, issue=make_issue(1)),
        make_item(Phase.REWORK, issue=make_issue(2)),
        new_issue(3),
    )
    policy = make_policy(max_concurrent_agents_by_phase={Phase.REWORK: 1})
    actions = run_plan(make_snapshot(*items), policy)
    assert sorted((d.issue.number, d.phase) for d in dispatches(actions)) == [
        (2, Phase.REWORK),
        (3, Phase.IMPLEMENTING),
    ]


def test_cancellations_come_first_and_observations_last() -> None:
    items = (
        make_item(Phase.REWORK, issue=make_issue(1, labels=frozenset())),
        make_item(Phase.WAITING_FOR_CHECKS, issue=approved_issue(2)),
        new_issue(3),
    )
    actions = run_plan(make_snapshot(*items, running=(running(Phase.REWORK, number=1),)))
    kinds = [type(a).__name__ for a in actions]
    assert kinds[0] == "Cancel"
    assert kinds[-3:] == ["Observe"] * 3
    assert kinds.index("Dispatch") > kinds.index("Transition")


def test_planning_twice_gives_identical_actions_and_keys() -> None:
    snapshot = planner_bench.build_snapshot(300, make_policy(max_concurrent_agents=20))
    first = plan(snapshot, make_policy(max_concurrent_agents=20), NOW)
    second = plan(snapshot, make_policy(max_concurrent_agents=20), NOW)
    assert first == second
    keys = [a.idempotency_key for a in first if isinstance(a, SideEffect)]
    assert len(keys) == len(set(keys))


def test_policy_rejects_impossible_values_and_freezes_mappings() -> None:
    with pytest.raises(ValueError, match="max_concurrent_agents must be at least 1"):
        FlowPolicy(max_concurrent_agents=0)
    with pytest.raises(ValueError, match="passive_phases must contain"):
        FlowPolicy(passive_phases=frozenset())
    with pytest.raises(ValueError, match="passive_phases must not contain rework"):
        FlowPolicy(passive_phases=FlowPolicy().passive_phases | {Phase.REWORK})
    with pytest.raises(ValueError, match="default_phase must be"):
        FlowPolicy(default_phase=Phase.BLOCKED)
    limits = {Phase.REWORK: 1}
    policy = FlowPolicy(max_concurrent_agents_by_phase=limits)
    limits[Phase.REWORK] = 5
    assert policy.phase_limit(Phase.REWORK) == 1
    assert policy.approval_labels == {"state:merging"}


# ----------------------------------------------------------------- reducers


def test_transition_keeps_flow_state_and_remembers_where_it_came_from() -> None:
    record = make_item(
        Phase.WAITING_FOR_CHECKS,
        rework_cycles=1,
        workpad={"merge": MergeState(last_failure_reason="409")},
    ).record
    assert record is not None
    to_rework = Transition(ref(), Phase.WAITING_FOR_CHECKS, Phase.REWORK, "checks failing")
    reworked = apply_transition(record, to_rework, NOW)
    assert reworked.rework_cycles == 2 and reworked.workpad.rework_cycles == 2
    assert reworked.workpad.review == record.workpad.review
    assert reworked.workpad.merge == record.workpad.merge
    block = Transition(ref(), Phase.REWORK, Phase.BLOCKED, "q", WaitingReason.MISSING_CONTEXT)
    blocked = apply_transition(reworked, block, NOW)
    assert blocked.resume_phase is Phase.REWORK
    assert blocked.workpad.waiting.reason is WaitingReason.MISSING_CONTEXT
    back = apply_transition(blocked, Transition(ref(), Phase.BLOCKED, Phase.REWORK, "reply"), NOW)
    assert back.rework_cycles == 2, "resuming is not a new rework cycle"
    assert back.resume_phase is None and back.waiting_reason is None
    with pytest.raises(ValueError, match="applied to a record in rework"):
        apply_transition(back, Transition(ref(), Phase.MERGING, Phase.DONE, "x"), NOW)


def test_failed_turns_are_counted_and_scheduled() -> None:
    record = new_record(Phase.IMPLEMENTING, EARLIER)
    policy = make_policy()
    failed = make_outcome(Phase.IMPLEMENTING, kind=OutcomeKind.FAILED, finished_at=NOW)
    once = record_outcome(record, failed, policy)
    assert once.attempt == 1 and once.retry_due_at == NOW + timedelta(seconds=10)
    twice = record_outcome(once, failed, policy)
    assert twice.attempt == 2 and twice.retry_due_at == NOW + timedelta(seconds=20)
    success = make_outcome(Phase.IMPLEMENTING, head_after=HEAD_B, finished_at=NOW)
    assert record_outcome(twice, success, policy).attempt == 0


def test_a_late_outcome_for_another_phase_is_kept_but_not_counted() -> None:
    record = replace(new_record(Phase.WAITING_FOR_CHECKS, EARLIER), attempt=0)
    late = make_outcome(Phase.IMPLEMENTING, kind=OutcomeKind.FAILED)
    updated = record_outcome(record, late, make_policy())
    assert updated.last_outcome is late and updated.attempt == 0


def test_rework_outcomes_feed_the_bounce_history() -> None:
    record = make_item(Phase.REWORK).record
    assert record is not None
    outcome = make_outcome(
        Phase.REWORK, fix_summary=fix_summary(("T1", FixStatus.FIXED), ("T2", FixStatus.SKIPPED))
    )
    threads = (thread("T1"), thread("T2", body="Other"), thread("T3", is_resolved=True))
    updated = record_outcome(record, outcome, make_policy(), threads)
    assert [(e.thread_id, e.status, e.iteration) for e in updated.thread_history] == [
        ("T1", FixStatus.FIXED, 1),
        ("T2", FixStatus.SKIPPED, 1),
    ]
    again = record_outcome(updated, outcome, make_policy(), threads)
    assert {e.iteration for e in again.thread_history} == {1, 2}


def test_effect_results_update_the_record_only_when_they_succeed() -> None:
    record = new_record(Phase.MERGING, EARLIER)
    merge = SideEffect(ref(), MergePR(pr_number=10, head_sha=HEAD_A, method="squash"), "k-merge")
    failed = apply_effect_result(record, merge, EffectResult(ok=False, error="409"), NOW)
    assert failed.workpad.merge.last_failure_reason == "409"
    assert failed.workpad.merge.last_attempted_head_sha == HEAD_A
    assert "k-merge" not in failed.completed_effects
    merged = apply_effect_result(
        record, merge, EffectResult(ok=True, data={"merge_commit_sha": HEAD_B}), NOW
    )
    assert merged.workpad.merge.last_merged_head_sha == HEAD_A
    assert merged.workpad.merge.last_merge_commit_sha == HEAD_B
    assert "k-merge" in merged.completed_effects


def test_a_refused_push_fails_its_turn_with_the_reason_and_the_phase_runs_again() -> None:
    turn = make_outcome(Phase.IMPLEMENTING, head_before=None, head_after=HEAD_B)
    record = make_record(Phase.IMPLEMENTING, last_outcome=turn, workpad={"pr": None})
    push = SideEffect(ref(), PushBranch(branch="b", head_sha=HEAD_B), "k-push")
    reason = "refusing to push bbbb: the commit bbbb says 'Closes acme/gadgets#1'"
    refused = apply_effect_result(
        record, push, EffectResult(ok=False, error=reason, data={"push_refused": HEAD_B}), NOW
    )
    assert refused.attempt == 1 and "k-push" not in refused.completed_effects
    assert refused.last_outcome is not None
    assert refused.last_outcome.kind is OutcomeKind.PUSH_REFUSED
    assert refused.last_outcome.reason == reason and refused.last_outcome.finished_at == NOW
    assert turn_failure(refused.last_outcome, refused.workpad) == f"the push was refused: {reason}"
    # The next tick waits out the backoff, then runs the phase again: no second push.
    item = IssueSnapshot(issue=make_issue(), record=refused)
    waiting = run_plan(make_snapshot(item))
    pushes = [e for e in effects_of(waiting) if e.kind is SideEffectKind.PUSH_BRANCH]
    assert not dispatches(waiting) and not pushes
    later = plan(
        make_snapshot(item, now=NOW + timedelta(minutes=1)),
        make_policy(),
        NOW + timedelta(minutes=1),
    )
    [again] = dispatches(later)
    assert again.phase is Phase.IMPLEMENTING
    assert not [e for e in effects_of(later) if e.kind is SideEffectKind.PUSH_BRANCH]
    # A refusal for another commit (an older turn's) leaves the record alone.
    other = apply_effect_result(
        record, push, EffectResult(ok=False, error=reason, data={"push_refused": HEAD_A}), NOW
    )
    assert other.attempt == 0 and other.last_outcome == turn


def test_a_workpad_write_mirrors_exactly_what_was_written() -> None:
    item = make_item(Phase.WAITING_FOR_HUMAN)
    actions = run_plan(make_snapshot(item))
    [upsert] = [e for e in effects_of(actions) if e.kind is SideEffectKind.UPSERT_WORKPAD]
    record = item.record
    assert record is not None
    [observe] = observes(actions)
    record = apply_observation(record, observe)
    record = apply_effect_result(record, upsert, EffectResult(ok=True), NOW)
    assert record.mirrored_workpad == record.workpad
    again = run_plan(make_snapshot(replace(item, record=record)))
    assert not [e for e in effects_of(again) if e.kind is SideEffectKind.UPSERT_WORKPAD]
    later = plan(
        make_snapshot(replace(item, record=record)), make_policy(), NOW + timedelta(hours=1)
    )
    assert not [e for e in effects_of(later) if e.kind is SideEffectKind.UPSERT_WORKPAD]


# ----------------------------------------------------------------- a full run


class Walk:
    """Drives one issue from claim to done through the planner and the reducers."""

    def __init__(self, policy: FlowPolicy) -> None:
        self.policy = policy
        self.now = NOW
        self.issue = make_issue()
        self.record: StoredRecord | None = None
        self.pr: PullRequest | None = None
        self.remote: str | None = None
        self.running: Dispatch | None = None
        self.log: list[str] = []

    def tick(self) -> list[Action]:
        self.now += timedelta(minutes=1)
        item = IssueSnapshot(issue=self.issue, record=self.record, pr=self.pr)
        agents = () if self.running is None else (running(self.running.phase),)
        snapshot = Snapshot(now=self.now, issues=(item,), running=agents, self_login=SELF)
        actions = plan(snapshot, self.policy, self.now)
        for action in actions:
            self.apply(action)
        return actions

    def apply(self, action: Action) -> None:
        if isinstance(action, Dispatch):
            self.record = apply_dispatch(self.record, action, self.now)
            self.running = action
            self.log.append(f"turn {action.phase}")
        elif isinstance(action, Transition):
            assert self.record is not None
            self.record = apply_transition(self.record, action, self.now)
            self.log.append(f"-> {action.to_phase}")
        elif isinstance(action, Observe) and self.record is not None:
            self.record = apply_observation(self.record, action)
        elif isinstance(action, SideEffect) and self.record is not None:
            self.record = apply_effect_result(self.record, action, self.effect(action), self.now)

    def effect(self, effect: SideEffect) -> EffectResult:
        payload = effect.payload
        if effect.kind is SideEffectKind.PUSH_BRANCH:
            self.remote = str(payload.head_sha)
            if self.pr is not None:
                self.pr = replace(self.pr, head_sha=self.remote, checks=None, updated_at=self.now)
        elif effect.kind is SideEffectKind.CREATE_PR:
            assert self.remote is not None
            self.pr = PullRequest(
                10, "https://x/pull/10", self.remote, mergeable=True, updated_at=self.now
            )
            return EffectResult(ok=True, data={"number": 10, "url": "https://x/pull/10"})
        elif effect.kind is SideEffectKind.MERGE_PR:
            assert self.pr is not None and self.pr.head_sha == payload.head_sha
            self.pr = replace(self.pr, status=PRStatus.MERGED, merge_commit_sha="f" * 40)
            self.log.append(f"merge {str(payload.head_sha)[:4]}")
            return EffectResult(ok=True, data={"merge_commit_sha": "f" * 40})
        elif effect.kind is SideEffectKind.CLOSE_ISSUE:
            self.issue = replace(self.issue, is_open=False)
        return EffectResult(ok=True, data={"comment_id": 7})

    def finish(self, head_after: str, **results: object) -> None:
        assert self.record is not None and self.running is not None
        before = self.pr.head_sha if self.pr is not None else HEAD_A
        outcome = make_outcome(
            self.running.phase,
            run_id=f"run-{len(self.log)}",
            started_at=self.now,
            finished_at=self.now + timedelta(seconds=30),
            head_before=before,
            head_after=head_after,
            **results,
        )
        threads = self.pr.threads if self.pr is not None else ()
        self.record = record_outcome(self.record, outcome, self.policy, threads)
        self.running = None
        self.now += timedelta(minutes=1)

    def green(self) -> None:
        assert self.pr is not None
        self.pr = replace(self.pr, checks=ChecksSummary(self.pr.head_sha, frozenset({"ci"})))

    def approve(self) -> None:
        """A writer adds the approval label now, after the current head was pushed."""
        self.now += timedelta(seconds=5)
        event = LabelEvent(APPROVAL, LabelAction.ADDED, HUMAN, self.now)
        self.issue = replace(
            self.issue, labels=self.issue.labels | {APPROVAL}, label_events=(event,)
        )


def test_a_full_run_reviews_fixes_merges_and_closes() -> None:
    walk = Walk(make_policy(review=ReviewPolicy(max_passes=2)))
    walk.tick()  # claim
    head_1, head_2 = "1" * 40, "2" * 40
    walk.finish(head_1)
    walk.tick()  # push + create PR
    walk.tick()  # -> reviewing
    walk.tick()  # review turn
    walk.finish(head_1, review=make_review(head_1, "P1"))
    walk.tick()  # persist pass 1
    walk.tick()  # a P1 finding: another pass fixes it and reviews the new head
    walk.finish(head_2, review=make_review(head_2, "P3"))
    walk.tick()  # push the fix, persist pass 2
    walk.tick()  # -> waiting_for_checks
    walk.green()
    walk.approve()
    for _ in range(5):
        walk.tick()
    assert walk.record is not None
    assert walk.record.phase is Phase.DONE
    assert walk.record.workpad.review.passes_completed == 2
    assert walk.record.workpad.review.last_reviewed_head_sha == head_2
    assert walk.log == [
        "turn implementing",
        "-> reviewing",
        "turn reviewing",
        "turn reviewing",
        "-> waiting_for_checks",
        "-> ready_to_merge",
        "-> merging",
        f"merge {head_2[:4]}",
        "-> done",
    ]
    parsed = parse_workpad(render_workpad(walk.record.workpad), now=NOW)
    assert parsed.status is WorkpadStatus.PARSED
    assert parsed.record.phase is Phase.DONE


def test_a_run_in_mutate_mode_stops_before_merging() -> None:
    walk = Walk(
        make_policy(
            rollout_mode=RolloutMode.MUTATE,
            review=ReviewPolicy(enabled=False),
            merge=MergePolicy(require_human_approval=False),
        )
    )
    walk.tick()
    walk.finish("1" * 40)
    walk.tick()
    walk.tick()
    walk.green()
    for _ in range(4):
        actions = walk.tick()
    assert walk.record is not None and walk.record.phase is Phase.READY_TO_MERGE
    assert not [e for e in effects_of(actions) if e.kind is SideEffectKind.MERGE_PR]
    assert transitions(actions) == []


def test_bench_prints_its_figures(capsys: pytest.CaptureFixture[str]) -> None:
    assert planner_bench.main(["--issues", "200", "--runs", "1"]) == 0
    out = capsys.readouterr().out
    assert "issues: 200" in out
    assert "plan() cold:" in out and "plan() steady:" in out
