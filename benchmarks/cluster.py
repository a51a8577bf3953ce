"""Benchmark of a cluster of replicas: ``python -m benchmarks.cluster``.

It needs a PostgreSQL server (``ORCHESTRATOR_TEST_PG_URL``; ``make bench``
starts a throwaway one) and creates a fresh database on it for each scene. It
starts the GitHub emulator in this process and each replica as a real
``orchestrator run`` process with the scripted agent, and measures:

- **takeover time**: two replicas; the leader gets SIGKILL and a human opens a
  labelled issue right after; how long until the new leader's first write to
  GitHub (target: median within 15 s with the default ``--lease-seconds`` 10);
- **polling cost of two replicas against one**: the same scenario (issues taken
  from labelled to merged, this script turning CI green and approving each
  head) run by one replica, then by two; the bot's requests and billed units
  over the whole scenario, and their ratio (target: within 10 %).

It prints the figures and asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from orchestrator.logs import configure_logging
from orchestrator.repos.cluster import DEFAULT_LEASE_S, poll_lease_name
from orchestrator.store import migrate
from orchestrator.store.database import Database
from orchestrator_sim.testing import SimWorld, running_world

PG_SERVER_ENV = "ORCHESTRATOR_TEST_PG_URL"
INTERVAL_MS = 1_000
OWNER_LABEL = "orchestrator"
# How often the bench looks for the new leader's first write: the resolution of the figure.
_WATCH_S = 0.02
_SCENE_TIMEOUT_S = 600.0

SCENARIO: dict[str, Any] = {
    "steps": [
        {"session": "auto"},
        # A file of its own per issue: the pull requests neither conflict nor share a head.
        {"write": {"path": "notes/${ORCHESTRATOR_BRANCH}.txt", "content": "A change.\n"}},
        {"commit": "Cluster benchmark change"},
        {"pr_description": "## Summary\n\nA cluster benchmark change."},
    ],
    "phases": {"reviewing": {"steps": [{"review": {"findings": []}}]}},
}


def wait_until(condition: Callable[[], bool], what: str, timeout_s: float, pause_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"the cluster bench gave up waiting for {what}")
        time.sleep(pause_s)


@contextmanager
def scratch_database(server_url: str) -> Iterator[str]:
    """A new, migrated database on ``server_url``'s server, dropped afterwards."""
    name = f"bench_{uuid.uuid4().hex[:12]}"
    admin = create_engine(server_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        try:
            url = make_url(server_url).set(database=name).render_as_string(hide_password=False)
            migrate.upgrade(url)
            yield url
        finally:
            with admin.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()


def _orchestrator_command() -> str:
    beside = Path(sys.executable).parent / "orchestrator"
    found = str(beside) if beside.exists() else shutil.which("orchestrator")
    if found is None:
        raise RuntimeError("the `orchestrator` command is not installed next to this Python")
    return found


class ReplicaProcess:
    """One ``orchestrator run`` process: its id, workspaces and JSON log; restartable."""

    def __init__(self, scene: Scene, name: str) -> None:
        self.scene = scene
        self.name = name
        self.log_path = scene.tmp / f"{name}.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self) -> None:
        scene = self.scene
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(scene.tmp),
            "ORCHESTRATOR_WORKSPACE__ROOT": str(scene.tmp / f"workspaces-{self.name}"),
            "BENCH_ENDPOINT": scene.world.url,
            "BENCH_TOKEN": scene.world.bot.token,
        }
        argv = [_orchestrator_command(), "--log-format", "json", "run", str(scene.policy)]
        argv += ["--db", scene.db_url, "--port", "0", "--replica-id", self.name]
        argv += ["--lease-seconds", str(scene.lease_s), "--grace-seconds", "1"]
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                argv, env=env, stdout=log, stderr=log, start_new_session=True
            )
        self.starts += 1

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def ready(self) -> bool:
        """Whether this life of the process has its scheduler running; raises if it exited."""
        if not self.alive:
            raise RuntimeError(f"replica {self.name} exited; see {self.log_path}")
        return len(self.events("daemon_ready")) >= self.starts

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()

    def events(self, name: str) -> list[dict[str, Any]]:
        if not self.log_path.exists():
            return []
        found = []
        for line in self.log_path.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("{"):
                entry = json.loads(line)
                if entry.get("event") == name:
                    found.append(entry)
        return found

    def took_leadership_since(self, moment: datetime) -> bool:
        return any(
            datetime.fromisoformat(entry["timestamp"]) >= moment
            for entry in self.events("leadership_taken")
        )


@dataclass
class Scene:
    """One emulator, one fresh database and one policy, shared by the replicas started in it."""

    tmp: Path
    world: SimWorld
    db: Database
    db_url: str
    policy: Path
    lease_s: float

    def replica(self, name: str) -> ReplicaProcess:
        replica = ReplicaProcess(self, name)
        replica.start()
        return replica

    def open_issue(self, title: str) -> int:
        human = self.world.human.login
        return self.world.control.create_issue(
            self.world.repo, title, as_user=human, body="Please.", labels=[OWNER_LABEL]
        )

    def leader(self) -> str | None:
        return self.db.leases.holder(poll_lease_name(self.world.repo), now=datetime.now(UTC))

    def phase(self, number: int) -> str | None:
        row = self.db.issues.get(self.world.repo, number)
        return row.phase if row is not None else None

    def phases(self) -> list[str]:
        return [row.phase for row in self.db.issues.all(self.world.repo)]

    def bot_counters(self) -> dict[str, int]:
        tokens = self.world.control.counters()["tokens"]
        found = tokens.get(self.world.bot.login, {})
        return {key: int(found.get(key, 0)) for key in ("requests", "billed", "writes")}

    def approve_open_heads(self, done: set[tuple[int, str]]) -> None:
        """Play CI and the human: each new head of an open pull request turns green, approved."""
        human = self.world.human
        repo = self.world.github(human).get_repo(self.world.repo)
        for pull in repo.get_pulls(state="open"):
            head = str(pull.head.sha)
            if (pull.number, head) in done:
                continue
            control = self.world.control
            control.check_run(self.world.repo, sha=head, name="ci", conclusion="success")
            control.review(
                self.world.repo, pull.number, "APPROVED", as_user=human.login, commit_id=head
            )
            done.add((pull.number, head))


def _write_policy(tmp: Path, world: SimWorld, max_agents: int) -> Path:
    # The scenario lives in the agents' home: the sandbox hides the rest of tmp from them.
    home = tmp / "agent-home"
    home.mkdir(mode=0o700)
    scenario = home / "scenario.json"
    scenario.write_text(json.dumps(SCENARIO), encoding="utf-8")
    agent = f"{shlex.quote(sys.executable)} -m orchestrator_sim.agent"
    document = {
        "tracker": {"repo": world.repo, "endpoint": "$BENCH_ENDPOINT", "token": "$BENCH_TOKEN"},
        "polling": {"interval_ms": INTERVAL_MS},
        "agent": {
            "preset": "command",
            "command": f"{agent} --scenario {shlex.quote(str(scenario))}",
            "max_concurrent_agents": max_agents,
            "stall_timeout_ms": 30_000,
            "turn_timeout_ms": 60_000,
            "home": str(home),
        },
        "orchestration": {"ownership": {"required_label": OWNER_LABEL}},
        "rollout": {"mode": "merge", "kill_switch_file": str(tmp / "STOP")},
        "merge": {"mode": "auto", "require_human_approval": True, "approval_source": "review"},
    }
    path = tmp / "WORKFLOW.md"
    # JSON is YAML: the front matter is one JSON mapping.
    path.write_text(f"---\n{json.dumps(document, indent=2)}\n---\n", encoding="utf-8")
    return path


@contextmanager
def open_scene(
    tmp: Path, server_url: str, lease_s: float, max_agents: int
) -> Iterator[tuple[Scene, dict[str, ReplicaProcess]]]:
    """A scene and the replicas started in it (by name); every replica is killed on the way out."""
    tmp.mkdir()
    started: dict[str, ReplicaProcess] = {}
    with running_world(tmp / "sim") as world, scratch_database(server_url) as db_url:
        db = Database.open(db_url, migrate=False)
        try:
            policy = _write_policy(tmp, world, max_agents)
            yield Scene(tmp, world, db, db_url, policy, lease_s), started
        finally:
            for replica in started.values():
                replica.kill()
            db.close()


# ------------------------------------------------------------------ takeover


@dataclass(frozen=True)
class Takeover:
    """One measured takeover: from the SIGKILL to the new leader's first GitHub write."""

    seconds: float
    killed: str
    new_leader: str


def _take_over(scene: Scene, replicas: dict[str, ReplicaProcess], title: str) -> Takeover:
    """SIGKILL the leader and open a labelled issue; time the new leader's first write."""
    killed = scene.leader()
    assert killed is not None, "no leader to kill"
    (survivor,) = (replica for name, replica in replicas.items() if name != killed)
    killed_at = datetime.now(UTC)
    start = time.monotonic()
    replicas[killed].kill()
    # Only the leader writes to GitHub and the old one is dead: the next write is the new one's.
    writes = scene.bot_counters()["writes"]
    number = scene.open_issue(title)
    wait_until(lambda: scene.bot_counters()["writes"] > writes, "a write", 120, _WATCH_S)
    seconds = time.monotonic() - start
    wait_until(
        lambda: survivor.took_leadership_since(killed_at),
        f"{survivor.name} logging leadership_taken after the kill",
        10,
        0.1,
    )
    replicas[killed].start()
    # Let the new issue settle, so the next kill does not land in the middle of its turn.
    wait_until(
        lambda: scene.phase(number) == "waiting_for_checks",
        f"issue #{number} waiting for its checks",
        120,
        0.2,
    )
    return Takeover(seconds, killed, survivor.name)


def measure_takeovers(tmp: Path, server_url: str, runs: int, lease_s: float) -> list[Takeover]:
    """Kill the leader of two replicas ``runs`` times, restarting it as a follower each time."""
    shuffle = random.Random(0)
    measured: list[Takeover] = []
    with open_scene(tmp, server_url, lease_s, max_agents=2) as (scene, replicas):
        for name in ("r1", "r2"):
            replicas[name] = scene.replica(name)
        for run in range(1, runs + 1):
            wait_until(
                lambda: all(r.ready() for r in replicas.values()) and bool(scene.leader()),
                "two ready replicas and a leader",
                120,
                0.1,
            )
            # The kill lands anywhere in the heartbeat cycle, as a crash would.
            time.sleep(shuffle.uniform(0, lease_s / 3))
            measured.append(_take_over(scene, replicas, f"Takeover {run}"))
    return measured


# -------------------------------------------------------------- polling cost


@dataclass(frozen=True)
class ScenarioCost:
    """What the bot spent on GitHub while the replicas took every issue to a merge."""

    replicas: int
    requests: int
    billed: int
    writes: int
    seconds: float


def measure_scenario(
    tmp: Path, server_url: str, issues: int, replica_count: int, lease_s: float
) -> ScenarioCost:
    """Open ``issues`` labelled issues; count the bot's requests until all are done."""
    # Every turn of the scenario fits on one replica: two replicas cannot finish sooner.
    with open_scene(tmp, server_url, lease_s, max_agents=issues) as (scene, replicas):
        for index in range(issues):
            scene.open_issue(f"Feature {index + 1}")
        scene.world.control.reset_counters()
        start = time.monotonic()
        for index in range(replica_count):
            name = f"r{index + 1}"
            replicas[name] = scene.replica(name)
        approved: set[tuple[int, str]] = set()

        def all_done() -> bool:
            for replica in replicas.values():
                replica.ready()  # raises if it exited
            scene.approve_open_heads(approved)
            return scene.phases().count("done") == issues

        wait_until(all_done, f"{issues} issues merged", _SCENE_TIMEOUT_S, 0.2)
        seconds = time.monotonic() - start
        spent = scene.bot_counters()
        for replica in replicas.values():
            replica.stop()
    return ScenarioCost(replica_count, spent["requests"], spent["billed"], spent["writes"], seconds)


# --------------------------------------------------------------------- report


def _report_takeovers(measured: list[Takeover], lease_s: float) -> None:
    samples = [m.seconds for m in measured]
    median = statistics.median(samples)
    print(
        f"takeover (SIGKILL of the leader to the new leader's first GitHub write, "
        f"--lease-seconds {lease_s:g}): median {median:.2f} s, max {max(samples):.2f} s "
        f"over {len(samples)} runs (target median within 15 s with a 10 s lease)",
        flush=True,
    )
    for index, m in enumerate(measured, 1):
        print(f"  run {index}: {m.killed} killed, {m.new_leader} wrote after {m.seconds:.2f} s")


def _report_costs(one: ScenarioCost, two: ScenarioCost, issues: int) -> None:
    print(f"polling cost over {issues} issues from labelled to merged (bot's requests):")
    for cost in (one, two):
        print(
            f"  {cost.replicas} replica(s): {cost.requests} requests, {cost.billed} billed units, "
            f"{cost.writes} writes in {cost.seconds:.1f} s",
            flush=True,
        )
    requests = two.requests / one.requests if one.requests else float("nan")
    billed = two.billed / one.billed if one.billed else float("nan")
    print(
        f"  2 replicas / 1: requests x{requests:.2f}, billed units x{billed:.2f} "
        f"(target within 10 %)",
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="takeovers to measure")
    parser.add_argument("--issues", type=int, default=4, help="issues in the polling scenario")
    parser.add_argument(
        "--lease-seconds", type=float, default=DEFAULT_LEASE_S, help="the replicas' lease"
    )
    args = parser.parse_args(argv)
    server_url = os.environ.get(PG_SERVER_ENV)
    if not server_url:
        print(
            f"cluster bench skipped: it needs PostgreSQL; set {PG_SERVER_ENV} to a server URL "
            "(`make bench` starts a throwaway one)",
            flush=True,
        )
        return 0
    configure_logging(fmt="console", level="error")
    with tempfile.TemporaryDirectory(prefix="orchestrator-cluster-bench-") as scratch:
        tmp = Path(scratch)
        takeovers = measure_takeovers(tmp / "takeover", server_url, args.runs, args.lease_seconds)
        _report_takeovers(takeovers, args.lease_seconds)
        one = measure_scenario(tmp / "one", server_url, args.issues, 1, args.lease_seconds)
        two = measure_scenario(tmp / "two", server_url, args.issues, 2, args.lease_seconds)
        _report_costs(one, two, args.issues)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
