"""What polling Linear costs per cycle, counted by the emulator's rate limits in Linear's units.

``python -m benchmarks.linear_budget [--issues N] [--quiet Q] [--changing C]``
seeds N issues in active states (labelled ``agent``) in a fresh emulator's
Linear workspace, then polls them with the product's `LinearTracker` as the
daemon does each tick: the first (full) read, Q quiet polls, C polls after
1% of the issues were edited since the last one, and (from 100 issues) the poll
after a bulk edit of 100 issues in one second and Q quiet polls after it. The
emulator's clock moves by
the policy's default polling interval between cycles, so its leaky buckets
refill as they would. For each kind it prints the requests and complexity
points the emulator charged the key, their share of the documented hourly
budgets (5,000 requests and 3,000,000 points per key) if every cycle cost that
at the default interval, and the time per poll. The figures are printed,
never asserted.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from orchestrator.tracker.base import TrackerSettings
from orchestrator.tracker.linear import LinearScope, LinearTracker
from orchestrator.tracker.linear_client import LinearClient
from orchestrator.workflow.schema import PollingSettings
from orchestrator_sim.clock import ManualClock
from orchestrator_sim.linear.client import LinearControl
from orchestrator_sim.linear.limits import (
    DEFAULT_COMPLEXITY_PER_HOUR,
    DEFAULT_REQUESTS_PER_HOUR,
    PERIOD_SECONDS,
)
from orchestrator_sim.server import SimServer

BOT = "bot"
BOT_KEY = "lin_api_bench"
TEAM = "ENG"
LABEL = "agent"
# The seeded issues alternate between these two active states; edits swap them.
STATES = ("Todo", "In Progress")
# Issues seeded at one instant; fewer than a probe's page (50), as issues made by hand are.
SEED_CHUNK = 20
# Issues moved at one instant by a bulk edit (Linear's multi-select), more than a probe's page.
BULK_EDIT = 100


@dataclass(frozen=True)
class Cycle:
    """The cost of one kind of poll, averaged over its samples."""

    name: str
    samples: int
    requests: float
    complexity: float
    seconds: float


@dataclass(frozen=True)
class LinearPollCost:
    """Every kind of poll over ``issues`` tracked issues, at ``interval_s``."""

    issues: int
    interval_s: float
    edited_per_cycle: int
    cycles: tuple[Cycle, ...]


def measure(
    control: LinearControl,
    clock: ManualClock,
    issues: int,
    *,
    quiet: int = 10,
    changing: int = 10,
    interval_s: float | None = None,
) -> LinearPollCost:
    """Seed ``issues`` issues in a running emulator and measure each kind of poll."""
    if issues < 2:
        raise ValueError(f"--issues must be at least 2, got {issues}")
    if quiet < 1 or changing < 1:
        raise ValueError("--quiet and --changing must be at least 1")
    interval = interval_s if interval_s is not None else PollingSettings().interval_ms / 1000
    control.create_user(BOT, BOT_KEY, git_username=BOT)
    control.create_team(TEAM, "Engineering")
    control.create_label(LABEL)
    control.create_label("orchestrator:stop")
    control.create_label("orchestrator:stop-all")
    # Issues are made over time, not all in one second: each seed call's issues share
    # one updatedAt, and the clock moves a minute between calls.
    identifiers: list[str] = []
    states: dict[str, str] = {}
    while len(identifiers) < issues:
        state = STATES[len(identifiers) // SEED_CHUNK % 2]
        made = control.seed(
            TEAM,
            min(SEED_CHUNK, issues - len(identifiers)),
            title="Task {issue}",
            state=state,
            labels=[LABEL],
        )
        identifiers += made
        states.update(dict.fromkeys(made, state))
        clock.advance(60)

    client = LinearClient(control.graphql_url, BOT_KEY, clock=clock, sleep=lambda _s: None)
    tracker = LinearTracker(
        client,
        TrackerSettings(repo="acme/widgets", required_labels=frozenset({LABEL})),
        LinearScope(team_key=TEAM),
    )

    def spent() -> tuple[int, int]:
        counters = control.counters().get(BOT, {})
        return int(counters.get("requests", 0)), int(counters.get("complexity", 0))

    def sample(name: str, count: int, before_poll: Callable[[int], object]) -> Cycle:
        requests = complexity = 0
        seconds = 0.0
        for index in range(count):
            before_poll(index)
            start_requests, start_complexity = spent()
            started = time.perf_counter()
            found = tracker.fetch_candidates()
            seconds += time.perf_counter() - started
            end_requests, end_complexity = spent()
            if len(found) != issues:
                raise RuntimeError(f"{name}: the poll saw {len(found)} of {issues} issues")
            requests += end_requests - start_requests
            complexity += end_complexity - start_complexity
        return Cycle(name, count, requests / count, complexity / count, seconds / count)

    edited = max(1, issues // 100)
    cursor = 0

    def edit(_index: int) -> None:
        # Half an interval after the last poll, 1% of the issues move to the other
        # active state; the next poll comes half an interval later.
        nonlocal cursor
        clock.advance(interval / 2)
        for _ in range(edited):
            ident = identifiers[cursor % issues]
            cursor += 1
            states[ident] = STATES[1] if states[ident] == STATES[0] else STATES[0]
            control.set_state(ident, states[ident])
        clock.advance(interval / 2)

    def bulk_edit(_index: int) -> None:
        # A bulk edit (Linear's multi-select) moves BULK_EDIT issues in one second.
        clock.advance(interval / 2)
        for ident in identifiers[:BULK_EDIT]:
            states[ident] = STATES[1] if states[ident] == STATES[0] else STATES[0]
            control.set_state(ident, states[ident])
        clock.advance(interval / 2)

    clock.advance(interval)
    first = sample("first read", 1, lambda _i: None)
    quiet_polls = sample("quiet poll", quiet, lambda _i: clock.advance(interval))
    changing_polls = sample(f"poll after {edited} edited", changing, edit)
    cycles = [first, quiet_polls, changing_polls]
    if issues >= BULK_EDIT:
        # Then nothing changes: each poll's window still holds the edited issues (they
        # share the newest updatedAt), more than the probe's page, so they are read again.
        cycles.append(sample(f"poll after a bulk edit of {BULK_EDIT}", 1, bulk_edit))
        cycles.append(
            sample("quiet poll after the bulk edit", quiet, lambda _i: clock.advance(interval))
        )
    return LinearPollCost(issues, interval, edited, tuple(cycles))


def share(per_cycle: float, per_hour_budget: int, interval_s: float) -> float:
    """The share of an hourly budget spent if every cycle at ``interval_s`` cost ``per_cycle``."""
    return per_cycle * (PERIOD_SECONDS / interval_s) / per_hour_budget


def report(figures: LinearPollCost) -> None:
    """Print one line per kind of poll."""
    cycles_per_hour = PERIOD_SECONDS / figures.interval_s
    print(
        f"Linear polling of {figures.issues} issues in active states, one key, "
        f"{figures.interval_s:g} s interval ({cycles_per_hour:g} cycles/h); budgets "
        f"{DEFAULT_REQUESTS_PER_HOUR:,} requests/h and {DEFAULT_COMPLEXITY_PER_HOUR:,} "
        "complexity/h",
        flush=True,
    )
    first, *polls = figures.cycles
    print(
        f"  {first.name}: {_requests(first.requests)}, {first.complexity:,.0f} complexity points "
        f"({first.complexity / figures.issues:.1f} per issue), {first.seconds * 1000:.0f} ms",
        flush=True,
    )
    for cycle in polls:
        requests_share = share(cycle.requests, DEFAULT_REQUESTS_PER_HOUR, figures.interval_s)
        complexity_share = share(cycle.complexity, DEFAULT_COMPLEXITY_PER_HOUR, figures.interval_s)
        target = " (target 1)" if cycle.name == "quiet poll" else ""
        mean = f" (mean of {cycle.samples})" if cycle.samples > 1 else ""
        print(
            f"  {cycle.name}{mean}: {_requests(cycle.requests)}{target}, "
            f"{cycle.complexity:,.0f} complexity points; at every cycle "
            f"{requests_share:.1%} of the request budget, "
            f"{complexity_share:.1%} of the complexity budget; "
            f"{cycle.seconds * 1000:.1f} ms per poll",
            flush=True,
        )


def _requests(count: float) -> str:
    return f"{count:g} request" + ("" if count == 1 else "s")


def main(argv: list[str] | None = None) -> int:
    """Print the Linear polling cost of N issues (default 1,000)."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.linear_budget")
    parser.add_argument("--issues", type=int, default=1000)
    parser.add_argument("--quiet", type=int, default=10, help="quiet polls to average")
    parser.add_argument("--changing", type=int, default=10, help="polls with edits to average")
    parser.add_argument(
        "--interval-ms",
        type=int,
        default=PollingSettings().interval_ms,
        help="the polling interval (default: the policy's default)",
    )
    args = parser.parse_args(argv)
    if args.interval_ms < 1:
        parser.error("--interval-ms must be positive")
    clock = ManualClock()
    with tempfile.TemporaryDirectory() as tmp, SimServer(Path(tmp) / "sim", clock=clock) as server:
        try:
            figures = measure(
                LinearControl(server.url),
                clock,
                args.issues,
                quiet=args.quiet,
                changing=args.changing,
                interval_s=args.interval_ms / 1000,
            )
        except ValueError as exc:
            parser.error(str(exc))
    report(figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
