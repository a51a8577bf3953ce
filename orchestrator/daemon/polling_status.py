"""What polling costs and how far it got: units per cycle, the sweep, catching up.

Shown on the dashboard, in ``/api/v1/state``, in ``orchestrator status`` and as
metrics, so an operator can see the budget's schedule rather than meet its end.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass
from datetime import datetime, timedelta

from orchestrator.github.accounting import Budget
from orchestrator.tick.sweep import SweepStatus

# Ticks the average cost per cycle is taken over.
CYCLE_WINDOW = 10
GRAPHQL_FAMILY = "POST /graphql (points)"


def resource_of(family: str) -> str:
    """The budget a route family is billed to."""
    return "graphql" if family == GRAPHQL_FAMILY else "core"


@dataclass(frozen=True, slots=True)
class ResourceCost:
    """One budget's cost per cycle and when, at that pace, it would run out."""

    resource: str
    units_per_cycle: float
    remaining: int | None
    # When the budget runs out at this pace; None when it lasts until it resets.
    exhausted_at: datetime | None


@dataclass(frozen=True, slots=True)
class PollingStatus:
    """The polling side of the daemon's state."""

    interval_s: float
    issues: int
    costs: tuple[ResourceCost, ...]
    sweep: SweepStatus
    # What is still to be read once after a start with an empty database.
    catching_up: tuple[str, ...] = ()

    @property
    def units_per_cycle(self) -> float:
        return sum(cost.units_per_cycle for cost in self.costs)

    @property
    def units_per_issue(self) -> float | None:
        return self.units_per_cycle / self.issues if self.issues else None


class CycleCosts:
    """Units each tick spent, per budget, over the last few ticks. Thread-safe."""

    def __init__(self, window: int = CYCLE_WINDOW) -> None:
        self._lock = threading.Lock()
        self._cycles: deque[dict[str, int]] = deque(maxlen=window)

    def add(self, spent_by_family: dict[str, int]) -> None:
        by_resource: dict[str, int] = {"core": 0, "graphql": 0}
        for family, units in spent_by_family.items():
            by_resource[resource_of(family)] += units
        with self._lock:
            self._cycles.append(by_resource)

    def per_cycle(self) -> dict[str, float]:
        with self._lock:
            cycles = list(self._cycles)
        if not cycles:
            return {"core": 0.0, "graphql": 0.0}
        return {
            resource: sum(cycle.get(resource, 0) for cycle in cycles) / len(cycles)
            for resource in ("core", "graphql")
        }


def resource_costs(
    per_cycle: dict[str, float], budgets: dict[str, Budget], interval_s: float, now: datetime
) -> tuple[ResourceCost, ...]:
    """Each budget's cost per cycle and when it would run out before its reset."""
    costs = []
    for resource in sorted(per_cycle):
        units = per_cycle[resource]
        budget = budgets.get(resource)
        remaining = budget.remaining if budget is not None else None
        exhausted_at = None
        if remaining is not None and units > 0:
            at = now + timedelta(seconds=remaining / units * interval_s)
            reset_at = budget.reset_at if budget is not None else None
            exhausted_at = at if reset_at is None or at < reset_at else None
        costs.append(ResourceCost(resource, units, remaining, exhausted_at))
    return tuple(costs)
