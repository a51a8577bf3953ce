"""Clocks for the emulator: the system clock and a manual one tests can move.

Every timestamp the emulator writes and every rate-limit window it keeps reads
one of these, so a test can fast-forward an hour without sleeping.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

Clock = Callable[[], datetime]


def system_clock() -> datetime:
    """The current UTC time."""
    return datetime.now(UTC)


def format_time(moment: datetime) -> str:
    """GitHub's timestamp format: ISO 8601 in UTC, whole seconds, ``Z`` suffix."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str) -> datetime:
    """Read a GitHub-style timestamp (``Z`` or an explicit offset); raise ValueError if bad."""
    value = text.strip()
    if value.endswith("Z"):
        value = value[:-1] + "+00:00"
    moment = datetime.fromisoformat(value)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


class ManualClock:
    """A clock that only moves when told to; thread-safe."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 1, 1, tzinfo=UTC)
        self._lock = threading.Lock()

    def __call__(self) -> datetime:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> datetime:
        """Move the clock forward and return the new time."""
        with self._lock:
            self._now += timedelta(seconds=seconds)
            return self._now

    def set(self, moment: datetime) -> None:
        with self._lock:
            self._now = moment
