"""Which running turns to cancel, from the fresh snapshot, before planning.

A turn whose issue went terminal (closed, done), lost its ownership label, is
covered by a kill switch, or left the snapshot altogether is cancelled at once;
the planner then sees the world without waiting on a turn nobody wants. The
ownership and kill-switch rules are the gates' own, so a turn stops exactly
when the planner would stop the issue.
"""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.domain.gates import kill_switch_active
from orchestrator.domain.labels import has_label
from orchestrator.domain.phases import Phase
from orchestrator.domain.policy import FlowPolicy
from orchestrator.domain.snapshot import IssueRef, IssueSnapshot, PRStatus, Snapshot


@dataclass(frozen=True)
class StaleTurn:
    """A running turn that must stop, and why (a stable reason for logs and the run record)."""

    issue: IssueRef
    reason: str


def stale_turns(snapshot: Snapshot, policy: FlowPolicy) -> list[StaleTurn]:
    """The running turns to cancel now."""
    by_ref = {item.ref: item for item in snapshot.issues}
    stale: list[StaleTurn] = []
    for agent in snapshot.running:
        item = by_ref.get(agent.issue)
        reason = _reason(item, snapshot, policy)
        if reason is not None:
            stale.append(StaleTurn(agent.issue, reason))
    return stale


def _reason(item: IssueSnapshot | None, snapshot: Snapshot, policy: FlowPolicy) -> str | None:
    if item is None:
        return "issue_gone"
    issue = item.issue
    merged = item.pr is not None and item.pr.status is PRStatus.MERGED
    if not issue.is_open and not merged:
        return "issue_closed"
    if item.record is not None and item.record.phase is Phase.DONE:
        return "issue_done"
    if not has_label(issue.labels, policy.ownership_label):
        return "ownership_lost"
    if item.record is not None and not item.record.workpad.owned:
        return "ownership_lost"
    if kill_switch_active(item, policy, snapshot.kill_switches):
        return "kill_switch"
    return None
