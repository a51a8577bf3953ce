"""Random outside events driven through the planner, with ARCHITECTURE section 12's invariants.

A small simulated world (one issue, its pull request, CI, humans, a review bot, the
agent and the kill switches) changes at random; every tick the planner's actions
are checked, then executed the way the runtime would (through the record reducers,
with an outbox that never repeats a done side effect, and sometimes a lost answer).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import timedelta
from itertools import count

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from orchestrator.domain.actions import (
    Action,
    Cancel,
    Dispatch,
    Observe,
    SideEffect,
    SideEffectKind,
    Transition,
    allowed_in,
)
from orchestrator.domain.agent_files.errors import ResultError
from orchestrator.domain.agent_files.fix_summary import (
    FixEntry,
    FixStatus,
    FixSummary,
    FixTargetKind,
)
from orchestrator.domain.agent_files.questions import BlockedQuestion
from orchestrator.domain.agent_files.review import Finding, Review, Severity
from orchestrator.domain.phases import AGENT_PHASES, Phase, RolloutMode, WaitingReason, is_allowed
from orchestrator.domain.planner import plan
from orchestrator.domain.policy import ApprovalSource, FlowPolicy, MergePolicy, ReviewPolicy
from orchestrator.domain.record_updates import (
    EffectResult,
    apply_dispatch,
    apply_effect_result,
    apply_observation,
    apply_transition,
    record_outcome,
)
from orchestrator.domain.snapshot import (
    AgentOutcome,
    ChecksSummary,
    IssueComment,
    IssueSnapshot,
    KillSwitches,
    LabelAction,
    LabelEvent,
    OperatorRequest,
    OutcomeKind,
    PRReview,
    PRStatus,
    PullRequest,
    ReviewThread,
    ReviewVerdict,
    RunningAgent,
    Snapshot,
    StoredRecord,
)
from tests.domain.builders import (
    APPROVAL,
    HUMAN,
    NOW,
    REVIEW_BOT,
    SELF,
    SELF_ACTOR,
    make_issue,
    ref,
)

STOP = "orchestrator:stop"

# Outside events, repeated by how often they happen relative to each other.
OUTSIDE_EVENTS = [
    *["ci_reports"] * 4,
    *["mergeability_changes"] * 2,
    *["approval_label_added"] * 2,
    *["human_reviews"] * 2,
    *["reviewer_opens_a_thread"] * 2,
    "someone_else_pushes",
    "approval_label_removed",
    "human_comments_on_the_issue",
    "operator_resumes",
    "kill_switch_toggles",
    "mode_label_toggles",
    "human_merges_the_pull_request",
    "daemon_crashes_during_a_turn",
]
MAX_REWORK = 2


def _sha(n: int) -> str:
    return f"{n:040x}"


@dataclass
class World:
    """Everything outside the planner, for one issue."""

    labels: set[str] = field(default_factory=lambda: {"orchestrator"})
    label_events: list[LabelEvent] = field(default_factory=list)
    comments: list[IssueComment] = field(default_factory=list)
    issue_open: bool = True
    remote_head: str | None = None
    pr: PullRequest | None = None
    checks: dict[str, ChecksSummary] = field(default_factory=dict)
    local_kill: bool = False
    running: RunningAgent | None = None
    workspace_head: str = _sha(1)
    agent_start_head: str | None = None
    record: StoredRecord | None = None
    outbox: set[str] = field(default_factory=set)
    merged_heads: list[str] = field(default_factory=list)


class PlannerMachine(RuleBasedStateMachine):
    """Outside events and ticks, in random order."""

    def __init__(self) -> None:
        super().__init__()
        self.world = World()
        self.now = NOW
        self.ids = count(2)
        self.policy = FlowPolicy()

    @initialize(
        mode=st.sampled_from([RolloutMode.MERGE] * 3 + list(RolloutMode)),
        review=st.booleans(),
        approval=st.sampled_from([None, None, ApprovalSource.LABEL, ApprovalSource.REVIEW]),
    )
    def configure(self, mode: RolloutMode, review: bool, approval: ApprovalSource | None) -> None:
        self.policy = FlowPolicy(
            rollout_mode=mode,
            max_rework_cycles=MAX_REWORK,
            max_failed_attempts=3,
            review=ReviewPolicy(enabled=review, max_passes=2, bounce_threshold=2),
            merge=MergePolicy(
                require_human_approval=approval is not None,
                approval_source=approval or ApprovalSource.LABEL,
            ),
        )

    # ------------------------------------------------------------ helpers

    def _new_sha(self) -> str:
        return _sha(next(self.ids))

    def _killed(self) -> bool:
        world = self.world
        pr_labels = world.pr.labels if world.pr is not None else frozenset()
        return world.local_kill or STOP in world.labels or STOP in pr_labels

    def _mode(self) -> RolloutMode:
        mode = self.policy.rollout_mode
        for label, lowered in self.policy.mode_labels.items():
            if label in self.world.labels:
                mode = mode.lowered_to(lowered)
        return mode

    def _pr(self) -> PullRequest | None:
        pr = self.world.pr
        if pr is None:
            return None
        return replace(pr, checks=self.world.checks.get(pr.head_sha))

    def snapshot(self) -> Snapshot:
        world = self.world
        issue = make_issue(
            labels=frozenset(world.labels),
            is_open=world.issue_open,
            label_events=tuple(world.label_events),
            comments=tuple(world.comments),
        )
        item = IssueSnapshot(issue=issue, record=world.record, pr=self._pr())
        running = (world.running,) if world.running is not None else ()
        return Snapshot(
            now=self.now,
            issues=(item,),
            running=running,
            kill_switches=KillSwitches(local_file_active=world.local_kill),
            self_login=SELF,
        )

    # ------------------------------------------------------------ the tick

    @rule(lose_answers=st.sampled_from([False, False, True]), times=st.integers(1, 3))
    def ticks(self, lose_answers: bool, times: int) -> None:
        """A few poll ticks in a row; answers to side effects may get lost."""
        for _ in range(times):
            self.tick(lose_answers)

    def tick(self, lose_answers: bool) -> None:
        snapshot = self.snapshot()
        actions = plan(snapshot, self.policy, self.now)
        again = plan(snapshot, self.policy, self.now)
        assert _keys(actions) == _keys(again), "planning twice must give the same keys"
        self._check(actions)
        for action in actions:
            self._execute(action, lose_answers)

    def _check(self, actions: list[Action]) -> None:
        world = self.world
        record = world.record
        pr = self._pr()
        for action in actions:
            if isinstance(action, SideEffect):
                assert not self._killed(), f"{action.kind} under a kill switch"
                assert allowed_in(action.kind, self._mode()), f"{action.kind} beyond the mode"
                if action.kind is SideEffectKind.MERGE_PR:
                    self._check_merge(action, pr, record)
            if isinstance(action, Dispatch):
                assert not self._killed() and self._mode() is not RolloutMode.OBSERVE
                assert action.phase in AGENT_PHASES
            if isinstance(action, Transition):
                assert record is not None and action.from_phase is record.phase
                assert is_allowed(action.from_phase, action.to_phase)
                if action.to_phase is Phase.DONE:
                    assert pr is not None and pr.status is PRStatus.MERGED, "done before merge"
                if action.to_phase is Phase.REWORK and action.from_phase in (
                    Phase.WAITING_FOR_CHECKS,
                    Phase.WAITING_FOR_HUMAN,
                ):
                    assert record.rework_cycles < MAX_REWORK, "rework beyond the limit"

    def _check_merge(
        self, action: SideEffect, pr: PullRequest | None, record: StoredRecord | None
    ) -> None:
        head = action.payload.head_sha
        assert pr is not None and pr.status is PRStatus.OPEN
        assert head == pr.head_sha, "merge of a head that is not the current one"
        summary = self.world.checks.get(head)
        assert summary is not None and summary.passed and not summary.failing
        assert not summary.pending, "merge with checks not green on the same head"
        if self.policy.review.enabled:
            assert record is not None
            review = record.workpad.review
            assert review.last_reviewed_head_sha == head and review.passes_completed > 0, (
                "merge of a head that was not reviewed"
            )

    def _execute(self, action: Action, lose_answers: bool) -> None:
        world = self.world
        if isinstance(action, Cancel):
            self._finish(OutcomeKind.CANCELLED, commit=False)
        elif isinstance(action, Dispatch):
            if world.running is None:
                world.record = apply_dispatch(world.record, action, self.now)
                world.running = RunningAgent(ref(), action.phase, f"run-{next(self.ids)}", self.now)
                world.agent_start_head = (
                    world.pr.head_sha if world.pr is not None else world.remote_head
                ) or world.workspace_head
                world.workspace_head = world.agent_start_head
        elif isinstance(action, Transition):
            assert world.record is not None
            before = world.record
            world.record = apply_transition(before, action, self.now)
            after = world.record
            assert after.workpad.review == before.workpad.review, "review state wiped"
            assert after.workpad.merge == before.workpad.merge, "merge state wiped"
            # Only withdrawing a rework (its reason went away) gives a cycle back.
            assert after.rework_cycles >= before.rework_cycles - int(action.withdraws_rework)
        elif isinstance(action, Observe):
            if world.record is not None:
                world.record = apply_observation(world.record, action)
        elif isinstance(action, SideEffect) and world.record is not None:
            result = self._effect(action)
            if not lose_answers or action.kind is SideEffectKind.MERGE_PR:
                world.record = apply_effect_result(world.record, action, result, self.now)

    def _effect(self, effect: SideEffect) -> EffectResult:
        """Perform a side effect on the world once per key (the outbox)."""
        world = self.world
        payload = effect.payload
        if effect.idempotency_key in world.outbox and effect.kind is not SideEffectKind.MERGE_PR:
            return self._repeat_result(effect)
        world.outbox.add(effect.idempotency_key)
        kind = effect.kind
        if kind is SideEffectKind.PUSH_BRANCH:
            head = str(payload.head_sha)
            world.remote_head = head
            if world.pr is not None and world.pr.status is PRStatus.OPEN:
                world.pr = replace(world.pr, head_sha=head)
        elif kind is SideEffectKind.CREATE_PR:
            if world.pr is None and world.remote_head is not None:
                world.pr = PullRequest(10, "https://x/pull/10", world.remote_head, mergeable=True)
            return self._repeat_result(effect)
        elif kind is SideEffectKind.MERGE_PR:
            return self._merge(str(payload.head_sha))
        elif kind is SideEffectKind.CLOSE_ISSUE:
            world.issue_open = False
        elif kind is SideEffectKind.SET_LABELS:
            world.labels -= set(payload.remove)
            world.labels |= set(payload.add)
        elif kind in (SideEffectKind.REPLY_THREAD, SideEffectKind.RESOLVE_THREAD):
            self._answer_thread(str(payload.thread_id), kind is SideEffectKind.RESOLVE_THREAD)
        elif kind is SideEffectKind.UPSERT_REVIEW_COMMENT:
            return EffectResult(ok=True, data={"comment_id": 5})
        return EffectResult(ok=True)

    def _repeat_result(self, effect: SideEffect) -> EffectResult:
        pr = self.world.pr
        if effect.kind is SideEffectKind.CREATE_PR and pr is not None:
            return EffectResult(ok=True, data={"number": pr.number, "url": pr.url})
        if effect.kind is SideEffectKind.UPSERT_REVIEW_COMMENT:
            return EffectResult(ok=True, data={"comment_id": 5})
        return EffectResult(ok=True)

    def _merge(self, head: str) -> EffectResult:
        pr = self.world.pr
        if pr is None or pr.status is not PRStatus.OPEN:
            return EffectResult(ok=False, error="405 not mergeable")
        if pr.head_sha != head:
            return EffectResult(ok=False, error="409 head moved")
        if pr.mergeable is not True:
            return EffectResult(ok=False, error="405 not mergeable")
        merge_commit = self._new_sha()
        self.world.pr = replace(pr, status=PRStatus.MERGED, merge_commit_sha=merge_commit)
        self.world.merged_heads.append(head)
        return EffectResult(ok=True, data={"merge_commit_sha": merge_commit})

    def _answer_thread(self, thread_id: str, resolve: bool) -> None:
        pr = self.world.pr
        if pr is None:
            return
        threads = tuple(
            replace(t, is_resolved=t.is_resolved or resolve, last_comment_author=SELF_ACTOR)
            if t.id == thread_id
            else t
            for t in pr.threads
        )
        self.world.pr = replace(pr, threads=threads)

    # ------------------------------------------------------------ the agent

    @precondition(lambda self: self.world.running is not None)
    @rule(
        kind=st.sampled_from([OutcomeKind.SUCCEEDED] * 6 + list(OutcomeKind)),
        commit=st.booleans(),
        ask=st.integers(0, 9),
        severity=st.sampled_from(list(Severity)),
        status=st.sampled_from(list(FixStatus)),
        broken=st.integers(0, 9),
    )
    def agent_finishes(
        self,
        kind: OutcomeKind,
        commit: bool,
        ask: int,
        severity: Severity,
        status: FixStatus,
        broken: int,
    ) -> None:
        self._finish(kind, commit, ask == 0, severity, status, broken == 0)
        # The runtime plans again as soon as a worker reports.
        self.tick(lose_answers=False)

    def _finish(
        self,
        kind: OutcomeKind,
        commit: bool,
        ask: bool = False,
        severity: Severity = Severity.P3,
        status: FixStatus = FixStatus.FIXED,
        broken: bool = False,
    ) -> None:
        world = self.world
        agent = world.running
        if agent is None or world.record is None:
            return
        before = world.agent_start_head
        after = self._new_sha() if commit and kind is OutcomeKind.SUCCEEDED else before
        world.workspace_head = after or world.workspace_head
        review = None
        summary = None
        if agent.phase is Phase.REVIEWING and after is not None:
            finding = Finding("F1", severity, "t", "s", "w", "f")
            review = (
                ResultError("review.md", 1, None, "bad") if broken else Review(after, (finding,))
            )
            summary = FixSummary(
                (FixEntry(FixTargetKind.FINDING, "F1", status, "m", evidence="e"),)
            )
        if agent.phase is Phase.REWORK:
            threads = world.pr.threads if world.pr is not None else ()
            summary = FixSummary(
                tuple(
                    FixEntry(FixTargetKind.THREAD, t.id, status, "m", evidence="e")
                    for t in threads
                    if not t.is_resolved
                )
            )
        outcome = AgentOutcome(
            run_id=agent.run_id,
            phase=agent.phase,
            kind=kind,
            started_at=agent.started_at,
            finished_at=self.now,
            head_before=before,
            head_after=after,
            review=review,
            fix_summary=summary,
            blocked=BlockedQuestion(WaitingReason.MISSING_CONTEXT, "q", "q") if ask else None,
        )
        threads = world.pr.threads if world.pr is not None else ()
        world.record = record_outcome(world.record, outcome, self.policy, threads)
        world.running = None

    # ------------------------------------------------------------ the outside world

    @rule(seconds=st.integers(1, 900))
    def time_passes(self, seconds: int) -> None:
        self.now += timedelta(seconds=seconds)

    @rule(event=st.sampled_from(OUTSIDE_EVENTS), data=st.data())
    def outside_event(self, event: str, data: st.DataObject) -> None:
        """One thing a human, CI, a review bot or an operator does."""
        getattr(self, f"_{event}")(data)

    def _ci_reports(self, data: st.DataObject) -> None:
        pr = self.world.pr
        if pr is None:
            return
        state = data.draw(st.sampled_from(["green", "green", "failing", "pending"]))
        names = frozenset({"ci"})
        self.world.checks[pr.head_sha] = ChecksSummary(
            pr.head_sha,
            passed=names if state == "green" else frozenset(),
            failing=names if state == "failing" else frozenset(),
            pending=names if state == "pending" else frozenset(),
        )

    def _mergeability_changes(self, data: st.DataObject) -> None:
        if self.world.pr is not None:
            mergeable = data.draw(st.sampled_from([True, True, False, None]))
            self.world.pr = replace(self.world.pr, mergeable=mergeable)

    def _someone_else_pushes(self, data: st.DataObject) -> None:
        pr = self.world.pr
        if pr is not None and pr.status is PRStatus.OPEN:
            head = self._new_sha()
            self.world.remote_head = head
            self.world.pr = replace(pr, head_sha=head)

    def _approval_label_added(self, data: st.DataObject) -> None:
        actor = SELF_ACTOR if data.draw(st.booleans()) else HUMAN
        self.world.labels.add(APPROVAL)
        self.world.label_events.append(LabelEvent(APPROVAL, LabelAction.ADDED, actor, self.now))

    def _approval_label_removed(self, data: st.DataObject) -> None:
        self.world.labels.discard(APPROVAL)
        self.world.label_events.append(LabelEvent(APPROVAL, LabelAction.REMOVED, HUMAN, self.now))

    def _human_reviews(self, data: st.DataObject) -> None:
        pr = self.world.pr
        if pr is None:
            return
        verdict = data.draw(
            st.sampled_from([ReviewVerdict.APPROVED, ReviewVerdict.CHANGES_REQUESTED])
        )
        review = PRReview(HUMAN, verdict, pr.head_sha, self.now)
        self.world.pr = replace(pr, reviews=(*pr.reviews, review))

    def _reviewer_opens_a_thread(self, data: st.DataObject) -> None:
        pr = self.world.pr
        if pr is None:
            return
        by_bot = data.draw(st.booleans())
        new = ReviewThread(
            id=f"T{next(self.ids)}",
            author=REVIEW_BOT if by_bot else HUMAN,
            body="Why is this optional?" if by_bot else "Please add a test.",
            created_at=self.now,
            path="app/core.py",
        )
        self.world.pr = replace(pr, threads=(*pr.threads, new))

    def _human_comments_on_the_issue(self, data: st.DataObject) -> None:
        self.world.comments.append(IssueComment(next(self.ids), HUMAN, self.now))

    def _operator_resumes(self, data: st.DataObject) -> None:
        record = self.world.record
        if record is not None:
            to_phase = data.draw(
                st.sampled_from([None, Phase.IMPLEMENTING, Phase.REWORK, Phase.DONE])
            )
            self.world.record = replace(
                record, operator_request=OperatorRequest(self.now, to_phase)
            )

    def _kill_switch_toggles(self, data: st.DataObject) -> None:
        if data.draw(st.booleans()):
            self.world.local_kill = not self.world.local_kill
        else:
            self.world.labels ^= {STOP}

    def _mode_label_toggles(self, data: st.DataObject) -> None:
        self.world.labels ^= {"orchestrator:mutate"}

    def _human_merges_the_pull_request(self, data: st.DataObject) -> None:
        pr = self.world.pr
        if pr is not None and pr.status is PRStatus.OPEN:
            self.world.pr = replace(pr, status=PRStatus.MERGED, merge_commit_sha=self._new_sha())
            self.world.merged_heads.append(pr.head_sha)

    def _daemon_crashes_during_a_turn(self, data: st.DataObject) -> None:
        self.world.running = None

    # ------------------------------------------------------------ invariants

    @invariant()
    def done_only_after_a_confirmed_merge(self) -> None:
        record = self.world.record
        if record is not None and record.phase is Phase.DONE:
            assert self.world.pr is not None and self.world.pr.status is PRStatus.MERGED
            assert self.world.merged_heads

    @invariant()
    def rework_limit_is_respected(self) -> None:
        record = self.world.record
        if record is not None:
            assert record.rework_cycles <= MAX_REWORK


def _keys(actions: list[Action]) -> list[str]:
    return [a.idempotency_key for a in actions if isinstance(a, SideEffect)]


PlannerMachine.TestCase.settings = settings(max_examples=200, stateful_step_count=50, deadline=None)
TestPlannerMachine = PlannerMachine.TestCase
