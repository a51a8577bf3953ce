"""A TCP relay between the daemons and PostgreSQL that a test can cut to play an outage."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator

from sqlalchemy.engine import make_url


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
            # As the kernel does for a process that dies: the other side sees the connection
            # end (PostgreSQL rolls back what it had open). close() alone would not wake the
            # thread reading the other direction, and that connection would linger.
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()


@contextlib.contextmanager
def relayed(pg_url: str) -> Iterator[tuple[Relay, str]]:
    """A relay to the database of ``pg_url``, and the URL that reaches it through the relay."""
    url = make_url(pg_url)
    relay = Relay(url.host or "127.0.0.1", url.port or 5432)
    try:
        yield (
            relay,
            url.set(host="127.0.0.1", port=relay.port).render_as_string(hide_password=False),
        )
    finally:
        relay.cut()
