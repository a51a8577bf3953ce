"""One turn as the tick dispatched it, and one held while the database is away."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from orchestrator.agent import RepoSource
from orchestrator.domain.actions import Dispatch
from orchestrator.domain.effects import recorded_branch
from orchestrator.domain.snapshot import AgentOutcome, PullRequest, StoredRecord, TrackedIssue
from orchestrator.store.fencing import Fence
from orchestrator.turns.pool import TurnSlot
from orchestrator.wiring.agents import AgentWiring
from orchestrator.wiring.policy_view import PolicyView


def issue_branch(record: StoredRecord, view: PolicyView, number: int) -> str:
    """The issue's branch, as the planner names it (see ``recorded_branch``)."""
    return recorded_branch(record, view.flow.pr.branch_prefix, number)


@dataclass(frozen=True)
class TurnJob:
    """Everything a worker needs for one turn, fixed when the tick dispatched it."""

    dispatch: Dispatch
    issue_id: int
    issue: TrackedIssue
    record: StoredRecord
    pr: PullRequest | None
    view: PolicyView
    agents: AgentWiring
    source: RepoSource
    # The claim the turn runs under: its record and push are refused once it is lost.
    fence: Fence | None = None

    @property
    def title(self) -> str:
        return self.issue.title

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(sorted(self.issue.labels))

    @property
    def tracker_state(self) -> str:
        return self.issue.tracker_state or ""


@dataclass
class HeldTurn:
    """A turn that ended while the database was out of reach, kept here until it returns."""

    job: TurnJob
    slot: TurnSlot
    outcome: AgentOutcome
    # What closes the run's row, until it is written.
    run_close: dict[str, Any] | None
    recorded: bool = False
    announced: bool = False
