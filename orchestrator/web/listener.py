"""The web server's listening sockets and the loop that accepts their connections.

asyncio's own accept loop takes up to ``backlog`` connections at each wake-up
before it looks at any of them, and logs every accept that fails for want of
descriptors (one error with its traceback per attempt), so a flood of
connections fills the descriptor table and the log. This loop takes a few at
a time and asks the :class:`ConnectionGate` about each at once: a socket it
refuses is closed before it costs more than a moment of one descriptor. An
accept that fails pauses accepting for a moment and is logged at most once
per interval, with the count of those not logged.
"""

from __future__ import annotations

import asyncio
import errno
import socket
import time
from collections.abc import Callable

from orchestrator.logs import get_logger
from orchestrator.web.connections import ConnectionGate, GuardedConnection
from orchestrator.web.throttle import Throttle

log = get_logger(__name__)

# Connections accepted at one wake-up, at most: each is let in or closed before the next batch.
ACCEPT_BATCH = 32
# After a failed accept (no descriptor left, say), accepting rests this long.
ACCEPT_PAUSE_S = 0.25
# The kernel's queue of connections not yet accepted (capped by net.core.somaxconn).
LISTEN_BACKLOG = 1024
# The sweep for late request heads runs this often, at most once a second.
MAX_SWEEP_S = 1.0


def bind(host: str, port: int) -> list[socket.socket]:
    """Listening sockets for every address of ``host`` (port 0: one free port for all)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    seen: set[tuple[int, object]] = set()
    sockets: list[socket.socket] = []
    try:
        for family, kind, proto, _, found in infos:
            if (family, found) in seen:
                continue
            seen.add((family, found))
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            address = found
            if port == 0 and len(sockets) > 1:
                address = (found[0], sockets[0].getsockname()[1], *found[2:])
            sock.bind(address)
            sock.listen(LISTEN_BACKLOG)
            sock.setblocking(False)
    except OSError:
        for sock in sockets:
            sock.close()
        raise
    return sockets


class Listener:
    """Accepts connections on ``sockets`` for as long as it is open; the gate decides each."""

    def __init__(
        self,
        sockets: list[socket.socket],
        gate: ConnectionGate,
        *,
        clock: Callable[[], float] = time.monotonic,
        throttle: Throttle | None = None,
    ) -> None:
        self.sockets = sockets
        self.gate = gate
        self._clock = clock
        self._throttle = throttle or Throttle()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._factory: Callable[[], GuardedConnection] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._sweeper: asyncio.Task[None] | None = None
        self._closed = False
        self._reported = 0

    @property
    def port(self) -> int:
        return int(self.sockets[0].getsockname()[1])

    def start(
        self, loop: asyncio.AbstractEventLoop, factory: Callable[[], GuardedConnection]
    ) -> None:
        """Accept on ``loop``, each connection served by a protocol from ``factory``."""
        self._loop = loop
        self._factory = factory
        for sock in self.sockets:
            loop.add_reader(sock.fileno(), self._accept, sock)
        every = min(MAX_SWEEP_S, self.gate.header_timeout_s / 4)
        self._sweeper = loop.create_task(self._sweep(every))

    def close(self) -> None:
        """Stop accepting and close the listening sockets (held connections stay)."""
        if self._closed:
            return
        self._closed = True
        for sock in self.sockets:
            if self._loop is not None:
                self._loop.remove_reader(sock.fileno())
            sock.close()
        if self._sweeper is not None:
            self._sweeper.cancel()

    def _accept(self, sock: socket.socket) -> None:
        for _ in range(ACCEPT_BATCH):
            try:
                conn, _ = sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except ConnectionAbortedError:
                continue
            except OSError as error:
                self._rest(sock, error)
                return
            if self.gate.make_room():
                self._serve(conn)
            else:
                conn.close()

    def _serve(self, conn: socket.socket) -> None:
        assert self._loop is not None and self._factory is not None
        # Held from now on, so that the next socket accepted may already evict it.
        protocol = self._factory()
        self.gate.opened(protocol, self._clock())
        conn.setblocking(False)
        task = self._loop.create_task(self._attach(conn, protocol))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _attach(self, conn: socket.socket, protocol: GuardedConnection) -> None:
        assert self._loop is not None
        if protocol.dropped:
            # Evicted before it was served: the socket goes without a transport.
            conn.close()
            return
        try:
            await self._loop.connect_accepted_socket(lambda: protocol, conn)
        except OSError:
            self.gate.closed(protocol)
            conn.close()

    def _rest(self, sock: socket.socket, error: OSError) -> None:
        """Stop accepting on ``sock`` for a moment; log the failure unless one was just logged."""
        assert self._loop is not None
        self._loop.remove_reader(sock.fileno())
        self._loop.call_later(ACCEPT_PAUSE_S, self._resume, sock)
        name = errno.errorcode.get(error.errno or 0, "unknown")
        suppressed = self._throttle.admit(f"accept:{name}", self._clock())
        if suppressed is not None:
            log.error(
                "web_accept_failed",
                error=error.strerror or str(error),
                errno=name,
                paused_s=ACCEPT_PAUSE_S,
                suppressed=suppressed,
                connections=self.gate.count,
            )

    def _resume(self, sock: socket.socket) -> None:
        if not self._closed and self._loop is not None:
            self._loop.add_reader(sock.fileno(), self._accept, sock)

    async def _sweep(self, every_s: float) -> None:
        while True:
            await asyncio.sleep(every_s)
            self.gate.sweep(self._clock())
            self._report()

    def _report(self) -> None:
        """A line when the gate closed connections, at most once per interval."""
        shed = self.gate.shed
        if shed.total == self._reported:
            return
        if self._throttle.admit("shed", self._clock()) is None:
            return
        log.warning(
            "web_connections_shed",
            evicted=shed.evicted,
            refused=shed.refused,
            timed_out=shed.timed_out,
            held=self.gate.count,
            cap=self.gate.cap,
        )
        self._reported = shed.total
