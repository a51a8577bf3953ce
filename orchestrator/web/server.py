"""Serving the web application from a background thread of the daemon.

uvicorn serves HTTP, but the daemon accepts the connections itself
(:mod:`orchestrator.web.listener`), so that a flood of them is capped where it
arrives (:mod:`orchestrator.web.connections`) and the errors it causes are
logged once per interval (:mod:`orchestrator.web.throttle`).
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from orchestrator.daemon.status import RuntimeStatus
from orchestrator.logs import get_logger
from orchestrator.store.database import Database
from orchestrator.web.app import create_app
from orchestrator.web.connections import ConnectionGate, GuardedConnection
from orchestrator.web.control import DaemonControl
from orchestrator.web.hosts import HostRule
from orchestrator.web.listener import Listener, bind
from orchestrator.web.throttle import Throttle, throttled_exception_handler
from orchestrator.workflow.schema import DEFAULT_HEADER_TIMEOUT_MS, DEFAULT_MAX_CONNECTIONS

log = get_logger(__name__)
# An idle connection between two requests is closed after this long (uvicorn's keep-alive).
KEEP_ALIVE_S = 5


class GuardedServer(uvicorn.Server):
    """uvicorn's server, fed by a :class:`Listener` instead of asyncio's accept loop."""

    def __init__(self, config: uvicorn.Config, listener: Listener) -> None:
        super().__init__(config)
        self.listener = listener

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(throttled_exception_handler(Throttle(), time.monotonic))
        # No sockets of uvicorn's own: the listener accepts.
        await super().startup(sockets=[])
        self.listener.start(loop, self._connection)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        # Nothing new comes in while uvicorn closes and waits for what is open.
        self.listener.close()
        await super().shutdown(sockets=sockets)

    def _connection(self) -> GuardedConnection:
        inner = H11Protocol(
            config=self.config, server_state=self.server_state, app_state=self.lifespan.state
        )
        return GuardedConnection(inner, self.listener.gate)


@dataclass
class WebHandle:
    """A running server: its URL, and how to stop it."""

    url: str
    _server: GuardedServer
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
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
    header_timeout_s: float = DEFAULT_HEADER_TIMEOUT_MS / 1000,
) -> WebHandle:
    """Start the dashboard and API on ``host:port`` (port 0 picks a free one).

    At most ``max_connections`` connections are held at once, and one that has
    not sent a whole request head within ``header_timeout_s`` is closed.
    """
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
        app,
        host=host,
        port=port,
        log_config=None,
        access_log=False,
        lifespan="off",
        loop="asyncio",
        http="h11",
        ws="none",
        timeout_keep_alive=KEEP_ALIVE_S,
    )
    try:
        sockets = bind(host, port)
    except OSError as error:
        raise OSError(f"the web server could not listen on {host}:{port}: {error}") from None
    listener = Listener(sockets, ConnectionGate(max_connections, header_timeout_s))
    server = GuardedServer(config, listener)
    thread = threading.Thread(target=server.run, name="web", daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            listener.close()
            raise OSError(f"the web server could not start on {host}:{port}")
        time.sleep(0.01)
    url = f"http://{host}:{listener.port}"
    log.info(
        "web_started",
        url=url,
        max_connections=max_connections,
        header_timeout_s=header_timeout_s,
    )
    return WebHandle(url, server, thread)
