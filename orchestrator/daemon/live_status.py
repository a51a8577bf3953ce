"""The daemon's live status, projected from its parts as one frozen value."""

from __future__ import annotations

from typing import TYPE_CHECKING

from orchestrator.daemon.polling_status import PollingStatus, resource_costs
from orchestrator.daemon.status import BudgetStatus, RuntimeStatus
from orchestrator.tick.sweep import SweepStatus
from orchestrator.wiring.containment import sandbox_status

if TYPE_CHECKING:
    from orchestrator.daemon.daemon import Daemon


def live_status(daemon: Daemon) -> RuntimeStatus:
    """The daemon's live state (a fresh frozen value each call)."""
    parts = daemon.parts
    repos, stats = parts.repo_set, parts.poller.stats
    failure = repos.source.last_error
    budgets = tuple(
        BudgetStatus(resource, budget.remaining, budget.limit, budget.reset_at)
        for resource, budget in sorted(daemon.accounting.budgets.items())
    )
    fence = parts.cluster.fence
    return RuntimeStatus(
        as_of=daemon.clock(),
        replica_id=daemon.replica_id,
        started_at=daemon.started_at,
        rollout_mode=repos.view.flow.rollout_mode.value,
        policy_path=str(daemon.policy_path),
        repos=daemon.repos,
        policy_error="\n".join(failure.messages) if failure is not None else None,
        brake_active=parts.switches.local_file_active(),
        stopped_repos=parts.switches.stopped_repos(),
        last_tick_at=stats.last_tick_at,
        last_tick_duration_s=stats.last_tick_duration_s,
        ticks=stats.ticks,
        last_tick_error=stats.last_tick_error,
        running=parts.pool.turns(),
        budgets=budgets,
        rate_limited_until=stats.rate_limited_until,
        github_units_spent=daemon.accounting.total_units(),
        leading=daemon.leading,
        leader_epoch=fence.epoch if fence is not None else None,
        poll_interval_s=repos.view.interval_s,
        dispatches=stats.dispatches,
        rate_limit_deferrals=stats.rate_limit_deferrals,
        policy_reload_errors=repos.reload_errors,
        sandbox=sandbox_status(repos.agents.sandbox),
        polling=_polling_status(daemon),
    )


def _polling_status(daemon: Daemon) -> PollingStatus | None:
    repo_set = daemon.parts.repo_set
    units = repo_set.units
    builders = [units[r].parts.builder for r in daemon.leading if r in units]
    if not builders:
        return None
    interval = repo_set.view.interval_s
    stats = daemon.parts.poller.stats
    return PollingStatus(
        interval_s=interval,
        issues=stats.last_tick_issues,
        costs=resource_costs(
            stats.cycle_costs.per_cycle(),
            dict(daemon.accounting.budgets),
            interval,
            daemon.clock(),
        ),
        sweep=SweepStatus.combined([b.sweep.status() for b in builders]),
        catching_up=tuple(c.describe() for b in builders for c in b.catching_up.values() if c.left),
    )
