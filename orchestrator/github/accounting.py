"""Counting every GitHub request and what it costs, as GitHub bills it.

A REST request costs one unit of the core budget unless it was answered 304
(conditional request, free) or was ``/rate_limit`` (free). A GraphQL query
costs the points GitHub reports for it. Counters are per route family and
are also kept per tick for the dashboard and the metrics.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

_NUMBER = re.compile(r"/\d+(?=/|$)")
_SHA = re.compile(r"/[0-9a-f]{40}(?=/|$)")


def route_family(method: str, path: str) -> str:
    """``GET /repos/{owner}/{repo}/pulls/{n}`` style name of a request, without ids."""
    path = path.split("?", 1)[0]
    if path.startswith("/repos/"):
        parts = path.split("/")
        if len(parts) >= 4:
            parts[2], parts[3] = "{owner}", "{repo}"
        path = "/".join(parts)
    path = _SHA.sub("/{sha}", _NUMBER.sub("/{n}", path))
    return f"{method.upper()} {path}"


@dataclass
class Budget:
    """The last known remaining budget of one resource."""

    remaining: int | None = None
    limit: int | None = None
    reset_at: datetime | None = None


@dataclass
class Accounting:
    """Thread-safe counters of requests, billable units and 304s."""

    requests: Counter[str] = field(default_factory=Counter)
    units: Counter[str] = field(default_factory=Counter)
    not_modified: Counter[str] = field(default_factory=Counter)
    budgets: dict[str, Budget] = field(default_factory=dict)
    rate_limited: int = 0
    _tick_units: Counter[str] = field(default_factory=Counter)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, family: str, *, units: int, not_modified: bool) -> None:
        with self._lock:
            self.requests[family] += 1
            if units:
                self.units[family] += units
                self._tick_units[family] += units
            if not_modified:
                self.not_modified[family] += 1

    def record_budget(
        self, resource: str, remaining: int | None, limit: int | None, reset_at: datetime | None
    ) -> None:
        with self._lock:
            self.budgets[resource] = Budget(remaining, limit, reset_at)

    def record_rate_limited(self) -> None:
        with self._lock:
            self.rate_limited += 1

    def total_units(self) -> int:
        with self._lock:
            return sum(self.units.values())

    def take_tick_units(self) -> dict[str, int]:
        """Units spent since the last call, by route family (one call per tick)."""
        with self._lock:
            spent = dict(self._tick_units)
            self._tick_units.clear()
            return spent
