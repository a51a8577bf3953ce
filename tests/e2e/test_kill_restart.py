"""A real ``orchestrator run`` killed with SIGKILL at several points still ends merged, once."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from orchestrator_sim.testing import SimWorld

from .harness import Flow, default_scenario, policy_document, write_policy, write_scenario

ORCHESTRATOR = str(Path(sys.executable).parent / "orchestrator")


def agents_of(scenario: Path) -> list[int]:
    """Process ids of scripted agents still running this test's scenario."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if str(scenario).encode() in cmdline and b"orchestrator_sim.agent" in cmdline:
            found.append(int(entry.name))
    return found


def open_runs(db: Path) -> int:
    if not db.exists():
        return 0
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
        try:
            return int(
                conn.execute("SELECT count(*) FROM agent_runs WHERE ended_at IS NULL").fetchone()[0]
            )
        except sqlite3.OperationalError:
            return 0


def phase_of(db: Path, number: int) -> str | None:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
        row = conn.execute(
            "SELECT phase FROM tracked_issues WHERE number = ?", (number,)
        ).fetchone()
    return str(row[0]) if row else None


class Runner:
    """Starts and kills the daemon as a separate process."""

    def __init__(self, flow: Flow, db: Path) -> None:
        self.flow = flow
        self.db = db
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = (flow.tmp / "daemon.log").open("ab")
        self.starts = 0

    def start(self) -> None:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.flow.tmp),
            **self.flow.env,
        }
        self.proc = subprocess.Popen(
            [
                ORCHESTRATOR,
                "--log-format",
                "json",
                "run",
                str(self.flow.policy_path),
                "--port",
                "0",
            ],
            env=env,
            stdout=self.log,
            stderr=self.log,
            start_new_session=True,
        )
        self.starts += 1

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)
        # Agents run in sessions of their own and outlive the daemon: let them end first.
        deadline = time.monotonic() + 10
        while agents_of(self.flow.scenario_path) and time.monotonic() < deadline:
            time.sleep(0.05)

    def stop(self) -> int:
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc is not None else 0
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(30)


@contextmanager
def running(flow: Flow, db: Path) -> Iterator[Runner]:
    runner = Runner(flow, db)
    try:
        yield runner
    finally:
        if runner.proc is not None and runner.proc.poll() is None:
            runner.proc.kill()
            runner.proc.wait(10)
        runner.log.close()


@pytest.mark.slow
def test_sigkill_at_several_points_still_merges_exactly_once(
    tmp_path: Path, world: SimWorld
) -> None:
    scenario = default_scenario()
    # The implementing turn lasts long enough to be killed in the middle of it.
    scenario["steps"].insert(1, {"sleep_ms": 1500})
    scenario_path = write_scenario(tmp_path, scenario)
    db = tmp_path / "orchestrator.db"
    document = policy_document(
        tmp_path,
        world,
        scenario_path,
        "merge",
        {"polling": {"interval_ms": 250}, "merge": {"require_human_approval": False}},
    )
    policy_path = write_policy(tmp_path / "WORKFLOW.md", document)
    flow = Flow(
        world,
        tmp_path,
        policy_path,
        scenario_path,
        {"E2E_ENDPOINT": world.url, "E2E_TOKEN": world.bot.token},
    )
    number = flow.open_issue()

    def pr() -> dict[str, object] | None:
        pulls = flow.pulls()
        return pulls[0] if pulls else None

    def pr_number() -> int:
        found = pr()
        assert found is not None
        return int(str(found["number"]))

    points: list[tuple[str, Callable[[], bool]]] = [
        ("during the implementing turn", lambda: open_runs(db) > 0),
        ("right after the pull request appeared", lambda: pr() is not None),
        (
            "right after the review comment appeared",
            lambda: bool(pr() and flow.review_comments(pr_number())),
        ),
        ("right after the merge", lambda: bool(pr() and flow.pull(pr_number())["merged"])),
    ]
    greened: set[str] = set()

    def keep_ci_green() -> None:
        found = pr()
        if found is None or found["state"] != "open":
            return
        head = str(found["head"]["sha"])  # type: ignore[index]
        if head not in greened:
            world.control.check_run(world.repo, sha=head, name="ci", conclusion="success")
            greened.add(head)

    with running(flow, db) as runner:
        runner.start()
        for name, reached in points:
            deadline = time.monotonic() + 60
            while not reached():
                assert runner.proc is not None and runner.proc.poll() is None, (
                    f"daemon died before: {name}"
                )
                assert time.monotonic() < deadline, f"never reached: {name}"
                keep_ci_green()
                time.sleep(0.02)
            runner.kill()
            runner.start()
        deadline = time.monotonic() + 60
        while phase_of(db, number) != "done":
            assert time.monotonic() < deadline, f"never done, phase {phase_of(db, number)}"
            keep_ci_green()
            time.sleep(0.1)
        assert runner.stop() == 0

    pulls = flow.pulls()
    assert len(pulls) == 1
    assert flow.pull(int(pulls[0]["number"]))["merged"]
    assert flow.issue(number)["state"] == "closed"
    assert len(flow.workpads(number)) == 1
    assert len(flow.review_comments(int(pulls[0]["number"]))) == 1
    merges = [
        w for w in flow.bot_writes() if str(w["path"]).endswith("/merge") and w["status"] == 200
    ]
    assert len(merges) == 1
    assert runner.starts == len(points) + 1
