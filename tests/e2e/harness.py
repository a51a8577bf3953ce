"""Drive the daemon tick by tick against the GitHub emulator, with the scripted agent.

A :class:`Flow` holds a running emulator, a WORKFLOW.md written for it, and an
in-process :class:`Daemon`; tests play the humans and the CI through the
emulator's control API and step the daemon with :meth:`Flow.run`.
"""

from __future__ import annotations

import copy
import json
import shlex
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.daemon.daemon import Daemon
from orchestrator.domain.snapshot import IssueRef, StoredRecord
from orchestrator_sim.clock import parse_time
from orchestrator_sim.testing import Account, SimWorld
from tests.support.idle import wait_idle

SIM_AGENT = f"{shlex.quote(sys.executable)} -m orchestrator_sim.agent"
OWNER_LABEL = "orchestrator"
APPROVAL_LABEL = "state:merging"
STOP_LABEL = "orchestrator:stop"
REPO_STOP_LABEL = "orchestrator:stop-all"
# Transient GitHub failures are retried once, without a noticeable wait (tracker.retry).
FAST_RETRY = {"max_attempts": 2, "base_delay_ms": 10, "max_delay_ms": 50}
# Pause after a tick that did nothing (see Flow.run).
IDLE_PAUSE_S = 0.1


def finding(severity: str = "P2", title: str = "Vague name") -> dict[str, str]:
    return {
        "severity": severity,
        "title": title,
        "summary": "The name says little.",
        "why_it_matters": "Readers have to guess.",
        "suggested_fix": "Rename it.",
        "location": "src/feature.py:1",
    }


def default_scenario() -> dict[str, Any]:
    """Implement with a new commit each time, review with one minor finding, fix CI in rework."""
    return {
        "steps": [
            {"session": "auto"},
            {"write": {"path": "src/feature.py", "content": "FEATURE = 1\n", "append": True}},
            {"commit": "Add the feature"},
            {"usage": {"input_tokens": 100, "cached_input_tokens": 10, "output_tokens": 20}},
            {"pr_description": "## Summary\n\nAdds the feature."},
        ],
        "phases": {
            "reviewing": {
                "steps": [{"message": "reviewing"}, {"review": {"findings": [finding()]}}]
            },
            "rework": {
                "steps": [
                    {"write": {"path": "src/feature.py", "content": "# fixed\n", "append": True}},
                    {"commit": "Fix the failing check"},
                    {
                        "fix_summary": [
                            {
                                "check": "ci",
                                "status": "fixed",
                                "message": "Fixed.",
                                "commit": "HEAD",
                            }
                        ]
                    },
                ]
            },
        },
    }


def merge_sections(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    merged = copy.deepcopy(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge_sections(merged[key], value)
        else:
            merged[key] = value
    return merged


def agent_home(tmp: Path) -> Path:
    """The agents' home in these tests: what the scripted agent reads lives there.

    The daemon's folders (here ``tmp`` itself: it holds the database and the
    kill-switch file) are hidden from sandboxed agents, and the sandbox's
    ``/tmp`` is a private one; the agents' home is mounted in it.
    """
    home = tmp / "agent-home"
    home.mkdir(mode=0o700, exist_ok=True)
    return home


def write_scenario(tmp: Path, scenario: dict[str, Any]) -> Path:
    """The scenario file, where a sandboxed scripted agent can read it."""
    path = agent_home(tmp) / "scenario.json"
    path.write_text(json.dumps(scenario), encoding="utf-8")
    return path


def policy_document(
    tmp: Path, world: SimWorld, scenario: Path, mode: str, extra: dict[str, Any]
) -> dict[str, Any]:
    base: dict[str, Any] = {
        "tracker": {
            "repo": world.repo,
            "endpoint": "$E2E_ENDPOINT",
            "token": "$E2E_TOKEN",
            "retry": FAST_RETRY,
        },
        "polling": {"interval_ms": 1000},
        "workspace": {"root": str(tmp / "workspaces")},
        "agent": {
            "preset": "command",
            "command": f"{SIM_AGENT} --scenario {shlex.quote(str(scenario))}",
            "max_concurrent_agents": 2,
            "stall_timeout_ms": 20_000,
            "turn_timeout_ms": 30_000,
            "max_retry_backoff_ms": 1_000,
            "home": str(agent_home(tmp)),
        },
        "orchestration": {"ownership": {"required_label": OWNER_LABEL}},
        "rollout": {"mode": mode, "kill_switch_file": str(tmp / "STOP")},
        "review": {"enabled": True, "max_passes": 2},
        "merge": {"mode": "auto", "require_human_approval": True},
        "database": {"url": f"sqlite:///{tmp / 'orchestrator.db'}"},
    }
    return merge_sections(base, extra)


def write_policy(path: Path, document: dict[str, Any]) -> Path:
    # JSON is YAML: the front matter is written as one JSON mapping.
    path.write_text(f"---\n{json.dumps(document, indent=2)}\n---\n", encoding="utf-8")
    return path


@dataclass
class Flow:
    """One emulator, one policy, one in-process daemon."""

    world: SimWorld
    tmp: Path
    policy_path: Path
    scenario_path: Path
    env: dict[str, str]
    db_url: str | None = None
    # The lease and claim length (None: the daemon's default).
    lease_s: float | None = None
    daemon: Daemon | None = None
    ticks: int = 0
    history: list[str] = field(default_factory=list)

    # ----------------------------------------------------------- the daemon

    def start(self) -> Daemon:
        options: dict[str, Any] = {} if self.lease_s is None else {"lease_s": self.lease_s}
        daemon = Daemon(
            self.policy_path,
            db_url=self.db_url,
            # A free port: a test that runs the scheduler serves the dashboard there.
            port=0,
            env=self.env,
            **options,
        )
        daemon.start()
        self.daemon = daemon
        return daemon

    def stop(self) -> None:
        if self.daemon is not None:
            self.daemon.shutdown(grace_s=0)
            self.daemon = None

    def restart(self) -> Daemon:
        self.stop()
        return self.start()

    @property
    def d(self) -> Daemon:
        assert self.daemon is not None, "the daemon is not started"
        return self.daemon

    def step(self) -> bool:
        """One tick, then wait for the turns it started to be recorded.

        Returns whether the tick did anything (a transition, a write or a turn).
        """
        report = self.d.tick()
        assert wait_idle(self.d, 60), "an agent turn did not finish"
        self.ticks += 1
        if report is None:
            return False
        execution = report.execution
        return execution.changed or bool(execution.dispatched)

    def run(self, until: Callable[[], bool], max_ticks: int = 40, what: str = "") -> None:
        """Tick until ``until()`` holds; fail with the phase history otherwise.

        A tick that did nothing is followed by a short pause, so that waits
        measured in time (a retry's backoff) elapse within ``max_ticks`` ticks
        however fast the machine runs them.
        """
        for _ in range(max_ticks):
            if until():
                return
            if not self.step():
                time.sleep(IDLE_PAUSE_S)
        if until():
            return
        raise AssertionError(
            f"not reached after {max_ticks} ticks: {what or until}; phases {self.history[-20:]}"
        )

    def run_to_phase(self, number: int, phase: str, max_ticks: int = 40) -> None:
        self.run(lambda: self.phase(number) == phase, max_ticks, what=f"#{number} in {phase}")

    def to_waiting_for_human(self) -> tuple[int, int]:
        """Open an issue and run it to waiting_for_human with green checks: (issue, PR)."""
        number = self.open_issue()
        return number, self.checks_pass(number)

    def checks_pass(self, number: int, max_ticks: int = 40) -> int:
        """Run the issue to its pull request, pass its checks and run it to
        waiting_for_human; its pull request's number."""
        self.run_to_phase(number, "waiting_for_checks", max_ticks)
        pr = self.pr_number(number)
        self.check(pr, "success")
        self.run_to_phase(number, "waiting_for_human")
        return pr

    def wipe_database(self) -> None:
        """Stop the daemon and lose its database, as after a disk loss; start it again."""
        self.stop()
        for path in self.tmp.glob("orchestrator.db*"):
            path.unlink()
        self.start()

    def idle_ticks(self, count: int) -> None:
        for _ in range(count):
            self.step()

    def edit_policy(self, extra: dict[str, Any]) -> None:
        document = json.loads(self.policy_path.read_text().split("---\n")[1])
        write_policy(self.policy_path, merge_sections(document, extra))
        self.d.reload_policy()

    # -------------------------------------------------------------- records

    def ref(self, number: int) -> IssueRef:
        return IssueRef(self.world.repo, number)

    def record(self, number: int) -> StoredRecord | None:
        row = self.d.parts.records.get(self.ref(number))
        return row.record if row is not None else None

    def branch(self, number: int) -> str:
        """The branch the daemon named for the issue when it claimed it."""
        record = self.record(number)
        assert record is not None and record.workpad.branch, f"#{number} has no branch yet"
        return record.workpad.branch

    def phase(self, number: int) -> str | None:
        record = self.record(number)
        phase = record.phase.value if record is not None else None
        if not self.history or self.history[-1] != f"#{number}:{phase}":
            self.history.append(f"#{number}:{phase}")
        return phase

    def pr_number(self, number: int) -> int:
        record = self.record(number)
        assert record is not None and record.workpad.pr is not None, "no pull request recorded"
        return record.workpad.pr.number

    # ------------------------------------------------------- humans and CI

    @property
    def human(self) -> Account:
        return self.world.human

    def open_issue(self, title: str = "Add the feature", labels: list[str] | None = None) -> int:
        return self.world.control.create_issue(
            self.world.repo,
            title,
            as_user=self.human.login,
            body="Please add the feature.",
            labels=[OWNER_LABEL, *(labels or [])],
        )

    def pull(self, pr_number: int) -> dict[str, Any]:
        return self.rest("GET", f"/repos/{self.world.repo}/pulls/{pr_number}")

    def head(self, pr_number: int) -> str:
        return str(self.pull(pr_number)["head"]["sha"])

    def check(self, pr_number: int, conclusion: str | None, status: str = "completed") -> None:
        """Report the CI check ``ci`` on the pull request's current head."""
        self.world.control.check_run(
            self.world.repo,
            sha=self.head(pr_number),
            name="ci",
            status=status,
            conclusion=conclusion,
            summary=f"ci {conclusion or status}",
            log="collecting tests\nFAILED test_feature.py::test_it\n"
            if conclusion == "failure"
            else None,
        )

    def approve(self, number: int, as_user: str | None = None) -> None:
        """Add the approval label, as a human would: after the current head appeared.

        GitHub stamps events in whole seconds and an approval label counts only when
        it was added strictly after the head was first seen, so this waits for the
        next second when the head appeared in the current one.
        """
        self.wait_past_head(number)
        self.world.control.add_labels(
            self.world.repo, number, [APPROVAL_LABEL], as_user=as_user or self.human.login
        )

    def wait_past_head(self, number: int) -> None:
        """Sleep until GitHub's clock is in a later second than the head's first sighting."""
        record = self.record(number)
        seen = getattr(record, "head_seen", None)
        moments = [seen.since.timestamp()] if seen is not None else []
        if record is not None and record.workpad.pr is not None:
            updated = self.pull(record.workpad.pr.number).get("updated_at")
            if updated:
                moments.append(parse_time(str(updated)).timestamp())
        if moments:
            while time.time() < max(moments) + 1.0:
                time.sleep(0.05)

    def rework_after_a_human_push(self, number: int) -> tuple[int, str]:
        """From waiting_for_checks: a human pushes onto the branch and CI fails on their head;
        run until a rework turn ran. Returns (PR, the human's head)."""
        self.run_to_phase(number, "waiting_for_checks")
        pr = self.pr_number(number)
        head = self.push_as_human(self.branch(number))
        self.check(pr, "failure")
        self.run(
            lambda: any(r.phase == "rework" for r in self.d.db.runs.for_issue(1)),
            what="a rework turn after the human's push",
        )
        return pr, head

    def push_as_human(self, branch: str, content: str = "human change\n") -> str:
        return str(
            self.world.control.push(
                self.world.repo,
                branch=branch,
                files={"src/human.py": content},
                message="A human's change",
                as_user=self.human.login,
            )
        )

    # -------------------------------------------------------------- reading

    def rest(self, method: str, path: str, body: Any = None) -> Any:
        """A REST call as the human (so the bot's budget and write log stay untouched)."""
        gh = self.world.github(self.human)
        status, _headers, raw = gh.requester.requestJson(method, path, input=body)
        assert status < 400, f"{method} {path}: {status} {raw}"
        return json.loads(raw) if raw else None

    def comments(self, number: int) -> list[dict[str, Any]]:
        return list(self.rest("GET", f"/repos/{self.world.repo}/issues/{number}/comments"))

    def bot_comments(self, number: int, marker: str) -> list[dict[str, Any]]:
        return [
            c
            for c in self.comments(number)
            if c["user"]["login"] == self.world.bot.login and marker in c["body"]
        ]

    def workpads(self, number: int) -> list[dict[str, Any]]:
        return self.bot_comments(number, "## Orchestrator Workpad")

    def review_comments(self, pr_number: int) -> list[dict[str, Any]]:
        return self.bot_comments(pr_number, "<!-- orchestrator-review-comment -->")

    def pulls(self) -> list[dict[str, Any]]:
        return list(self.rest("GET", f"/repos/{self.world.repo}/pulls?state=all"))

    def issue(self, number: int) -> dict[str, Any]:
        return dict(self.rest("GET", f"/repos/{self.world.repo}/issues/{number}"))

    def bot_writes(self) -> list[dict[str, Any]]:
        return [w for w in self.world.control.writes() if w["login"] == self.world.bot.login]


@contextmanager
def flow_for(
    tmp: Path,
    world: SimWorld,
    *,
    mode: str = "merge",
    scenario: dict[str, Any] | None = None,
    policy: dict[str, Any] | None = None,
    start: bool = True,
    db_url: str | None = None,
    protect: bool = True,
    lease_s: float | None = None,
) -> Iterator[Flow]:
    scenario_path = write_scenario(tmp, scenario or default_scenario())
    document = policy_document(tmp, world, scenario_path, mode, policy or {})
    if protect:
        # As on a real repository: the base branch requires the checks the policy requires.
        merge = document.get("merge", {})
        required = (
            list(merge.get("required_checks") or ["ci"])
            if merge.get("require_green_checks", True)
            else []
        )
        world.control.protect(
            world.repo,
            "main",
            required_checks=required,
            dismiss_stale_reviews=True,
            enforce_admins=True,
        )
    policy_path = write_policy(tmp / "WORKFLOW.md", document)
    env = {"E2E_ENDPOINT": world.url, "E2E_TOKEN": world.bot.token}
    flow = Flow(world, tmp, policy_path, scenario_path, env, db_url, lease_s)
    if start:
        flow.start()
    try:
        yield flow
    finally:
        flow.stop()
