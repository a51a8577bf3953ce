"""What the emulator's GraphQL resolvers share: the request context, the sources
they hand each other, GitHub-typed errors, and Relay pagination with cursors.

Resolvers are plain functions ``(source, context, arguments) -> value`` kept in
tables by ``Type.field`` (see `orchestrator_sim.graphql_api.resolvers`); each
module of the executor contributes the fields of the types it knows.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from orchestrator_sim.billing import RateSnapshot
from orchestrator_sim.emulator import Emulator
from orchestrator_sim.gitstore import CommitInfo
from orchestrator_sim.graphql_cost import QueryCost
from orchestrator_sim.records import (
    CheckRun,
    CommitStatus,
    Issue,
    IssueComment,
    PullRequest,
    Repo,
    Review,
    ReviewComment,
    ReviewThread,
    User,
)
from orchestrator_sim.state import SimState

UNSUPPORTED = "EMULATOR_UNSUPPORTED"


class GraphQLRequestError(Exception):
    """A GitHub-typed error raised by a resolver (``NOT_FOUND``, ``FORBIDDEN`` ...)."""

    def __init__(self, message: str, error_type: str) -> None:
        super().__init__(message)
        self.message = message
        self.error_type = error_type


@dataclass(frozen=True)
class Context:
    """One request: the emulator, the caller, what the query costs and the budget after it."""

    emulator: Emulator
    user: User
    cost: QueryCost
    rate: RateSnapshot

    @property
    def state(self) -> SimState:
        return self.emulator.state


@dataclass(frozen=True)
class PullNode:
    """A pull request as a GraphQL source."""

    repo: Repo
    pr: PullRequest


@dataclass(frozen=True)
class ReviewNode:
    """A pull-request review as a GraphQL source."""

    repo: Repo
    review: Review


@dataclass(frozen=True)
class ThreadNode:
    """A review thread as a GraphQL source."""

    repo: Repo
    thread: ReviewThread


@dataclass(frozen=True)
class CommentNode:
    """A review (diff) comment as a GraphQL source."""

    repo: Repo
    comment: ReviewComment


@dataclass(frozen=True)
class IssueNode:
    """An issue (not a pull request) as a GraphQL source."""

    repo: Repo
    issue: Issue


@dataclass(frozen=True)
class IssueCommentNode:
    """A conversation comment as a GraphQL source."""

    repo: Repo
    comment: IssueComment


@dataclass(frozen=True)
class CommitNode:
    """A commit of a repository, by SHA, with its details when already read from git."""

    repo: Repo
    sha: str
    info: CommitInfo | None = None


@dataclass(frozen=True)
class RefNode:
    """A branch and the commit it points at."""

    repo: Repo
    name: str
    sha: str


@dataclass(frozen=True)
class RollupNode:
    """The status-check rollup of one commit, with its state already computed."""

    repo: Repo
    sha: str
    state: str


@dataclass(frozen=True)
class CheckRunNode:
    """A check run as a rollup context."""

    run: CheckRun


@dataclass(frozen=True)
class StatusNode:
    """A commit status as a rollup context."""

    status: CommitStatus


@dataclass(frozen=True)
class Edge:
    """One item of a connection page and its cursor."""

    cursor: str
    node: Any


@dataclass(frozen=True)
class Page:
    """One page of a connection, cut from the full ordered list by the Relay arguments.

    ``extra`` carries connection-level figures some connections report
    (counts by state), computed over the whole list.
    """

    edges: tuple[Edge, ...]
    total: int
    has_next: bool
    has_previous: bool
    extra: Any = None


@dataclass(frozen=True)
class Payload:
    """A mutation's answer: the client's mutation id and the changed object."""

    client_mutation_id: str | None
    value: Any


Resolver = Callable[[Any, Context, dict[str, Any]], Any]

_CURSOR_PREFIX = "cursor:v2:"


def cursor_for(key: Any) -> str:
    """An opaque cursor naming an item by its sort key (stable while items come and go)."""
    raw = _CURSOR_PREFIX + json.dumps(key, separators=(",", ":"))
    return base64.b64encode(raw.encode()).decode("ascii")


def cursor_key(cursor: str, argument: str) -> Any:
    """The sort key inside a cursor made by `cursor_for`; GitHub's error otherwise."""
    try:
        text = base64.b64decode(cursor.encode("ascii"), validate=True).decode("utf-8")
        if text.startswith(_CURSOR_PREFIX):
            return _as_key(json.loads(text[len(_CURSOR_PREFIX) :]))
    except ValueError:
        pass
    raise GraphQLRequestError(
        f"`{cursor}` does not appear to be a valid cursor ({argument}).",
        "INVALID_CURSOR_ARGUMENTS",
    )


def _as_key(value: Any) -> Any:
    """JSON brings tuples back as lists; keys compare as tuples."""
    if isinstance(value, list):
        return tuple(_as_key(v) for v in value)
    return value


def paginate(
    items: Sequence[Any],
    args: Mapping[str, Any],
    key: Callable[[Any], Any],
    *,
    descending: bool = False,
    extra: Any = None,
    wrap: Callable[[Any], Any] | None = None,
) -> Page:
    """Relay pagination over ``items`` (already in order): after/before narrow the list,
    then ``first`` keeps its head and ``last`` its tail.

    Cursors carry the item's sort ``key`` (ascending along the list, or
    descending with ``descending``), so a page boundary stays put when items
    are added or removed elsewhere in the list. ``wrap`` turns a listed item
    into the node the page holds (when the list pairs nodes with their keys).
    """
    keys = [_as_key(key(item)) for item in items]
    start, end = 0, len(items)
    if args.get("after") is not None:
        after = cursor_key(args["after"], "after")
        start = sum(1 for k in keys if (k >= after if descending else k <= after))
    if args.get("before") is not None:
        before = cursor_key(args["before"], "before")
        end = sum(1 for k in keys if (k > before if descending else k < before))
    end = max(start, end)
    first, last = args.get("first"), args.get("last")
    if first is not None:
        end = min(end, start + first)
    if last is not None:
        start = max(start, end - last)
    unwrap = wrap or (lambda item: item)
    edges = tuple(Edge(cursor_for(keys[i]), unwrap(items[i])) for i in range(start, end))
    return Page(
        edges=edges,
        total=len(items),
        has_next=end < len(items),
        has_previous=start > 0,
        extra=extra,
    )


def node_id(kind: str, *parts: object) -> str:
    """A node id for objects the state has no record of (commits, rollups)."""
    raw = f"{len(kind):02d}:{kind}" + ":".join(str(p) for p in parts)
    return base64.b64encode(raw.encode()).decode("ascii")


def actor(state: SimState, login: str | None) -> User | None:
    """The account behind a login, or None (GitHub's ghost) when it is unknown."""
    return state.find_user(login) if login else None


def repo_visible(state: SimState, repo: Repo, user: User) -> bool:
    """Whether ``user`` may see ``repo`` at all."""
    return state.permission(repo, user.login) is not None


def upper(value: str | None) -> str | None:
    """An enum value in GitHub's GraphQL spelling."""
    return value.upper() if value is not None else None


def connection_resolvers(type_name: str, *, with_edges: bool = True) -> dict[str, Resolver]:
    """``nodes``, ``edges``, ``pageInfo`` and ``totalCount`` of a connection over a `Page`."""
    resolvers: dict[str, Resolver] = {
        f"{type_name}.nodes": lambda page, _c, _a: [edge.node for edge in page.edges],
    }
    if with_edges:
        resolvers.update(
            {
                f"{type_name}.edges": lambda page, _c, _a: list(page.edges),
                f"{type_name}.pageInfo": lambda page, _c, _a: page,
                f"{type_name}.totalCount": lambda page, _c, _a: page.total,
            }
        )
        edge = type_name.replace("Connection", "Edge")
        resolvers.update(
            {
                f"{edge}.cursor": lambda e, _c, _a: e.cursor,
                f"{edge}.node": lambda e, _c, _a: e.node,
            }
        )
    return resolvers


def page_info_resolvers() -> dict[str, Resolver]:
    """``PageInfo`` over a `Page`."""
    return {
        "PageInfo.endCursor": lambda p, _c, _a: p.edges[-1].cursor if p.edges else None,
        "PageInfo.startCursor": lambda p, _c, _a: p.edges[0].cursor if p.edges else None,
        "PageInfo.hasNextPage": lambda p, _c, _a: p.has_next,
        "PageInfo.hasPreviousPage": lambda p, _c, _a: p.has_previous,
    }
