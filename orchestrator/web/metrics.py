"""Prometheus metrics, computed at scrape time from the live status and the database.

Every replica exports what it does itself: its counters since start, its
running turns, its brake, whether it leads. What is read from the shared
database (issues per phase, agent runs, side effects, turn claims, replicas)
is the same whichever replica reads it, so only the leader exports it: a
``sum()`` over the replicas counts everything once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy import func, select

from orchestrator.daemon.polling_status import PollingStatus
from orchestrator.daemon.status import RuntimeStatus
from orchestrator.store.database import Database
from orchestrator.store.models import AgentRun, SideEffect, TrackedIssue


class OrchestratorCollector(Collector):
    """Yields every metric of the daemon on each scrape."""

    def __init__(self, db: Database, status: Callable[[], RuntimeStatus | None]) -> None:
        self._db = db
        self._status = status

    def collect(self) -> Iterator[Metric]:
        status = self._status()
        if status is None:
            return
        yield from self._from_status(status)
        yield from self._cluster_role(status)
        if status.leading:
            yield from self._from_database(status)

    def _from_status(self, status: RuntimeStatus) -> Iterator[Metric]:
        pairs: list[tuple[str, str, float]] = [
            ("orchestrator_ticks", "Ticks run since start.", status.ticks),
            ("orchestrator_dispatches", "Agent turns dispatched since start.", status.dispatches),
            (
                "orchestrator_github_units_spent",
                "GitHub units spent since start (REST requests "
                "and GraphQL points as GitHub bills them).",
                status.github_units_spent,
            ),
            (
                "orchestrator_rate_limit_deferrals",
                "Ticks whose GitHub work was deferred by a spent budget.",
                status.rate_limit_deferrals,
            ),
            (
                "orchestrator_policy_reload_errors",
                "Invalid WORKFLOW.md edits seen.",
                status.policy_reload_errors,
            ),
        ]
        for name, doc, value in pairs:
            counter = CounterMetricFamily(name, doc)
            counter.add_metric([], value)
            yield counter
        duration = GaugeMetricFamily(
            "orchestrator_tick_duration_seconds", "Duration of the last tick."
        )
        duration.add_metric([], status.last_tick_duration_s or 0.0)
        yield duration
        running = GaugeMetricFamily("orchestrator_running_agents", "Agent turns running now.")
        running.add_metric([], len(status.running))
        yield running
        brake = GaugeMetricFamily(
            "orchestrator_brake_active", "1 while the local kill-switch file exists."
        )
        brake.add_metric([], 1.0 if status.brake_active else 0.0)
        yield brake
        budget = GaugeMetricFamily(
            "orchestrator_github_budget_remaining",
            "Last known GitHub budget left.",
            labels=["resource"],
        )
        for item in status.budgets:
            if item.remaining is not None:
                budget.add_metric([item.resource], item.remaining)
        yield budget
        if status.polling is not None:
            yield from self._polling(status.polling, status.as_of)

    @staticmethod
    def _polling(polling: PollingStatus, now: datetime) -> Iterator[Metric]:
        per_cycle = GaugeMetricFamily(
            "orchestrator_github_units_per_cycle",
            "GitHub units one poll cycle costs, averaged over the last ticks.",
            labels=["resource"],
        )
        exhausted = GaugeMetricFamily(
            "orchestrator_github_budget_exhausted_in_seconds",
            "Seconds until the budget runs out at the current pace, when that comes "
            "before its reset.",
            labels=["resource"],
        )
        for cost in polling.costs:
            per_cycle.add_metric([cost.resource], cost.units_per_cycle)
            if cost.exhausted_at is not None:
                exhausted.add_metric(
                    [cost.resource], max(0.0, (cost.exhausted_at - now).total_seconds())
                )
        yield per_cycle
        yield exhausted
        sweep = GaugeMetricFamily(
            "orchestrator_passive_sweep",
            "Pull requests waiting for a person (passive) and how many this pass re-read.",
            labels=["kind"],
        )
        sweep.add_metric(["passive"], polling.sweep.passive)
        sweep.add_metric(["read_this_pass"], polling.sweep.read_this_pass)
        yield sweep

    def _cluster_role(self, status: RuntimeStatus) -> Iterator[Metric]:
        leader = GaugeMetricFamily(
            "orchestrator_leader",
            "1 while this replica leads (polls GitHub and plans), else 0.",
            labels=["replica"],
        )
        leader.add_metric([status.replica_id], 1.0 if status.leading else 0.0)
        yield leader
        if status.leader_epoch is not None:
            epoch = GaugeMetricFamily(
                "orchestrator_leader_epoch",
                "Epoch of the poll lease this replica leads under; "
                "grows by one each time leadership changes hands.",
                labels=["repo"],
            )
            for repo in status.leading:
                epoch.add_metric([repo], status.leader_epoch)
            yield epoch

    def _from_database(self, status: RuntimeStatus) -> Iterator[Metric]:
        """The cluster-wide figures, on the leader only."""
        yield from self._cluster(status)
        with self._db.sessions() as session:
            phases = session.execute(
                select(TrackedIssue.phase, func.count()).group_by(TrackedIssue.phase)
            ).all()
            runs = session.execute(
                select(AgentRun.phase, AgentRun.outcome, func.count())
                .where(AgentRun.ended_at.is_not(None))
                .group_by(AgentRun.phase, AgentRun.outcome)
            ).all()
            spent = session.execute(
                select(
                    func.coalesce(func.sum(AgentRun.input_tokens), 0),
                    func.coalesce(func.sum(AgentRun.cached_input_tokens), 0),
                    func.coalesce(func.sum(AgentRun.output_tokens), 0),
                    func.coalesce(func.sum(AgentRun.cost_usd), 0.0),
                ).where(AgentRun.ended_at.is_not(None))
            ).one()
            effects = session.execute(
                select(SideEffect.kind, SideEffect.status, func.count()).group_by(
                    SideEffect.kind, SideEffect.status
                )
            ).all()
        issues = GaugeMetricFamily(
            "orchestrator_issues", "Tracked issues by phase.", labels=["phase"]
        )
        for phase, count in phases:
            issues.add_metric([phase], count)
        yield issues
        outcomes = CounterMetricFamily(
            "orchestrator_agent_runs", "Finished agent turns.", labels=["phase", "outcome"]
        )
        for phase, outcome, count in runs:
            outcomes.add_metric([phase, outcome or "unknown"], count)
        yield outcomes
        tokens = CounterMetricFamily(
            "orchestrator_agent_tokens",
            "Tokens the agents reported, by kind (input includes cached_input).",
            labels=["kind"],
        )
        for kind, spent_tokens in zip(("input", "cached_input", "output"), spent[:3], strict=True):
            tokens.add_metric([kind], int(spent_tokens or 0))
        yield tokens
        cost = CounterMetricFamily(
            "orchestrator_agent_cost_usd", "What the agents reported their turns cost, in USD."
        )
        cost.add_metric([], float(spent[3] or 0.0))
        yield cost
        side_effects = CounterMetricFamily(
            "orchestrator_side_effects",
            "Side effects by kind and outcome.",
            labels=["kind", "status"],
        )
        for kind, state, count in effects:
            side_effects.add_metric([kind, state], count)
        yield side_effects

    def _cluster(self, status: RuntimeStatus) -> Iterator[Metric]:
        replicas = self._db.replicas.all(now=status.as_of)
        claims = self._db.claims.open_by_owner()
        alive = GaugeMetricFamily(
            "orchestrator_replica_alive",
            "Replicas that did not stop cleanly: 1 while the heartbeat is recent, "
            "0 once it stopped (listed for a day).",
            labels=["replica", "version"],
        )
        for row in replicas:
            # A replica stopped cleanly is gone on purpose: nothing to alert on.
            if row.stopped_at is None:
                alive.add_metric([row.replica_id, row.version], 1.0 if row.alive else 0.0)
        yield alive
        claimed = GaugeMetricFamily(
            "orchestrator_turns_claimed",
            "Agent turns claimed and not finished, by the replica holding them.",
            labels=["replica"],
        )
        for owner, count in sorted((o, c) for o, c in claims.items() if o is not None):
            claimed.add_metric([owner], count)
        yield claimed
        queued = GaugeMetricFamily(
            "orchestrator_turns_queued", "Agent turns planned and not claimed by any replica."
        )
        queued.add_metric([], claims.get(None, 0))
        yield queued


def metrics_text(registry: CollectorRegistry) -> bytes:
    return generate_latest(registry)


def make_registry(db: Database, status: Callable[[], RuntimeStatus | None]) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(OrchestratorCollector(db, status))
    return registry
