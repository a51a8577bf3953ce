"""Serving the web application from a background thread of the daemon."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import uvicorn

from orchestrator.logs import get_logger
from orchestrator.runtime.status import RuntimeStatus
from orchestrator.store.database import Database
from orchestrator.web.app import create_app
from orchestrator.web.control import DaemonControl
from orchestrator.web.hosts import HostRule

log = get_logger(__name__)


@dataclass
class WebHandle:
    """A running server: its URL, and how to stop it."""

    url: str
    _server: uvicorn.Server
    _thread: threading.Thread

    def stop(self, timeout_s: float = 10.0) -> None:
        self._server.should_exit = True
        self._thread.join(timeout_s)


def start_web(
    host: str,
    port: int,
    *,
    db: Database,
    status: Callable[[], RuntimeStatus | None],
    control: DaemonControl | None,
    token: str | None,
    metrics_token: str | None = None,
    allowed_hosts: Sequence[str] = (),
    html_base: str = "https://github.com",
) -> WebHandle:
    """Start the dashboard and API on ``host:port`` (port 0 picks a free one)."""
    app = create_app(
        db=db,
        status=status,
        control=control,
        token=token,
        metrics_token=metrics_token,
        hosts=HostRule.of(host, allowed_hosts),
        html_base=html_base,
    )
    config = uvicorn.Config(
        app, host=host, port=port, log_config=None, access_log=False, lifespan="off"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="web", daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            raise OSError(f"the web server could not listen on {host}:{port}")
        time.sleep(0.01)
    bound = _bound_port(server) or port
    url = f"http://{host}:{bound}"
    log.info("web_started", url=url)
    return WebHandle(url, server, thread)


def _bound_port(server: uvicorn.Server) -> int | None:
    for listener in getattr(server, "servers", []):
        for sock in getattr(listener, "sockets", []):
            name = sock.getsockname()
            if sock.family in (socket.AF_INET, socket.AF_INET6):
                return int(name[1])
    return None
