"""The demo by hand, with nothing but ``orchestrator`` commands: serve the emulator, open a
labelled issue, run the daemon in merge mode, watch its pull request, set the check green,
approve it, and see it merged (docs/emulator.md, "Playing GitHub by hand")."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

pytestmark = pytest.mark.slow

WORKFLOW = Path(__file__).resolve().parents[2] / "workflows" / "demo.md"
REPO = "demo/widgets"
BOT_TOKEN = "ghp_demo_bot_0000000000000000000000000000"
# Generous: a loaded 2-core machine starts several Python processes per step.
WAIT_S = 150.0

BOOTSTRAP = {
    "users": [
        {"login": "orchestrator-bot", "token": BOT_TOKEN, "bot": True},
        {
            "login": "alice",
            "token": "ghp_demo_alice_00000000000000000000000000",
            "name": "Alice Example",
        },
    ],
    "repos": [
        {
            "owner": "demo",
            "name": "widgets",
            "files": {"README.md": "# widgets\n", "src/widgets/__init__.py": ""},
            "permissions": {"orchestrator-bot": "write", "alice": "admin"},
        }
    ],
}

# The scenario of the worked session in docs/emulator.md.
SCENARIO = """\
steps:
  - session: auto
  - write:
      path: src/widgets/spinner.py
      content: |
        FRAMES = "|/-"
  - commit: Add a spinner widget
  - pr_description: |
      ## Summary
      Adds a spinner widget.
phases:
  reviewing:
    steps:
      - session: auto
      - review:
          overview: Small and clear.
          findings: []
  rework:
    steps:
      - session: auto
      - write:
          path: src/widgets/spinner.py
          append: true
          content: |
            DELAY = 0.1
      - commit: Fix the failing check
      - fix_summary:
          entries:
            - {check: tests, status: fixed, message: Fixed., commit: HEAD}
"""

T = TypeVar("T")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Shell:
    """Runs ``orchestrator ...`` as a person would, in one environment."""

    def __init__(self, env: dict[str, str], daemon_log: Path) -> None:
        self.env = env
        self.daemon_log = daemon_log

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, "-m", "orchestrator", *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
            check=False,
        )
        if check:
            assert done.returncode == 0, (args, done.stdout, done.stderr[-3000:])
            assert "Traceback" not in done.stderr, done.stderr[-3000:]
        return done

    def start(self, *args: str, log: Path) -> subprocess.Popen[bytes]:
        with log.open("wb") as output:
            return subprocess.Popen(
                [sys.executable, "-m", "orchestrator", *args],
                env=self.env,
                stdout=output,
                stderr=output,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )

    def wait_for(self, what: str, probe: Callable[[], T | None]) -> T:
        deadline = time.monotonic() + WAIT_S
        while True:
            found = probe()
            if found:
                return found
            if time.monotonic() > deadline:
                tail = (
                    self.daemon_log.read_text(errors="replace")[-6000:]
                    if self.daemon_log.exists()
                    else "(no daemon log)"
                )
                raise AssertionError(
                    f"timed out waiting for {what}; the daemon's log ends:\n{tail}"
                )
            time.sleep(0.5)


def _stop(process: subprocess.Popen[bytes] | None) -> None:
    if process is None or process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def test_the_demo_by_hand(tmp_path: Path) -> None:
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    run_dir = tmp_path / "run"
    home = run_dir / "agent-home"
    home.mkdir(parents=True, mode=0o700)
    (home / "scenario.yaml").write_text(SCENARIO, encoding="utf-8")
    bootstrap = tmp_path / "bootstrap.json"
    bootstrap.write_text(json.dumps(BOOTSTRAP), encoding="utf-8")
    (tmp_path / "home").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORCHESTRATOR_")}
    env.update(
        HOME=str(tmp_path / "home"),
        ORCHESTRATOR_LOG_FORMAT="json",
        ORCHESTRATOR_SIM_URL=url,
        ORCHESTRATOR_DEMO_ENDPOINT=url,
        ORCHESTRATOR_DEMO_TOKEN=BOT_TOKEN,
        ORCHESTRATOR_DEMO_DIR=str(run_dir),
        ORCHESTRATOR_DEMO_PYTHON=sys.executable,
        # The demo's scripted human approves by label; this one approves by review.
        ORCHESTRATOR_MERGE__APPROVAL_SOURCE="either",
    )
    shell = Shell(env, tmp_path / "daemon.log")
    server: subprocess.Popen[bytes] | None = None
    daemon: subprocess.Popen[bytes] | None = None
    try:
        server = shell.start(
            "sim", "serve", "--port", str(port), "--state", str(tmp_path / "sim"),
            "--bootstrap", str(bootstrap),
            log=tmp_path / "sim.log",
        )  # fmt: skip

        def emulator_up() -> subprocess.CompletedProcess[str] | None:
            done = shell.run("sim", "state", REPO, check=False)
            return done if done.returncode == 0 else None

        first = shell.wait_for("the emulator", emulator_up)
        assert first.stdout.splitlines() == [
            REPO,
            "  open issues (0):",
            "  open pull requests (0):",
            "  merged pull requests (0):",
            "  closed issues (0):",
        ]
        assert f"GitHub emulator on {url}" in (tmp_path / "sim.log").read_text()

        protected = shell.run(
            "sim", "protect", REPO, "main", "--required-check", "tests", "--required-approvals", "1"
        )
        assert protected.stdout.strip() == (
            "demo/widgets:main protected: required checks tests; approvals 1"
        )
        opened = shell.run(
            "sim", "issue", "create", REPO, "--title", "Add a spinner widget",
            "--body", "Spinners show that work is in progress.", "--label", "orchestrator",
        )  # fmt: skip
        assert opened.stdout.strip() == f"demo/widgets#1 {url}/demo/widgets/issues/1"

        daemon = shell.start(
            "run", str(WORKFLOW), "--port", "0", "--grace-seconds", "1", log=shell.daemon_log
        )

        def pull_request() -> dict[str, Any] | None:
            done = shell.run("sim", "state", REPO, "--format", "json")
            pulls = json.loads(done.stdout)["repos"][0]["open_pulls"]
            return pulls[0] if pulls else None

        pull = shell.wait_for("the daemon's pull request", pull_request)
        number, head = int(pull["number"]), str(pull["head_sha"])
        shown = shell.run("sim", "pr", "show", REPO, str(number)).stdout.splitlines()
        assert shown[0] == f"demo/widgets#{number}  Add a spinner widget"
        assert "  state:      open, not merged" in shown
        assert "  author:     orchestrator-bot[bot]" in shown
        assert f"  head:       {head}" in shown
        assert "  checks:     (none on this head)" in shown
        assert "  reviews:    (none)" in shown

        checked = shell.run("sim", "check", "set", REPO, str(number), "--name", "tests")
        assert checked.stdout.strip() == (
            f"tests: success on {head[:12]} (head of demo/widgets#{number})"
        )
        approved = shell.run("sim", "review", "approve", REPO, str(number), "--body", "Thanks!")
        assert approved.stdout.strip() == (
            f"demo/widgets#{number}: APPROVED by alice on {head[:12]}"
        )

        def merged_and_closed() -> str | None:
            out = shell.run("sim", "state", REPO).stdout
            done = "merged pull requests (1):" in out and "closed issues (1):" in out
            return out if done else None

        final = shell.wait_for("the merge and the closed issue", merged_and_closed)
        lines = final.splitlines()
        assert "  open issues (0):" in lines
        assert "  open pull requests (0):" in lines
        assert any(
            line.startswith(f"    #{number} Add a spinner widget (merged ") for line in lines
        ), final
        assert any(line.startswith("    #1 Add a spinner widget") for line in lines), final
        merged = shell.run("sim", "pr", "show", REPO, str(number)).stdout
        assert "  state:      merged by orchestrator-bot[bot] as " in merged
        assert "  checks:     tests success" in merged
        assert "  reviews:    alice APPROVED (this head)" in merged
    finally:
        _stop(daemon)
        _stop(server)
