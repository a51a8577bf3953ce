"""When to run an issue's next agent turn: continuation now, or a failure retry later.

A pure policy: the time of the last failure is an argument, nothing reads the clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

BASE_BACKOFF_MS = 10_000


class RetryKind(StrEnum):
    """The shape of a retry decision."""

    # The last turn succeeded (or was cancelled by us): continue immediately.
    CONTINUE = "continue"
    # The last turn failed: try again at ``due_at``.
    RETRY = "retry"
    # Too many consecutive failures: stop and ask a human.
    GIVE_UP = "give_up"


@dataclass(frozen=True)
class RetryDecision:
    """What to do after a turn, and from when."""

    kind: RetryKind
    due_at: datetime | None
    delay_ms: int = 0


def failure_backoff_ms(failures: int, max_backoff_ms: int) -> int:
    """``min(10 s * 2^(failures-1), max_backoff_ms)``; zero failures means no wait."""
    if failures <= 0:
        return 0
    # Cap the exponent so a long failure streak cannot build a huge integer.
    exponent = min(failures - 1, 32)
    backoff: int = BASE_BACKOFF_MS << exponent
    return min(backoff, max_backoff_ms)


def decide_retry(
    *,
    failed: bool,
    failures: int,
    finished_at: datetime,
    max_backoff_ms: int,
    max_failures: int,
) -> RetryDecision:
    """The next step after a turn that ended at ``finished_at``.

    ``failures`` counts consecutive failed turns including this one when ``failed``.
    """
    if not failed:
        return RetryDecision(RetryKind.CONTINUE, finished_at, 0)
    if failures >= max_failures:
        return RetryDecision(RetryKind.GIVE_UP, None, 0)
    delay = failure_backoff_ms(failures, max_backoff_ms)
    return RetryDecision(RetryKind.RETRY, finished_at + timedelta(milliseconds=delay), delay)


def is_due(due_at: datetime | None, now: datetime) -> bool:
    """Whether a retry scheduled for ``due_at`` may run at ``now``."""
    return due_at is None or now >= due_at
