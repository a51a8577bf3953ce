"""After a turn: the push the planner wants for that one issue, from this replica.

The push needs the workspace, which lives where the turn ran, so the worker asks
the pure planner about this one issue and applies the push it plans through its
own gate, under the idempotency key the polling leader's tick would use (the
leader then finds it done in the outbox).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime

from orchestrator.domain.actions import SideEffect, SideEffectKind
from orchestrator.domain.phases import Phase
from orchestrator.domain.planner import plan
from orchestrator.domain.snapshot import IssueSnapshot, KillSwitches, Snapshot
from orchestrator.effects.gate import SideEffectGate
from orchestrator.effects.switches import SwitchBoard
from orchestrator.github.errors import GitHubError, RateLimited
from orchestrator.github.prstate import inspect_pr_state
from orchestrator.logs import get_logger
from orchestrator.store.records import RecordStore
from orchestrator.turns.job import TurnJob
from orchestrator.wiring.access import GitHubAccess

log = get_logger(__name__)


@dataclass(frozen=True)
class PushParts:
    """What the push after a turn reads and writes through."""

    records: RecordStore
    github: GitHubAccess
    gate: SideEffectGate
    switches: SwitchBoard
    clock: Callable[[], datetime]


def push_after_turn(parts: PushParts, job: TurnJob) -> None:
    """Apply the push the planner wants after this turn, from this replica's workspace."""
    row = parts.records.get_by_id(job.issue_id)
    if row is None:
        return
    pr = job.pr
    if job.dispatch.phase is Phase.REWORK and pr is not None:
        # What asked for the rework may be gone by now (a check passed on a rerun):
        # the planner judges the turn against the pull request as it is now.
        try:
            fresh = inspect_pr_state(
                parts.github.client, job.dispatch.issue.repo, pr.number, parts.github.actor
            )
        except (GitHubError, RateLimited) as error:
            log.warning("turn_push_deferred", error=str(error))
            return
        if fresh is not None:
            pr = replace(fresh, url=pr.url, labels=pr.labels, head_branch=pr.head_branch)
    now = parts.clock()
    snapshot = Snapshot(
        now=now,
        issues=(IssueSnapshot(issue=job.issue, record=row.record, pr=pr),),
        kill_switches=KillSwitches(local_file_active=parts.switches.local_file_active()),
        self_login=parts.github.login,
    )
    for action in plan(snapshot, job.view.flow, now):
        if not (isinstance(action, SideEffect) and action.kind is SideEffectKind.PUSH_BRANCH):
            continue
        try:
            outcome = parts.gate.apply(
                action, view=job.view, row=row, title=job.title, fence=job.fence
            )
        except (GitHubError, RateLimited) as error:
            # The leader's next tick plans the push again.
            log.warning("turn_push_deferred", error=str(error))
            return
        log.info("turn_pushed", verdict=outcome.verdict.value)
        if outcome.row is not None:
            row = outcome.row
