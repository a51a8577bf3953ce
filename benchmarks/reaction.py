"""Benchmark of the daemon's reaction times: ``python -m benchmarks.reaction``.

It starts the GitHub emulator and a daemon with 1 s polling in this process,
with the scripted agent, and measures two latencies a human notices:

- **label to agent start**: a human adds the ownership label to an issue; how
  long until the agent's turn has started;
- **green + approval to merge call**: the checks of the pull request's head turn
  green and a human approves; how long until the daemon calls merge.

Each human action lands at a random point of the polling cycle (seeded).

The target of each is one polling interval plus one second. It prints the
figures and asserts nothing.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.scale_world import APPROVAL, CHECK, OWNER, write_policy
from orchestrator.daemon.daemon import Daemon
from orchestrator.domain.snapshot import IssueRef
from orchestrator.logs import configure_logging
from orchestrator_sim.testing import SimWorld, running_world

INTERVAL_MS = 1_000
_POLL_S = 0.005


def _wait(predicate: Callable[[], bool], timeout_s: float = 120.0) -> float:
    """Seconds until ``predicate`` holds (checked every few milliseconds)."""
    start = time.perf_counter()
    while not predicate():
        if time.perf_counter() - start > timeout_s:
            raise TimeoutError("the daemon did not get there in time")
        time.sleep(_POLL_S)
    return time.perf_counter() - start


class _Bench:
    """One emulator and one scheduled daemon; each measurement uses a new issue."""

    def __init__(self, world: SimWorld, daemon: Daemon) -> None:
        self.world = world
        self.daemon = daemon
        self.random = random.Random(0)

    def _row_phase(self, number: int) -> str | None:
        row = self.daemon.parts.records.get(IssueRef(self.world.repo, number))
        return row.record.phase.value if row is not None else None

    def _agent_started(self, number: int) -> bool:
        row = self.daemon.parts.records.get(IssueRef(self.world.repo, number))
        return row is not None and bool(self.daemon.db.runs.for_issue(row.issue_id))

    def _pull(self, number: int) -> Any:
        state = self.world.server.emulator.state
        with state.lock:
            return state.pull(state.repo(self.world.owner, self.world.name), number)

    def _settle(self) -> None:
        """Let follow-up ticks end, then wait a random part of an interval.

        The human's action then lands anywhere in the polling cycle, as it does
        in real life, instead of right before a follow-up tick.
        """
        ticks = self.daemon.parts.poller.stats.ticks
        _wait(lambda: self.daemon.parts.poller.stats.ticks >= ticks + 2)
        time.sleep(self.random.uniform(0, INTERVAL_MS / 1000))

    def label_to_agent_start(self) -> float:
        """A human labels an issue; seconds until its agent turn starts."""
        control = self.world.control
        human = self.world.human.login
        number = control.create_issue(self.world.repo, "Benchmark", as_user=human)
        self._settle()
        control.add_labels(self.world.repo, number, [OWNER], as_user=human)
        return _wait(lambda: self._agent_started(number))

    def green_and_approval_to_merge(self) -> float:
        """Checks turn green and a human approves; seconds until the merge is called."""
        control = self.world.control
        repo = self.world.repo
        human = self.world.human.login
        number = control.create_issue(repo, "Benchmark merge", as_user=human, labels=[OWNER])
        _wait(lambda: self._row_phase(number) == "waiting_for_checks")
        row = self.daemon.parts.records.get(IssueRef(repo, number))
        assert row is not None and row.record.workpad.pr is not None
        pr = row.record.workpad.pr.number
        head = str(self._pull(pr).head_sha)
        self._settle()
        control.check_run(repo, sha=head, name=CHECK, conclusion="success")
        control.add_labels(repo, number, [APPROVAL], as_user=human)
        return _wait(lambda: bool(self._pull(pr).merged))


def _report(title: str, samples: list[float]) -> None:
    target = INTERVAL_MS / 1000 + 1
    median = statistics.median(samples)
    print(
        f"{title}: median {median:.2f} s, max {max(samples):.2f} s over {len(samples)} runs "
        f"(target within {target:.1f} s: {'met' if max(samples) <= target else 'missed'})",
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="measurements of each latency")
    args = parser.parse_args(argv)
    configure_logging(fmt="console", level="error")
    with tempfile.TemporaryDirectory(prefix="orchestrator-bench-") as scratch:
        tmp = Path(scratch)
        with running_world(tmp / "sim") as world:
            env = {
                "SCALE_REPO": world.repo,
                "SCALE_ENDPOINT": world.url,
                "SCALE_TOKEN": world.bot.token,
            }
            policy = write_policy(tmp, INTERVAL_MS)
            daemon = Daemon(policy, port=0, env=env)
            daemon.start()
            try:
                daemon.run_scheduler()
                bench = _Bench(world, daemon)
                starts = [bench.label_to_agent_start() for _ in range(args.runs)]
                merges = [bench.green_and_approval_to_merge() for _ in range(args.runs)]
            finally:
                daemon.shutdown(grace_s=5)
    print(
        f"polling every {INTERVAL_MS / 1000:g} s against the emulator, scripted agent", flush=True
    )
    _report("label to agent start", starts)
    _report("checks green + approval to merge call", merges)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
