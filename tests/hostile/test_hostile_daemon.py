"""One hostile agent against the real daemon, run as an unprivileged user: nothing gets out.

The daemon is ``orchestrator run`` in a process of its own, as ``nobody`` when
the tests run as root (through ``setpriv``), with the GitHub token and the
operator API token in its environment and in a secrets file in its state
folder. Its agent is :mod:`tests.hostile.agent`, which tries every attack in
one go (see its docstring). A listener on 127.0.0.1 answers every request with
a Basic-auth challenge, so a git that was redirected to it would hand over its
credential; the agent sends all it captures there and to a file.

It passes when no captured byte holds either token (or the secrets file's
canary), no file outside the workspace changed, the absurd result files each
became a located failure with its backoff until the issue blocked, and the
daemon kept ticking. With ``agent.sandbox: none`` only the git-layer and
result-file attacks run: the ``/proc`` scan and reading the daemon's files are
contained only by the sandbox (docs/agent.md, "Threat model").
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pwd
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from orchestrator.agent import probe_bwrap
from orchestrator_sim.testing import SimWorld
from tests.e2e.harness import OWNER_LABEL, Flow, write_policy

AGENT = Path(__file__).with_name("agent.py")
ORCHESTRATOR = str(Path(sys.executable).parent / "orchestrator")
API_TOKEN = "api-token-5b1f0c9e-hostile-suite"
CANARY = "canary-secret-0d7e4a1c-hostile-suite"
SCANNER_MARKER = b"--marker=hostile-scanner"
CHALLENGE = (
    b'HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm="github"\r\n'
    b"Content-Length: 0\r\nConnection: close\r\n\r\n"
)


class Listener:
    """A TCP server on 127.0.0.1 that keeps every byte it receives and asks for credentials."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.captured: list[bytes] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        conn.settimeout(5)
        received = b""
        try:
            while True:
                chunk = conn.recv(65536)
                if not chunk:
                    break
                received += chunk
                if b"\r\n\r\n" in received:
                    head, _, body = received.partition(b"\r\n\r\n")
                    length = 0
                    for line in head.split(b"\r\n"):
                        if line.lower().startswith(b"content-length:"):
                            length = int(line.split(b":", 1)[1])
                    if len(body) >= length:
                        break
            conn.sendall(CHALLENGE)
        except OSError:
            pass
        finally:
            conn.close()
            with self._lock:
                self.captured.append(received)

    def tagged(self, tag: str) -> list[bytes]:
        with self._lock:
            return [c for c in self.captured if c.startswith(f"POST /{tag} ".encode())]

    def everything(self) -> bytes:
        with self._lock:
            return b"\n".join(self.captured)

    def close(self) -> None:
        self.server.close()


def daemon_user() -> tuple[list[str], int, int]:
    """The command prefix that drops to ``nobody`` when we are root, and that user's ids."""
    if os.geteuid() != 0:
        return [], os.getuid(), os.getgid()
    if shutil.which("setpriv") is None:
        pytest.fail("setpriv (util-linux) is needed to run the daemon as an unprivileged user")
    nobody = pwd.getpwnam("nobody")
    prefix = [
        "setpriv",
        f"--reuid={nobody.pw_uid}",
        f"--regid={nobody.pw_gid}",
        "--clear-groups",
        "--inh-caps=-all",
    ]
    return prefix, nobody.pw_uid, nobody.pw_gid


def chown_tree(root: Path, uid: int, gid: int) -> None:
    if os.geteuid() != 0:
        return
    for folder, dirs, files in os.walk(root):
        for name in [folder, *(os.path.join(folder, n) for n in dirs + files)]:
            os.lchown(name, uid, gid)


def digest(path: Path) -> str:
    if path.is_symlink():
        return "link:" + os.readlink(path)
    if path.is_dir():
        return "dir"
    return hashlib.sha256(path.read_bytes()).hexdigest()


def snapshot(paths: list[Path]) -> dict[str, str]:
    found: dict[str, str] = {}
    for root in paths:
        if not root.exists():
            continue
        for path in [root, *root.rglob("*")] if root.is_dir() else [root]:
            found[str(path)] = digest(path)
    return found


class Layout:
    """The daemon's folders, the agent's kit, and a file the agent must never reach."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.daemon = base / "daemon"
        self.home = self.daemon / "home"
        self.state = self.daemon / "state"
        self.switch = self.daemon / "switch"
        self.secrets = self.state / "secrets.env"
        self.workspaces = base / "workspaces"
        self.mirrors = base / "workspaces.mirrors"
        # The agents' home (agent.home) holds the agent's orders: the sandbox's /tmp is private.
        self.kit = base / "agent-home"
        self.precious = base / "precious.txt"
        self.policy = self.daemon / "WORKFLOW.md"
        self.log = base / "daemon.log"

    @property
    def db_url(self) -> str:
        return f"sqlite:///{self.state / 'orchestrator.db'}"

    def outside_the_workspace(self) -> list[Path]:
        """What no agent may change (the database and the mirrors are the daemon's to change)."""
        return [self.precious, self.policy, self.secrets, self.switch, self.home]

    def poisoned_mirrors(self, listener: Listener) -> list[str]:
        """Mirror configs that name the listener, and hooks that git did not put there."""
        found = [
            str(config)
            for config in self.mirrors.glob("*.git/config")
            if str(listener.port) in config.read_text(errors="replace")
        ]
        found += [
            str(hook)
            for hook in self.mirrors.glob("*.git/hooks/*")
            if not hook.name.endswith(".sample")
        ]
        return found


@contextmanager
def hostile_layout(keep: Path) -> Iterator[Layout]:
    """A fresh folder in /tmp every user can enter (pytest's own is private to root)."""
    base = Path(tempfile.mkdtemp(prefix="hostile-", dir="/tmp"))
    base.chmod(0o755)
    layout = Layout(base)
    try:
        yield layout
    finally:
        if layout.log.exists():
            shutil.copy(layout.log, keep / "daemon.log")
        if not os.environ.get("HOSTILE_KEEP"):
            shutil.rmtree(base, ignore_errors=True)


def agent_python() -> str:
    """An interpreter the daemon's user can run in the sandbox (the agent needs only the stdlib).

    The tests' own may live in root's private home, which a sandbox of
    ``nobody`` cannot enter.
    """
    if os.geteuid() == 0 and os.access("/usr/bin/python3", os.X_OK):
        return "/usr/bin/python3"
    return sys.executable


def policy(layout: Layout, world: SimWorld, sandbox: str) -> dict[str, Any]:
    command = " ".join(
        [
            shlex.quote(agent_python()),
            shlex.quote(str(AGENT)),
            shlex.quote(str(layout.kit / "config.json")),
        ]
    )
    return {
        "tracker": {"repo": world.repo, "endpoint": "$E2E_ENDPOINT", "token": "$GITHUB_TOKEN"},
        "polling": {"interval_ms": 300},
        "workspace": {"root": str(layout.workspaces)},
        "agent": {
            "preset": "command",
            "command": command,
            "max_concurrent_agents": 1,
            "stall_timeout_ms": 60_000,
            "turn_timeout_ms": 90_000,
            "max_retry_backoff_ms": 1_000,
            "sandbox": sandbox,
            "home": str(layout.kit),
        },
        "orchestration": {
            "ownership": {"required_label": OWNER_LABEL},
            "max_failed_attempts": 3,
        },
        "rollout": {"mode": "mutate", "kill_switch_file": str(layout.switch / "STOP")},
        "review": {"enabled": True, "max_passes": 2},
        "server": {"token": "$E2E_API_TOKEN"},
        "database": {"url": layout.db_url},
    }


def prepare(layout: Layout, world: SimWorld, listener: Listener, sandbox: str) -> None:
    for folder in (layout.daemon, layout.home, layout.state, layout.switch):
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    layout.kit.mkdir(mode=0o700)
    layout.precious.write_text("the daemon's own file\n")
    layout.secrets.write_text(
        f"GITHUB_TOKEN={world.bot.token}\nAPI_TOKEN={API_TOKEN}\nCANARY={CANARY}\n"
    )
    sandboxed = sandbox == "bwrap"
    config = {
        "listener": listener.url,
        "github_url": world.url.rstrip("/"),
        "repo": world.repo,
        "attack_os": sandboxed,
        "targets": {
            "mirrors": str(layout.mirrors),
            "precious": str(layout.precious),
            "state": [str(layout.state), str(layout.secrets), str(layout.switch)],
        },
    }
    (layout.kit / "config.json").write_text(json.dumps(config))
    write_policy(layout.policy, policy(layout, world, sandbox))
    for path in (layout.kit / "config.json", layout.precious):
        path.chmod(0o644)


@contextmanager
def hostile_daemon(layout: Layout, world: SimWorld) -> Iterator[subprocess.Popen[bytes]]:
    prefix, uid, gid = daemon_user()
    chown_tree(layout.base, uid, gid)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(layout.home),
        "XDG_STATE_HOME": str(layout.state),
        "E2E_ENDPOINT": world.url,
        "GITHUB_TOKEN": world.bot.token,
        "E2E_API_TOKEN": API_TOKEN,
    }
    argv = [ORCHESTRATOR, "--log-format", "json", "run", str(layout.policy), "--port", "0"]
    with layout.log.open("ab") as log:
        proc = subprocess.Popen(
            [*prefix, *argv], env=env, stdout=log, stderr=log, start_new_session=True
        )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
        # Whatever escaped (the /proc scanner without a sandbox) goes too.
        for pid in scanner_pids():
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def events(layout: Layout, name: str | None = None) -> list[dict[str, Any]]:
    found = []
    for line in layout.log.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("{"):
            entry = json.loads(line)
            if name is None or entry.get("event") == name:
                found.append(entry)
    return found


def wait_for(condition: Any, what: str, layout: Layout, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            lines = layout.log.read_text(errors="replace").splitlines()
            tail = [line for line in lines if '"event": "tick"' not in line][-30:]
            pytest.fail(f"never happened: {what}\n" + "\n".join(tail))
        time.sleep(0.2)


def issue_view(layout: Layout, world: SimWorld, number: int) -> dict[str, Any]:
    """The daemon's API view of an issue (its phase and agent runs); {} before it has one."""
    wait_for(lambda: bool(events(layout, "web_started")), "the API", layout)
    api = events(layout, "web_started")[0]["url"]
    answer = httpx.get(
        f"{api}/api/v1/issues/{world.repo}/{number}",
        headers={"Authorization": f"Bearer {API_TOKEN}"},
        timeout=10,
    )
    return dict(answer.json()) if answer.status_code == 200 else {}


def scanner_pids() -> list[int]:
    """The agent's ``/proc`` scanners still running anywhere on this machine."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if SCANNER_MARKER in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def secrets(world: SimWorld) -> dict[str, bytes]:
    return {
        "the GitHub token": world.bot.token.encode(),
        "the API token": API_TOKEN.encode(),
        "the secrets file's canary": CANARY.encode(),
    }


def loot_files(layout: Layout) -> bytes:
    """Everything the agent wrote where it could: its workspace and its home."""
    blobs = []
    for root in (layout.workspaces, layout.kit):
        for path in root.rglob("*") if root.exists() else []:
            if path.is_file() and not path.is_symlink() and path.stat().st_size < (1 << 24):
                blobs.append(path.read_bytes())
    return b"\n".join(blobs)


@pytest.mark.slow
@pytest.mark.parametrize("sandbox", ["bwrap", "none"])
def test_a_hostile_agent_gets_no_secret_changes_nothing_and_cannot_stall_the_daemon(
    tmp_path: Path, world: SimWorld, listener: Listener, sandbox: str
) -> None:
    if sandbox == "bwrap" and not probe_bwrap().usable:
        pytest.fail(f"bubblewrap does not work here: {probe_bwrap().reason}")
    flow = Flow(world, tmp_path, tmp_path / "unused.md", tmp_path / "unused.json", {})
    with hostile_layout(tmp_path) as layout:
        prepare(layout, world, listener, sandbox)
        with hostile_daemon(layout, world) as daemon:
            before = snapshot(layout.outside_the_workspace())
            number = flow.open_issue("Add the feature")

            def issue() -> dict[str, Any]:
                return issue_view(layout, world, number)

            # Implementing: every git-layer attack, then real work the daemon pushes.
            # Reviewing: absurd result files, then a planted link and FIFO until it blocks.
            wait_for(lambda: issue().get("issue", {}).get("phase") == "blocked", "blocked", layout)
            ticks_at_block = len(events(layout, "tick"))
            wait_for(lambda: len(events(layout, "tick")) >= ticks_at_block + 3, "ticks", layout)
            assert daemon.poll() is None, "the daemon keeps running"
            crash = listener.tagged("crash")
            assert not crash, crash[0].decode(errors="replace")
            if sandbox == "bwrap":
                assert scanner_pids() == [], "the setsid child died with its sandbox"
            timeline = issue()
            after = snapshot(layout.outside_the_workspace())
            loot = loot_files(layout)

        captured = listener.everything()
        assert listener.tagged("agent-env"), "the agent ran and reached the listener"
        assert listener.tagged("push"), "the agent tried to push"
        for what, secret in secrets(world).items():
            assert secret not in captured, f"{what} reached the listener"
            assert secret not in loot, f"{what} is in a file the agent wrote"

        # Nothing outside the workspace changed; the planted link was never written through.
        assert after == before
        assert layout.precious.read_text() == "the daemon's own file\n"

        # The daemon's push went to GitHub, not to the listener; the agent's own pushes failed.
        branches = {b["name"] for b in flow.rest("GET", f"/repos/{world.repo}/branches")}
        assert "hostile-push" not in branches
        assert any(name.startswith("orchestrator/") for name in branches)
        assert not any(c.startswith(b"GET /pushurl.git") for c in listener.captured)

        assert list(layout.mirrors.glob("*.git")), "the daemon made its mirror"
        if sandbox == "none":
            # The agent is the daemon's user: it poisoned the mirror, and the push above ignored it.
            assert layout.poisoned_mirrors(listener), "the attack on the mirror did not happen"
        if sandbox == "bwrap":
            assert layout.poisoned_mirrors(listener) == []
            state = b"\n".join(listener.tagged("state"))
            assert state, "the agent tried to read the daemon's state"
            # Every read failed and every listing was empty: no "file ..." entry, no database.
            assert b"SQLite format 3" not in state
            lines = state.splitlines()
            assert not [line for line in lines if line.startswith(b"file ")]
            assert not [line for line in lines if b"listing" in line and b"[]" not in line]
            assert listener.tagged("mirrors")[0].endswith(b"no mirror reachable")

        # Every hook, helper or monitor the agent planted ran in the agent's own git only.
        for dump in [c for c in listener.captured if c.startswith(b"POST /git-")]:
            assert b"ORCHESTRATOR_RUN_ID=" in dump, dump[:300]

        # Every absurd result file is a located failure; the next turn is refused; backoff.
        runs = sorted(timeline["agent_runs"], key=lambda r: r["started_at"])
        assert [r["phase"] for r in runs] == ["implementing", "reviewing", "reviewing"]
        assert [r["outcome"] for r in runs] == ["completed", "invalid_results", "invalid_results"]
        for run in runs[1:]:
            for name in ("fix-summary.json", "review.md", "blocked.md", "pr-description.md"):
                assert f"{name}:" in run["error"], f"{name} is not named in {run['error']!r}"
        assert "fix-summary.json:1: entries[0].thread: integer has 5000 digits" in runs[1]["error"]
        assert "fix-summary.json:1: nested deeper than 32 levels" in runs[2]["error"]
        refusals = events(layout, "turn_not_run")
        assert len(refusals) == 1, refusals
        assert refusals[0]["outcome"] == "failed"
        assert ".orchestrator/context.json: is a symbolic link" in refusals[0]["error"]
        # Each failure waits its backoff; the third blocks the issue instead.
        failed = [e for e in events(layout, "turn_recorded") if e["phase"] == "reviewing"]
        assert [bool(e["retry_due_at"]) for e in failed] == [True, True, False]
        assert timeline["issue"]["phase"] == "blocked"
        assert flow.issue(number)["state"] == "open"
