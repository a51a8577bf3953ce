"""The web server's connections: how many it holds, and how long one may wait for a request.

Anyone who can reach the dashboard can open connections, and a connection
that never finishes its request holds a descriptor of the daemon for as long
as the client likes. :class:`ConnectionGate` holds at most ``cap`` of them. A
connection beyond the cap closes the oldest one that is not in a request
(still waiting for its request head, or idle between requests): clients that
hold connections without asking anything lose them to clients that ask, so
an operator's probe gets through a flood. When every held connection is in a
request, the new one is closed instead. A connection that has not sent a
whole request head within ``header_timeout_s`` (of opening, or of its last
answer) is closed by :meth:`ConnectionGate.sweep`.

:class:`GuardedConnection` is what the listener creates for each accepted
socket: uvicorn's HTTP/1.1 protocol inside, reporting to the gate.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Protocol, cast

from uvicorn.protocols.http.h11_impl import H11Protocol


class Held(Protocol):
    """What the gate needs of a connection."""

    def request(self) -> object | None:
        """The request the connection is on (a new object per request); None before the first."""

    def answering(self) -> bool:
        """A request head came in and its answer has not all been sent yet."""

    def drop(self) -> None:
        """Close the connection at once."""


@dataclass
class _Watch:
    # Since when the connection has been waiting for a request head, as last seen.
    since: float
    request: object | None


@dataclass
class Shed:
    """Connections the gate closed: beyond the cap (closing another, or themselves), or too slow."""

    evicted: int = 0
    refused: int = 0
    timed_out: int = 0

    @property
    def total(self) -> int:
        return self.evicted + self.refused + self.timed_out


class ConnectionGate:
    """The cap and the request-head deadline of one server; the clock is passed in."""

    def __init__(self, cap: int, header_timeout_s: float) -> None:
        self.cap = cap
        self.header_timeout_s = header_timeout_s
        self.shed = Shed()
        # Held connections, oldest first.
        self._held: dict[Held, _Watch] = {}

    @property
    def count(self) -> int:
        return len(self._held)

    def make_room(self) -> bool:
        """For a socket just accepted: True when it may be held, False when it is to be closed."""
        if self.count >= self.cap:
            victim = next((held for held in self._held if not held.answering()), None)
            if victim is None:
                self.shed.refused += 1
                return False
            del self._held[victim]
            victim.drop()
            self.shed.evicted += 1
        return True

    def opened(self, held: Held, now: float) -> None:
        """Hold ``held`` (from the moment its socket is accepted, so it can be evicted at once)."""
        self._held[held] = _Watch(since=now, request=held.request())

    def closed(self, held: Held) -> None:
        self._held.pop(held, None)

    def sweep(self, now: float) -> None:
        """Close every connection that has waited for a request head longer than the deadline."""
        late = []
        for held, watch in self._held.items():
            request = held.request()
            if request is not watch.request or held.answering():
                # A request came in, or is being answered: the wait starts again from here.
                watch.request = request
                watch.since = now
            elif now - watch.since >= self.header_timeout_s:
                late.append(held)
        for held in late:
            del self._held[held]
            held.drop()
        self.shed.timed_out += len(late)


class GuardedConnection(asyncio.Protocol):
    """One HTTP/1.1 connection: uvicorn's h11 protocol, held by a :class:`ConnectionGate`."""

    def __init__(self, inner: H11Protocol, gate: ConnectionGate) -> None:
        self._inner = inner
        self._gate = gate
        self._transport: asyncio.Transport | None = None
        # Dropped by the gate before its transport existed: closed as soon as it does.
        self._dropped = False
        # Whether uvicorn's protocol saw the connection (it did not when it was dropped first).
        self._serving = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)
        if self._dropped:
            self._transport.abort()
            return
        self._serving = True
        self._inner.connection_made(self._transport)

    def data_received(self, data: bytes) -> None:
        self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        # None: the transport closes once the client has ended its side, as uvicorn has it.
        self._inner.eof_received()
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self._gate.closed(self)
        if self._serving:
            self._inner.connection_lost(exc)

    def pause_writing(self) -> None:
        self._inner.pause_writing()

    def resume_writing(self) -> None:
        self._inner.resume_writing()

    # What the gate reads.

    def request(self) -> object | None:
        return self._inner.cycle

    def answering(self) -> bool:
        cycle = self._inner.cycle
        if cycle is not None and not cycle.response_complete:
            return True
        # The answer is complete but not yet all sent: closing now would cut it short.
        return self._transport is not None and self._transport.get_write_buffer_size() > 0

    @property
    def dropped(self) -> bool:
        return self._dropped

    def drop(self) -> None:
        self._dropped = True
        if self._transport is not None:
            self._transport.abort()
