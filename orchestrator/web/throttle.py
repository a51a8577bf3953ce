"""At most one log line per kind and interval, for errors that come in floods.

A failed ``accept()`` or a broken connection happens once per connection, so a
flood of connections would write a flood of lines (asyncio's default handler
logs each with a traceback). :class:`Throttle` lets the first of a kind through,
counts the rest for an interval, and hands the count to the next line it lets
through.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from orchestrator.logs import get_logger

log = get_logger(__name__)

# One line per kind of error at most this often.
LOG_INTERVAL_S = 10.0


class Throttle:
    """Decides which events of each kind are logged; the clock is passed in."""

    def __init__(self, interval_s: float = LOG_INTERVAL_S) -> None:
        self.interval_s = interval_s
        self._last: dict[str, float] = {}
        self._suppressed: dict[str, int] = {}

    def admit(self, kind: str, now: float) -> int | None:
        """None: do not log this one (it is counted); else how many were not logged before it."""
        last = self._last.get(kind)
        if last is not None and now - last < self.interval_s:
            self._suppressed[kind] = self._suppressed.get(kind, 0) + 1
            return None
        self._last[kind] = now
        return self._suppressed.pop(kind, 0)


def throttled_exception_handler(
    throttle: Throttle, clock: Callable[[], float]
) -> Callable[[asyncio.AbstractEventLoop, dict[str, Any]], None]:
    """An event loop exception handler that logs each kind of error once per interval."""

    def handle(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        message = str(context.get("message") or "unhandled error in the event loop")
        error = context.get("exception")
        kind = f"{message}:{type(error).__name__}"
        suppressed = throttle.admit(kind, clock())
        if suppressed is None:
            return
        log.error(
            "web_loop_error",
            message=message,
            error=repr(error) if error is not None else None,
            suppressed=suppressed,
        )

    return handle
