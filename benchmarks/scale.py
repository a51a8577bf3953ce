"""Benchmark: one daemon watching thousands of issues.

Run ``python -m benchmarks.scale``.

For each size (1,000 and 10,000 by default) it builds a world of labelled issues,
each with a pull request whose head is green and which waits for a human (see
:mod:`benchmarks.scale_world`), runs the real daemon (``orchestrator
run``, its own process, SQLite) against the emulator and prints:

- idle tick time (min, median, max) once a whole pass of the passive sweep is done;
- GitHub units per cycle and per issue (the emulator's billing), and a naive
  per-PR REST poller's units in the same world (measured on 1% of the pull
  requests, scaled), and the ratio;
- the daemon's resident memory, now and at its peak;
- label -> agent start and approval (on a green head) -> merge call, sampled at
  random points of the poll cycle;
- missed changes: 1% of the pull requests get a failing check; those whose
  issue did not leave ``waiting_for_human`` once the passive sweep read every
  pull request again (the pass under way ended, and the next one) and three
  whole ticks more; with none missed, how long it took until all were seen;
- a warm restart (the database intact; measured while the world is idle, right
  after the idle ticks) and a cold one (an empty database; at the end):
  the daemon first reads every pull request once with a budget large enough to
  do it at once (the state of a daemon that ran for a while), then has GitHub's
  default budget of 5,000 units and points an hour for everything measured;
  the time to the first tick, the units spent, and for the cold one how much is
  still to be read and the pace the budget allows.

It prints figures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import tempfile
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from benchmarks.scale_world import (
    APPROVAL,
    CHECK,
    OWNER,
    DaemonProcess,
    Seeded,
    insert_records,
    make_template,
    post_workpads,
    seed_pulls,
    wait_for,
    write_policy,
)
from orchestrator.domain.snapshot import IssueRef
from orchestrator.store.database import Database
from orchestrator.store.records import RecordStore
from orchestrator.tick.sweep import DEFAULT_SWEEP_SPREAD
from orchestrator_sim.testing import SimWorld, running_world

SEEDING_BUDGET = 10_000_000


@dataclass
class Figures:
    """What one size measured."""

    size: int
    ticks: list[float]
    units_per_cycle: float
    graphql_per_cycle: float
    naive_per_cycle: float
    rss_mib: float
    peak_mib: float
    writes_while_idle: int
    label_to_start: list[float]
    approval_to_merge: list[float]
    changed: int
    missed: int
    noticed_s: float
    noticed_ticks: int
    warm_first_tick_s: float
    warm_units: int
    warm_routes: str
    cold_first_tick_s: float
    cold_units: int
    cold_progress: str


class ScaleRun:
    """One world of ``size`` issues and its daemon."""

    def __init__(self, world: SimWorld, tmp: Path, size: int, interval_ms: int) -> None:
        self.world, self.tmp, self.size = world, tmp, size
        self.interval_s = interval_ms / 1000
        self.policy = write_policy(tmp, interval_ms)
        self.db_url = f"sqlite:///{tmp / 'scale.db'}"
        self.daemon = DaemonProcess(self.policy, world, tmp / "daemon.log")
        self.rng = random.Random(size)
        self.seeded: list[Seeded] = []

    # ---------------------------------------------------------------- world

    def build(self) -> None:
        world = self.world
        bot = world.bot.login
        for resource in ("core", "graphql"):
            world.control.set_rate_limit(
                login=bot, resource=resource, limit=SEEDING_BUDGET, remaining=SEEDING_BUDGET
            )
        template = make_template(world, self.policy, self.db_url, self.tmp / "template.log")
        started = time.monotonic()
        self.seeded = seed_pulls(world, template, self.size - 1)

        def url_of(pr: int) -> str:
            return f"{world.url}/{world.repo}/pull/{pr}"

        comments = post_workpads(world, template, self.seeded, url_of)
        db = Database.open(self.db_url)
        try:
            insert_records(
                db,
                repo=world.repo,
                template=template,
                seeded=self.seeded,
                url_of=url_of,
                comments=comments,
            )
        finally:
            db.close()
        print(
            f"  seeded {self.size - 1} issues with pull requests in "
            f"{time.monotonic() - started:.0f} s",
            flush=True,
        )

    def catch_up(self) -> float:
        """Let the daemon read every pull request once, with a budget large enough to do
        it at once (the state a daemon has after running a while), then give it GitHub's
        default budget; the seconds it took."""
        started = time.monotonic()
        wait_for(
            "the first read of every pull request",
            lambda: bool(self.ticks()) and self.ticks()[-1].get("catching_up") is None,
            1800,
        )
        for resource in ("core", "graphql"):
            self.world.control.set_rate_limit(
                login=self.world.bot.login, resource=resource, limit=5000, remaining=5000
            )
        return time.monotonic() - started

    # -------------------------------------------------------------- helpers

    def ticks(self) -> list[dict[str, Any]]:
        return self.daemon.whole_ticks()

    def wait_ticks(self, count: int) -> list[dict[str, Any]]:
        """The next ``count`` ticks (waits for them)."""
        seen = len(self.ticks())
        wait_for(f"{count} ticks", lambda: len(self.ticks()) >= seen + count, 60 + count * 30)
        return self.ticks()[seen : seen + count]

    def billed(self) -> tuple[int, int]:
        """Units the daemon's token was billed so far: (all, GraphQL points)."""
        token = self.world.control.counters()["tokens"].get(self.world.bot.login, {})
        graphql = sum(
            int(counter["billed"])
            for route, counter in (token.get("routes") or {}).items()
            if "graphql" in route
        )
        return int(token.get("billed", 0)), graphql

    def billed_routes(self) -> dict[str, int]:
        """Units billed so far by route, for the daemon's token."""
        token = self.world.control.counters()["tokens"].get(self.world.bot.login, {})
        return {
            route: int(counter["billed"]) for route, counter in (token.get("routes") or {}).items()
        }

    def phase(self, records: RecordStore, number: int) -> str | None:
        row = records.get(IssueRef(self.world.repo, number))
        return row.record.phase.value if row is not None else None

    def pull_merged(self, number: int) -> bool:
        state = self.world.server.emulator.state
        with state.lock:
            return bool(state.pull(state.repo(*self.world.repo.split("/")), number).merged)

    # --------------------------------------------------------- measurements

    def idle(self) -> tuple[list[float], float, float, int]:
        """Tick times, units per cycle (all, GraphQL) and writes over idle ticks."""
        self.wait_ticks(DEFAULT_SWEEP_SPREAD + 2)
        writes_before = len(self.world.control.writes())
        before, before_graphql = self.billed()
        ticks = self.wait_ticks(DEFAULT_SWEEP_SPREAD)
        after, after_graphql = self.billed()
        writes = len(self.world.control.writes()) - writes_before
        count = len(ticks)
        return (
            [tick["duration_ms"] / 1000 for tick in ticks],
            (after - before) / count,
            (after_graphql - before_graphql) / count,
            writes,
        )

    def naive(self) -> float:
        """Units a per-PR REST poller spends per cycle (1% of the pull requests, scaled)."""
        from github import Auth, Github

        from orchestrator_sim.testing import make_token

        control = self.world.control
        control.create_user("naive", (token := make_token()), bot=True)
        control.set_permission(self.world.repo, "naive", "write")
        control.set_rate_limit(login="naive", limit=SEEDING_BUDGET, remaining=SEEDING_BUDGET)
        gh = Github(base_url=self.world.url, auth=Auth.Token(token), retry=0, per_page=100)
        repo = gh.get_repo(self.world.repo)
        sample = self.rng.sample(self.seeded, max(1, len(self.seeded) // 100))
        before = int(control.counters()["tokens"].get("naive", {}).get("billed", 0))
        for item in sample:
            pull = repo.get_pull(item.pr)
            list(pull.get_reviews())
            commit = repo.get_commit(pull.head.sha)
            list(commit.get_check_runs())
            commit.get_combined_status()
        spent = int(control.counters()["tokens"]["naive"]["billed"]) - before
        return spent / len(sample) * self.size

    def latencies(self, records: RecordStore, samples: int) -> tuple[list[float], list[float]]:
        control, human, repo = self.world.control, self.world.human.login, self.world.repo
        starts = []
        for i in range(samples):
            number = control.create_issue(repo, f"Latency {i}", as_user=human)
            time.sleep(self.rng.uniform(0, self.interval_s))
            control.add_labels(repo, number, [OWNER], as_user=human)

            def started(number: int = number) -> bool:
                row = records.get(IssueRef(repo, number))
                return row is not None and bool(records.db.runs.for_issue(row.issue_id))

            starts.append(wait_for(f"the agent of #{number}", started, 120))
        merges = []
        for item in self.rng.sample(self.seeded, samples):
            time.sleep(self.rng.uniform(0, self.interval_s))
            control.add_labels(repo, item.number, [APPROVAL], as_user=human)
            merged = partial(self.pull_merged, item.pr)
            merges.append(wait_for(f"the merge of #{item.pr}", merged, 120))
            self.seeded.remove(item)
        return starts, merges

    def missed_changes(self, records: RecordStore) -> tuple[int, int, float, int]:
        """1% of the waiting pull requests get a failing check: (noticed, missed, the
        seconds and whole ticks until the last was noticed or the wait ended).

        Check runs move no ``updated_at``: the passive sweep finds them. Each pull
        request has been swept once after the change when the pass under way has ended
        and the next one too; the wait ends three whole ticks after that.
        """
        control, repo = self.world.control, self.world.repo
        changed = self.rng.sample(self.seeded, max(1, len(self.seeded) // 100))
        passes = len(self.daemon.events("passive_sweep_pass"))
        ticks = len(self.ticks())
        started = time.monotonic()
        for item in changed:
            control.check_run(repo, sha=item.head_sha, name=CHECK, conclusion="failure")

        def left() -> int:
            return sum(
                1 for item in changed if self.phase(records, item.number) == "waiting_for_human"
            )

        def swept_twice() -> bool:
            return not left() or len(self.daemon.events("passive_sweep_pass")) >= passes + 2

        wait_for("two passes of the passive sweep", swept_twice, 1200)
        if left():
            self.wait_ticks(3)
        took, took_ticks = time.monotonic() - started, len(self.ticks()) - ticks
        missed = left()
        for item in changed:
            self.seeded.remove(item)
        return len(changed) - missed, missed, took, took_ticks

    def restart(self, *, cold: bool) -> tuple[float, int, str]:
        """Stop, (empty the database,) start: time to the first tick, units of two ticks."""
        self.daemon.stop()
        if cold:
            for suffix in ("", "-wal", "-shm"):
                Path(f"{self.tmp / 'scale.db'}{suffix}").unlink(missing_ok=True)
        seen = len(self.ticks())
        before, _ = self.billed()
        routes = self.billed_routes()
        started = time.monotonic()
        self.daemon.start()
        wait_for("the first tick after the restart", lambda: len(self.ticks()) > seen, 600)
        first = time.monotonic() - started
        self.wait_ticks(1)
        after, _ = self.billed()
        spent = {r: n - routes.get(r, 0) for r, n in self.billed_routes().items()}
        top = sorted(((n, r) for r, n in spent.items() if n > 0), reverse=True)[:4]
        progress = "by route: " + (", ".join(f"{r} {n}" for n, r in top) or "none")
        if cold:
            tick = self.ticks()[-1]
            progress += (
                f"; {tick.get('issues', 0)} of {self.size} issues planned after two ticks; "
                f"{tick.get('catching_up') or 'nothing left to read'}"
            )
            paused = self.daemon.events("catch_up_paused")
            if paused:
                progress += f" (budgets: {paused[-1].get('budgets')})"
        return first, after - before, progress


def _stats(values: list[float]) -> str:
    return (
        f"min {min(values):.2f} s, median {statistics.median(values):.2f} s, "
        f"max {max(values):.2f} s"
    )


def run_size(size: int, interval_ms: int, samples: int, *, keep: bool = False) -> Figures:
    with tempfile.TemporaryDirectory(prefix="orchestrator-scale-") as scratch:
        tmp = Path(tempfile.mkdtemp(prefix="orchestrator-scale-kept-")) if keep else Path(scratch)
        if keep:
            print(f"  keeping the world, the database and the daemon's log in {tmp}", flush=True)
        with running_world(tmp / "sim") as world:
            run = ScaleRun(world, tmp, size, interval_ms)
            run.build()
            db = Database.open(run.db_url)
            records = RecordStore(db)
            run.daemon.start()
            try:
                wait_for("the first tick", lambda: bool(run.ticks()), 600)
                print(f"  first read of every pull request: {run.catch_up():.0f} s", flush=True)
                ticks, units, graphql, writes = run.idle()
                rss, peak = run.daemon.rss_kib()
                naive = run.naive()
                # While nothing is under way: what a restart costs by itself.
                warm_first, warm_units, warm_routes = run.restart(cold=False)
                starts, merges = run.latencies(records, samples)
                noticed, missed, noticed_s, noticed_ticks = run.missed_changes(records)
                db.close()
                cold_first, cold_units, progress = run.restart(cold=True)
            finally:
                run.daemon.stop()
                db.close()
    return Figures(
        size=size,
        ticks=ticks,
        units_per_cycle=units,
        graphql_per_cycle=graphql,
        naive_per_cycle=naive,
        rss_mib=rss / 1024,
        peak_mib=peak / 1024,
        writes_while_idle=writes,
        label_to_start=starts,
        approval_to_merge=merges,
        changed=noticed + missed,
        missed=missed,
        noticed_s=noticed_s,
        noticed_ticks=noticed_ticks,
        warm_first_tick_s=warm_first,
        warm_units=warm_units,
        warm_routes=warm_routes,
        cold_first_tick_s=cold_first,
        cold_units=cold_units,
        cold_progress=progress,
    )


def report(figures: Figures, interval_ms: int) -> None:
    size = figures.size
    target = interval_ms / 1000 + 1
    per_issue = figures.units_per_cycle / size
    ratio = (
        figures.naive_per_cycle / figures.units_per_cycle if figures.units_per_cycle else math.inf
    )
    lines = [
        f"{size} issues, each with a pull request waiting for a human; polling every "
        f"{interval_ms / 1000:g} s",
        f"  idle tick: {_stats(figures.ticks)} (target under 2 s)",
        f"  GitHub units per cycle: {figures.units_per_cycle:.1f} "
        f"({figures.graphql_per_cycle:.1f} GraphQL points), {per_issue:.4f} per issue "
        "(target 0.01 or less)",
        f"  naive per-PR REST poller: {figures.naive_per_cycle:.0f} units per cycle; the daemon is "
        f"{ratio:.0f}x cheaper (target 400x or more)",
        f"  daemon memory: {figures.rss_mib:.0f} MiB resident, {figures.peak_mib:.0f} MiB at peak "
        "(target under 300 MB)",
        f"  writes to GitHub while idle: {figures.writes_while_idle}",
        f"  label -> agent start: {_stats(figures.label_to_start)} (target within {target:g} s)",
        f"  approval on a green head -> merge call: {_stats(figures.approval_to_merge)} "
        f"(target within {target:g} s)",
        f"  missed changes: {figures.missed} of {figures.changed} pull requests given a failing "
        f"check (target 0); all seen after {figures.noticed_s:.0f} s, {figures.noticed_ticks} "
        "whole ticks"
        if not figures.missed
        else f"  missed changes: {figures.missed} of {figures.changed} pull requests given a "
        "failing check after two passes of the sweep (target 0)",
        f"  warm restart: first tick after {figures.warm_first_tick_s:.1f} s, "
        f"{figures.warm_units} units over two ticks ({figures.warm_routes})",
        f"  cold restart (empty database): first tick after {figures.cold_first_tick_s:.1f} s, "
        f"{figures.cold_units} units over two ticks; {figures.cold_progress}",
    ]
    print("\n".join(lines), flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000", help="comma-separated issue counts")
    parser.add_argument("--interval-ms", type=int, default=5000)
    parser.add_argument("--keep", action="store_true", help="keep each size's files")
    parser.add_argument("--samples", type=int, default=10, help="measurements of each latency")
    args = parser.parse_args(argv)
    for size in (int(s) for s in args.sizes.split(",")):
        report(run_size(size, args.interval_ms, args.samples, keep=args.keep), args.interval_ms)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
