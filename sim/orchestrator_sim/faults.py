"""Fault injection rules: make chosen requests fail the way networks and GitHub fail.

A rule matches a request by method and a shell-style pattern over its path
(``*`` also matches ``/``), fires with a probability drawn from a seeded random
generator (so a run is reproducible), and optionally only ``count`` times.
"""

from __future__ import annotations

import fnmatch
import random
import threading
from dataclasses import dataclass
from typing import Any

# error: answer `status` (500/502/503) without running the request.
# latency: wait `latency_ms`, then go on (combines with one other rule).
# reset: drop the connection without an answer, without running the request.
# lost_response: run the request (the write happens), then drop the connection.
# secondary: answer GitHub's secondary rate limit (`status` 403 or 429, Retry-After).
ACTIONS = ("error", "latency", "reset", "lost_response", "secondary")
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD")


@dataclass(slots=True)
class FaultRule:
    """One fault: where it applies, what it does, how often, and how many times it fired."""

    id: int
    path: str
    action: str
    method: str | None = None
    status: int | None = None
    probability: float = 1.0
    count: int | None = None
    latency_ms: int = 0
    retry_after: int = 60
    # Matching requests let through untouched before the rule starts to fire.
    after: int = 0
    fired: int = 0

    def matches(self, method: str, path: str) -> bool:
        if self.method is not None and self.method != method:
            return False
        return fnmatch.fnmatchcase(path, self.path)

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "path": self.path,
            "action": self.action,
            "method": self.method,
            "status": self.status,
            "probability": self.probability,
            "count": self.count,
            "latency_ms": self.latency_ms,
            "retry_after": self.retry_after,
            "after": self.after,
            "fired": self.fired,
        }


@dataclass(frozen=True, slots=True)
class FaultDecision:
    """What to do to one request: an extra delay, and at most one failing rule."""

    latency_ms: int = 0
    rule: FaultRule | None = None


def parse_rule(data: Any, rule_id: int) -> FaultRule:
    """Validate a rule given as JSON; ValueError names the bad field."""
    if not isinstance(data, dict):
        raise ValueError("fault rule: expected a JSON object")
    allowed = {
        "path",
        "action",
        "method",
        "status",
        "probability",
        "count",
        "latency_ms",
        "retry_after",
        "after",
    }
    unknown = set(data) - allowed
    if unknown:
        raise ValueError(f"fault rule: unknown fields {sorted(unknown)}; allowed {sorted(allowed)}")
    path = data.get("path", "*")
    if not isinstance(path, str) or not path:
        raise ValueError("fault rule: path must be a non-empty pattern string")
    action = data.get("action")
    if action not in ACTIONS:
        raise ValueError(f"fault rule: action must be one of {ACTIONS}")
    method = data.get("method")
    if method is not None:
        if not isinstance(method, str) or method.upper() not in METHODS:
            raise ValueError(f"fault rule: method must be one of {METHODS} or null")
        method = method.upper()
    status = data.get("status")
    if action == "error":
        status = 502 if status is None else status
        if status not in (500, 502, 503, 504):
            raise ValueError("fault rule: error status must be 500, 502, 503 or 504")
    elif action == "secondary":
        status = 403 if status is None else status
        if status not in (403, 429):
            raise ValueError("fault rule: secondary status must be 403 or 429")
    elif status is not None:
        raise ValueError(f"fault rule: status does not apply to action {action}")
    probability = data.get("probability", 1.0)
    if isinstance(probability, bool) or not isinstance(probability, int | float):
        raise ValueError("fault rule: probability must be a number")
    if not 0.0 <= float(probability) <= 1.0:
        raise ValueError("fault rule: probability must be between 0 and 1")
    count = data.get("count")
    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
        raise ValueError("fault rule: count must be a positive integer or null")
    latency_ms = data.get("latency_ms", 0)
    if isinstance(latency_ms, bool) or not isinstance(latency_ms, int) or latency_ms < 0:
        raise ValueError("fault rule: latency_ms must be a non-negative integer")
    if action == "latency" and latency_ms == 0:
        raise ValueError("fault rule: a latency rule needs latency_ms > 0")
    retry_after = data.get("retry_after", 60)
    if isinstance(retry_after, bool) or not isinstance(retry_after, int) or retry_after < 1:
        raise ValueError("fault rule: retry_after must be a positive integer")
    after = data.get("after", 0)
    if isinstance(after, bool) or not isinstance(after, int) or after < 0:
        raise ValueError("fault rule: after must be a non-negative integer")
    return FaultRule(
        id=rule_id,
        after=after,
        path=path,
        action=action,
        method=method,
        status=status,
        probability=float(probability),
        count=count,
        latency_ms=latency_ms,
        retry_after=retry_after,
    )


class FaultInjector:
    """The active fault rules, checked in the order they were added, with a seeded generator."""

    def __init__(self, seed: int = 0) -> None:
        self._lock = threading.Lock()
        self._rules: list[FaultRule] = []
        self._random = random.Random(seed)
        self._next_id = 1

    def add(self, data: Any) -> FaultRule:
        with self._lock:
            rule = parse_rule(data, self._next_id)
            self._next_id += 1
            self._rules.append(rule)
            return rule

    def remove(self, rule_id: int) -> bool:
        with self._lock:
            before = len(self._rules)
            self._rules = [r for r in self._rules if r.id != rule_id]
            return len(self._rules) != before

    def clear(self, seed: int | None = None) -> None:
        """Drop every rule; with a seed, also restart the random sequence."""
        with self._lock:
            self._rules.clear()
            if seed is not None:
                self._random = random.Random(seed)

    def seed(self, seed: int) -> None:
        with self._lock:
            self._random = random.Random(seed)

    def rules(self) -> list[dict[str, Any]]:
        with self._lock:
            return [rule.as_json() for rule in self._rules]

    def decide(self, method: str, path: str) -> FaultDecision:
        """Which rules fire for this request: latency adds up, the first other rule wins."""
        if not self._rules:
            return FaultDecision()
        with self._lock:
            latency = 0
            chosen: FaultRule | None = None
            for rule in list(self._rules):
                if not rule.matches(method, path):
                    continue
                if chosen is not None and rule.action != "latency":
                    continue
                if rule.after > 0:
                    rule.after -= 1
                    continue
                if rule.probability < 1.0 and self._random.random() >= rule.probability:
                    continue
                rule.fired += 1
                if rule.count is not None:
                    rule.count -= 1
                    if rule.count == 0:
                        self._rules.remove(rule)
                if rule.action == "latency":
                    latency += rule.latency_ms
                else:
                    chosen = rule
            return FaultDecision(latency_ms=latency, rule=chosen)
