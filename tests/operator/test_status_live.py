"""`orchestrator status` as a subprocess against a web server served for real.

It finds the daemon from the policy file (server.host, server.port,
server.token), falls back to the database when the daemon does not answer,
prints whole lines into a pipe and cuts them at a terminal's width.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import socket
import struct
import subprocess
import sys
import termios
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from orchestrator.operator.daemon_api import DaemonAddress, NoAddress, api_url, find_daemon
from orchestrator.store.database import Database
from orchestrator.web.server import WebHandle, start_web
from tests.web.conftest import NOW, Control, Live, make_status, populate

TOKEN = "status-api-token-1234"
LONG_ACTION = "wait for checks on aaaaaaaa, then " + "ask the reviewers again " * 8 + "(end)"
DOCUMENT_KEYS = {
    "as_of",
    "source",
    "daemon_url",
    "daemon_error",
    "daemon",
    "leader",
    "replicas",
    "queued_turns",
    "issues",
}


@dataclass
class Served:
    url: str
    port: int
    db_url: str
    folder: Path


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    db_url = f"sqlite:///{tmp_path}/orchestrator.db"
    db = Database.open(db_url)
    populate(db)
    seven = db.issues.get("acme/app", 7)
    assert seven is not None
    db.issues.update_fields(
        seven.id,
        now=NOW,
        observation={"next_intended_action": LONG_ACTION, "rollout_mode": "mutate"},
    )
    handle: WebHandle = start_web(
        "127.0.0.1",
        0,
        db=db,
        status=Live(make_status()),
        control=Control(tmp_path / "brake"),
        token=TOKEN,
    )
    try:
        yield Served(handle.url, int(handle.url.rsplit(":", 1)[1]), db_url, tmp_path)
    finally:
        handle.stop()
        db.close()


def write_policy(folder: Path, *, port: int, host: str = "127.0.0.1") -> Path:
    """A policy whose tracker token is unset in the shell: only its server keys are read."""
    path = folder / "WORKFLOW.md"
    path.write_text(
        "---\ntracker:\n  kind: github\n  repo: acme/app\n  token: $UNSET_GITHUB_TOKEN_FOR_TEST\n"
        f"server:\n  host: '{host}'\n  port: {port}\n  token: $STATUS_TEST_TOKEN\n---\nDo it.\n"
    )
    return path


def environment(folder: Path, **extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("ORCHESTRATOR_") and k not in {"COLUMNS", "LINES"}
    }
    env["XDG_CONFIG_HOME"] = str(folder / "config")
    return env | extra


def run_status(
    *args: str, cwd: Path, env: dict[str, str], check: bool = True
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(  # noqa: PLW1510 - the callers check the exit status
        [sys.executable, "-c", "from orchestrator.cli import main; main()", "status", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    if check:
        assert done.returncode == 0, done.stderr
    return done


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_status_finds_the_daemon_from_workflow_md_and_prints_whole_lines_into_a_pipe(
    served: Served,
) -> None:
    write_policy(served.folder, port=served.port)
    env = environment(served.folder, STATUS_TEST_TOKEN=TOKEN)
    done = run_status(cwd=served.folder, env=env)
    lines = done.stdout.splitlines()
    assert lines[0].startswith("rollout mode: mutate   brake: off   running agents: 1")
    seven = next(line for line in lines if line.startswith("acme/app#7"))
    assert seven.endswith(LONG_ACTION) and len(seven) > 200
    assert TOKEN not in done.stdout + done.stderr


def test_status_json_has_the_documented_shape(served: Served) -> None:
    folder = served.folder / "elsewhere"
    folder.mkdir()
    policy = write_policy(folder, port=served.port)
    env = environment(served.folder, STATUS_TEST_TOKEN=TOKEN)
    done = run_status("--workflow", str(policy), "--json", cwd=served.folder, env=env)
    document = json.loads(done.stdout)
    assert set(document) == DOCUMENT_KEYS
    assert (document["source"], document["daemon_url"], document["daemon_error"]) == (
        "daemon",
        served.url,
        None,
    )
    assert document["daemon"]["rollout_mode"] == "mutate"
    assert document["queued_turns"] == 0 and isinstance(document["replicas"], list)
    issues = {issue["number"]: issue for issue in document["issues"]}
    assert issues[7]["next_action"] == LONG_ACTION and issues[9]["running_phase"] == "implementing"
    same = run_status("--format", "json", "--workflow", str(policy), cwd=served.folder, env=env)
    assert set(json.loads(same.stdout)) == DOCUMENT_KEYS


def test_a_wrong_token_falls_back_to_the_database_and_says_why(served: Served) -> None:
    write_policy(served.folder, port=served.port)
    env = environment(served.folder, STATUS_TEST_TOKEN="not-the-token")
    done = run_status("--db", served.db_url, "--json", cwd=served.folder, env=env)
    document = json.loads(done.stdout)
    assert (document["source"], document["daemon"]) == ("database", None)
    assert document["daemon_error"].startswith(f"{served.url}: HTTP 401: a valid 'Authorization")
    assert {issue["number"] for issue in document["issues"]} == {7, 9}
    unset = environment(served.folder)
    table = run_status("--db", served.db_url, cwd=served.folder, env=unset).stdout
    assert table.splitlines()[0] == (
        f"daemon: not reached (showing the database only): {served.url}: HTTP 401: a valid "
        "'Authorization: Bearer <token>' is required; WORKFLOW.md: server.token: environment "
        "variable STATUS_TEST_TOKEN is not set"
    )


def test_no_daemon_listening_shows_the_database(served: Served) -> None:
    port = free_port()
    write_policy(served.folder, port=port, host="0.0.0.0")
    env = environment(served.folder, STATUS_TEST_TOKEN=TOKEN)
    document = json.loads(
        run_status("--db", served.db_url, "--json", cwd=served.folder, env=env).stdout
    )
    assert document["source"] == "database"
    assert document["daemon_url"] == f"http://127.0.0.1:{port}"
    assert document["daemon_error"].startswith(
        f"cannot reach the daemon at http://127.0.0.1:{port}"
    )
    empty = served.folder / "empty"
    empty.mkdir()
    nothing = run_status("--db", served.db_url, cwd=empty, env=env).stdout.splitlines()
    assert nothing[0] == (
        "daemon: not reached (showing the database only): no WORKFLOW.md here; "
        "pass --workflow or --url"
    )


def test_url_overrides_the_policy_and_must_answer(served: Served) -> None:
    write_policy(served.folder, port=free_port())
    env = environment(served.folder, ORCHESTRATOR_API_TOKEN=TOKEN)
    live = json.loads(run_status("--url", served.url, "--json", cwd=served.folder, env=env).stdout)
    assert live["source"] == "daemon" and live["daemon_url"] == served.url
    dead = f"http://127.0.0.1:{free_port()}"
    failed = run_status("--url", dead, cwd=served.folder, env=env, check=False)
    assert failed.returncode == 1
    assert f"Error: cannot reach the daemon at {dead}" in failed.stderr


def test_a_terminal_cuts_the_table_at_its_width(served: Served) -> None:
    write_policy(served.folder, port=served.port)
    env = environment(served.folder, STATUS_TEST_TOKEN=TOKEN, TERM="dumb")
    primary, secondary = pty.openpty()
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 100, 0, 0))
    process = subprocess.Popen(
        [sys.executable, "-c", "from orchestrator.cli import main; main()", "status"],
        cwd=served.folder,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=secondary,
        stderr=subprocess.PIPE,
    )
    os.close(secondary)
    chunks = []
    while True:
        try:
            chunk = os.read(primary, 65536)
        except OSError:  # EIO once the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(primary)
    assert process.wait(timeout=60) == 0, process.stderr.read() if process.stderr else ""
    lines = b"".join(chunks).decode().replace("\r\n", "\n").splitlines()
    seven = next(line for line in lines if line.startswith("acme/app#7"))
    assert len(seven) <= 100 and "ask the reviewers" not in seven
    table = lines[next(i for i, line in enumerate(lines) if line.startswith("issue")) :]
    assert max(len(line) for line in table) <= 100


def test_find_daemon_reads_only_the_server_keys(tmp_path: Path) -> None:
    policy = write_policy(tmp_path, port=9123, host="::")
    found = find_daemon(None, policy, {"STATUS_TEST_TOKEN": TOKEN})
    assert found == DaemonAddress("http://[::1]:9123", TOKEN)
    overridden = find_daemon(
        None,
        policy,
        {"ORCHESTRATOR_SERVER__PORT": "9200", "ORCHESTRATOR_API_TOKEN": "from-the-environment"},
    )
    assert overridden == DaemonAddress("http://[::1]:9200", "from-the-environment")
    missing = find_daemon(None, tmp_path / "missing.md", {})
    assert isinstance(missing, NoAddress)
    assert missing.reason.endswith("missing.md here; pass --workflow or --url")
    zero = write_policy(tmp_path, port=0)
    assert isinstance(found := find_daemon(None, zero, {}), NoAddress)
    assert "server.port is 0" in found.reason
    assert api_url("10.0.0.5", 80) == "http://10.0.0.5:80"
    assert api_url("0.0.0.0", 8080) == "http://127.0.0.1:8080"


@pytest.mark.slow
def test_status_and_a_metrics_scrape_against_a_running_daemon(tmp_path: Path) -> None:
    import httpx

    from orchestrator.daemon.daemon import Daemon
    from orchestrator_sim.testing import running_world
    from tests.e2e.harness import flow_for

    port = free_port()
    server = {
        "port": port,
        "token": "$STATUS_TEST_TOKEN",
        "metrics_token": "$STATUS_METRICS_TOKEN",
        "allowed_hosts": ["orchestrator.example.com"],
    }
    secrets = {"STATUS_TEST_TOKEN": TOKEN, "STATUS_METRICS_TOKEN": "scrape-only-token"}
    with (
        running_world(tmp_path / "sim") as world,
        flow_for(tmp_path, world, policy={"server": server}, start=False) as flow,
    ):
        daemon = Daemon(flow.policy_path, env={**flow.env, **secrets})
        daemon.start()
        try:
            daemon.run_scheduler()
            url = f"http://127.0.0.1:{port}"
            scrape = {"Authorization": "Bearer scrape-only-token"}
            assert httpx.get(f"{url}/metrics", headers=scrape).status_code == 200
            assert httpx.get(f"{url}/metrics").status_code == 401
            assert httpx.get(f"{url}/api/v1/state", headers=scrape).status_code == 401
            env = environment(tmp_path, STATUS_TEST_TOKEN=TOKEN)
            document = json.loads(run_status("--json", cwd=tmp_path, env=env).stdout)
            assert (document["source"], document["daemon_url"]) == ("daemon", url)
            assert document["daemon"]["rollout_mode"] == "merge"
            assert document["daemon"]["role"] == "leader"
        finally:
            daemon.shutdown(grace_s=0)
