"""Which running turns must stop: reconciled against the fresh snapshot before planning."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from orchestrator.domain.phases import Phase
from orchestrator.domain.policy import FlowPolicy
from orchestrator.domain.reconcile import stale_turns
from orchestrator.domain.snapshot import (
    IssueRef,
    IssueSnapshot,
    KillSwitches,
    PRStatus,
    PullRequest,
    RunningAgent,
    Snapshot,
    StoredRecord,
    TrackedIssue,
)

NOW = datetime(2026, 3, 14, 12, 0, tzinfo=UTC)
REF = IssueRef("acme/app", 7)
POLICY = FlowPolicy()


def snapshot(
    *,
    labels: frozenset[str] = frozenset({"orchestrator"}),
    is_open: bool = True,
    phase: Phase = Phase.IMPLEMENTING,
    pr: PullRequest | None = None,
    switches: KillSwitches | None = None,
    present: bool = True,
) -> Snapshot:
    issue = TrackedIssue(REF, "Add a widget", is_open, labels, NOW)
    items = (IssueSnapshot(issue, StoredRecord(phase, NOW), pr),) if present else ()
    running = (RunningAgent(REF, Phase.IMPLEMENTING, "run-1", NOW),)
    return Snapshot(NOW, items, running, switches or KillSwitches(), "orchestrator-bot")


@pytest.mark.parametrize(
    ("situation", "reason"),
    [
        (snapshot(), None),
        (snapshot(present=False), "issue_gone"),
        (snapshot(is_open=False), "issue_closed"),
        (snapshot(phase=Phase.DONE), "issue_done"),
        (snapshot(labels=frozenset()), "ownership_lost"),
        (snapshot(labels=frozenset({"orchestrator", "orchestrator:stop"})), "kill_switch"),
        # GitHub compares label names without regard to case: so does every rule.
        (snapshot(labels=frozenset({"orchestrator", "Orchestrator:STOP"})), "kill_switch"),
        (snapshot(labels=frozenset({"Orchestrator"})), None),
        (
            snapshot(pr=PullRequest(3, "", "a" * 40, labels=frozenset({"orchestrator:stop"}))),
            "kill_switch",
        ),
        (
            snapshot(pr=PullRequest(3, "", "a" * 40, labels=frozenset({"ORCHESTRATOR:stop"}))),
            "kill_switch",
        ),
        (snapshot(switches=KillSwitches(local_file_active=True)), "kill_switch"),
        (snapshot(switches=KillSwitches(stopped_repos=frozenset({"acme/app"}))), "kill_switch"),
        (
            snapshot(is_open=False, pr=PullRequest(3, "", "a" * 40, status=PRStatus.MERGED)),
            None,
        ),
    ],
)
def test_stale_turns(situation: Snapshot, reason: str | None) -> None:
    found = stale_turns(situation, POLICY)
    assert [turn.reason for turn in found] == ([reason] if reason else [])
