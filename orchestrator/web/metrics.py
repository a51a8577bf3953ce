"""Prometheus metrics, computed at scrape time from the live status and the database.

Counters that live in the database (agent runs, side effects) are grouped
there, so they survive restarts and agree between replicas.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy import func, select

from orchestrator.runtime.status import RuntimeStatus
from orchestrator.store.database import Database
from orchestrator.store.models import AgentRun, SideEffect, TrackedIssue


class OrchestratorCollector(Collector):
    """Yields every metric of the daemon on each scrape."""

    def __init__(self, db: Database, status: Callable[[], RuntimeStatus | None]) -> None:
        self._db = db
        self._status = status

    def collect(self) -> Iterator[Metric]:
        status = self._status()
        yield from self._from_status(status)
        yield from self._from_database()

    def _from_status(self, status: RuntimeStatus | None) -> Iterator[Metric]:
        if status is None:
            return
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

    def _from_database(self) -> Iterator[Metric]:
        with self._db.sessions() as session:
            phases = session.execute(
                select(TrackedIssue.phase, func.count()).group_by(TrackedIssue.phase)
            ).all()
            runs = session.execute(
                select(AgentRun.phase, AgentRun.outcome, func.count())
                .where(AgentRun.ended_at.is_not(None))
                .group_by(AgentRun.phase, AgentRun.outcome)
            ).all()
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
        side_effects = CounterMetricFamily(
            "orchestrator_side_effects",
            "Side effects by kind and outcome.",
            labels=["kind", "status"],
        )
        for kind, state, count in effects:
            side_effects.add_metric([kind, state], count)
        yield side_effects


def metrics_text(registry: CollectorRegistry) -> bytes:
    return generate_latest(registry)


def make_registry(db: Database, status: Callable[[], RuntimeStatus | None]) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(OrchestratorCollector(db, status))
    return registry
