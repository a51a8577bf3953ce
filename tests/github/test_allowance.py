"""Catching up is paced to the budget that is left, above a reserve, until the reset."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from orchestrator.github.accounting import Accounting, Budget
from orchestrator.github.allowance import UNKNOWN_BUDGET_ITEMS, CatchUp, Pacer, items_per_tick

NOW = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)


def _accounting(remaining: int, limit: int = 5000, reset_in_s: float = 3600) -> Accounting:
    accounting = Accounting()
    accounting.budgets["core"] = Budget(remaining, limit, NOW + timedelta(seconds=reset_in_s))
    return accounting


def test_half_of_what_is_left_above_the_reserve_is_spread_over_the_ticks_to_the_reset() -> None:
    # 4,500 usable of 5,000 (reserve 500), half of it over 120 ticks of 30 s: 18.75 units.
    allowed = items_per_tick(_accounting(5000), "core", cost_per_item=1.0, interval_s=30, now=NOW)
    assert allowed == 18
    assert items_per_tick(_accounting(5000), "core", cost_per_item=2.0, interval_s=30, now=NOW) == 9
    # Near the reset, the rest may be spent at once.
    near = items_per_tick(
        _accounting(1500, reset_in_s=10), "core", cost_per_item=1.0, interval_s=30, now=NOW
    )
    assert near == 500


def test_nothing_once_only_the_reserve_is_left_and_a_default_before_the_budget_is_known() -> None:
    assert items_per_tick(_accounting(400), "core", cost_per_item=1.0, interval_s=5, now=NOW) == 0
    assert (
        items_per_tick(Accounting(), "graphql", cost_per_item=1.0, interval_s=5, now=NOW)
        == UNKNOWN_BUDGET_ITEMS
    )


def test_the_catch_up_says_how_long_it_takes_at_the_budgets_pace() -> None:
    catching = CatchUp("workpad comments to recover", left=1000, read=9, allowed=9, interval_s=30)
    assert catching.eta == timedelta(seconds=112 * 30)
    assert catching.describe() == (
        "workpad comments to recover: 1000 left, 9 read this tick, 9 per interval as the "
        "budget allows, about 56 min at this pace"
    )
    paused = CatchUp("workpad comments to recover", left=10, read=0, allowed=0, interval_s=30)
    assert paused.eta is None and "paused until the budget resets" in paused.describe()
    assert CatchUp("x", left=0, read=3, allowed=3, interval_s=1).describe() == "x: done"


def test_ticks_back_to_back_share_one_intervals_allowance() -> None:
    clock = [100.0]
    pacer = Pacer(monotonic=lambda: clock[0])
    assert pacer.allow(10, interval_s=5) == 10
    pacer.read()
    clock[0] += 1
    assert pacer.allow(10, interval_s=5) == 2
    clock[0] += 1.5
    assert pacer.allow(10, interval_s=5) == 5
    pacer.read()
    clock[0] += 60
    assert pacer.allow(10, interval_s=5) == 10  # never more than one interval's worth
