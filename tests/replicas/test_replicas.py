"""Three ``orchestrator run`` processes on one PostgreSQL: one poller, shared turns, a SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from orchestrator.store import migrate
from orchestrator_sim.testing import SimWorld
from tests.e2e.harness import (
    Flow,
    default_scenario,
    policy_document,
    write_policy,
    write_scenario,
)

ORCHESTRATOR = str(Path(sys.executable).parent / "orchestrator")
ISSUES = 10
LEASE_S = 3
# Long enough to count ticks without a timing figure: about twenty poll intervals.
WINDOW_S = 5.0


class Replica:
    """One daemon process with its own id, workspaces and log."""

    def __init__(self, flow: Flow, db_url: str, name: str) -> None:
        self.flow = flow
        self.db_url = db_url
        self.name = name
        self.log_path = flow.tmp / f"{name}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.flow.tmp),
            "ORCHESTRATOR_WORKSPACE__ROOT": str(self.flow.tmp / f"workspaces-{self.name}"),
            **self.flow.env,
        }
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                [
                    ORCHESTRATOR,
                    "--log-format",
                    "json",
                    "run",
                    str(self.flow.policy_path),
                    "--db",
                    self.db_url,
                    "--port",
                    "0",
                    "--replica-id",
                    self.name,
                    "--lease-seconds",
                    str(LEASE_S),
                    "--grace-seconds",
                    "1",
                ],
                env=env,
                stdout=log,
                stderr=log,
                start_new_session=True,
            )

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> int:
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc is not None else 0
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(30)

    def events(self, name: str) -> list[dict[str, Any]]:
        found = []
        for line in self.log_path.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("{"):
                entry = json.loads(line)
                if entry.get("event") == name:
                    found.append(entry)
        return found


@contextmanager
def replicas(flow: Flow, db_url: str, names: list[str]) -> Iterator[dict[str, Replica]]:
    started = {name: Replica(flow, db_url, name) for name in names}
    try:
        yield started
    finally:
        for replica in started.values():
            if replica.alive:
                assert replica.proc is not None
                replica.proc.kill()
                replica.proc.wait(10)


def query(db_url: str, sql: str) -> list[Any]:
    engine = create_engine(db_url)
    try:
        with engine.connect() as conn:
            return list(conn.execute(text(sql)))
    finally:
        engine.dispose()


def wait_for(condition: Any, what: str, timeout_s: float, tick: Any = None) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"never happened: {what}"
        if tick is not None:
            tick()
        time.sleep(0.1)


def overlapping_runs(rows: list[Any]) -> list[tuple[Any, Any]]:
    """Pairs of runs of one issue on different replicas whose [start, end) intersect."""
    by_issue: dict[int, list[Any]] = defaultdict(list)
    for row in rows:
        by_issue[row.issue_id].append(row)
    clashes = []
    for runs in by_issue.values():
        for i, first in enumerate(runs):
            for second in runs[i + 1 :]:
                if first.replica_id == second.replica_id:
                    continue
                end_a = first.ended_at or datetime.max.replace(tzinfo=first.started_at.tzinfo)
                end_b = second.ended_at or datetime.max.replace(tzinfo=second.started_at.tzinfo)
                if first.started_at < end_b and second.started_at < end_a:
                    clashes.append((first, second))
    return clashes


def bot_requests(world: SimWorld) -> int:
    counters = world.control.counters()
    return int(counters["tokens"].get(world.bot.login, {}).get("requests", 0))


@pytest.mark.slow
def test_three_replicas_share_the_work_and_survive_a_sigkill(
    tmp_path: Path, world: SimWorld, pg_url: str
) -> None:
    scenario = default_scenario()
    # Each issue writes a file of its own: ten branches appending to one file conflict as
    # soon as one of them starts after another merged, which is not what this test is about.
    scenario["steps"][1] = {
        "write": {"path": "notes/${ORCHESTRATOR_BRANCH}.txt", "content": "A change.\n"}
    }
    # Implementing lasts long enough for a replica to be killed in the middle of it.
    scenario["steps"].insert(1, {"sleep_ms": 1500})
    scenario_path = write_scenario(tmp_path, scenario)
    document = policy_document(
        tmp_path,
        world,
        scenario_path,
        "merge",
        {
            "polling": {"interval_ms": 250},
            "merge": {"require_human_approval": False},
            "database": {"url": pg_url},
        },
    )
    policy_path = write_policy(tmp_path / "WORKFLOW.md", document)
    flow = Flow(
        world,
        tmp_path,
        policy_path,
        scenario_path,
        {"E2E_ENDPOINT": world.url, "E2E_TOKEN": world.bot.token},
    )
    migrate.upgrade(pg_url)
    numbers = [flow.open_issue(f"Feature {i}") for i in range(ISSUES)]
    greened: set[str] = set()

    def keep_ci_green() -> None:
        for pull in flow.pulls():
            head = str(pull["head"]["sha"])
            if pull["state"] == "open" and head not in greened:
                world.control.check_run(world.repo, sha=head, name="ci", conclusion="success")
                greened.add(head)

    def open_runs_by_replica() -> dict[str, int]:
        rows = query(
            pg_url,
            "SELECT replica_id, count(*) AS n FROM agent_runs WHERE ended_at IS NULL "
            "GROUP BY replica_id",
        )
        return {str(row.replica_id): int(row.n) for row in rows}

    def done() -> int:
        rows = query(pg_url, "SELECT count(*) AS n FROM tracked_issues WHERE phase = 'done'")
        return int(rows[0].n)

    names = ["r1", "r2", "r3"]
    with replicas(flow, pg_url, names) as running:
        for replica in running.values():
            replica.start()
        # Kill a replica that holds agent turns, once every replica has run at least one.
        wait_for(
            lambda: len(query(pg_url, "SELECT DISTINCT replica_id FROM agent_runs")) == 3,
            "every replica running turns",
            60,
            keep_ci_green,
        )
        wait_for(lambda: bool(open_runs_by_replica()), "an open agent run", 60, keep_ci_green)
        victim = max(open_runs_by_replica().items(), key=lambda item: item[1])[0]
        held = open_runs_by_replica()[victim]
        running[victim].kill()
        survivors = [running[name] for name in names if name != victim]

        wait_for(lambda: done() == ISSUES, "every issue done", 100, keep_ci_green)
        for replica in survivors:
            assert replica.alive, f"{replica.name} died"

        # Polling cost: the two survivors against one daemon alone, over the same window.
        time.sleep(1.0)
        world.control.reset_counters()
        time.sleep(WINDOW_S)
        together = bot_requests(world)
        ticking = {r.name for r in survivors if r.events("tick")}
        assert survivors[1].stop() == 0
        world.control.reset_counters()
        time.sleep(WINDOW_S)
        alone = bot_requests(world)
        assert survivors[0].stop() == 0

    print(
        f"\nkilled {victim} holding {held} open run(s); bot requests over {WINDOW_S:g} s "
        f"with two replicas: {together}, with one: {alone}"
    )
    # Idle polling is one conditional list per interval and more: never nothing.
    assert alone > 0
    assert abs(together - alone) <= 0.1 * alone + 2, (together, alone)
    assert len(ticking) >= 1

    # Every issue merged, with one pull request and one workpad comment each.
    pulls = flow.pulls()
    assert len(pulls) == ISSUES
    for pull in pulls:
        assert flow.pull(int(pull["number"]))["merged"]
    for number in numbers:
        assert flow.issue(number)["state"] == "closed"
        assert len(flow.workpads(number)) == 1

    # No issue was ever run by two replicas at once; the victim's open runs were taken over.
    runs = query(
        pg_url, "SELECT issue_id, replica_id, started_at, ended_at, outcome FROM agent_runs"
    )
    assert overlapping_runs(runs) == []
    assert all(run.ended_at is not None for run in runs)
    taken_over = [r for r in runs if r.replica_id == victim and r.outcome == "interrupted"]
    assert len(taken_over) == held
    victims_issues = {r.issue_id for r in taken_over}
    later = {r.issue_id for r in runs if r.replica_id != victim and r.issue_id in victims_issues}
    assert later == victims_issues
    assert {r.replica_id for r in runs} == set(names)
    # Only one replica polls at a time: every tick in the logs came from a lease holder.
    leaders = [r for r in survivors if r.events("leadership_taken")]
    assert leaders
