"""Running the demo: the world, its actors, the daemon, live progress and a summary."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import httpx

from orchestrator.domain.phases import Phase
from orchestrator_sim.demo.actors import CISimulator, HumanReviewer
from orchestrator_sim.demo.world import REPO, SCENARIO, DemoWorld, start_world

if TYPE_CHECKING:
    from orchestrator.daemon.daemon import Daemon
    from orchestrator.daemon.process import ProcessSetup

MERGE_STATE = "Merging"


def demo_policy_path() -> Path:
    """workflows/demo.md from a source checkout, or the installed copy."""
    candidates = [
        Path(__file__).resolve().parents[3] / "workflows" / "demo.md",
        Path(sys.prefix) / "share" / "orchestrator" / "workflows" / "demo.md",
    ]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(
        "cannot find workflows/demo.md (looked in " + ", ".join(map(str, candidates)) + ")"
    )


@dataclass(frozen=True)
class Summary:
    """What the demo achieved, printed at the end."""

    merged: int
    issues: int
    pull_requests: int
    review_comments: int
    rework_cycles: int
    github_units: int
    seconds: float

    def lines(self) -> list[str]:
        return [
            f"merged and closed: {self.merged} of {self.issues} issues",
            f"pull requests: {self.pull_requests}",
            f"comments by the daemon on pull requests (reviews): {self.review_comments}",
            f"rework cycles: {self.rework_cycles}",
            f"GitHub units spent by the daemon: {self.github_units}",
            f"time: {self.seconds:.1f} s",
        ]


class Demo:
    """One demo run in ``workdir``; ``say`` prints a line of progress.

    ``process`` is how the command set its process up for the daemon (None: the daemon
    shares the calling program's process as it is).
    """

    def __init__(
        self,
        workdir: Path,
        *,
        port: int,
        say: Callable[[str], None],
        process: ProcessSetup | None = None,
    ) -> None:
        self.workdir = workdir
        self.process = process
        self.port = port
        self.say = say
        self._world: DemoWorld | None = None
        self._daemon: Daemon | None = None
        self._actors: list[CISimulator | HumanReviewer] = []
        self._seen: set[int] = set()
        self._started = time.monotonic()

    @property
    def world(self) -> DemoWorld:
        assert self._world is not None, "the demo has not started"
        return self._world

    @property
    def daemon(self) -> Daemon:
        assert self._daemon is not None, "the demo has not started"
        return self._daemon

    def start(self) -> str | None:
        """Start the emulator, the actors and the daemon; returns the dashboard URL."""
        from orchestrator.daemon.daemon import Daemon

        self.workdir.mkdir(parents=True, exist_ok=True)
        # The agents' home: the sandbox hides the rest of the folder (database, kill switch).
        home = self.workdir / "agent-home"
        home.mkdir(mode=0o700, exist_ok=True)
        (home / "scenario.yaml").write_text(SCENARIO, encoding="utf-8")
        self._world = world = start_world(self.workdir, {})
        env = {
            **os.environ,
            "ORCHESTRATOR_DEMO_ENDPOINT": world.url,
            "ORCHESTRATOR_DEMO_TOKEN": world.bot.token,
            "ORCHESTRATOR_DEMO_DIR": str(self.workdir),
            "ORCHESTRATOR_DEMO_PYTHON": sys.executable,
        }
        self._daemon = daemon = Daemon(
            demo_policy_path(), port=self.port, env=env, process=self.process
        )
        daemon.start()
        approval = daemon.view.policy.tracker.state_labels[MERGE_STATE]
        self._actors = [
            CISimulator(world, fail_once_issue=world.issues[1]),
            HumanReviewer(world, waiting=self._waiting_for_human, approval_label=approval),
        ]
        for actor in self._actors:
            actor.start()
        daemon.run_scheduler()
        return daemon.web_url

    def _waiting_for_human(self) -> list[int]:
        return [
            row.number
            for row in self.daemon.db.issues.all()
            if row.phase == Phase.WAITING_FOR_HUMAN
        ]

    def progress(self) -> None:
        """Print the phase events recorded since the last call, oldest first."""
        db = self.daemon.db
        fresh = []
        for row in db.issues.all():
            fresh += [
                (event, row.number)
                for event in db.issues.events(row.id)
                if event.id not in self._seen
            ]
        for event, number in sorted(fresh, key=lambda item: (item[0].at, item[0].id)):
            self._seen.add(event.id)
            moved = (
                f"{event.from_phase} -> {event.to_phase}"
                if event.from_phase
                else f"tracked, {event.to_phase}"
            )
            self.say(f"{event.at:%H:%M:%S}  {REPO}#{number}  {moved}  ({event.reason})")

    def finished(self) -> bool:
        rows = self.daemon.db.issues.all()
        return len(rows) == len(self.world.issues) and all(r.phase == Phase.DONE for r in rows)

    def summary(self) -> Summary:
        world = self.world
        rows = self.daemon.db.issues.all()
        auth = {"Authorization": f"token {world.ci.token}"}
        with httpx.Client(base_url=world.url, headers=auth, timeout=10) as client:
            pulls = client.get(f"/repos/{REPO}/pulls", params={"state": "all"}).json()
            review_comments = sum(
                1
                for pr in pulls
                for comment in client.get(f"/repos/{REPO}/issues/{pr['number']}/comments").json()
                if comment["user"]["login"] == world.bot.login
            )
        return Summary(
            merged=sum(1 for row in rows if row.phase == Phase.DONE),
            issues=len(world.issues),
            pull_requests=len(pulls),
            review_comments=review_comments,
            rework_cycles=sum(row.rework_cycles for row in rows),
            github_units=self.daemon.accounting.total_units(),
            seconds=time.monotonic() - self._started,
        )

    def stop(self) -> None:
        for actor in self._actors:
            actor.stop_event.set()
        if self._daemon is not None:
            self._daemon.shutdown(grace_s=5)
        if self._world is not None:
            self._world.stop()
