"""Linear's two rate limits per key, as leaky buckets, and the headers that report them.

Linear (https://linear.app/developers/rate-limiting) limits each API key to a
number of requests per hour and a number of complexity points per hour, both
as leaky buckets refilled at a constant ``limit / period``; a single query may
cost at most 10,000 points. Every answer carries
``X-RateLimit-Requests-Limit/Remaining/Reset``, ``X-Complexity`` (the query's
cost) and ``X-RateLimit-Complexity-Limit/Remaining/Reset``; the resets are UTC
epoch milliseconds at which the bucket is full again. The defaults are the
documented ones for API keys; the control API can lower them for a test.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from datetime import datetime

from orchestrator_sim.clock import Clock

PERIOD_SECONDS = 3600
DEFAULT_REQUESTS_PER_HOUR = 5_000
DEFAULT_COMPLEXITY_PER_HOUR = 3_000_000
MAX_QUERY_COMPLEXITY = 10_000


@dataclass(slots=True)
class Bucket:
    """A leaky bucket: ``remaining`` refills at ``limit / PERIOD_SECONDS`` per second."""

    limit: int
    remaining: float
    updated: datetime

    def refill(self, now: datetime) -> None:
        elapsed = max(0.0, (now - self.updated).total_seconds())
        self.remaining = min(
            float(self.limit), self.remaining + elapsed * self.limit / PERIOD_SECONDS
        )
        self.updated = now

    def reset_ms(self, now: datetime) -> int:
        """When the bucket is full again, in UTC epoch milliseconds."""
        missing = self.limit - self.remaining
        seconds = missing * PERIOD_SECONDS / self.limit if self.limit else 0.0
        return int((now.timestamp() + seconds) * 1000)


@dataclass(slots=True)
class KeyUsage:
    """One key's buckets and its running counters."""

    requests: Bucket
    complexity: Bucket
    request_count: int = 0
    complexity_spent: int = 0
    rate_limited: int = 0


@dataclass(frozen=True, slots=True)
class LimitReport:
    """What the rate-limit headers of one answer say."""

    requests_limit: int
    requests_remaining: int
    requests_reset: int
    complexity_limit: int
    complexity_remaining: int
    complexity_reset: int
    complexity: int | None = None

    def headers(self) -> dict[str, str]:
        found = {
            "x-ratelimit-requests-limit": str(self.requests_limit),
            "x-ratelimit-requests-remaining": str(self.requests_remaining),
            "x-ratelimit-requests-reset": str(self.requests_reset),
            "x-ratelimit-complexity-limit": str(self.complexity_limit),
            "x-ratelimit-complexity-remaining": str(self.complexity_remaining),
            "x-ratelimit-complexity-reset": str(self.complexity_reset),
        }
        if self.complexity is not None:
            found["x-complexity"] = str(self.complexity)
        return found


@dataclass
class LinearLimits:
    """The buckets of every key (by user id), with defaults for keys not seen yet."""

    clock: Clock
    requests_per_hour: int = DEFAULT_REQUESTS_PER_HOUR
    complexity_per_hour: int = DEFAULT_COMPLEXITY_PER_HOUR
    max_query_complexity: int = MAX_QUERY_COMPLEXITY
    _usage: dict[str, KeyUsage] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _get(self, key: str) -> KeyUsage:
        now = self.clock()
        usage = self._usage.get(key)
        if usage is None:
            usage = KeyUsage(
                Bucket(self.requests_per_hour, float(self.requests_per_hour), now),
                Bucket(self.complexity_per_hour, float(self.complexity_per_hour), now),
            )
            self._usage[key] = usage
        usage.requests.refill(now)
        usage.complexity.refill(now)
        return usage

    def take_request(self, key: str) -> bool:
        """Count one request; False (and nothing taken) when the request bucket is empty."""
        with self._lock:
            usage = self._get(key)
            if usage.requests.remaining < 1:
                usage.rate_limited += 1
                return False
            usage.requests.remaining -= 1
            usage.request_count += 1
            return True

    def take_complexity(self, key: str, points: int) -> bool:
        """Spend a query's points; False (and nothing spent) when the budget cannot cover them."""
        with self._lock:
            usage = self._get(key)
            if usage.complexity.remaining < points:
                usage.rate_limited += 1
                return False
            usage.complexity.remaining -= points
            usage.complexity_spent += points
            return True

    def report(self, key: str, complexity: int | None = None) -> LimitReport:
        with self._lock:
            usage = self._get(key)
            now = self.clock()
            return LimitReport(
                usage.requests.limit,
                math.floor(usage.requests.remaining),
                usage.requests.reset_ms(now),
                usage.complexity.limit,
                math.floor(usage.complexity.remaining),
                usage.complexity.reset_ms(now),
                complexity,
            )

    def configure(
        self,
        key: str | None,
        *,
        requests_limit: int | None = None,
        requests_remaining: int | None = None,
        complexity_limit: int | None = None,
        complexity_remaining: int | None = None,
        max_query_complexity: int | None = None,
    ) -> None:
        """Change the limits of one key, or (``key`` None) the defaults and every key."""
        for value in (requests_limit, requests_remaining, complexity_limit, complexity_remaining):
            if value is not None and value < 0:
                raise ValueError("limits and remaining budgets must not be negative")
        with self._lock:
            if max_query_complexity is not None:
                if max_query_complexity < 1:
                    raise ValueError("max_query_complexity must be positive")
                self.max_query_complexity = max_query_complexity
            if key is None:
                if requests_limit is not None:
                    self.requests_per_hour = requests_limit
                if complexity_limit is not None:
                    self.complexity_per_hour = complexity_limit
                targets = list(self._usage.values())
            else:
                targets = [self._get(key)]
            for usage in targets:
                _set(usage.requests, requests_limit, requests_remaining)
                _set(usage.complexity, complexity_limit, complexity_remaining)

    def counters(self) -> dict[str, dict[str, int]]:
        """Requests, complexity spent and refusals per key (user id)."""
        with self._lock:
            return {
                key: {
                    "requests": usage.request_count,
                    "complexity": usage.complexity_spent,
                    "rate_limited": usage.rate_limited,
                }
                for key, usage in self._usage.items()
            }

    def reset_counters(self) -> None:
        with self._lock:
            for usage in self._usage.values():
                usage.request_count = usage.complexity_spent = usage.rate_limited = 0


def _set(bucket: Bucket, limit: int | None, remaining: int | None) -> None:
    if limit is not None:
        bucket.limit = limit
        bucket.remaining = min(bucket.remaining, float(limit))
    if remaining is not None:
        bucket.remaining = float(min(remaining, bucket.limit))
