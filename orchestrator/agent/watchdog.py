"""The three watchdogs of an agent turn, as pure functions of what was seen and of ``now``.

A turn ends when no event came within ``first_event_timeout_ms`` of the start
(the session never started), when nothing made progress for
``stall_timeout_ms`` (events that only say the agent is retrying its model API
do not count), or when the whole turn ran for ``turn_timeout_ms``; a limit of 0
is off. Times are monotonic seconds, and the caller passes ``now`` in.
"""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.agent.settings import AgentSettings
from orchestrator.agent.turn import TurnOutcome


@dataclass
class Progress:
    """What the runner has seen of the agent so far (one turn, one thread writes it)."""

    started: float
    events: int = 0
    malformed: int = 0
    first_event: float | None = None
    last_event: float | None = None
    last_message: str | None = None
    last_error: str | None = None
    # Events that said the agent is alive but not getting anywhere (retrying its API).
    retries: int = 0


@dataclass(frozen=True, slots=True)
class Watchdogs:
    """The limits of one turn in milliseconds (0: off), and what they say at a moment."""

    first_event_ms: int = 0
    stall_ms: int = 0
    turn_ms: int = 0

    @classmethod
    def of(cls, settings: AgentSettings) -> Watchdogs:
        """The watchdogs ``settings`` configure."""
        return cls(
            first_event_ms=settings.first_event_timeout_ms,
            stall_ms=settings.stall_timeout_ms,
            turn_ms=settings.turn_timeout_ms,
        )

    def verdict(self, progress: Progress, now: float) -> tuple[TurnOutcome, str] | None:
        """The outcome and message of the first watchdog that fired by ``now``; None: none did."""
        elapsed_ms = (now - progress.started) * 1000
        first = self.first_event_ms
        if progress.first_event is None and first and elapsed_ms >= first:
            return (
                TurnOutcome.SESSION_START_TIMEOUT,
                f"session start timeout: no event within {first} ms of the start",
            )
        stall = self.stall_ms
        # Without a first-event watchdog, silence from the start counts as a stall.
        quiet_since = progress.last_event if progress.last_event is not None else progress.started
        armed = progress.first_event is not None or not first
        if stall and armed and (now - quiet_since) * 1000 >= stall:
            last = f"; last error: {progress.last_error}" if progress.last_error else ""
            what = "no progress" if progress.retries else "no event"
            return (
                TurnOutcome.STALLED,
                f"stalled: {what} for {stall} ms (after {progress.events} events){last}",
            )
        turn = self.turn_ms
        if turn and elapsed_ms >= turn:
            return TurnOutcome.TURN_TIMEOUT, f"turn timeout: still running after {turn} ms"
        return None

    def next_deadline(self, progress: Progress, now: float) -> float | None:
        """Seconds from ``now`` to the earliest deadline (negative once passed); None: all off."""
        deadlines = []
        if self.turn_ms:
            deadlines.append(progress.started + self.turn_ms / 1000)
        if progress.first_event is None and self.first_event_ms:
            deadlines.append(progress.started + self.first_event_ms / 1000)
        if self.stall_ms:
            since = progress.last_event if progress.last_event is not None else progress.started
            deadlines.append(since + self.stall_ms / 1000)
        return min(deadlines) - now if deadlines else None
