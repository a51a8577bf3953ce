"""What the running daemon knows that the database does not: the live status.

The daemon publishes a new :class:`RuntimeStatus` after each tick and whenever
an agent turn starts, reports an event or ends; the web layer and the metrics
read the latest one. It is a plain frozen value, so readers never lock.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from orchestrator.daemon.polling_status import PollingStatus
from orchestrator.turns.pool import RunningTurn
from orchestrator.wiring.containment import SandboxStatus


@dataclass(frozen=True, slots=True)
class BudgetStatus:
    """The last known GitHub budget of one resource (core, graphql)."""

    resource: str
    remaining: int | None
    limit: int | None
    reset_at: datetime | None


@dataclass(frozen=True, slots=True)
class RuntimeStatus:
    """The daemon's live state, as of ``as_of``."""

    as_of: datetime
    replica_id: str
    started_at: datetime
    rollout_mode: str
    policy_path: str
    repos: tuple[str, ...] = ()
    # The last policy reload error (file:line:col: message), if the last edit was invalid.
    policy_error: str | None = None
    # The local sentinel file (the emergency brake) exists.
    brake_active: bool = False
    # Repositories stopped by an open issue carrying the repo-wide kill-switch label.
    stopped_repos: tuple[str, ...] = ()
    last_tick_at: datetime | None = None
    last_tick_duration_s: float | None = None
    ticks: int = 0
    last_tick_error: str | None = None
    running: tuple[RunningTurn, ...] = ()
    budgets: tuple[BudgetStatus, ...] = ()
    # Until when GitHub work is deferred because a primary budget is spent.
    rate_limited_until: datetime | None = None
    github_units_spent: int = 0
    # Whether this replica currently leads (polls GitHub) for each repository.
    leading: tuple[str, ...] = field(default_factory=tuple)
    # The epoch of the poll lease it leads under; it grows by one at each change of hands.
    leader_epoch: int | None = None
    # The poll interval in force; readiness wants a tick within a few intervals.
    poll_interval_s: float = 30.0
    # Counters since start, for the metrics endpoint.
    dispatches: int = 0
    rate_limit_deferrals: int = 0
    policy_reload_errors: int = 0
    # The agents' sandbox (None before the agents are wired).
    sandbox: SandboxStatus | None = None
    # What polling costs and how far its sweep got (None on a follower).
    polling: PollingStatus | None = None

    @property
    def role(self) -> str:
        """``leader`` while this replica polls a repository, else ``follower``."""
        return "leader" if self.leading else "follower"
