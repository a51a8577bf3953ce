"""Pacing the reads a start with an empty database owes: few at once, many to the budget."""

from __future__ import annotations

from orchestrator.github.allowance import Pacer

# So few things to read once are read at once, as ordinary polling: new issues, a restart
# over a small repository. Only more than this is a catch-up paced to the budget.
SMALL_CATCH_UP = 20


def paced(pacer: Pacer, count: int, per_interval: int, interval_s: float) -> int:
    """How many of ``count`` things to read once this tick may read."""
    if count <= SMALL_CATCH_UP and per_interval > 0:
        return count
    return pacer.allow(per_interval, interval_s)
