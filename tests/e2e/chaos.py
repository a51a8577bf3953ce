"""Chaos for the end-to-end tests: a real ``orchestrator run`` killed at seeded moments.

The pieces of ``test_chaos_kills.py``: the scripted agents of each issue (one
that commits on every run, one that looks first and finds its work done), the
daemon as a process with one log per life, the CI played on every new head,
and the probes that read what the daemon and its agents left behind.
"""

from __future__ import annotations

import json
import os
import random
import re
import shlex
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError

from orchestrator.agent.reaper import read_process
from orchestrator_sim.testing import SimWorld
from tests.replicas.test_replicas import Replica

from .harness import Flow, agent_home, finding

AGENT_MODULE = "orchestrator_sim.agent"
# Inside the workspace's .git: never committed, and written by the agent itself.
MARKERS = ".git/chaos-commits"
REPLICA = "chaos"


# ------------------------------------------------------------------ agents


def _phase_steps(work: dict[str, Any], message: str, window_ms: int) -> list[dict[str, Any]]:
    """Think, write, commit, mark the commit, then linger before the turn's results."""
    return [
        {"sleep_ms": window_ms // 2},
        {"write": work},
        {"commit": message},
        {
            "write": {
                "path": f"{MARKERS}/${{ORCHESTRATOR_RUN_ID}}",
                "content": "$ORCHESTRATOR_PHASE",
            }
        },
        {"sleep_ms": window_ms},
    ]


def _fixed() -> dict[str, Any]:
    return {
        "fix_summary": [{"check": "ci", "status": "fixed", "message": "Fixed.", "commit": "HEAD"}]
    }


def _scenario(
    implementing: list[dict[str, Any]], rework: list[dict[str, Any]], number: int
) -> dict[str, Any]:
    return {
        "steps": [
            {"session": "auto"},
            *implementing,
            {"usage": {"input_tokens": 100, "cached_input_tokens": 10, "output_tokens": 20}},
            {"pr_description": f"## Summary\n\nAdds feature {number}."},
        ],
        "phases": {
            "reviewing": {
                "steps": [{"message": "reviewing"}, {"review": {"findings": [finding()]}}]
            },
            "rework": {"steps": [*rework, _fixed()]},
        },
    }


def appending_scenario(number: int, window_ms: int) -> dict[str, Any]:
    """Every run appends a line and commits: a re-run after a kill adds a second commit."""
    path = f"src/feature_{number}.py"
    return _scenario(
        _phase_steps(
            {"path": path, "content": f"FEATURE_{number} = 1\n", "append": True},
            f"Add feature {number}",
            window_ms,
        ),
        _phase_steps(
            {"path": path, "content": "# fixed\n", "append": True},
            "Fix the failing check",
            window_ms,
        ),
        number,
    )


def _idempotent_work(number: int, phase: str) -> dict[str, Any]:
    # The agent command below looks for this file to tell a re-run.
    return {"path": f"src/{phase}_{number}.py", "content": f"{phase.upper()} = {number}\n"}


def idempotent_scenarios(number: int, window_ms: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """(first run, re-run): the re-run writes the same content again and commits nothing."""
    first = _scenario(
        _phase_steps(_idempotent_work(number, "implementing"), f"Add feature {number}", window_ms),
        _phase_steps(_idempotent_work(number, "rework"), "Fix the failing check", window_ms),
        number,
    )
    again = _scenario(
        [{"write": _idempotent_work(number, "implementing")}],
        [{"write": _idempotent_work(number, "rework")}],
        number,
    )
    return first, again


def write_agents(home: Path, idempotent: set[int], numbers: list[int], window_ms: int) -> str:
    """Write every issue's scenario files; return the agent command that picks among them.

    The command is a shell that looks at the workspace first, as an agent would:
    an idempotent issue whose phase's file is already committed plays its
    re-run scenario. The shell stays the session's leader, with the scripted
    agent and a background ``sleep`` below it: a parent death signal ends the
    shell only, and the ``sleep`` (which never writes to the closed pipe)
    stays until the daemon's next start ends it.
    """
    folder = home / "scenarios"
    folder.mkdir(parents=True, exist_ok=True)
    for number in numbers:
        if number in idempotent:
            first, again = idempotent_scenarios(number, window_ms)
            (folder / f"{number}-done.json").write_text(json.dumps(again), encoding="utf-8")
        else:
            first = appending_scenario(number, window_ms)
        (folder / f"{number}.json").write_text(json.dumps(first), encoding="utf-8")
    scenarios = shlex.quote(str(folder))
    agent = f"{shlex.quote(sys.executable)} -m {AGENT_MODULE}"
    return (
        "sleep 3600 </dev/null >/dev/null 2>&1 & "
        'n="${ORCHESTRATOR_ISSUE##*#}"; s="$n.json"; '
        f'if [ -e {scenarios}/"$n-done.json" ] '
        '&& git cat-file -e "HEAD:src/${ORCHESTRATOR_PHASE}_$n.py" 2>/dev/null; '
        'then s="$n-done.json"; fi; '
        f'{agent} --scenario {scenarios}/"$s"'
    )


def agent_processes(workspaces: Path, home: Path) -> dict[int, int]:
    """Live processes of this test's agents: pid -> start time.

    Every process the daemon starts for an agent, and whatever that starts,
    inherits ``ORCHESTRATOR_WORKSPACE``; a scripted agent also names itself
    and its scenario (in the agents' ``home``) on its command line.
    """
    variable = f"ORCHESTRATOR_WORKSPACE={workspaces}/".encode()
    found: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if (AGENT_MODULE.encode() in cmdline and str(home).encode() in cmdline) or any(
            item.startswith(variable) for item in environ.split(b"\0")
        ):
            info = read_process(int(entry.name))
            if info is not None and info.alive:
                found[info.pid] = info.start_time
    return found


def still_alive(processes: dict[int, int]) -> dict[int, int]:
    """Those of ``processes`` that still run (same pid and start time)."""
    alive = {}
    for pid, start in processes.items():
        info = read_process(pid)
        if info is not None and info.alive and info.start_time == start:
            alive[pid] = start
    return alive


def commit_markers(workspaces: Path) -> dict[str, tuple[str, int]]:
    """Commits the agents marked so far: run id -> (phase, issue number)."""
    found = {}
    for marker in workspaces.glob(f"*/{MARKERS}/*"):
        key = marker.parent.parent.parent.name
        number = int(key.rsplit("-", 1)[0].rsplit("_", 1)[1])
        try:
            found[marker.name] = (marker.read_text(encoding="utf-8"), number)
        except OSError:
            continue
    return found


# ------------------------------------------------------------------ daemon


class DaemonLives(Replica):
    """One ``orchestrator run`` started again and again: a replica whose log is one file per life.

    Single-daemon here: on PostgreSQL a restart under the same replica id takes
    its own lease and claims back at once.
    """

    def __init__(self, flow: Flow, db_url: str) -> None:
        super().__init__(flow, db_url, REPLICA)
        self.lives = 0
        self.started_at = 0.0

    @property
    def workspaces(self) -> Path:
        return self.flow.tmp / f"workspaces-{REPLICA}"

    def start(self) -> None:
        self.lives += 1
        self.log_path = self.flow.tmp / f"daemon-{self.lives}.log"
        super().start()
        self.started_at = time.monotonic()

    def started(self) -> bool:
        """Whether this life logged ``daemon_started`` (its recovery and orphan sweep are over)."""
        return bool(self.events("daemon_started", lives=[self.lives]))

    def events(
        self, name: str | None = None, lives: list[int] | None = None
    ) -> list[dict[str, Any]]:
        """Log entries of the given lives (all by default), each with its ``life``."""
        found = []
        for life in lives or range(1, self.lives + 1):
            path = self.flow.tmp / f"daemon-{life}.log"
            if not path.exists():
                continue
            for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
                if not line.startswith("{"):
                    continue
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue
                if name is None or entry.get("event") == name:
                    found.append({"life": life, **entry})
        return found


@contextmanager
def daemon_lives(flow: Flow, db_url: str) -> Iterator[DaemonLives]:
    """The daemon, killed on the way out with whatever its agents left (a failed test's)."""
    daemon = DaemonLives(flow, db_url)
    try:
        yield daemon
    finally:
        if daemon.alive:
            assert daemon.proc is not None
            daemon.proc.kill()
            daemon.proc.wait(10)
        for pid in still_alive(agent_processes(daemon.workspaces, agent_home(flow.tmp))):
            os.kill(pid, signal.SIGKILL)


# ---------------------------------------------------------------------- CI


def issue_of_branch(branch: str, prefix: str = "orchestrator/") -> int | None:
    """The issue number in a branch the daemon named (``orchestrator/7-add-a-widget``)."""
    found = re.fullmatch(rf"{re.escape(prefix)}\D*(\d+)\b.*", branch)
    return int(found.group(1)) if found else None


@dataclass
class CiPlayer:
    """Reports ``ci`` once on every new head, some seconds after it appeared.

    The first head of the issues in ``fail_first`` fails; every other head passes.
    """

    world: SimWorld
    fail_first: set[int]
    rng: random.Random
    latency_s: tuple[float, float]
    seen: dict[int, list[str]] = field(default_factory=dict)
    due: dict[str, float] = field(default_factory=dict)

    def play(self, pulls: list[dict[str, Any]]) -> None:
        now = time.monotonic()
        for pull in pulls:
            number = issue_of_branch(str(pull["head"]["ref"]))
            head = str(pull["head"]["sha"])
            if number is None or pull["state"] != "open":
                continue
            heads = self.seen.setdefault(number, [])
            if head in heads:
                continue
            due = self.due.setdefault(head, now + self.rng.uniform(*self.latency_s))
            if now < due:
                continue
            failing = number in self.fail_first and not heads
            heads.append(head)
            self.world.control.check_run(
                self.world.repo,
                sha=head,
                name="ci",
                conclusion="failure" if failing else "success",
                summary="ci failed" if failing else "ci passed",
                log="FAILED test_feature.py::test_it\n" if failing else None,
            )


# -------------------------------------------------------------------- probes


class Store:
    """Read-only looks at the daemon's database (SQLite or PostgreSQL)."""

    def __init__(self, url: str) -> None:
        self.engine: Engine = create_engine(url)

    def rows(self, sql: str, **params: Any) -> list[Any]:
        with self.engine.connect() as conn:
            return list(conn.execute(text(sql), params))

    def phases(self) -> dict[int, str]:
        try:
            return {
                int(r.number): str(r.phase)
                for r in self.rows("SELECT number, phase FROM tracked_issues")
            }
        except DBAPIError:  # before the daemon's first start there is no table yet
            return {}

    def open_run(self, run_id: str) -> bool:
        found = self.rows("SELECT ended_at FROM agent_runs WHERE run_id = :run_id", run_id=run_id)
        return bool(found) and found[0].ended_at is None

    def run_outcome(self, run_id: str) -> str | None:
        found = self.rows("SELECT outcome FROM agent_runs WHERE run_id = :run_id", run_id=run_id)
        return str(found[0].outcome) if found else None

    def phase_events(self, number: int | None = None) -> list[Any]:
        sql = (
            "SELECT t.number, e.from_phase, e.to_phase, e.reason, e.at FROM phase_events e "
            "JOIN tracked_issues t ON t.id = e.issue_id"
        )
        if number is not None:
            return self.rows(sql + " WHERE t.number = :n ORDER BY e.id", n=number)
        return self.rows(sql + " ORDER BY e.id")

    def runs(self, number: int) -> list[Any]:
        return self.rows(
            "SELECT r.run_id, r.phase, r.outcome, r.error, r.started_at, r.ended_at "
            "FROM agent_runs r JOIN tracked_issues t ON t.id = r.issue_id "
            "WHERE t.number = :n ORDER BY r.started_at",
            n=number,
        )

    def close(self) -> None:
        self.engine.dispose()


# Log events worth showing for an issue when something went wrong.
TELLING = {
    "dispatch",
    "turn_claimed",
    "intent_confirmed",
    "phase_transition",
    "turn_recorded",
    "unpushed_work_adopted",
    "turn_commits_lost",
    "side_effect_failed",
    "side_effect_recheck",
    "intent_unconfirmed",
    "transition_refused",
    "transition_lost_race",
}


def issue_of_entry(entry: dict[str, Any]) -> int | None:
    value = entry.get("issue")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        tail = value.rsplit("#", 1)[-1]
        return int(tail) if tail.isdigit() else None
    return None


def evidence(store: Store, daemon: DaemonLives, number: int, lines: int = 60) -> str:
    """The phase events, runs and telling log lines of one issue, for a failure message."""
    out = [f"--- issue #{number}: phase events"]
    for row in store.phase_events(number):
        out.append(f"  {row.at} {row.from_phase} -> {row.to_phase}: {row.reason}")
    out.append(f"--- issue #{number}: agent runs")
    for run in store.runs(number):
        error = f" ({run.error})" if run.error else ""
        out.append(f"  {run.started_at} {run.phase} {run.outcome}{error} {run.run_id}")
    out.append(f"--- issue #{number}: log (life, event, ...)")
    picked = [
        e
        for e in daemon.events()
        if issue_of_entry(e) == number
        and (e.get("event") in TELLING or e.get("level") in ("warning", "error", "critical"))
    ]
    for entry in picked[-lines:]:
        rest = {
            k: v
            for k, v in entry.items()
            if k
            not in ("life", "event", "repo", "issue", "timestamp", "replica", "logger", "level")
        }
        out.append(
            f"  life {entry['life']} {entry.get('timestamp', '')} {entry.get('event')} {rest}"
        )
    return "\n".join(out)
