"""Control routes from a table of (method, path, handler): one route per path."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

H = TypeVar("H")
Endpoint = Callable[[Request], Any]


def method_routes(
    table: Iterable[tuple[str, str, H]], make: Callable[[H], Endpoint]
) -> list[Route]:
    """A route per path of ``table`` that sends each method to ``make(handler)``."""
    grouped: dict[str, dict[str, H]] = {}
    for method, path, handler in table:
        grouped.setdefault(path, {})[method] = handler
    return [
        Route(path, _by_method({m: make(h) for m, h in handlers.items()}), methods=list(handlers))
        for path, handlers in grouped.items()
    ]


def _by_method(endpoints: dict[str, Endpoint]) -> Endpoint:
    async def endpoint(request: Request) -> Response:
        chosen = endpoints.get(request.method)
        if chosen is None:
            message = f"{request.method} is not supported here"
            return JSONResponse(
                {"error": {"code": "method_not_allowed", "message": message}}, status_code=405
            )
        response: Response = await chosen(request)
        return response

    return endpoint
