"""Database outages: telling them from other errors, and logging each one once.

A replica keeps running while PostgreSQL restarts or the network drops: its
scheduler jobs fail, its agents go on. :func:`is_unreachable` says whether an
exception means "the database cannot be reached right now" (as opposed to a
bug or a constraint violation), and :class:`DatabaseHealth` turns a stream of
such failures into two log lines: ``database_unreachable`` when the first
fails and ``database_reachable`` (with the outage's duration and the number of
failed attempts) when something succeeds again. The failures in between are
logged at debug level only, without a traceback.
"""

from __future__ import annotations

import threading
import time
from datetime import datetime

from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from orchestrator.logs import get_logger

log = get_logger(__name__)

# The first line of an error is enough to recognise it; a driver's message can be kilobytes.
MESSAGE_LIMIT = 300


def is_unreachable(error: BaseException) -> bool:
    """Whether ``error`` means the database cannot be reached (refused, lost, timed out)."""
    if isinstance(error, OperationalError | InterfaceError | PoolTimeout):
        return True
    return isinstance(error, DBAPIError) and bool(error.connection_invalidated)


def short_message(error: BaseException) -> str:
    """The error's first line, cut: what an operator needs, never a multi-kilobyte dump."""
    original = getattr(error, "orig", None)
    text = str(original if original is not None else error).strip()
    first = text.splitlines()[0] if text else type(error).__name__
    return first[:MESSAGE_LIMIT]


class DatabaseHealth:
    """Whether the database answered lately; logs the start and the end of each outage once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._since: float | None = None
        self._since_wall: datetime | None = None
        self._failures = 0
        self.last_error: str | None = None

    @property
    def reachable(self) -> bool:
        return self._since is None

    @property
    def unreachable_since(self) -> datetime | None:
        return self._since_wall

    def failed(self, error: BaseException, *, where: str) -> None:
        """Count a failure that :func:`is_unreachable` recognised."""
        message = short_message(error)
        with self._lock:
            self._failures += 1
            self.last_error = message
            starting = self._since is None
            if starting:
                self._since = time.monotonic()
                self._since_wall = datetime.now().astimezone()
        if starting:
            log.error("database_unreachable", where=where, error=message)
        else:
            log.debug("database_still_unreachable", where=where, error=message)

    def succeeded(self) -> None:
        """Something reached the database: end the outage, if there was one."""
        with self._lock:
            if self._since is None:
                return
            duration = time.monotonic() - self._since
            failures = self._failures
            self._since = None
            self._since_wall = None
            self._failures = 0
            self.last_error = None
        log.warning("database_reachable", outage_s=round(duration, 1), failed_attempts=failures)
