"""The request and reply values REST route handlers work with, and their shared helpers.

A handler is a plain function ``(Call) -> Reply`` run in a worker thread; the
server pipeline (`orchestrator_sim.app`) has already authenticated the caller
and billed the request. Handlers raise `orchestrator_sim.errors` for refusals.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import urlencode

from orchestrator_sim.clock import parse_time
from orchestrator_sim.emulator import Emulator
from orchestrator_sim.errors import BadRequest, Forbidden, NotFound, Unprocessable
from orchestrator_sim.shapes import Shapes
from orchestrator_sim.state import Repo, SimState, User

T = TypeVar("T")

NO_ACCESS = "Resource not accessible by personal access token"


@dataclass(slots=True)
class Reply:
    """What a handler answers: a status, a JSON body (None for none), extra headers."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class Call:
    """One authenticated REST request as a handler sees it."""

    emulator: Emulator
    method: str
    path: str
    params: Mapping[str, Any]
    query: Mapping[str, str]
    user: User
    base_url: str
    raw_body: bytes = b""
    _shapes: Shapes | None = None

    @property
    def state(self) -> SimState:
        return self.emulator.state

    @property
    def shapes(self) -> Shapes:
        if self._shapes is None:
            self._shapes = Shapes(self.emulator, self.base_url)
        return self._shapes

    # ------------------------------------------------------------------ input

    def json(self) -> Any:
        """The decoded JSON body (an empty body is an empty object)."""
        if not self.raw_body.strip():
            return {}
        try:
            return json.loads(self.raw_body)
        except ValueError as exc:
            raise BadRequest("Problems parsing JSON") from exc

    def json_object(self) -> dict[str, Any]:
        data = self.json()
        if not isinstance(data, dict):
            raise BadRequest("Problems parsing JSON: expected an object")
        return data

    def field(self, data: Mapping[str, Any], name: str, kind: type[T], resource: str) -> T | None:
        """An optional body field of type ``kind`` (422 naming the field when mistyped)."""
        value = data.get(name)
        if value is None:
            return None
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise Unprocessable.field(resource, name, message=f"{name} must be {kind.__name__}")
        return value

    def required(self, data: Mapping[str, Any], name: str, kind: type[T], resource: str) -> T:
        value = self.field(data, name, kind, resource)
        if value is None:
            raise Unprocessable.field(resource, name, "missing_field")
        return value

    def query_int(self, name: str, default: int, low: int, high: int) -> int:
        raw = self.query.get(name)
        if raw is None or raw == "":
            return default
        try:
            value = int(raw)
        except ValueError as exc:
            raise Unprocessable.field("Query", name, message=f"{name} must be an integer") from exc
        return min(max(value, low), high)

    def query_choice(self, name: str, choices: Sequence[str], default: str) -> str:
        value = self.query.get(name) or default
        if value not in choices:
            raise Unprocessable.field("Query", name, message=f"{name} must be one of {choices}")
        return value

    def since(self) -> str | None:
        """The ``since`` filter normalised to GitHub's timestamp format."""
        raw = self.query.get("since")
        if not raw:
            return None
        try:
            return parse_time(raw).strftime("%Y-%m-%dT%H:%M:%SZ")
        except ValueError as exc:
            raise Unprocessable.field("Query", "since", message="since must be ISO 8601") from exc

    def number(self, name: str) -> int:
        value = self.params[name]
        return value if isinstance(value, int) else int(value)

    # ------------------------------------------------------------ permission

    def repo(self, need: str = "read") -> Repo:
        """The repository in the path; 404 if the caller cannot see it, 403 if below ``need``."""
        found = self.emulator.state.find_repo(self.params["owner"], self.params["repo"])
        if found is None or not self.emulator.state.has_permission(found, self.user.login, "read"):
            raise NotFound("repository")
        if not self.emulator.state.has_permission(found, self.user.login, need):
            raise Forbidden(NO_ACCESS)
        return found

    def allowed(self, repo: Repo, need: str) -> bool:
        return bool(self.emulator.state.has_permission(repo, self.user.login, need))

    def require(self, repo: Repo, need: str, *, unless_author: str | None = None) -> None:
        """403 unless the caller holds ``need`` (or is ``unless_author``)."""
        if unless_author is not None and unless_author.lower() == self.user.login.lower():
            return
        if not self.allowed(repo, need):
            raise Forbidden(NO_ACCESS)

    # ------------------------------------------------------------ pagination

    def page(self, items: Sequence[T]) -> tuple[list[T], dict[str, str]]:
        """The requested page of ``items`` and GitHub's ``Link`` header for the others."""
        per_page = self.query_int("per_page", 30, 1, 100)
        page = self.query_int("page", 1, 1, 10**6)
        last = max(1, math.ceil(len(items) / per_page))
        chunk = list(items[(page - 1) * per_page : page * per_page])
        links = []

        def link(number: int, rel: str) -> str:
            params = dict(self.query)
            params["page"] = str(number)
            params["per_page"] = str(per_page)
            return f'<{self.base_url}{self.path}?{urlencode(params)}>; rel="{rel}"'

        if page > 1:
            links.append(link(page - 1, "prev"))
        if page < last:
            links.append(link(page + 1, "next"))
            links.append(link(last, "last"))
        if page > 1:
            links.append(link(1, "first"))
        return chunk, ({"link": ", ".join(links)} if links else {})

    def paged(self, items: Sequence[T], render: Callable[[T], Any]) -> Reply:
        """A 200 reply holding one rendered page of ``items``, with its Link header."""
        chunk, headers = self.page(items)
        return Reply(200, [render(item) for item in chunk], headers)


Handler = Callable[[Call], Reply]


@dataclass(frozen=True, slots=True)
class RouteSpec:
    """One REST operation: HTTP method, Starlette path template, handler.

    ``free`` routes cost nothing (``/rate_limit``); ``resource`` is the budget billed.
    A ``cacheable`` GET answers from the state alone (never from the clock), so
    its rendering is reused while the state is unchanged
    (`orchestrator_sim.render_cache`).
    """

    method: str
    path: str
    handler: Handler
    free: bool = False
    resource: str = "core"
    cacheable: bool = False


def sort_key(sort: str) -> Callable[[Any], Any]:
    """Key for sorting issues/pulls/comments by GitHub's ``sort`` parameter values."""
    if sort == "updated":
        return lambda item: (item.updated_at, item.id)
    return lambda item: (item.created_at, item.id)
