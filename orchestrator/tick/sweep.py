"""The passive sweep: pull requests that wait for a person are re-read a slice per tick.

A pull request waiting for a human (or an issue blocked on one) changes when
somebody acts on it, and every such act that matters moves the issue's or the
pull request's ``updated_at``, which the issue feed sees within the tick: a
label, a review, a comment, a push. Those are read at once (a signal). The
rest of them are read again a slice per tick, so that each is re-read every
``spread`` ticks (check runs, which move no ``updated_at``, are caught there);
pull requests in any other phase are read every tick.

A slice that does not fit the tick's time budget is left for the next tick,
which starts where this one stopped; :meth:`PassiveSweep.status` says how far
the current pass got, for the dashboard.
"""

from __future__ import annotations

import math
import threading
from bisect import bisect_left
from dataclasses import dataclass

from orchestrator.logs import get_logger

log = get_logger(__name__)

# Ticks a pass over the passive pull requests is spread over, unless the policy says.
DEFAULT_SWEEP_SPREAD = 10


@dataclass(frozen=True)
class SweepStatus:
    """Where the sweep stands, for the dashboard and the API."""

    # Pull requests in the passive set, and how many of them the current pass has read.
    passive: int
    read_this_pass: int
    # Ticks a whole pass is spread over, and ticks the last whole pass took (None: none yet).
    spread: int
    last_pass_ticks: int | None
    # Whether the last tick stopped its slice short (its time budget ran out).
    behind: bool

    @classmethod
    def combined(cls, sweeps: list[SweepStatus]) -> SweepStatus:
        """The sweeps of several repositories as one (counts added, the slowest pass)."""
        passes = [s.last_pass_ticks for s in sweeps if s.last_pass_ticks is not None]
        return cls(
            passive=sum(s.passive for s in sweeps),
            read_this_pass=sum(s.read_this_pass for s in sweeps),
            spread=max((s.spread for s in sweeps), default=1),
            last_pass_ticks=max(passes) if passes else None,
            behind=any(s.behind for s in sweeps),
        )


class PassiveSweep:
    """A cursor over the passive pull requests, sliced per tick. Thread-safe."""

    def __init__(self, spread: int) -> None:
        self.spread = max(1, spread)
        self._lock = threading.Lock()
        self._cursor = 0  # the next number to read is the smallest >= this
        self._read = 0
        self._passive = 0
        self._ticks = 0
        self._last_pass_ticks: int | None = None
        self._behind = False

    def slice(self, passive: list[int]) -> list[int]:
        """The numbers to read this tick, in order (``passive`` sorted ascending).

        A pass walks the numbers upwards in slices of ``len(passive) / spread``; the
        last slice of a pass may be shorter; the next pass starts from the smallest.
        """
        with self._lock:
            self._passive = len(passive)
            if not passive:
                self._cursor, self._read = 0, 0
                return []
            size = math.ceil(len(passive) / self.spread)
            start = bisect_left(passive, self._cursor)
            if start >= len(passive):
                start = 0
                self._end_pass()
            self._ticks += 1
            return passive[start : start + size]

    def done(self, passive: list[int], read: list[int], *, behind: bool) -> None:
        """Move the cursor past ``read`` (a prefix of this tick's slice)."""
        with self._lock:
            self._behind = behind
            if not read:
                return
            self._read += len(read)
            self._cursor = read[-1] + 1
            if read[-1] >= passive[-1]:
                self._end_pass()

    def _end_pass(self) -> None:
        if self._read:
            # Every passive pull request was read once more since the pass began.
            log.info(
                "passive_sweep_pass", ticks=self._ticks, read=self._read, passive=self._passive
            )
        self._last_pass_ticks = self._ticks
        self._ticks = 0
        self._read = 0
        self._cursor = 0

    def status(self) -> SweepStatus:
        with self._lock:
            return SweepStatus(
                passive=self._passive,
                read_this_pass=self._read,
                spread=self.spread,
                last_pass_ticks=self._last_pass_ticks,
                behind=self._behind,
            )
