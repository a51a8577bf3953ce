"""Rate budgets, secondary limits, request counters and the write log, per token.

Every token has one hourly budget per resource (``core`` for REST, ``graphql``
for GraphQL points, ``search``), 5,000 units each by default. The server
charges one ``core`` unit per REST request and refunds it when the answer is
a 304; the GraphQL executor charges a query's points through `Billing.charge`.
When a budget is spent, `Billing.charge` raises `RateLimited` and charges
nothing. Secondary limits (requests per minute, concurrent requests) raise
`SecondaryLimited` from `Billing.admit`.
"""

from __future__ import annotations

import contextvars
import math
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from orchestrator_sim.clock import Clock, format_time, system_clock

RESOURCES: tuple[str, ...] = ("core", "graphql", "search")
DEFAULT_LIMITS: dict[str, int] = {"core": 5000, "graphql": 5000, "search": 30}
WINDOW_SECONDS: dict[str, int] = {"core": 3600, "graphql": 3600, "search": 60}

PRIMARY_DOCS = (
    "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-primary-rate-limits"
)
SECONDARY_DOCS = (
    "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"
)
# Units charged while serving the current request; the server sets a fresh list per
# GraphQL call so it can count what the executor charged.
charge_tally: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar(
    "sim_charge_tally", default=None
)

SECONDARY_MESSAGE = (
    "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."
)


@dataclass(frozen=True, slots=True)
class RateSnapshot:
    """One budget as the client sees it: the values of the ``X-RateLimit-*`` headers."""

    resource: str
    limit: int
    used: int
    reset: int

    @property
    def remaining(self) -> int:
        return max(0, self.limit - self.used)

    def headers(self) -> dict[str, str]:
        """GitHub's rate-limit response headers for this budget."""
        return {
            "x-ratelimit-limit": str(self.limit),
            "x-ratelimit-remaining": str(self.remaining),
            "x-ratelimit-used": str(self.used),
            "x-ratelimit-reset": str(self.reset),
            "x-ratelimit-resource": self.resource,
        }

    def as_json(self) -> dict[str, int]:
        """The shape of one entry of ``GET /rate_limit`` (and GraphQL's rateLimit)."""
        return {
            "limit": self.limit,
            "remaining": self.remaining,
            "reset": self.reset,
            "used": self.used,
        }


class RateLimited(Exception):
    """A token's budget for a resource is spent; nothing was charged."""

    def __init__(self, snapshot: RateSnapshot, user_id: int | None = None) -> None:
        who = f" for user ID {user_id}" if user_id is not None else ""
        super().__init__(f"API rate limit exceeded{who}.")
        self.snapshot = snapshot
        self.message = str(self)

    def body(self) -> dict[str, Any]:
        """GitHub's REST body for a spent primary budget."""
        return {"message": self.message, "documentation_url": PRIMARY_DOCS}

    def graphql_body(self) -> dict[str, Any]:
        """GitHub's GraphQL body for a spent budget (sent with HTTP 200)."""
        return {"errors": [{"type": "RATE_LIMITED", "message": self.message}]}


class SecondaryLimited(Exception):
    """Too many requests per minute or at once; the client must wait ``retry_after`` seconds."""

    def __init__(self, status: int, retry_after: int) -> None:
        super().__init__(SECONDARY_MESSAGE)
        self.status = status
        self.retry_after = retry_after

    def body(self) -> dict[str, Any]:
        return {"message": SECONDARY_MESSAGE, "documentation_url": SECONDARY_DOCS}


@dataclass(slots=True)
class _Budget:
    limit: int
    used: int
    reset: int


@dataclass(slots=True)
class SecondaryPolicy:
    """Secondary limits: at most ``per_minute`` requests per token per minute and
    ``concurrency`` at once (None: unlimited), answered with ``status`` (403 or 429)."""

    per_minute: int | None = None
    concurrency: int | None = None
    status: int = 403
    retry_after: int = 60


@dataclass(slots=True)
class _Counter:
    requests: int = 0
    billed: int = 0
    not_modified: int = 0
    writes: int = 0

    def as_json(self) -> dict[str, int]:
        return {
            "requests": self.requests,
            "billed": self.billed,
            "not_modified": self.not_modified,
            "writes": self.writes,
        }


@dataclass(slots=True)
class WriteRecord:
    """One mutating request: who did what, when, and the status it got."""

    method: str
    path: str
    login: str
    time: str
    status: int
    route: str
    operation: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "path": self.path,
            "login": self.login,
            "time": self.time,
            "status": self.status,
            "route": self.route,
            "operation": self.operation,
        }


@dataclass(slots=True)
class _TokenActivity:
    recent: deque[float] = field(default_factory=deque)
    in_flight: int = 0


class Billing:
    """Budgets, secondary limits, counters and the write log of every token, with one lock.

    ``login_for`` names a token's account in counters and the write log, so
    tokens themselves never appear in any report.
    """

    def __init__(
        self,
        clock: Clock | None = None,
        login_for: Callable[[str], str | None] | None = None,
    ) -> None:
        self.clock: Clock = clock or system_clock
        self._login_for = login_for or (lambda _token: None)
        self._lock = threading.Lock()
        self._defaults = dict(DEFAULT_LIMITS)
        self._budgets: dict[tuple[str, str], _Budget] = {}
        self._secondary = SecondaryPolicy()
        self._activity: dict[str, _TokenActivity] = {}
        self._by_token: dict[str, _Counter] = {}
        self._by_route: dict[str, _Counter] = {}
        self._by_token_route: dict[tuple[str, str], _Counter] = {}
        self._writes: list[WriteRecord] = []

    # ---------------------------------------------------------------- budgets

    def _now(self) -> float:
        return self.clock().timestamp()

    def _budget(self, token: str, resource: str) -> _Budget:
        if resource not in self._defaults:
            raise ValueError(f"unknown rate-limit resource {resource!r}; known: {RESOURCES}")
        now = self._now()
        budget = self._budgets.get((token, resource))
        if budget is None or now >= budget.reset:
            limit = budget.limit if budget is not None else self._defaults[resource]
            budget = _Budget(limit=limit, used=0, reset=int(now) + WINDOW_SECONDS[resource])
            self._budgets[(token, resource)] = budget
        return budget

    def snapshot(self, token: str, resource: str = "core") -> RateSnapshot:
        """The budget as it stands, without charging anything."""
        with self._lock:
            budget = self._budget(token, resource)
            return RateSnapshot(resource, budget.limit, budget.used, budget.reset)

    def charge(
        self, token: str, resource: str = "core", units: int = 1, user_id: int | None = None
    ) -> RateSnapshot:
        """Spend ``units`` of a token's budget and return what is left.

        Raises `RateLimited` without charging when fewer than ``units`` remain
        (a budget with nothing left refuses even a zero-unit charge). This is
        the hook the GraphQL executor calls with a query's points.
        """
        if units < 0:
            raise ValueError("units must not be negative")
        with self._lock:
            budget = self._budget(token, resource)
            remaining = budget.limit - budget.used
            if remaining <= 0 or units > remaining:
                raise RateLimited(
                    RateSnapshot(resource, budget.limit, budget.used, budget.reset), user_id
                )
            budget.used += units
            tally = charge_tally.get()
            if tally is not None:
                tally.append(units)
            return RateSnapshot(resource, budget.limit, budget.used, budget.reset)

    def refund(self, token: str, resource: str = "core", units: int = 1) -> RateSnapshot:
        """Give back units charged for a request that turned out free (a 304)."""
        with self._lock:
            budget = self._budget(token, resource)
            budget.used = max(0, budget.used - units)
            return RateSnapshot(resource, budget.limit, budget.used, budget.reset)

    def set_budget(
        self,
        token: str | None,
        resource: str = "core",
        *,
        limit: int | None = None,
        remaining: int | None = None,
        reset: int | None = None,
    ) -> None:
        """Change one token's budget, or with ``token=None`` the default and every budget.

        ``reset`` is an epoch second; ``remaining`` sets ``used = limit - remaining``.
        """
        if resource not in self._defaults:
            raise ValueError(f"unknown rate-limit resource {resource!r}; known: {RESOURCES}")
        for name, value in (("limit", limit), ("remaining", remaining), ("reset", reset)):
            if value is not None and value < 0:
                raise ValueError(f"{name} must not be negative")
        with self._lock:
            if token is None:
                if limit is not None:
                    self._defaults[resource] = limit
                keys = [key for key in self._budgets if key[1] == resource]
            else:
                self._budget(token, resource)
                keys = [(token, resource)]
            for key in keys:
                budget = self._budgets[key]
                if limit is not None:
                    budget.limit = limit
                if remaining is not None:
                    budget.used = max(0, budget.limit - remaining)
                if reset is not None:
                    budget.reset = reset

    # ------------------------------------------------------- secondary limits

    @property
    def secondary(self) -> SecondaryPolicy:
        with self._lock:
            return SecondaryPolicy(
                self._secondary.per_minute,
                self._secondary.concurrency,
                self._secondary.status,
                self._secondary.retry_after,
            )

    def set_secondary(self, policy: SecondaryPolicy) -> None:
        """Replace the secondary-limit policy."""
        if policy.status not in (403, 429):
            raise ValueError("secondary limit status must be 403 or 429")
        for name in ("per_minute", "concurrency"):
            value = getattr(policy, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be at least 1 (or null for no limit)")
        if policy.retry_after < 1:
            raise ValueError("retry_after must be at least 1 second")
        with self._lock:
            self._secondary = policy

    def admit(self, token: str) -> None:
        """Let one request of ``token`` in, or raise `SecondaryLimited`.

        Every admitted request must be paired with `release`.
        """
        with self._lock:
            policy = self._secondary
            activity = self._activity.setdefault(token, _TokenActivity())
            now = self._now()
            while activity.recent and activity.recent[0] <= now - 60:
                activity.recent.popleft()
            if policy.concurrency is not None and activity.in_flight >= policy.concurrency:
                raise SecondaryLimited(policy.status, policy.retry_after)
            if policy.per_minute is not None and len(activity.recent) >= policy.per_minute:
                wait = math.ceil(activity.recent[0] + 60 - now)
                raise SecondaryLimited(policy.status, max(1, wait))
            activity.recent.append(now)
            activity.in_flight += 1

    def release(self, token: str) -> None:
        """Mark one admitted request of ``token`` finished."""
        with self._lock:
            activity = self._activity.get(token)
            if activity is not None and activity.in_flight > 0:
                activity.in_flight -= 1

    # --------------------------------------------------------------- counters

    def _name(self, token: str | None) -> str:
        if token is None:
            return "(anonymous)"
        return self._login_for(token) or "(unknown token)"

    def record(
        self, token: str | None, route: str, *, billed: int, not_modified: bool, write: bool
    ) -> None:
        """Count one answered request against its token and its route."""
        name = self._name(token)
        with self._lock:
            for counter in (
                self._by_token.setdefault(name, _Counter()),
                self._by_route.setdefault(route, _Counter()),
                self._by_token_route.setdefault((name, route), _Counter()),
            ):
                counter.requests += 1
                counter.billed += billed
                counter.not_modified += int(not_modified)
                counter.writes += int(write)

    def record_write(
        self,
        token: str | None,
        method: str,
        path: str,
        *,
        status: int,
        route: str,
        operation: str | None = None,
    ) -> None:
        """Append one mutating request to the write log."""
        entry = WriteRecord(
            method=method,
            path=path,
            login=self._name(token),
            time=format_time(self.clock()),
            status=status,
            route=route,
            operation=operation,
        )
        with self._lock:
            self._writes.append(entry)

    def counters(self) -> dict[str, Any]:
        """Requests, billed units, 304s and writes per token (by login), per route, and both."""
        with self._lock:
            per_token: dict[str, Any] = {}
            for name, counter in sorted(self._by_token.items()):
                routes = {
                    route: c.as_json()
                    for (owner, route), c in sorted(self._by_token_route.items())
                    if owner == name
                }
                per_token[name] = {**counter.as_json(), "routes": routes}
            return {
                "tokens": per_token,
                "routes": {route: c.as_json() for route, c in sorted(self._by_route.items())},
                "writes": len(self._writes),
            }

    def write_log(self) -> list[dict[str, Any]]:
        with self._lock:
            return [entry.as_json() for entry in self._writes]

    def reset_counters(self) -> None:
        """Forget counters and the write log (budgets are kept)."""
        with self._lock:
            self._by_token.clear()
            self._by_route.clear()
            self._by_token_route.clear()
            self._writes.clear()
