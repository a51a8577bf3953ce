"""A connection flood: many sockets, each holding an unfinished HTTP request.

:class:`Flood` keeps ``size`` connections open to one address from a thread of
its own. Each sends the start of a request and never its end (a slow-loris
client); a connection the server closes is opened again at once, so the
server never gets the descriptors back for long. It counts what happened.
"""

from __future__ import annotations

import contextlib
import errno
import selectors
import socket
import threading
from dataclasses import dataclass

# A request line and a header, and never the blank line that ends the headers.
UNFINISHED = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Waiting: "


@dataclass
class FloodCounts:
    """What the flood saw: connections made, closed by the server, failed to connect."""

    opened: int = 0
    closed_by_server: int = 0
    failed: int = 0
    # The most connections held open (connected and sent the unfinished request) at once.
    peak_held: int = 0


class Flood:
    """Holds ``size`` connections to ``address`` with unfinished requests until stopped."""

    def __init__(self, address: tuple[str, int], size: int) -> None:
        self.address = address
        self.size = size
        self.counts = FloodCounts()
        self._stop = threading.Event()
        self._selector = selectors.DefaultSelector()
        self._held = 0
        self._thread = threading.Thread(target=self._run, name="flood", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)

    @property
    def held(self) -> int:
        return self._held

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                while len(self._selector.get_map()) < self.size:
                    self._open()
                for key, _ in self._selector.select(0.1):
                    sock = key.fileobj
                    assert isinstance(sock, socket.socket)
                    if key.data == "connecting":
                        self._connected(sock)
                    else:
                        self._readable(sock)
        finally:
            for key in list(self._selector.get_map().values()):
                self._drop(key.fileobj)  # type: ignore[arg-type]
            self._selector.close()

    def _open(self) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setblocking(False)
        code = sock.connect_ex(self.address)
        if code not in (0, errno.EINPROGRESS):
            self.counts.failed += 1
            sock.close()
            return
        self._selector.register(sock, selectors.EVENT_WRITE, "connecting")

    def _connected(self, sock: socket.socket) -> None:
        if sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
            self.counts.failed += 1
            self._drop(sock)
            return
        try:
            sock.send(UNFINISHED)
        except OSError:
            self.counts.closed_by_server += 1
            self._drop(sock)
            return
        self.counts.opened += 1
        self._held += 1
        self.counts.peak_held = max(self.counts.peak_held, self._held)
        self._selector.modify(sock, selectors.EVENT_READ, "held")

    def _readable(self, sock: socket.socket) -> None:
        # Whatever comes (an end of file, a reset, an error answer) means the server let go.
        with contextlib.suppress(OSError):
            sock.recv(4096)
        self.counts.closed_by_server += 1
        self._held -= 1
        self._drop(sock)

    def _drop(self, sock: socket.socket) -> None:
        self._selector.unregister(sock)
        sock.close()
