"""Pure parts of the runtime: which running turns must stop, the order of writes, key parsing."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from orchestrator.domain.actions import Transition, side_effect
from orchestrator.domain.phases import Phase
from orchestrator.domain.policy import FlowPolicy
from orchestrator.domain.side_effects import CloseIssue, UpsertWorkpad
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
from orchestrator.runtime.executor import workpad_before_close
from orchestrator.runtime.reconcile import stale_turns
from orchestrator.runtime.recovery import ref_of_key

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
        (
            snapshot(pr=PullRequest(3, "", "a" * 40, labels=frozenset({"orchestrator:stop"}))),
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


def test_the_workpad_is_rewritten_before_the_issue_is_closed() -> None:
    other = IssueRef("acme/app", 8)
    close = side_effect(REF, "merged:x", CloseIssue(pr_number=10, reason="completed"))
    workpad = side_effect(REF, "d1", UpsertWorkpad(marker="#", heading="#", body="#"))
    other_workpad = side_effect(other, "d2", UpsertWorkpad(marker="#", heading="#", body="#"))
    move = Transition(other, Phase.MERGING, Phase.DONE, "merge confirmed")
    ordered = workpad_before_close([close, move, other_workpad, workpad])
    assert ordered == [workpad, close, move, other_workpad]


def test_idempotency_keys_name_their_issue() -> None:
    assert ref_of_key("acme/app#12:merge_pr:" + "a" * 40) == IssueRef("acme/app", 12)
    with pytest.raises(ValueError, match="not an idempotency key"):
        ref_of_key("nonsense")
