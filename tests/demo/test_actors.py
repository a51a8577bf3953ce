"""The demo's CI and human act on the emulator as described."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import httpx

from orchestrator_sim.demo.actors import CISimulator, HumanReviewer
from orchestrator_sim.demo.world import REPO, start_world


def _until(condition: Callable[[], bool], limit_s: float = 20.0) -> None:
    deadline = time.monotonic() + limit_s
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.05)


def test_ci_fails_one_pull_request_once_then_passes_and_human_approves(tmp_path: Path) -> None:
    world = start_world(tmp_path, {})
    try:
        control = world.server.control
        assert len(world.issues) == 3
        first, second = world.issues[0], world.issues[1]
        heads = {}
        for number in (first, second):
            branch = f"agent/{number}-widget"
            heads[number] = control.push(
                REPO, branch, {f"src/w{number}.py": "A = 1\n"}, as_user=world.bot.login
            )
            control.create_pull(REPO, f"Widget {number}", branch, as_user=world.bot.login)
        ci = CISimulator(world, fail_once_issue=second, interval_s=0.05)
        ci.start()

        def conclusions(sha: str) -> dict[str, str | None]:
            data = httpx.get(
                f"{world.url}/repos/{REPO}/commits/{sha}/check-runs",
                headers={"Authorization": f"token {world.ci.token}"},
            ).json()
            latest: dict[str, tuple[int, str | None]] = {}
            for run in data["check_runs"]:
                if run["name"] not in latest or run["id"] > latest[run["name"]][0]:
                    latest[run["name"]] = (run["id"], run["conclusion"])
            return {name: value[1] for name, value in latest.items()}

        _until(lambda: conclusions(heads[first]) == {"lint": "success", "tests": "success"})
        _until(lambda: conclusions(heads[second]).get("tests") == "failure")
        fixed = control.push(
            REPO,
            f"agent/{second}-widget",
            {f"src/w{second}.py": "A = 2\n"},
            as_user=world.bot.login,
        )
        _until(lambda: conclusions(fixed) == {"lint": "success", "tests": "success"})
        ci.stop_event.set()
        ci.join(5)

        waiting = [first]
        human = HumanReviewer(
            world, waiting=lambda: list(waiting), approval_label="merging", interval_s=0.05
        )
        human.start()
        _until(lambda: human.approved == [first])
        human.stop_event.set()
        human.join(5)
        labels = [
            label["name"]
            for label in httpx.get(
                f"{world.url}/repos/{REPO}/issues/{first}",
                headers={"Authorization": f"token {world.ci.token}"},
            ).json()["labels"]
        ]
        assert "merging" in labels and "orchestrator" in labels
    finally:
        world.stop()


def test_the_human_keeps_going_through_an_error_of_the_database(tmp_path: Path) -> None:
    # Under load the daemon's SQLite database may be busy when the scripted person
    # asks which issues wait for it: one failed look must not end its thread.
    world = start_world(tmp_path, {})
    try:
        first = world.issues[0]
        calls = []

        def waiting() -> list[int]:
            calls.append(1)
            if len(calls) < 3:
                raise RuntimeError("database is locked")
            return [first]

        human = HumanReviewer(world, waiting=waiting, approval_label="merging", interval_s=0.05)
        human.start()
        _until(lambda: human.approved == [first])
        human.stop_event.set()
        human.join(5)
        assert len(calls) >= 3
    finally:
        world.stop()
