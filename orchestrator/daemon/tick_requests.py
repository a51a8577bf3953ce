"""Requests for ticks, coalesced, and the chain the poll job runs from them.

A request for a whole tick (a finished turn, the refresh endpoint, a reload)
and a follow-up over the issues a tick changed coalesce into one pending
request: a whole tick wins over a follow-up, and follow-ups add up their
issues. The poll job takes the scheduler's whole tick, then the follow-ups the
ticks ask for, up to :data:`MAX_CHAINED_TICKS`; when the chain outlasts the
polling interval, the whole tick the scheduler skipped meanwhile is made at
once instead of an interval later.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

from orchestrator.domain.snapshot import IssueRef
from orchestrator.tick.request import SCHEDULED, CycleRequest

# Follow-up ticks a busy flow may chain before waiting for the next interval.
MAX_CHAINED_TICKS = 25


class TickRequests:
    """The pending tick request, shared by the threads that ask and the poll job."""

    def __init__(self, wake: Callable[[], None]) -> None:
        # Called (outside the lock) when a request arrives while no chain runs.
        self._wake = wake
        self._lock = threading.Lock()
        self.pending = False
        # What the pending tick is to look at: None, everything; else only these issues.
        self.focus: set[IssueRef] | None = None
        self.ticking = False

    def whole(self) -> bool:
        """Ask for a whole tick now; False when one is already pending (requests coalesce)."""
        with self._lock:
            self.focus = None
            if self.pending:
                return False
            self.pending = True
            wake = not self.ticking
        if wake:
            self._wake()
        return True

    def follow_up(self, issues: set[IssueRef]) -> None:
        """Ask for a follow-up tick over ``issues`` (a whole tick, if one is pending)."""
        with self._lock:
            if not self.pending:
                self.pending = True
                self.focus = set(issues)
            elif self.focus is not None:
                self.focus |= issues

    def chain(
        self, interval_s: Callable[[], float], stop: threading.Event
    ) -> Iterator[CycleRequest]:
        """The requests of one poll job: the scheduled whole tick, then what the ticks ask for.

        The consumer runs each request before asking for the next one; ``interval_s``
        is read after each tick (a reload may change it).
        """
        with self._lock:
            self.ticking = True
        chained = 0
        whole_at = time.monotonic()
        try:
            while not stop.is_set():
                with self._lock:
                    focus = self.focus if chained else None
                    self.pending = False
                    self.focus = None
                if focus is None:
                    whole_at = time.monotonic()
                    yield SCHEDULED
                else:
                    yield CycleRequest.follow_up(frozenset(focus))
                chained += 1
                with self._lock:
                    if time.monotonic() - whole_at >= interval_s():
                        # The scheduler skipped a run while this one chained follow-ups:
                        # the whole tick it owed is made now, not an interval later.
                        self.pending, self.focus = True, None
                    if not (self.pending and chained < MAX_CHAINED_TICKS):
                        self.ticking = False
                        return
        finally:
            with self._lock:
                self.ticking = False
