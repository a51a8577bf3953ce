"""Dropping a connection on purpose, as a proxy dying mid-request would.

The fault rules ``reset`` and ``lost_response`` end a request without an
answer; `ConnectionControl` wraps the ASGI application so the pipeline can
reset the TCP connection, and `drop` does it (or, without the wrapper, sends
a truncated answer).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

ABORT_KEY = "sim.abort"


class ConnectionControl:
    """ASGI wrapper that lets the pipeline drop a connection without answering.

    uvicorn's ``send`` is a bound method of the request cycle, which holds the
    transport; setting SO_LINGER to zero before closing makes the client see a
    reset, as when a proxy dies mid-request.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        dropped = False
        transport = getattr(getattr(send, "__self__", None), "transport", None)

        async def abort() -> None:
            nonlocal dropped
            dropped = True
            if transport is not None:
                sock = transport.get_extra_info("socket")
                if sock is not None:
                    with contextlib.suppress(OSError):
                        sock.setsockopt(
                            socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                        )
                transport.abort()
            # Let the server notice the lost connection before the app returns.
            for _ in range(3):
                await asyncio.sleep(0)

        async def guarded_send(message: Message) -> None:
            if not dropped:
                await send(message)

        scope[ABORT_KEY] = abort
        try:
            await self.app(scope, receive, guarded_send)
        except Exception:
            if not dropped:
                raise


async def drop(request: Request) -> Response:
    """End ``request`` without an answer: a reset connection, or a truncated answer."""
    abort: Callable[[], Awaitable[None]] | None = request.scope.get(ABORT_KEY)
    if abort is not None:
        await abort()
    # Without the wrapper the best available failure is a truncated answer.
    return TruncatedResponse()


class TruncatedResponse(Response):
    """Announces a body and then fails, so the client sees a broken connection."""

    def __init__(self) -> None:
        super().__init__(b"", status_code=200)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-length", b"1024"), (b"content-type", b"application/json")],
            }
        )
        raise ConnectionAbortedError("injected fault: connection dropped")
