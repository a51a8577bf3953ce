"""The outside world of the demo: a CI service and a human reviewer, as threads.

The CI reports checks on every new head of every open pull request (one
pull request fails its tests once, then passes after the agent's fix); the
human moves an issue to the approval state when its pull request waits for
a human.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import httpx

from orchestrator.logs import get_logger, issue_key
from orchestrator_sim.demo.world import REPO, DemoWorld

log = get_logger(__name__)

CHECKS = ("lint", "tests")
FAILING_LOG = """\
============================= test session starts ==============================
collected 2 items

tests/test_widgets.py .                                                  [ 50%]
tests/test_widget_{n}.py F                                               [100%]

=================================== FAILURES ===================================
    def test_name():
>       assert NAME == "widget-{n}"
E       AssertionError: widget module missing VERSION
FAILED tests/test_widget_{n}.py::test_name
========================= 1 failed, 1 passed in 0.02s ==========================
"""


class CISimulator(threading.Thread):
    """Runs 'lint' and 'tests' on every new pull request head; one head fails once."""

    def __init__(
        self, world: DemoWorld, *, fail_once_issue: int | None, interval_s: float = 0.3
    ) -> None:
        super().__init__(name="demo-ci", daemon=True)
        self.world = world
        self.fail_once_issue = fail_once_issue
        self.interval_s = interval_s
        self.stop_event = threading.Event()
        self._seen: set[str] = set()
        self._failed_once = False
        self.runs = 0

    def run(self) -> None:
        client = httpx.Client(
            base_url=self.world.url,
            timeout=10,
            headers={"Authorization": f"token {self.world.ci.token}"},
        )
        pending: list[tuple[str, int]] = []
        while not self.stop_event.wait(self.interval_s):
            try:
                for sha, pr_number in pending:
                    self._finish(sha, pr_number)
                pending = []
                for pr in client.get(f"/repos/{REPO}/pulls", params={"state": "open"}).json():
                    sha = pr["head"]["sha"]
                    if sha not in self._seen:
                        for name in CHECKS:
                            self.world.server.control.check_run(
                                REPO, sha=sha, name=name, status="in_progress"
                            )
                        # Seen once its checks are reported: an error before is retried.
                        self._seen.add(sha)
                        pending.append((sha, int(pr["number"])))
            except Exception as exc:
                # A scripted CI keeps going through any error (a busy database, a
                # timeout): a thread that died would leave the demo waiting forever.
                log.warning("demo_ci_error", error=f"{type(exc).__name__}: {exc}")
        client.close()

    def _finish(self, sha: str, pr_number: int) -> None:
        issue = self._issue_of(pr_number)
        fail = issue == self.fail_once_issue and not self._failed_once
        control = self.world.server.control
        control.check_run(
            REPO, sha=sha, name="lint", conclusion="success", summary="No lint problems."
        )
        if fail:
            self._failed_once = True
            control.check_run(
                REPO,
                sha=sha,
                name="tests",
                conclusion="failure",
                title="1 test failed",
                summary=f"tests/test_widget_{issue}.py::test_name failed",
                log=FAILING_LOG.format(n=issue),
                annotations=[
                    {
                        "path": f"tests/test_widget_{issue}.py",
                        "start_line": 5,
                        "end_line": 5,
                        "annotation_level": "failure",
                        "message": "AssertionError: widget module missing VERSION",
                    }
                ],
            )
        else:
            control.check_run(REPO, sha=sha, name="tests", conclusion="success", summary="2 passed")
        self.runs += 1

    def _issue_of(self, pr_number: int) -> int | None:
        # The demo's branches end in the issue number's slug: agent/<n>-<title>.
        data = httpx.get(
            f"{self.world.url}/repos/{REPO}/pulls/{pr_number}",
            headers={"Authorization": f"token {self.world.ci.token}"},
            timeout=10,
        ).json()
        body = str(data.get("body") or "")
        for number in self.world.issues:
            if f"#{number}" in body or f"/{number}-" in str(data["head"]["ref"]):
                return number
        return None


class HumanReviewer(threading.Thread):
    """Approves an issue's merge when the daemon says it waits for a human."""

    def __init__(
        self,
        world: DemoWorld,
        *,
        waiting: Callable[[], list[int]],
        approval_label: str,
        interval_s: float = 0.3,
    ) -> None:
        super().__init__(name="demo-human", daemon=True)
        self.world = world
        self.waiting = waiting
        self.approval_label = approval_label
        self.interval_s = interval_s
        self.stop_event = threading.Event()
        self.approved: list[int] = []

    def run(self) -> None:
        while not self.stop_event.wait(self.interval_s):
            try:
                for number in self.waiting():
                    # An approval covers one head: a label the daemon withdrew after the
                    # head moved is given again, as a reviewer would after a new look.
                    if number in self.approved and self._labelled(number):
                        continue
                    self.world.server.control.add_labels(
                        REPO, number, [self.approval_label], as_user=self.world.human.login
                    )
                    if number not in self.approved:
                        self.approved.append(number)
                    log.info(
                        "demo_human_approved",
                        issue=issue_key(REPO, number),
                        label=self.approval_label,
                    )
            except Exception as exc:
                # The scripted person keeps going through any error (a locked SQLite
                # database under load, a timeout): a dead thread stalls the demo.
                log.warning("demo_human_error", error=f"{type(exc).__name__}: {exc}")

    def _labelled(self, number: int) -> bool:
        state = self.world.server.emulator.state
        owner, name = REPO.split("/", 1)
        with state.lock:
            repo = state.repo(owner, name)
            labels = state.issue_labels(repo, state.issue(repo, number))
        return any(label.name == self.approval_label for label in labels)
