"""How much of GitHub's budget one tick may spend catching up, and how long catching up takes.

After a start with an empty database, every tracked issue's workpad comment and
every waiting pull request's state must be read once: at 10,000 issues, more
than an hour of a token's REST and GraphQL budget. Catching up is therefore
paced: each tick may spend a share of what is left of each budget, spread over
the ticks until the budget resets, and the rest waits for later ticks. Normal
polling is not paced: it costs little, and what it reads is what the daemon acts on.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from orchestrator.github.accounting import Accounting

# The share of the remaining budget catching up may use until the budget resets.
CATCH_UP_SHARE = 0.5
# Items per tick when GitHub has not said yet what budget is left.
UNKNOWN_BUDGET_ITEMS = 100
# The share of a budget's limit catching up never touches: polling and writes need it.
RESERVE_SHARE = 0.1


@dataclass(frozen=True)
class CatchUp:
    """What is left to read once, what one tick read, and the pace the budget allows
    (``allowed``: items per poll interval)."""

    what: str
    left: int
    read: int
    allowed: int
    interval_s: float

    @property
    def eta(self) -> timedelta | None:
        """How long until everything is read at the budget's pace (None: nothing left, or
        the budget allows nothing until it resets)."""
        if self.left <= 0 or self.allowed <= 0:
            return None
        return timedelta(seconds=math.ceil(self.left / self.allowed) * self.interval_s)

    def describe(self) -> str:
        if self.left <= 0:
            return f"{self.what}: done"
        eta = self.eta
        if eta is None:
            return (
                f"{self.what}: {self.left} left, paused until the budget resets "
                "(only its reserve is left)"
            )
        return (
            f"{self.what}: {self.left} left, {self.read} read this tick, "
            f"{self.allowed} per interval as the budget allows, "
            f"about {eta.total_seconds() / 60:.0f} min at this pace"
        )


def items_per_tick(
    accounting: Accounting,
    resource: str,
    *,
    cost_per_item: float,
    interval_s: float,
    now: datetime,
) -> int:
    """How many items costing ``cost_per_item`` units of ``resource`` one tick may read
    (0 once only the reserve is left)."""
    budget = accounting.budgets.get(resource)
    if budget is None or budget.remaining is None:
        return UNKNOWN_BUDGET_ITEMS
    if budget.reset_at is None:
        ticks_left = 1.0
    else:
        ticks_left = max(1.0, (budget.reset_at - now).total_seconds() / max(interval_s, 0.001))
    reserve = (budget.limit or 0) * RESERVE_SHARE
    usable = budget.remaining - reserve
    if usable <= 0:
        return 0
    units = usable * CATCH_UP_SHARE / ticks_left
    return max(1, int(units / max(cost_per_item, 0.001)))


class Pacer:
    """Turns a per-interval allowance into what this tick may read, however often ticks run.

    Ticks run back to back while there is work (a change asks for the next tick at once),
    so an allowance per tick would spend the budget faster than planned: each tick may
    read its share of the time since catching up last read something, at most one interval's.
    """

    def __init__(self, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._monotonic = monotonic
        self._last: float | None = None

    def allow(self, per_interval: int, interval_s: float) -> int:
        if self._last is None:
            return per_interval
        elapsed = self._monotonic() - self._last
        return int(per_interval * min(1.0, elapsed / max(interval_s, 0.001)))

    def read(self) -> None:
        """Something was read: the next share counts from now."""
        self._last = self._monotonic()
