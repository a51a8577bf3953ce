"""Running the emulator: the threaded server, ``orchestrator sim serve``, and snapshots."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from orchestrator_sim.control import ControlClient
from orchestrator_sim.server import SimServer

# The console script the package installs next to the interpreter.
ORCHESTRATOR = [str(Path(sys.executable).parent / "orchestrator")]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _get_json(url: str, token: str) -> object:
    request = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read())


def _wait_healthy(url: str, process: subprocess.Popen[bytes]) -> None:
    for _ in range(400):
        if process.poll() is not None:
            raise AssertionError(f"sim serve exited: {process.stderr.read().decode()}")  # type: ignore[union-attr]
        try:
            with urllib.request.urlopen(f"{url}/_control/health", timeout=1):
                return
        except (urllib.error.URLError, ConnectionError):
            time.sleep(0.025)
    raise AssertionError("sim serve did not become healthy")


def _serve(state: Path, port: int, *extra: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "ORCHESTRATOR_LOG_FORMAT": "json"}
    return subprocess.Popen(
        [*ORCHESTRATOR, "sim", "serve", "--port", str(port), "--state", str(state), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_threaded_server_lifecycle(tmp_path: Path) -> None:
    server = SimServer(tmp_path / "sim")
    with pytest.raises(RuntimeError, match="not running"):
        _ = server.url
    with server:
        assert server.url.startswith("http://127.0.0.1:")
        assert server.git_url("acme", "widgets") == f"{server.url}/acme/widgets.git"
        assert server.control.request("GET", "/health") == {"ok": True}
        with pytest.raises(RuntimeError, match="already running"):
            server.start()
    server.stop()


def test_snapshot_survives_a_restart_of_the_threaded_server(tmp_path: Path) -> None:
    with SimServer(tmp_path / "sim", persist=True) as server:
        server.control.create_user("alice", "ghp_alice_token_0000000000000000000")
        server.control.create_repo("alice/notes", {"n.md": "n\n"})
        server.control.create_issue("alice/notes", "Remember", as_user="alice")
    assert (tmp_path / "sim" / "state.json").exists()
    with SimServer(tmp_path / "sim", persist=True) as again:
        issue = _get_json(
            f"{again.url}/repos/alice/notes/issues/1", "ghp_alice_token_0000000000000000000"
        )
        assert isinstance(issue, dict)
        assert issue["title"] == "Remember"
        assert again.control.create_issue("alice/notes", "Next", as_user="alice") == 2


def test_sim_serve_command_with_bootstrap(tmp_path: Path) -> None:
    bootstrap = tmp_path / "bootstrap.json"
    bootstrap.write_text(
        json.dumps(
            {
                "users": [
                    {"login": "bot", "token": "ghp_bot_token_000000000000000000000", "bot": True}
                ],
                "repos": [
                    {
                        "owner": "acme",
                        "name": "demo",
                        "files": {"README.md": "# demo\n"},
                        "permissions": {"bot": "write"},
                    }
                ],
            }
        )
    )
    state = tmp_path / "state"
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    process = _serve(state, port, "--bootstrap", str(bootstrap))
    try:
        _wait_healthy(url, process)
        me = _get_json(f"{url}/user", "ghp_bot_token_000000000000000000000")
        assert isinstance(me, dict)
        # An account made as a bot shows GitHub's suffix in REST.
        assert (me["login"], me["type"]) == ("bot[bot]", "Bot")
        ControlClient(url).create_issue("acme/demo", "Persisted", as_user="bot")
    finally:
        _stop(process)
    assert process.returncode == 0
    assert (state / "state.json").exists()
    assert (state / "git" / "acme" / "demo.git").is_dir()
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    process = _serve(state, port)
    try:
        _wait_healthy(url, process)
        issue = _get_json(f"{url}/repos/acme/demo/issues/1", "ghp_bot_token_000000000000000000000")
        assert isinstance(issue, dict)
        assert issue["title"] == "Persisted"
    finally:
        _stop(process)


def test_bad_bootstrap_names_the_file(tmp_path: Path) -> None:
    bootstrap = tmp_path / "bad.json"
    bootstrap.write_text(json.dumps({"users": "nobody"}))
    done = subprocess.run(
        [
            *ORCHESTRATOR,
            "sim",
            "serve",
            "--state",
            str(tmp_path / "s"),
            "--bootstrap",
            str(bootstrap),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode != 0
    assert "bad.json" in done.stderr
    assert "users must be a list" in done.stderr


def test_sim_group_does_not_import_the_agent_until_asked() -> None:
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from orchestrator_sim.cli import sim\n"
        "result = CliRunner().invoke(sim, ['serve', '--help'])\n"
        "assert result.exit_code == 0, result.output\n"
        "assert '--state' in result.output\n"
        "assert 'orchestrator_sim.agent' not in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_sim_serve_on_port_zero_names_the_port_it_got(tmp_path: Path) -> None:
    process = _serve(tmp_path / "sim", 0)
    try:
        assert process.stderr is not None
        line = b""
        for _ in range(200):
            line = process.stderr.readline()
            if b"GitHub emulator on" in line or not line:
                break
        text = line.decode()
        assert "GitHub emulator on http://127.0.0.1:" in text, text
        port = int(text.split("http://127.0.0.1:", 1)[1].split()[0])
        assert port != 0
        _wait_healthy(f"http://127.0.0.1:{port}", process)
    finally:
        _stop(process)


def test_sim_serve_on_a_busy_port_is_one_line(tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = subprocess.run(
            [*ORCHESTRATOR, "sim", "serve", "--port", str(port), "--state", str(tmp_path / "s")],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert done.returncode == 1
    assert f"Error: cannot listen on 127.0.0.1:{port}" in done.stderr
    assert "Traceback" not in done.stderr
