"""The agents' OS sandbox, run for real: bubblewrap hides the daemon's files and processes.

Each containment test runs twice: as the user running the tests, and (when that
is root) as ``nobody`` through ``setpriv``, where bubblewrap builds its sandbox
in an unprivileged user namespace, as it does under the systemd unit. The
payloads are ``/bin/sh`` scripts: the test interpreter may live in a folder
``nobody`` cannot enter. Each containment claim is paired with the same script
run without the sandbox, which must get through: a test that cannot fail proves
nothing.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from orchestrator.agent import SandboxError, SettingsError
from orchestrator.agent.process import SandboxedProcess, spawn, terminate_session
from orchestrator.agent.sandbox import (
    DEFAULT_BWRAP,
    SandboxMode,
    SandboxSettings,
    bwrap_argv,
    probe_bwrap,
)

REQUIRE_ENV = "ORCHESTRATOR_REQUIRE_SANDBOX"
NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
NOBODY_UID = 65534
PATH_ONLY = {"PATH": "/usr/bin:/bin"}


def require_bwrap() -> None:
    """Skip (or, with ORCHESTRATOR_REQUIRE_SANDBOX set, fail) where bubblewrap does not work."""
    verdict = probe_bwrap(DEFAULT_BWRAP)
    if verdict.usable:
        return
    message = f"bubblewrap does not work here: {verdict.reason}"
    if os.environ.get(REQUIRE_ENV):
        pytest.fail(f"{message} ({REQUIRE_ENV} is set, so the sandbox tests must run)")
    pytest.skip(f"{message}; `make sandbox-tools` installs it")


def processes_with(token: str) -> list[int]:
    """Live processes whose command line contains ``token`` (seen from the test's /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if token.encode() in cmdline and state not in ("Z", "X"):
            found.append(int(entry))
    return found


def wait_for(condition: Callable[[], object], timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return bool(condition())


def sleep_token() -> str:
    """A ``sleep`` argument no other process on the machine uses."""
    return str(700_000 + secrets.randbelow(100_000))


@dataclass
class Layout:
    """A daemon's folders as the sandbox sees them, in a place ``nobody`` can reach."""

    base: Path
    user: str

    @property
    def state(self) -> Path:
        return self.base / "state"

    @property
    def root(self) -> Path:
        return self.base / "workspaces"

    @property
    def workspace(self) -> Path:
        return self.root / "acme_widgets_7-0123456789ab"

    @property
    def other(self) -> Path:
        return self.root / "acme_widgets_8-ba9876543210"

    @property
    def homes(self) -> Path:
        return self.base / "state" / "agent-homes"

    @property
    def outside(self) -> Path:
        return self.base / "outside"

    @property
    def prefix(self) -> list[str]:
        return NOBODY if self.user == "nobody" else []

    def settings(self, mode: SandboxMode = SandboxMode.BWRAP) -> SandboxSettings:
        return SandboxSettings(
            mode=mode,
            home_root=self.homes,
            workspace_root=self.root,
            hidden=(self.state,),
        )

    def argv(self, script: str, *, sandboxed: bool = True) -> tuple[list[str], dict[str, str]]:
        mode = SandboxMode.BWRAP if sandboxed else SandboxMode.NONE
        launch = self.settings(mode).launch(
            ["/bin/sh", "-c", script], cwd=self.workspace, env=PATH_ONLY
        )
        return [*self.prefix, *launch.argv], launch.env

    def run(self, script: str, *, sandboxed: bool = True) -> subprocess.CompletedProcess[str]:
        argv, env = self.argv(script, sandboxed=sandboxed)
        return subprocess.run(
            argv,
            cwd=self.workspace,
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
            start_new_session=True,
        )

    def start(self, script: str) -> SandboxedProcess:
        argv, env = self.argv(script)
        return SandboxedProcess(
            argv,
            cwd=self.workspace,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )


@pytest.fixture(params=["self", "nobody"])
def layout(request: pytest.FixtureRequest) -> Iterator[Layout]:
    require_bwrap()
    user = str(request.param)
    if user == "nobody":
        if os.geteuid() != 0:
            pytest.skip("the tests already run unprivileged; dropping to nobody needs root")
        if shutil.which("setpriv") is None:
            pytest.skip("setpriv (util-linux) is missing")
    base = Path(tempfile.mkdtemp(prefix="orchestrator-sandbox-", dir="/tmp"))
    base.chmod(0o755)
    layout = Layout(base, user)
    try:
        layout.state.mkdir()
        (layout.state / "orchestrator.db").write_text("the daemon's secret\n")
        layout.workspace.mkdir(parents=True)
        layout.other.mkdir()
        (layout.other / "notes.txt").write_text("another issue's work\n")
        (layout.homes / layout.workspace.name).mkdir(parents=True)
        layout.outside.mkdir()
        (layout.outside / "target.txt").write_text("original\n")
        if user == "nobody":
            for folder, _dirs, files in os.walk(base):
                os.chown(folder, NOBODY_UID, NOBODY_UID)
                for name in files:
                    os.chown(Path(folder) / name, NOBODY_UID, NOBODY_UID)
        yield layout
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_hidden_folders_and_other_workspaces_are_empty(layout: Layout) -> None:
    script = (
        f"cat {layout.state}/orchestrator.db; cat {layout.other}/notes.txt; "
        f"echo listing; ls -A {layout.root}; ls -A {layout.state}"
    )
    plain = layout.run(script, sandboxed=False)
    assert "the daemon's secret" in plain.stdout and "another issue's work" in plain.stdout

    boxed = layout.run(script)
    assert "the daemon's secret" not in boxed.stdout
    assert "another issue's work" not in boxed.stdout
    listing = boxed.stdout.split("listing\n", 1)[1].split()
    # The workspace root shows this workspace only; the state folder shows only the
    # mount points of this agent's own home.
    assert listing == [layout.workspace.name, "agent-homes"]


def test_writes_land_only_in_the_workspace_home_and_private_tmp(layout: Layout) -> None:
    token = secrets.token_hex(6)
    host_tmp = Path("/tmp") / f"sandbox-{token}"
    script = (
        f"echo changed > {layout.outside}/target.txt && echo wrote-outside; "
        f"echo x > {layout.state}/planted && echo wrote-state; "
        f"echo x > /usr/sandbox-{token} && echo wrote-usr; "
        "echo ok > inside.txt && echo wrote-workspace; "
        'echo ok > "$HOME/inside.txt" && echo wrote-home; '
        f"echo ok > /tmp/sandbox-{token} && echo wrote-tmp; "
        'echo "home=$HOME"'
    )
    boxed = layout.run(script)
    out = boxed.stdout
    assert "wrote-outside" not in out
    assert "wrote-usr" not in out
    assert (layout.outside / "target.txt").read_text() == "original\n"
    assert not Path(f"/usr/sandbox-{token}").exists()
    # The hidden folder is a throwaway tmpfs: writable, but nothing reaches the disk.
    assert not (layout.state / "planted").exists()
    assert "wrote-workspace" in out and (layout.workspace / "inside.txt").is_file()
    home = layout.homes / layout.workspace.name
    assert "wrote-home" in out and (home / "inside.txt").is_file()
    assert f"home={home}" in out
    assert "wrote-tmp" in out and not host_tmp.exists()

    unboxed = layout.run(
        f"echo changed > {layout.outside}/target.txt && echo wrote-outside", sandboxed=False
    )
    assert "wrote-outside" in unboxed.stdout


def test_the_daemons_processes_are_invisible(layout: Layout) -> None:
    secret = f"daemon-secret-{secrets.token_hex(6)}"
    stand_in = subprocess.Popen(
        [*layout.prefix, "sleep", "60"],
        env={**PATH_ONLY, "STAND_IN_SECRET": secret},
        start_new_session=True,
    )
    try:
        pids = [stand_in.pid] + ([os.getpid()] if layout.user == "self" else [])
        script = "; ".join(
            f"test -e /proc/{pid} && echo visible-{pid}; "
            f"cat /proc/{pid}/environ 2>/dev/null | tr '\\0' '\\n'"
            for pid in pids
        )
        script += "; echo count; ls /proc | grep -c '^[0-9]'"
        # Until setpriv has exec'ed sleep, the process is not dumpable after its change of
        # user, and even its own user cannot read its environment: wait for the exec.
        assert wait_for(
            lambda: secret.encode() in _environ(stand_in.pid) and _comm(stand_in.pid) == "sleep"
        )
        plain = layout.run(script, sandboxed=False)
        assert secret in plain.stdout and f"visible-{stand_in.pid}" in plain.stdout

        boxed = layout.run(script)
        assert secret not in boxed.stdout
        assert "visible" not in boxed.stdout
        # bwrap's init, the shell, ls and grep: nothing of the machine.
        assert int(boxed.stdout.split("count\n", 1)[1]) <= 6
    finally:
        stand_in.kill()
        stand_in.wait()


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text(encoding="utf-8").strip()
    except OSError:
        return ""


def _environ(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return b""


def test_a_setsid_grandchild_dies_when_the_command_ends(layout: Layout) -> None:
    token = sleep_token()
    script = f"setsid sleep {token} </dev/null >/dev/null 2>&1 & sleep 0.3; exit 0"
    boxed = layout.run(script)
    assert boxed.returncode == 0, boxed.stderr
    assert wait_for(lambda: not processes_with(token), 5), "the setsid grandchild survived"


def test_a_setsid_grandchild_dies_when_the_command_is_cancelled(layout: Layout) -> None:
    token = sleep_token()
    script = (
        f"setsid sleep {token} </dev/null >/dev/null 2>&1 & "
        "trap 'echo graceful > term.txt; exit 0' TERM; "
        "echo started > started.txt; while :; do sleep 0.1; done"
    )
    proc = layout.start(script)
    try:
        assert wait_for((layout.workspace / "started.txt").exists)
        assert wait_for(lambda: bool(processes_with(token)))
        assert terminate_session(proc, grace_s=5.0)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # The agent got its SIGTERM and grace period: bubblewrap was spared until it exited.
    assert (layout.workspace / "term.txt").read_text() == "graceful\n"
    assert wait_for(lambda: not processes_with(token), 5), "the setsid grandchild survived"


def test_the_network_stays_on(layout: Layout) -> None:
    received: list[bytes] = []
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]

        def accept() -> None:
            server.settimeout(20)
            connection, _ = server.accept()
            with connection:
                received.append(connection.recv(100))

        thread = threading.Thread(target=accept)
        thread.start()
        boxed = layout.run(f"bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port}; echo hello-model >&3'")
        thread.join(20)
    assert boxed.returncode == 0, boxed.stderr
    assert received == [b"hello-model\n"]


# ------------------------------------------------------------ the building blocks


def test_mounts_are_ordered_so_the_most_specific_wins(tmp_path: Path) -> None:
    state, home, root = tmp_path / "state", tmp_path / "state" / "home", tmp_path / "ws"
    work = root / "one"
    argv = bwrap_argv(
        "bwrap",
        ["true"],
        cwd=work,
        writable=[work, home],
        hidden=[home / "private", root, state],
    )
    pairs = [(argv[i], argv[i + 1]) for i in range(len(argv) - 1) if argv[i].startswith("--")]
    order = [p for p in pairs if p[0] in ("--tmpfs", "--bind")]
    assert order.index(("--tmpfs", str(state))) < order.index(("--bind", str(home)))
    assert order.index(("--bind", str(home))) < order.index(("--tmpfs", str(home / "private")))
    assert order.index(("--tmpfs", str(root))) < order.index(("--bind", str(work)))
    assert argv[:5] == ["bwrap", "--die-with-parent", "--unshare-pid", "--cap-drop", "ALL"]
    assert argv[-4:] == ["--chdir", str(work), "--", "true"]


def test_a_home_that_is_a_private_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match=r"agent\.home"):
        SandboxSettings(mode=SandboxMode.BWRAP, home=tmp_path, hidden=(tmp_path,))
    with pytest.raises(SettingsError, match=r"overlaps workspace\.root"):
        SandboxSettings(home=tmp_path, workspace_root=tmp_path / "workspaces")


def test_a_per_issue_home_that_became_a_link_is_refused(tmp_path: Path) -> None:
    homes = tmp_path / "homes"
    homes.mkdir()
    workspace = tmp_path / "ws" / "issue-1"
    workspace.mkdir(parents=True)
    (homes / "issue-1").symlink_to(tmp_path)
    settings = SandboxSettings(home_root=homes)
    with pytest.raises(SandboxError, match="symbolic link"):
        spawn(
            ["true"],
            cwd=workspace,
            env=PATH_ONLY,
            stdin=None,
            stdout=None,
            stderr=None,
            sandbox=settings,
        )


def test_unsandboxed_commands_still_get_the_agents_home(tmp_path: Path) -> None:
    workspace = tmp_path / "ws" / "issue-1"
    workspace.mkdir(parents=True)
    settings = SandboxSettings(home_root=tmp_path / "homes")
    launch = settings.launch(["true"], cwd=workspace, env={"HOME": "/root"})
    home = tmp_path / "homes" / "issue-1"
    assert launch == type(launch)(["true"], {"HOME": str(home)}, sandboxed=False)
    assert home.stat().st_mode & 0o777 == 0o700


def test_the_probe_explains_a_missing_or_broken_bubblewrap(tmp_path: Path) -> None:
    missing = probe_bwrap(str(tmp_path / "no-bwrap"))
    assert not missing.usable and "not found" in missing.reason
    broken = tmp_path / "broken-bwrap"
    message = "bwrap: No permissions to create new namespace"
    broken.write_text(f"#!/bin/sh\necho '{message}' >&2\nexit 1\n")
    broken.chmod(0o755)
    verdict = probe_bwrap(str(broken))
    assert not verdict.usable
    assert verdict.reason.endswith(f"fails here: {message}")
    # The verdict is kept: fixing the program changes nothing until a refresh.
    broken.write_text("#!/bin/sh\nexit 0\n")
    assert probe_bwrap(str(broken)) == verdict
    assert probe_bwrap(str(broken), refresh=True).usable
