"""Builders with defaults for the domain tests: one call per value, overrides by keyword."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from orchestrator.domain.actions import Action, Cancel, Dispatch, Observe, SideEffect, Transition
from orchestrator.domain.agent_files.fix_summary import (
    FixEntry,
    FixStatus,
    FixSummary,
    FixTargetKind,
)
from orchestrator.domain.agent_files.review import Review
from orchestrator.domain.phases import Phase, RolloutMode
from orchestrator.domain.planner import plan
from orchestrator.domain.policy import FlowPolicy
from orchestrator.domain.snapshot import (
    Actor,
    AgentOutcome,
    ChecksSummary,
    IssueComment,
    IssueRef,
    IssueSnapshot,
    KillSwitches,
    LabelAction,
    LabelEvent,
    OutcomeKind,
    PRReview,
    PRStatus,
    PullRequest,
    ReviewThread,
    ReviewVerdict,
    RunningAgent,
    Snapshot,
    StoredRecord,
    TrackedIssue,
)
from orchestrator.domain.workpad import PRRef, ReviewState, WorkpadRecord

NOW = datetime(2026, 3, 14, 12, 0, tzinfo=UTC)
EARLIER = NOW - timedelta(hours=1)
# When the pull request's head was pushed (its updatedAt in the read that first showed it).
HEAD_PUSHED = EARLIER - timedelta(minutes=30)
REPO = "acme/app"
SELF = "orchestrator-bot"
HUMAN = Actor("alice", can_write=True)
READER = Actor("mallory", can_write=False)
SELF_ACTOR = Actor(SELF, can_write=True)
REVIEW_BOT = Actor("review-bot[bot]", is_bot=True, can_write=True)
OWNED = frozenset({"orchestrator"})
APPROVAL = "state:merging"


def sha(tag: str) -> str:
    """A 40-character hexadecimal SHA derived from a short tag (for readable tests)."""
    digits = "".join(f"{ord(c):02x}" for c in tag)
    return (digits * 40)[:40]


HEAD_A = sha("a")
HEAD_B = sha("b")
HEAD_C = sha("c")


def ref(number: int = 1) -> IssueRef:
    return IssueRef(REPO, number)


def make_policy(**overrides: Any) -> FlowPolicy:
    """A merge-mode policy unless told otherwise."""
    values: dict[str, Any] = {"rollout_mode": RolloutMode.MERGE}
    values.update(overrides)
    return FlowPolicy(**values)


def make_issue(number: int = 1, **overrides: Any) -> TrackedIssue:
    values: dict[str, Any] = {
        "ref": ref(number),
        "title": f"Issue {number}",
        "is_open": True,
        "labels": OWNED,
        "created_at": EARLIER - timedelta(minutes=number),
    }
    values.update(overrides)
    return TrackedIssue(**values)


def approval_event(actor: Actor = HUMAN, label: str = APPROVAL) -> LabelEvent:
    return LabelEvent(label, LabelAction.ADDED, actor, EARLIER)


def approved_issue(number: int = 1, actor: Actor = HUMAN) -> TrackedIssue:
    return make_issue(number, labels=OWNED | {APPROVAL}, label_events=(approval_event(actor),))


def checks(
    head: str = HEAD_A, state: str = "green", names: tuple[str, ...] = ("ci",)
) -> ChecksSummary:
    names_set = frozenset(names)
    if state == "green":
        return ChecksSummary(head, passed=names_set)
    if state == "failing":
        return ChecksSummary(head, failing=names_set)
    if state == "pending":
        return ChecksSummary(head, pending=names_set)
    return ChecksSummary(head)


def make_pr(head: str = HEAD_A, **overrides: Any) -> PullRequest:
    values: dict[str, Any] = {
        "number": 10,
        "url": f"https://github.example/{REPO}/pull/10",
        "head_sha": head,
        "status": PRStatus.OPEN,
        "mergeable": True,
        "checks": checks(head),
        "head_branch": "orchestrator/issue-1",
        "updated_at": HEAD_PUSHED,
    }
    values.update(overrides)
    return PullRequest(**values)


def approving_review(head: str = HEAD_A, actor: Actor = HUMAN) -> PRReview:
    return PRReview(actor, ReviewVerdict.APPROVED, head, EARLIER)


def thread(
    thread_id: str = "T1",
    author: Actor = HUMAN,
    body: str = "Please handle the empty list.",
    path: str | None = "app/core.py",
    **overrides: Any,
) -> ReviewThread:
    return ReviewThread(
        id=thread_id, author=author, body=body, created_at=EARLIER, path=path, **overrides
    )


def reviewed(head: str | None = HEAD_A, passes: int = 1, **overrides: Any) -> ReviewState:
    return ReviewState(
        comment_id=99, passes_completed=passes, last_reviewed_head_sha=head, **overrides
    )


def make_record(phase: Phase, **overrides: Any) -> StoredRecord:
    """A stored record in ``phase`` with a PR on HEAD_A that was reviewed once."""
    workpad_overrides = overrides.pop("workpad", {})
    workpad = WorkpadRecord(
        phase=phase,
        branch="orchestrator/issue-1",
        pr=PRRef(10, f"https://github.example/{REPO}/pull/10", HEAD_A),
        review=reviewed(),
    )
    workpad = replace(workpad, **workpad_overrides)
    values: dict[str, Any] = {"phase": phase, "phase_since": EARLIER, "workpad": workpad}
    values.update(overrides)
    if "rework_cycles" in overrides:
        values["workpad"] = replace(values["workpad"], rework_cycles=overrides["rework_cycles"])
    return StoredRecord(**values)


def make_review(head: str = HEAD_A, *severities: str) -> Review:
    from orchestrator.domain.agent_files.review import Finding, Severity

    findings = tuple(
        Finding(
            id=f"F{i + 1}",
            severity=Severity(s),
            title=f"Finding {i + 1}",
            summary="s",
            why_it_matters="w",
            suggested_fix="f",
        )
        for i, s in enumerate(severities)
    )
    return Review(head_sha=head, findings=findings)


def fix_summary(*entries: tuple[str, FixStatus]) -> FixSummary:
    return FixSummary(
        tuple(
            FixEntry(
                FixTargetKind.THREAD,
                target,
                status,
                "done",
                evidence="because"
                if status in (FixStatus.DISMISSED, FixStatus.UNCERTAIN)
                else None,
            )
            for target, status in entries
        )
    )


def make_outcome(phase: Phase, **overrides: Any) -> AgentOutcome:
    """A successful turn in ``phase`` that finished after the record's phase_since."""
    values: dict[str, Any] = {
        "run_id": "run-1",
        "phase": phase,
        "kind": OutcomeKind.SUCCEEDED,
        "started_at": EARLIER + timedelta(minutes=1),
        "finished_at": EARLIER + timedelta(minutes=10),
        "head_before": HEAD_A,
        "head_after": HEAD_A,
    }
    values.update(overrides)
    return AgentOutcome(**values)


def make_item(
    phase: Phase | None = None,
    *,
    issue: TrackedIssue | None = None,
    pr: PullRequest | None = None,
    no_pr: bool = False,
    **record_overrides: Any,
) -> IssueSnapshot:
    """One tracked issue; a record in ``phase`` when given, a PR on HEAD_A unless ``no_pr``."""
    record = make_record(phase, **record_overrides) if phase is not None else None
    if pr is None and not no_pr and phase is not None:
        pr = make_pr()
    return IssueSnapshot(issue=issue or make_issue(), record=record, pr=pr)


def make_snapshot(*items: IssueSnapshot, **overrides: Any) -> Snapshot:
    values: dict[str, Any] = {
        "now": NOW,
        "issues": items,
        "running": (),
        "kill_switches": KillSwitches(),
        "self_login": SELF,
    }
    values.update(overrides)
    return Snapshot(**values)


def running(phase: Phase, number: int = 1) -> RunningAgent:
    return RunningAgent(ref(number), phase, f"run-{number}", EARLIER)


def human_comment(at: datetime = NOW - timedelta(minutes=5), actor: Actor = HUMAN) -> IssueComment:
    return IssueComment(id=1, author=actor, created_at=at)


def run_plan(snapshot: Snapshot, policy: FlowPolicy | None = None) -> list[Action]:
    return plan(snapshot, policy or make_policy(), NOW)


def transitions(actions: list[Action]) -> list[Transition]:
    return [a for a in actions if isinstance(a, Transition)]


def dispatches(actions: list[Action]) -> list[Dispatch]:
    return [a for a in actions if isinstance(a, Dispatch)]


def effects_of(actions: list[Action]) -> list[SideEffect]:
    return [a for a in actions if isinstance(a, SideEffect)]


def cancels(actions: list[Action]) -> list[Cancel]:
    return [a for a in actions if isinstance(a, Cancel)]


def observes(actions: list[Action]) -> list[Observe]:
    return [a for a in actions if isinstance(a, Observe)]
