"""A PostgreSQL outage in the middle of an agent turn: two log lines, no traceback, nothing stuck.

The daemon reaches PostgreSQL through a TCP relay the test can cut: every open
connection is dropped and new ones are refused, as when the server restarts
or the network goes away. The agent's turn ends during the outage; its result
is held and applied when the database returns, and the issue goes on.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy.engine import make_url

from orchestrator.sim.testing import SimWorld
from orchestrator.store import migrate
from tests.e2e.harness import Flow, default_scenario, policy_document, write_policy, write_scenario

ORCHESTRATOR = str(Path(sys.executable).parent / "orchestrator")
OUTAGE_S = 8.0


class Relay:
    """A TCP relay to PostgreSQL that can be cut (connections dropped, new ones refused)."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self._lock = threading.Lock()
        self._open: list[socket.socket] = []
        probe = socket.create_server(("127.0.0.1", 0))
        self.port = probe.getsockname()[1]
        probe.close()
        self._server: socket.socket | None = None
        self.restore()

    def restore(self) -> None:
        server = socket.create_server(("127.0.0.1", self.port), reuse_port=False)
        self._server = server
        threading.Thread(target=self._accept, args=(server,), daemon=True).start()

    def cut(self) -> None:
        with self._lock:
            server, self._server = self._server, None
            conns, self._open = self._open, []
        if server is not None:
            # shutdown() wakes the thread blocked in accept(); close() alone would not.
            with contextlib.suppress(OSError):
                server.shutdown(socket.SHUT_RDWR)
            server.close()
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            conn.close()

    def _accept(self, server: socket.socket) -> None:
        while True:
            try:
                client, _ = server.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._open += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.close()


@pytest.fixture
def relay(pg_url: str) -> Iterator[tuple[Relay, str]]:
    url = make_url(pg_url)
    relayed = Relay(url.host or "127.0.0.1", url.port or 5432)
    try:
        yield (
            relayed,
            url.set(host="127.0.0.1", port=relayed.port).render_as_string(hide_password=False),
        )
    finally:
        relayed.cut()


def events(log: Path, name: str | None = None) -> list[dict[str, Any]]:
    found = []
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("{"):
            entry = json.loads(line)
            if name is None or entry.get("event") == name:
                found.append(entry)
    return found


def wait_for(condition: Any, what: str, log: Path, timeout_s: float = 90.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            tail = [e for e in events(log) if e.get("event") != "tick"][-25:]
            pytest.fail(f"never happened: {what}\n" + "\n".join(map(str, tail)))
        time.sleep(0.1)


@pytest.mark.slow
def test_a_database_outage_during_a_turn_holds_its_result_and_logs_two_lines(
    tmp_path: Path, world: SimWorld, pg_url: str, relay: tuple[Relay, str]
) -> None:
    cuttable, relayed_url = relay
    migrate.upgrade(pg_url)
    scenario = default_scenario()
    scenario["steps"].insert(1, {"sleep_ms": 3000})
    scenario_path = write_scenario(tmp_path, scenario)
    document = policy_document(
        tmp_path,
        world,
        scenario_path,
        "mutate",
        {"polling": {"interval_ms": 500}, "database": {"url": relayed_url}},
    )
    policy_path = write_policy(tmp_path / "WORKFLOW.md", document)
    flow = Flow(world, tmp_path, policy_path, scenario_path, {})
    log = tmp_path / "daemon.log"
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "E2E_ENDPOINT": world.url,
        "E2E_TOKEN": world.bot.token,
    }
    argv = [ORCHESTRATOR, "--log-format", "json", "run", str(policy_path), "--port", "0"]
    with log.open("ab") as out:
        proc = subprocess.Popen([*argv, "--lease-seconds", "30"], env=env, stdout=out, stderr=out)
    try:
        flow.open_issue()
        wait_for(lambda: bool(events(log, "agent_start")), "the agent starts", log)
        cuttable.cut()
        # The agent ends (3 s) while the database is away.
        wait_for(lambda: bool(events(log, "turn_held")), "the turn is held", log)
        web = events(log, "web_started")[0]["url"]
        ready = httpx.get(f"{web}/readyz", timeout=10)
        assert ready.status_code == 503
        assert any(p.startswith("database unreachable") for p in ready.json()["problems"])
        assert httpx.get(f"{web}/healthz", timeout=10).status_code == 200
        time.sleep(max(0.0, OUTAGE_S - 3.0))
        cuttable.restore()
        wait_for(lambda: bool(events(log, "database_reachable")), "the database is back", log)
        wait_for(lambda: bool(flow.pulls()), "the pull request", log)
        assert proc.poll() is None
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
    down = events(log, "database_unreachable")
    up = events(log, "database_reachable")
    assert len(down) == 1 and len(up) == 1, (down, up)
    assert up[0]["failed_attempts"] >= 1 and up[0]["outage_s"] > 0
    assert len(down[0]["error"]) <= 300
    text = log.read_text(errors="replace")
    assert "Traceback" not in text
    assert not events(log, "turn_job_failed") and not events(log, "tick_failed")
    assert [e["outcome"] for e in events(log, "turn_applied")] == ["succeeded"]
    assert len(flow.pulls()) == 1
