"""The container health check script against real HTTP servers on 127.0.0.1."""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "deploy" / "container" / "healthcheck.py"


class _Daemon(ThreadingHTTPServer):
    """A stand-in for the daemon's web server that answers with a fixed status."""

    daemon_threads = True

    def __init__(self, status: int) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.status = status
        self.paths: list[str] = []


class _Handler(BaseHTTPRequestHandler):
    server: _Daemon

    def do_GET(self) -> None:
        self.server.paths.append(self.path)
        body = b'{"status": "ok"}'
        self.send_response(self.server.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return


def _serve(status: int) -> Iterator[_Daemon]:
    server = _Daemon(status)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture
def healthy() -> Iterator[_Daemon]:
    yield from _serve(200)


@pytest.fixture
def failing() -> Iterator[_Daemon]:
    yield from _serve(503)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _check(**env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    clean.pop("ORCHESTRATOR_HEALTHCHECK_URL", None)
    clean.pop("ORCHESTRATOR_SERVER__PORT", None)
    return subprocess.run(
        [sys.executable, str(SCRIPT)],
        env=clean | env,
        check=False,
        capture_output=True,
        text=True,
        timeout=30,
    )


def _port(server: _Daemon) -> str:
    return str(server.server_address[1])


def test_healthy_daemon_passes(healthy: _Daemon) -> None:
    result = _check(ORCHESTRATOR_SERVER__PORT=_port(healthy))
    assert (result.returncode, result.stderr) == (0, "")
    assert healthy.paths == ["/healthz"]


def test_error_status_fails_and_says_so(failing: _Daemon) -> None:
    result = _check(ORCHESTRATOR_SERVER__PORT=_port(failing))
    assert result.returncode == 1
    assert "HTTP 503" in result.stderr
    assert f"127.0.0.1:{_port(failing)}/healthz" in result.stderr


def test_nothing_listening_fails() -> None:
    port = str(_closed_port())
    result = _check(ORCHESTRATOR_SERVER__PORT=port)
    assert result.returncode == 1
    assert f"127.0.0.1:{port}/healthz" in result.stderr


def test_proxy_settings_do_not_route_the_check(healthy: _Daemon) -> None:
    dead_proxy = f"http://127.0.0.1:{_closed_port()}"
    result = _check(
        ORCHESTRATOR_SERVER__PORT=_port(healthy), http_proxy=dead_proxy, HTTP_PROXY=dead_proxy
    )
    assert (result.returncode, result.stderr) == (0, "")
    assert healthy.paths == ["/healthz"]


def test_explicit_url_wins(healthy: _Daemon) -> None:
    url = f"http://127.0.0.1:{_port(healthy)}/healthz?probe=container"
    result = _check(ORCHESTRATOR_HEALTHCHECK_URL=url, ORCHESTRATOR_SERVER__PORT=str(_closed_port()))
    assert result.returncode == 0
    assert healthy.paths == ["/healthz?probe=container"]


def _health_url(env: dict[str, str]) -> str:
    spec = importlib.util.spec_from_file_location("container_healthcheck", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return str(module.health_url(env))


@pytest.mark.parametrize(
    ("env", "url"),
    [
        ({}, "http://127.0.0.1:8080/healthz"),
        ({"ORCHESTRATOR_SERVER__PORT": ""}, "http://127.0.0.1:8080/healthz"),
        ({"ORCHESTRATOR_SERVER__PORT": "9100"}, "http://127.0.0.1:9100/healthz"),
        ({"ORCHESTRATOR_HEALTHCHECK_URL": "http://127.0.0.1:1/x"}, "http://127.0.0.1:1/x"),
    ],
    ids=["server_default_port", "empty_port", "port_override", "explicit_url"],
)
def test_health_url(env: dict[str, str], url: str) -> None:
    assert _health_url(env) == url
