"""Benchmark of the planner: ``python -m benchmarks.planner`` prints plan() times.

It builds a deterministic snapshot of 10,000 tracked issues spread over every
phase, with pull requests, checks, threads, outcomes and running agents, and
times ``plan()`` on it: once cold (every workpad comment needs writing) and in
steady state (comments already mirror the records). Only this tool reads a clock.
"""

from __future__ import annotations

import argparse
import gc
import io
import pickle
import random
import statistics
import time
from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from types import MappingProxyType
from typing import Any

from orchestrator.domain.actions import Action, Observe, SideEffect, SideEffectKind, Transition
from orchestrator.domain.agent_files.review import Review
from orchestrator.domain.phases import Phase, RolloutMode, WaitingReason
from orchestrator.domain.planner import plan
from orchestrator.domain.policy import FlowPolicy
from orchestrator.domain.record_updates import (
    EffectResult,
    apply_effect_result,
    apply_observation,
    apply_transition,
)
from orchestrator.domain.side_effects import SetLabels
from orchestrator.domain.snapshot import (
    Actor,
    AgentOutcome,
    ChecksSummary,
    IssueRef,
    IssueSnapshot,
    LabelAction,
    LabelEvent,
    OutcomeKind,
    PRStatus,
    PullRequest,
    ReviewThread,
    RunningAgent,
    Snapshot,
    StoredRecord,
    TrackedIssue,
)
from orchestrator.domain.workpad import PRRef, ReviewState, WorkpadRecord

TARGET_MS = 200.0
_NOW = datetime(2026, 3, 14, 12, 0, tzinfo=UTC)
_HUMAN = Actor("alice", can_write=True)
_PHASES = [p for p in Phase]


def _sha(rng: random.Random) -> str:
    return f"{rng.getrandbits(160):040x}"


def _issue(
    rng: random.Random, number: int, policy: FlowPolicy, running: list[RunningAgent]
) -> IssueSnapshot:
    ref = IssueRef("acme/app", number)
    labels = {policy.ownership_label}
    if rng.random() < 0.3:
        labels.add(rng.choice(policy.priority_labels))
    events: tuple[LabelEvent, ...] = ()
    if rng.random() < 0.3:
        labels.add("state:merging")
        events = (LabelEvent("state:merging", LabelAction.ADDED, _HUMAN, _NOW),)
    issue = TrackedIssue(
        ref=ref,
        title=f"Issue {number}",
        is_open=True,
        labels=frozenset(labels),
        created_at=_NOW - timedelta(minutes=rng.randrange(100_000)),
        label_events=events,
    )
    if rng.random() < 0.05:
        return IssueSnapshot(issue=issue)
    phase = rng.choice(_PHASES)
    head = _sha(rng)
    checks = rng.choice(["green", "pending", "failing"])
    summary = ChecksSummary(
        head,
        passed=frozenset({"build", "test"}) if checks == "green" else frozenset({"build"}),
        pending=frozenset({"test"}) if checks == "pending" else frozenset(),
        failing=frozenset({"test"}) if checks == "failing" else frozenset(),
    )
    threads = (
        (ReviewThread("T" + str(number), _HUMAN, "Handle the empty case", _NOW, "app.py"),)
        if rng.random() < 0.1
        else ()
    )
    pr = PullRequest(
        number=number + 100_000,
        url=f"https://github.example/acme/app/pull/{number}",
        head_sha=head,
        mergeable=rng.random() < 0.9,
        checks=summary,
        threads=threads,
        status=PRStatus.MERGED if rng.random() < 0.02 else PRStatus.OPEN,
    )
    since = _NOW - timedelta(minutes=rng.randrange(1, 600))
    outcome = None
    if phase in (Phase.IMPLEMENTING, Phase.REVIEWING, Phase.REWORK):
        if rng.random() < 0.3:
            running.append(RunningAgent(ref, phase, f"run-{number}", since))
        elif rng.random() < 0.5:
            outcome = AgentOutcome(
                run_id=f"run-{number}",
                phase=phase,
                kind=rng.choice(list(OutcomeKind)),
                started_at=since,
                finished_at=since + timedelta(minutes=5),
                head_before=head,
                head_after=head,
                review=Review(head, ()),
            )
    workpad = WorkpadRecord(
        phase=phase,
        branch=f"orchestrator/issue-{number}",
        pr=PRRef(pr.number, pr.url, head),
        review=ReviewState(
            comment_id=1,
            passes_completed=1,
            last_reviewed_head_sha=head if rng.random() < 0.8 else None,
        ),
    )
    waiting = WaitingReason.MISSING_CONTEXT if phase is Phase.BLOCKED else None
    record = StoredRecord(
        phase=phase,
        phase_since=since,
        workpad=workpad,
        rework_cycles=rng.randrange(4),
        waiting_reason=waiting,
        last_outcome=outcome,
        attempt=1 if outcome is not None and outcome.kind is not OutcomeKind.SUCCEEDED else 0,
    )
    return IssueSnapshot(issue=issue, record=record, pr=pr)


def build_snapshot(count: int, policy: FlowPolicy, seed: int = 7) -> Snapshot:
    """A deterministic snapshot of ``count`` issues in mixed phases."""
    rng = random.Random(seed)
    running: list[RunningAgent] = []
    issues = tuple(_issue(rng, number, policy, running) for number in range(1, count + 1))
    return Snapshot(now=_NOW, issues=issues, running=tuple(running), self_login="orchestrator-bot")


def steady_state(snapshot: Snapshot, policy: FlowPolicy, ticks: int = 3) -> Snapshot:
    """The snapshot after a few ticks whose actions all succeeded.

    Pull requests and agent outcomes stay as they were, so what remains is a
    settled tick: most issues wait, a few move, only changed workpads are rewritten.
    """
    for _ in range(ticks):
        actions = plan(snapshot, policy, _NOW)
        by_issue: dict[IssueRef, list[Action]] = {}
        for action in actions:
            by_issue.setdefault(action.issue, []).append(action)
        items = []
        for item in snapshot.issues:
            record = item.record
            issue = item.issue
            for action in by_issue.get(item.ref, []):
                if record is None:
                    break
                if isinstance(action, Transition):
                    record = apply_transition(record, action, _NOW)
                elif isinstance(action, Observe):
                    record = apply_observation(record, action)
                elif isinstance(action, SideEffect):
                    if action.kind is SideEffectKind.SET_LABELS:
                        issue = _relabel(issue, action)
                    record = apply_effect_result(record, action, EffectResult(ok=True), _NOW)
            items.append(replace(item, issue=issue, record=record))
        snapshot = replace(snapshot, issues=tuple(items))
    return snapshot


def _relabel(issue: TrackedIssue, effect: SideEffect) -> TrackedIssue:
    labels = effect.payload
    assert isinstance(labels, SetLabels)
    return replace(issue, labels=(issue.labels - set(labels.remove)) | set(labels.add))


def _read_only(items: dict[object, object]) -> MappingProxyType[object, object]:
    return MappingProxyType(items)


class _SnapshotPickler(pickle.Pickler):
    """Pickles the read-only mappings inside records, which plain pickle refuses."""

    def reducer_override(self, obj: object) -> Any:
        if isinstance(obj, MappingProxyType):
            return (_read_only, (dict(obj),))
        return NotImplemented


def fresh_copy(snapshot: Snapshot) -> Snapshot:
    """An equal snapshot built anew, issue by issue, as the runtime builds one every tick."""
    buffer = io.BytesIO()
    _SnapshotPickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(snapshot)
    copy = pickle.loads(buffer.getvalue())  # noqa: S301 - our own bytes, just written
    assert isinstance(copy, Snapshot)
    return copy


def _time_ms(snapshot: Snapshot, policy: FlowPolicy, runs: int) -> tuple[float, int]:
    timings = []
    count = 0
    for _ in range(runs):
        # Start every run from a collected heap, with the collector left on during the run.
        gc.collect()
        started = time.perf_counter()
        actions = plan(snapshot, policy, _NOW)
        timings.append((time.perf_counter() - started) * 1000)
        count = len(actions)
    return statistics.median(timings), count


def main(argv: list[str] | None = None) -> int:
    """Print plan() timings for a mixed snapshot (10,000 issues unless told otherwise)."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.planner")
    parser.add_argument("--issues", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    policy = FlowPolicy(rollout_mode=RolloutMode.MERGE, max_concurrent_agents=50)
    snapshot = build_snapshot(args.issues, policy)
    phases = Counter(str(item.record.phase) if item.record else "new" for item in snapshot.issues)
    steady = fresh_copy(steady_state(snapshot, policy))
    cold_ms, cold_actions = _time_ms(snapshot, policy, args.runs)
    steady_ms, steady_actions = _time_ms(steady, policy, args.runs)
    writes = sum(
        1
        for a in plan(steady, policy, _NOW)
        if isinstance(a, SideEffect) and a.kind is SideEffectKind.UPSERT_WORKPAD
    )
    print(f"issues: {args.issues} ({', '.join(f'{k} {v}' for k, v in sorted(phases.items()))})")
    print(f"running agents: {len(snapshot.running)}")
    print(f"plan() cold:   {cold_ms:8.1f} ms median of {args.runs}, {cold_actions} actions")
    print(
        f"plan() steady: {steady_ms:8.1f} ms median of {args.runs}, {steady_actions} actions, "
        f"{writes} workpad rewrites"
    )
    verdict = "within" if steady_ms <= TARGET_MS else "over"
    print(f"target: {TARGET_MS:.0f} ms for the steady state ({verdict})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
