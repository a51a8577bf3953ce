"""The emulator's ``POST /graphql``: GitHub's GraphQL API for the documents the product sends.

A request is parsed, validated against GitHub's published schema (so a field
GitHub does not have is refused the way GitHub refuses it), then against the
emulated subset below (so a valid GitHub field the emulator does not model is
refused by name instead of answered wrongly), checked against GitHub's
pagination and node limits, charged at the points of GitHub's formula, and
executed by graphql-core with resolvers over `SimState`.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any, cast

from graphql import (
    DocumentNode,
    ExecutionResult,
    GraphQLError,
    GraphQLResolveInfo,
    GraphQLSchema,
    OperationDefinitionNode,
    OperationType,
    build_schema,
    execute,
    parse,
    validate,
)
from graphql.error import GraphQLSyntaxError
from graphql.execution.values import get_variable_values

from orchestrator.logs import get_logger
from orchestrator.sim.billing import Billing, RateSnapshot
from orchestrator.sim.clock import format_time
from orchestrator.sim.errors import Forbidden, NotFound, SimError
from orchestrator.sim.graphql_cost import (
    MAX_NODES,
    MAX_PAGE_SIZE,
    ConnectionUse,
    QueryCost,
    SchemaUnavailableError,
    connection_uses,
    github_schema_path,
    load_github_schema,
    select_operation,
)
from orchestrator.sim.records import (
    CheckRun,
    CommitStatus,
    PullRequest,
    Repo,
    Review,
    ReviewComment,
    ReviewThread,
    User,
)
from orchestrator.sim.state import SimState

log = get_logger(__name__)

# The part of GitHub's schema the emulator answers. Every type, field, argument
# and enum value here exists in GitHub's schema with the same type (a contract
# test proves it), so a document valid here is valid on GitHub.
EMULATED_SDL = """
schema {
  query: Query
  mutation: Mutation
}

scalar DateTime
scalar GitObjectID
scalar URI

type Query {
  rateLimit: RateLimit
  repository(owner: String!, name: String!): Repository
  viewer: User!
}

type Mutation {
  resolveReviewThread(input: ResolveReviewThreadInput!): ResolveReviewThreadPayload
  addPullRequestReviewThreadReply(
    input: AddPullRequestReviewThreadReplyInput!
  ): AddPullRequestReviewThreadReplyPayload
}

type RateLimit {
  cost: Int!
  limit: Int!
  nodeCount: Int!
  remaining: Int!
  resetAt: DateTime!
  used: Int!
}

interface Node {
  id: ID!
}

interface Actor {
  login: String!
}

type User implements Actor & Node {
  id: ID!
  databaseId: Int
  login: String!
  name: String
}

type Bot implements Actor & Node {
  id: ID!
  databaseId: Int
  login: String!
}

type Repository implements Node {
  id: ID!
  databaseId: Int
  name: String!
  nameWithOwner: String!
  isPrivate: Boolean!
  pullRequest(number: Int!): PullRequest
}

enum PullRequestState {
  CLOSED
  MERGED
  OPEN
}

enum MergeableState {
  CONFLICTING
  MERGEABLE
  UNKNOWN
}

enum MergeStateStatus {
  BEHIND
  BLOCKED
  CLEAN
  DIRTY
  DRAFT
  HAS_HOOKS
  UNKNOWN
  UNSTABLE
}

enum PullRequestReviewDecision {
  APPROVED
  CHANGES_REQUESTED
  REVIEW_REQUIRED
}

enum PullRequestReviewState {
  APPROVED
  CHANGES_REQUESTED
  COMMENTED
  DISMISSED
  PENDING
}

enum DiffSide {
  LEFT
  RIGHT
}

enum StatusState {
  ERROR
  EXPECTED
  FAILURE
  PENDING
  SUCCESS
}

enum CheckStatusState {
  COMPLETED
  IN_PROGRESS
  PENDING
  QUEUED
  REQUESTED
  WAITING
}

enum CheckConclusionState {
  ACTION_REQUIRED
  CANCELLED
  FAILURE
  NEUTRAL
  SKIPPED
  STALE
  STARTUP_FAILURE
  SUCCESS
  TIMED_OUT
}

type PullRequest implements Node {
  id: ID!
  databaseId: Int
  number: Int!
  title: String!
  body: String!
  author: Actor
  state: PullRequestState!
  isDraft: Boolean!
  closed: Boolean!
  merged: Boolean!
  mergedAt: DateTime
  closedAt: DateTime
  createdAt: DateTime!
  updatedAt: DateTime!
  headRefName: String!
  headRefOid: GitObjectID!
  baseRefName: String!
  mergeable: MergeableState!
  mergeStateStatus: MergeStateStatus!
  reviewDecision: PullRequestReviewDecision
  repository: Repository!
  reviews(after: String, before: String, first: Int, last: Int): PullRequestReviewConnection
  reviewThreads(
    after: String
    before: String
    first: Int
    last: Int
  ): PullRequestReviewThreadConnection!
  commits(last: Int): PullRequestCommitConnection!
}

type PageInfo {
  endCursor: String
  hasNextPage: Boolean!
  hasPreviousPage: Boolean!
  startCursor: String
}

type PullRequestReviewConnection {
  edges: [PullRequestReviewEdge]
  nodes: [PullRequestReview]
  pageInfo: PageInfo!
  totalCount: Int!
}

type PullRequestReviewEdge {
  cursor: String!
  node: PullRequestReview
}

type PullRequestReview implements Node {
  id: ID!
  databaseId: Int
  author: Actor
  state: PullRequestReviewState!
  body: String!
  commit: Commit
  createdAt: DateTime!
  submittedAt: DateTime
}

type PullRequestReviewThreadConnection {
  edges: [PullRequestReviewThreadEdge]
  nodes: [PullRequestReviewThread]
  pageInfo: PageInfo!
  totalCount: Int!
}

type PullRequestReviewThreadEdge {
  cursor: String!
  node: PullRequestReviewThread
}

type PullRequestReviewThread implements Node {
  id: ID!
  isResolved: Boolean!
  isOutdated: Boolean!
  isCollapsed: Boolean!
  path: String!
  line: Int
  originalLine: Int
  diffSide: DiffSide!
  resolvedBy: User
  comments(
    after: String
    before: String
    first: Int
    last: Int
  ): PullRequestReviewCommentConnection!
}

type PullRequestReviewCommentConnection {
  edges: [PullRequestReviewCommentEdge]
  nodes: [PullRequestReviewComment]
  pageInfo: PageInfo!
  totalCount: Int!
}

type PullRequestReviewCommentEdge {
  cursor: String!
  node: PullRequestReviewComment
}

type PullRequestReviewComment implements Node {
  id: ID!
  databaseId: Int
  author: Actor
  body: String!
  createdAt: DateTime!
  updatedAt: DateTime!
  diffHunk: String!
  path: String!
  line: Int
  originalLine: Int
  replyTo: PullRequestReviewComment
  commit: Commit
  originalCommit: Commit
  pullRequestReview: PullRequestReview
}

type PullRequestCommitConnection {
  nodes: [PullRequestCommit]
}

type PullRequestCommit implements Node {
  id: ID!
  commit: Commit!
}

type Commit implements Node {
  id: ID!
  oid: GitObjectID!
  statusCheckRollup: StatusCheckRollup
}

type StatusCheckRollup implements Node {
  id: ID!
  state: StatusState!
  commit: Commit
  contexts(
    after: String
    before: String
    first: Int
    last: Int
  ): StatusCheckRollupContextConnection!
}

union StatusCheckRollupContext = CheckRun | StatusContext

type StatusCheckRollupContextConnection {
  edges: [StatusCheckRollupContextEdge]
  nodes: [StatusCheckRollupContext]
  pageInfo: PageInfo!
  totalCount: Int!
}

type StatusCheckRollupContextEdge {
  cursor: String!
  node: StatusCheckRollupContext
}

type CheckRun implements Node {
  id: ID!
  databaseId: Int
  name: String!
  status: CheckStatusState!
  conclusion: CheckConclusionState
  detailsUrl: URI
  startedAt: DateTime
  completedAt: DateTime
  title: String
  summary: String
  text: String
}

type StatusContext implements Node {
  id: ID!
  context: String!
  state: StatusState!
  description: String
  targetUrl: URI
  createdAt: DateTime!
  creator: Actor
}

input ResolveReviewThreadInput {
  clientMutationId: String
  threadId: ID!
}

type ResolveReviewThreadPayload {
  clientMutationId: String
  thread: PullRequestReviewThread
}

input AddPullRequestReviewThreadReplyInput {
  body: String!
  clientMutationId: String
  pullRequestReviewThreadId: ID!
}

type AddPullRequestReviewThreadReplyPayload {
  clientMutationId: String
  comment: PullRequestReviewComment
}
"""

_schema_lock = threading.Lock()
_emulated: list[GraphQLSchema] = []
_github: dict[Path, GraphQLSchema | None] = {}


def emulated_schema() -> GraphQLSchema:
    """The subset schema the executor runs on, built once."""
    with _schema_lock:
        if not _emulated:
            _emulated.append(build_schema(EMULATED_SDL))
        return _emulated[0]


def github_schema_or_none() -> GraphQLSchema | None:
    """GitHub's schema when its file is cached, else None (validation uses the subset only).

    The answer is remembered per file path, so a missing file is reported once.
    """
    path = github_schema_path()
    with _schema_lock:
        if path in _github:
            return _github[path]
    try:
        schema: GraphQLSchema | None = load_github_schema(path)
    except SchemaUnavailableError as exc:
        log.warning("graphql_schema_unavailable", error=str(exc))
        schema = None
    with _schema_lock:
        return _github.setdefault(path, schema)


# ------------------------------------------------------------------- errors


class GraphQLRequestError(Exception):
    """A GitHub-typed error raised by a resolver (``NOT_FOUND``, ``FORBIDDEN`` ...)."""

    def __init__(self, message: str, error_type: str) -> None:
        super().__init__(message)
        self.message = message
        self.error_type = error_type


_SIM_ERROR_TYPES = {NotFound: "NOT_FOUND", Forbidden: "FORBIDDEN"}
UNSUPPORTED = "EMULATOR_UNSUPPORTED"


def _error_body(errors: Sequence[dict[str, Any]]) -> dict[str, Any]:
    return {"errors": list(errors)}


def _message(message: str, error_type: str | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"message": message}
    if error_type is not None:
        entry["type"] = error_type
    return entry


def _format_error(error: GraphQLError, error_type: str | None = None) -> dict[str, Any]:
    """One error in GitHub's shape: type (when known), path, locations, message."""
    original = error.original_error
    entry: dict[str, Any] = {}
    if isinstance(original, GraphQLRequestError):
        entry["type"] = original.error_type
    elif isinstance(original, SimError):
        entry["type"] = _SIM_ERROR_TYPES.get(type(original), "UNPROCESSABLE")
    elif error_type is not None:
        entry["type"] = error_type
    if error.path:
        entry["path"] = list(error.path)
    if error.locations:
        entry["locations"] = [{"line": loc.line, "column": loc.column} for loc in error.locations]
    if isinstance(original, SimError):
        details = "; ".join(_detail(e) for e in original.errors)
        entry["message"] = f"{original.message}: {details}" if details else original.message
    elif original is not None and not isinstance(original, GraphQLRequestError | GraphQLError):
        # A resolver bug: answer a GraphQL error, keep the details in the emulator's log.
        log.error("graphql_resolver_failed", path=entry.get("path"), error=repr(original))
        entry["message"] = "Something went wrong while executing your query."
    else:
        entry["message"] = error.message
    return entry


def _detail(error: Mapping[str, Any]) -> str:
    """One entry of a REST-style ``errors`` list as text naming the field."""
    if error.get("message"):
        return str(error["message"])
    return " ".join(str(error[key]) for key in ("field", "code") if error.get(key))


# --------------------------------------------------------------------- hook


@dataclass(frozen=True)
class _Request:
    document: DocumentNode
    operation: OperationDefinitionNode
    variables: dict[str, Any]


def handle_graphql(
    state: SimState, billing: Billing, user: User, body: dict[str, Any]
) -> tuple[int, dict[str, Any]]:
    """Run one GraphQL request for ``user`` and return (HTTP status, JSON body).

    Malformed, unknown or unsupported documents answer 200 with ``errors`` and
    cost nothing. A spent budget raises `RateLimited` from ``billing.charge``,
    which the server turns into GitHub's answer.
    """
    if user.token is None:
        return 401, {
            "message": "Requires authentication",
            "documentation_url": "https://docs.github.com/graphql",
        }
    prepared = _prepare(body)
    if isinstance(prepared, list):
        return 200, _error_body(prepared)
    emulated = emulated_schema()
    uses = connection_uses(
        prepared.document, prepared.variables, operation_name=_op_name(prepared), schema=emulated
    )
    limit_errors = _pagination_errors(uses)
    if limit_errors:
        return 200, _error_body(limit_errors)
    cost = QueryCost.of(uses)
    if cost.nodes > MAX_NODES:
        message = (
            f"This query requests up to {cost.nodes:,} possible nodes which exceeds "
            f"the maximum limit of {MAX_NODES:,}."
        )
        return 200, _error_body([_message(message, "MAX_NODE_LIMIT_EXCEEDED")])
    snapshot = billing.charge(user.token, resource="graphql", units=cost.points, user_id=user.id)
    log.debug(
        "graphql_charged",
        login=user.login,
        operation=_op_name(prepared),
        points=cost.points,
        requests=cost.requests,
        remaining=snapshot.remaining,
    )
    context = _Context(state=state, user=user, cost=cost, rate=snapshot)
    with state.lock:
        result = execute(
            emulated,
            prepared.document,
            context_value=context,
            variable_values=prepared.variables,
            operation_name=_op_name(prepared),
            field_resolver=_resolve_field,
            type_resolver=_resolve_type,
        )
    if not isinstance(result, ExecutionResult):
        raise TypeError("the emulator's GraphQL resolvers must run synchronously")
    payload: dict[str, Any] = {"data": result.data}
    if result.errors:
        payload["errors"] = [_format_error(e) for e in result.errors]
    return 200, payload


def _op_name(request: _Request) -> str | None:
    return request.operation.name.value if request.operation.name else None


def _prepare(body: Mapping[str, Any]) -> _Request | list[dict[str, Any]]:
    """Parse, validate and coerce the request, or return the errors to answer with."""
    query = body.get("query")
    if not isinstance(query, str) or not query.strip():
        return [_message("A query attribute must be specified and must be a string.")]
    raw_variables = body.get("variables")
    if isinstance(raw_variables, str) and raw_variables.strip():
        try:
            raw_variables = json.loads(raw_variables)
        except ValueError:
            return [_message("Variables are invalid JSON.")]
    if raw_variables in (None, ""):
        raw_variables = {}
    if not isinstance(raw_variables, dict):
        return [_message("Variables must be a JSON object.")]
    operation_name = body.get("operationName")
    if operation_name is not None and not isinstance(operation_name, str):
        return [_message("operationName must be a string.")]
    checked = _checked_document(query, github_schema_path())
    if isinstance(checked, tuple):
        return [dict(error) for error in checked]
    document = checked
    try:
        operation = select_operation(document, operation_name or None)
    except ValueError as exc:
        return [_message(str(exc))]
    if operation.operation is OperationType.SUBSCRIPTION:
        return [_message("Subscriptions are not supported.")]
    coerced = get_variable_values(
        emulated_schema(), operation.variable_definitions or (), raw_variables
    )
    if isinstance(coerced, list):
        return [_format_error(e) for e in coerced]
    # graphql-core 3.3 wraps the values with their sources; 3.2 returns the dict itself.
    values = cast("Mapping[str, Any]", getattr(coerced, "coerced", coerced))
    return _Request(document=document, operation=operation, variables=dict(values))


@lru_cache(maxsize=256)
def _checked_document(
    query: str, github_path: Path
) -> DocumentNode | tuple[Mapping[str, Any], ...]:
    """The parsed document, or the errors refusing it, remembered per query text.

    The product sends the same few documents over and over; validating a
    100-alias batch against both schemas takes tens of milliseconds.
    ``github_path`` keys the answer to the GitHub schema file it was checked with.
    """
    try:
        document = parse(query)
    except GraphQLSyntaxError as exc:
        return (_format_error(exc),)
    github = github_schema_or_none()
    if github is not None:
        errors = validate(github, document)
        if errors:
            return tuple(_format_error(e) for e in errors)
    subset_errors = validate(emulated_schema(), document)
    if subset_errors:
        return tuple(_unsupported(e) for e in subset_errors)
    return document


def _unsupported(error: GraphQLError) -> dict[str, Any]:
    entry = _format_error(error, UNSUPPORTED)
    entry["message"] = (
        f"{error.message} GitHub's schema has it, but it is outside the subset the "
        "emulator answers (see docs/github-contract.md)."
    )
    return entry


def _pagination_errors(uses: Sequence[ConnectionUse]) -> list[dict[str, Any]]:
    """GitHub's rules: first or last on every connection listing items, each 0 to 100."""
    errors: list[dict[str, Any]] = []
    for use in uses:
        for name, value in (("first", use.first), ("last", use.last)):
            if value is not None and value > MAX_PAGE_SIZE:
                errors.append(
                    _message(
                        f"Requesting {value} records on the `{use.field_name}` connection "
                        f"exceeds the `{name}` limit of {MAX_PAGE_SIZE} records.",
                        "EXCESSIVE_PAGINATION",
                    )
                )
            elif value is not None and value < 0:
                errors.append(
                    _message(
                        f"`{name}` on the `{use.field_name}` connection cannot be less than 0.",
                        "INVALID_PAGINATION",
                    )
                )
        if use.selects_items and use.first is None and use.last is None:
            errors.append(
                _message(
                    f"You must provide a `first` or `last` value to properly paginate "
                    f"the `{use.field_name}` connection.",
                    "MISSING_PAGINATION_BOUNDARIES",
                )
            )
    return errors


# ------------------------------------------------------------------ sources


@dataclass(frozen=True)
class _Context:
    state: SimState
    user: User
    cost: QueryCost
    rate: RateSnapshot


@dataclass(frozen=True)
class _PullNode:
    repo: Repo
    pr: PullRequest


@dataclass(frozen=True)
class _ReviewNode:
    repo: Repo
    review: Review


@dataclass(frozen=True)
class _ThreadNode:
    repo: Repo
    thread: ReviewThread


@dataclass(frozen=True)
class _CommentNode:
    repo: Repo
    comment: ReviewComment


@dataclass(frozen=True)
class _CommitNode:
    repo: Repo
    sha: str


@dataclass(frozen=True)
class _RollupNode:
    repo: Repo
    sha: str
    state: str


@dataclass(frozen=True)
class _CheckRunNode:
    run: CheckRun


@dataclass(frozen=True)
class _StatusNode:
    status: CommitStatus


@dataclass(frozen=True)
class _Edge:
    cursor: str
    node: Any


@dataclass(frozen=True)
class _Page:
    """One page of a connection, cut from the full ordered list by the Relay arguments."""

    edges: tuple[_Edge, ...]
    total: int
    has_next: bool
    has_previous: bool


@dataclass(frozen=True)
class _Payload:
    client_mutation_id: str | None
    value: Any


def _cursor(index: int) -> str:
    return base64.b64encode(f"cursor:v2:{index}".encode()).decode("ascii")


def _cursor_index(cursor: str, argument: str) -> int:
    try:
        text = base64.b64decode(cursor.encode("ascii"), validate=True).decode("ascii")
        prefix, _, number = text.rpartition(":")
        if prefix == "cursor:v2" and number.isdigit():
            return int(number)
    except ValueError:
        pass
    raise GraphQLRequestError(
        f"`{cursor}` does not appear to be a valid cursor ({argument}).", "INVALID_CURSOR_ARGUMENTS"
    )


def _paginate(items: Sequence[Any], args: Mapping[str, Any]) -> _Page:
    """Relay pagination: after/before narrow the list, then first keeps the head, last the tail."""
    start, end = 0, len(items)
    if args.get("after") is not None:
        start = max(start, _cursor_index(args["after"], "after") + 1)
    if args.get("before") is not None:
        end = min(end, _cursor_index(args["before"], "before"))
    end = max(start, end)
    first, last = args.get("first"), args.get("last")
    if first is not None:
        end = min(end, start + first)
    if last is not None:
        start = max(start, end - last)
    edges = tuple(_Edge(_cursor(i), items[i]) for i in range(start, end))
    return _Page(edges=edges, total=len(items), has_next=end < len(items), has_previous=start > 0)


def _node_id(kind: str, *parts: object) -> str:
    raw = f"{len(kind):02d}:{kind}" + ":".join(str(p) for p in parts)
    return base64.b64encode(raw.encode()).decode("ascii")


def _actor(state: SimState, login: str | None) -> User | None:
    return state.find_user(login) if login else None


def _repo_visible(state: SimState, repo: Repo, user: User) -> bool:
    return state.permission(repo, user.login) is not None


# ---------------------------------------------------------------- resolvers

Resolver = Callable[[Any, _Context, dict[str, Any]], Any]


def _query_repository(_: Any, ctx: _Context, args: dict[str, Any]) -> Repo:
    owner, name = args["owner"], args["name"]
    repo = ctx.state.find_repo(owner, name)
    if repo is None or not _repo_visible(ctx.state, repo, ctx.user):
        raise GraphQLRequestError(
            f"Could not resolve to a Repository with the name '{owner}/{name}'.", "NOT_FOUND"
        )
    return repo


def _repository_pull(repo: Repo, _: _Context, args: dict[str, Any]) -> _PullNode:
    number = args["number"]
    pr = repo.pulls.get(number)
    if pr is None:
        raise GraphQLRequestError(
            f"Could not resolve to a PullRequest with the number of {number}.", "NOT_FOUND"
        )
    return _PullNode(repo, pr)


def _pull_state(node: _PullNode) -> str:
    if node.pr.merged:
        return "MERGED"
    return "CLOSED" if node.repo.issues[node.pr.number].state == "closed" else "OPEN"


def _pull_mergeable(node: _PullNode, ctx: _Context) -> str:
    value = ctx.state.mergeable(node.repo, node.pr)
    if value is None:
        return "UNKNOWN"
    return "MERGEABLE" if value else "CONFLICTING"


def _pull_commits(node: _PullNode, _: _Context, args: dict[str, Any]) -> _Page:
    # The state keeps branch heads, not commit lists: only the head commit is known.
    last = args.get("last")
    if last not in (0, 1):
        raise GraphQLRequestError(
            "The emulator lists only a pull request's head commit: ask for commits(last: 1).",
            UNSUPPORTED,
        )
    items = [_CommitNode(node.repo, node.pr.head_sha)] if last == 1 else []
    return _Page(
        edges=tuple(_Edge(_cursor(0), item) for item in items),
        total=len(items),
        has_next=False,
        has_previous=False,
    )


def _sorted_reviews(node: _PullNode, ctx: _Context) -> list[_ReviewNode]:
    reviews = ctx.state.pull_reviews(node.repo, node.pr.number)
    return [_ReviewNode(node.repo, r) for r in sorted(reviews, key=lambda r: r.id)]


def _sorted_threads(node: _PullNode, ctx: _Context) -> list[_ThreadNode]:
    threads = ctx.state.pull_threads(node.repo, node.pr.number)
    return [_ThreadNode(node.repo, t) for t in sorted(threads, key=lambda t: t.id)]


def _thread_comments(node: _ThreadNode) -> list[_CommentNode]:
    comments = (node.repo.review_comments.get(i) for i in node.thread.comment_ids)
    return [_CommentNode(node.repo, c) for c in comments if c is not None]


def _commit_rollup(node: _CommitNode, ctx: _Context) -> _RollupNode | None:
    state = ctx.state.rollup_state(node.repo, node.sha)
    return _RollupNode(node.repo, node.sha, state) if state is not None else None


def _rollup_contexts(node: _RollupNode, ctx: _Context) -> list[Any]:
    runs = sorted(ctx.state.check_runs_for(node.repo, node.sha), key=lambda r: r.id)
    statuses = sorted(ctx.state.latest_statuses(node.repo, node.sha), key=lambda s: s.id)
    return [_CheckRunNode(r) for r in runs] + [_StatusNode(s) for s in statuses]


def _comment_reply_to(node: _CommentNode, _: _Context) -> _CommentNode | None:
    target = node.comment.in_reply_to_id
    found = node.repo.review_comments.get(target) if target is not None else None
    return _CommentNode(node.repo, found) if found is not None else None


def _comment_review(node: _CommentNode, _: _Context) -> _ReviewNode | None:
    review_id = node.comment.review_id
    found = node.repo.reviews.get(review_id) if review_id is not None else None
    return _ReviewNode(node.repo, found) if found is not None else None


def _rate_reset(rate: RateSnapshot) -> str:
    return format_time(datetime.fromtimestamp(rate.reset, UTC))


def _thread_for_mutation(ctx: _Context, node_id: str) -> tuple[Repo, ReviewThread]:
    found = ctx.state.find_thread_by_node_id(node_id)
    if found is None or not _repo_visible(ctx.state, found[0], ctx.user):
        raise GraphQLRequestError(
            f"Could not resolve to a node with the global id of '{node_id}'", "NOT_FOUND"
        )
    return found


def _resolve_review_thread(_: Any, ctx: _Context, args: dict[str, Any]) -> _Payload:
    data = args["input"]
    repo, thread = _thread_for_mutation(ctx, data["threadId"])
    author = repo.issues[thread.pull_number].author
    allowed = ctx.state.has_permission(repo, ctx.user.login, "write") or (
        author.lower() == ctx.user.login.lower()
    )
    if not allowed:
        raise GraphQLRequestError(
            f"{ctx.user.login} does not have the correct permissions to execute "
            "`ResolveReviewThread`",
            "FORBIDDEN",
        )
    updated = ctx.state.resolve_thread(repo, thread.id, ctx.user.login)
    log.info("graphql_mutation", operation="resolveReviewThread", login=ctx.user.login)
    return _Payload(data.get("clientMutationId"), _ThreadNode(repo, updated))


def _reply_to_review_thread(_: Any, ctx: _Context, args: dict[str, Any]) -> _Payload:
    data = args["input"]
    repo, thread = _thread_for_mutation(ctx, data["pullRequestReviewThreadId"])
    comment = ctx.state.reply_to_thread(repo, thread.id, ctx.user.login, data["body"])
    log.info("graphql_mutation", operation="addPullRequestReviewThreadReply", login=ctx.user.login)
    return _Payload(data.get("clientMutationId"), _CommentNode(repo, comment))


def _upper(value: str | None) -> str | None:
    return value.upper() if value is not None else None


def _connection_resolvers(type_name: str, *, with_edges: bool = True) -> dict[str, Resolver]:
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
    return resolvers


def _edge_resolvers(type_name: str) -> dict[str, Resolver]:
    return {
        f"{type_name}.cursor": lambda edge, _c, _a: edge.cursor,
        f"{type_name}.node": lambda edge, _c, _a: edge.node,
    }


def _actor_resolvers(type_name: str) -> dict[str, Resolver]:
    return {
        f"{type_name}.id": lambda user, _c, _a: user.node_id,
        f"{type_name}.databaseId": lambda user, _c, _a: user.id,
        f"{type_name}.login": lambda user, _c, _a: user.login,
        f"{type_name}.name": lambda user, _c, _a: user.name,
    }


def _build_resolvers() -> dict[str, Resolver]:
    table: dict[str, Resolver] = {
        "Query.rateLimit": lambda _s, ctx, _a: ctx,
        "Query.repository": _query_repository,
        "Query.viewer": lambda _s, ctx, _a: ctx.user,
        "Mutation.resolveReviewThread": _resolve_review_thread,
        "Mutation.addPullRequestReviewThreadReply": _reply_to_review_thread,
        "RateLimit.cost": lambda ctx, _c, _a: ctx.cost.points,
        "RateLimit.limit": lambda ctx, _c, _a: ctx.rate.limit,
        "RateLimit.nodeCount": lambda ctx, _c, _a: ctx.cost.nodes,
        "RateLimit.remaining": lambda ctx, _c, _a: ctx.rate.remaining,
        "RateLimit.resetAt": lambda ctx, _c, _a: _rate_reset(ctx.rate),
        "RateLimit.used": lambda ctx, _c, _a: ctx.rate.used,
        "Repository.id": lambda repo, _c, _a: repo.node_id,
        "Repository.databaseId": lambda repo, _c, _a: repo.id,
        "Repository.name": lambda repo, _c, _a: repo.name,
        "Repository.nameWithOwner": lambda repo, _c, _a: repo.full_name,
        "Repository.isPrivate": lambda repo, _c, _a: repo.private,
        "Repository.pullRequest": _repository_pull,
        "PullRequest.id": lambda n, _c, _a: n.pr.node_id,
        "PullRequest.databaseId": lambda n, _c, _a: n.pr.id,
        "PullRequest.number": lambda n, _c, _a: n.pr.number,
        "PullRequest.title": lambda n, _c, _a: n.repo.issues[n.pr.number].title,
        "PullRequest.body": lambda n, _c, _a: n.repo.issues[n.pr.number].body or "",
        "PullRequest.author": lambda n, c, _a: _actor(c.state, n.repo.issues[n.pr.number].author),
        "PullRequest.state": lambda n, _c, _a: _pull_state(n),
        "PullRequest.isDraft": lambda n, _c, _a: n.pr.draft,
        "PullRequest.closed": lambda n, _c, _a: n.repo.issues[n.pr.number].state == "closed",
        "PullRequest.merged": lambda n, _c, _a: n.pr.merged,
        "PullRequest.mergedAt": lambda n, _c, _a: n.pr.merged_at,
        "PullRequest.closedAt": lambda n, _c, _a: n.repo.issues[n.pr.number].closed_at,
        "PullRequest.createdAt": lambda n, _c, _a: n.repo.issues[n.pr.number].created_at,
        "PullRequest.updatedAt": lambda n, _c, _a: n.repo.issues[n.pr.number].updated_at,
        "PullRequest.headRefName": lambda n, _c, _a: n.pr.head_ref,
        "PullRequest.headRefOid": lambda n, _c, _a: n.pr.head_sha,
        "PullRequest.baseRefName": lambda n, _c, _a: n.pr.base_ref,
        "PullRequest.mergeable": lambda n, c, _a: _pull_mergeable(n, c),
        "PullRequest.mergeStateStatus": lambda n, c, _a: c.state.mergeable_state(
            n.repo, n.pr
        ).upper(),
        "PullRequest.reviewDecision": lambda n, c, _a: c.state.review_decision(n.repo, n.pr),
        "PullRequest.repository": lambda n, _c, _a: n.repo,
        "PullRequest.reviews": lambda n, c, a: _paginate(_sorted_reviews(n, c), a),
        "PullRequest.reviewThreads": lambda n, c, a: _paginate(_sorted_threads(n, c), a),
        "PullRequest.commits": _pull_commits,
        "PageInfo.endCursor": lambda p, _c, _a: p.edges[-1].cursor if p.edges else None,
        "PageInfo.startCursor": lambda p, _c, _a: p.edges[0].cursor if p.edges else None,
        "PageInfo.hasNextPage": lambda p, _c, _a: p.has_next,
        "PageInfo.hasPreviousPage": lambda p, _c, _a: p.has_previous,
        "PullRequestReview.id": lambda n, _c, _a: n.review.node_id,
        "PullRequestReview.databaseId": lambda n, _c, _a: n.review.id,
        "PullRequestReview.author": lambda n, c, _a: _actor(c.state, n.review.author),
        "PullRequestReview.state": lambda n, _c, _a: n.review.state,
        "PullRequestReview.body": lambda n, _c, _a: n.review.body,
        "PullRequestReview.commit": lambda n, _c, _a: _CommitNode(n.repo, n.review.commit_id),
        "PullRequestReview.createdAt": lambda n, _c, _a: n.review.submitted_at,
        "PullRequestReview.submittedAt": lambda n, _c, _a: n.review.submitted_at,
        "PullRequestReviewThread.id": lambda n, _c, _a: n.thread.node_id,
        "PullRequestReviewThread.isResolved": lambda n, _c, _a: n.thread.resolved,
        "PullRequestReviewThread.isOutdated": lambda n, _c, _a: n.thread.outdated,
        "PullRequestReviewThread.isCollapsed": lambda n, _c, _a: n.thread.resolved,
        "PullRequestReviewThread.path": lambda n, _c, _a: n.thread.path,
        "PullRequestReviewThread.line": lambda n, _c, _a: (
            None if n.thread.outdated else n.thread.line
        ),
        "PullRequestReviewThread.originalLine": lambda n, _c, _a: n.thread.line,
        "PullRequestReviewThread.diffSide": lambda n, _c, _a: n.thread.side,
        "PullRequestReviewThread.resolvedBy": lambda n, c, _a: _actor(
            c.state, n.thread.resolved_by
        ),
        "PullRequestReviewThread.comments": lambda n, _c, a: _paginate(_thread_comments(n), a),
        "PullRequestReviewComment.id": lambda n, _c, _a: n.comment.node_id,
        "PullRequestReviewComment.databaseId": lambda n, _c, _a: n.comment.id,
        "PullRequestReviewComment.author": lambda n, c, _a: _actor(c.state, n.comment.author),
        "PullRequestReviewComment.body": lambda n, _c, _a: n.comment.body,
        "PullRequestReviewComment.createdAt": lambda n, _c, _a: n.comment.created_at,
        "PullRequestReviewComment.updatedAt": lambda n, _c, _a: n.comment.updated_at,
        "PullRequestReviewComment.diffHunk": lambda n, _c, _a: n.comment.diff_hunk,
        "PullRequestReviewComment.path": lambda n, _c, _a: n.comment.path,
        "PullRequestReviewComment.line": lambda n, _c, _a: n.comment.line,
        "PullRequestReviewComment.originalLine": lambda n, _c, _a: n.comment.line,
        "PullRequestReviewComment.replyTo": lambda n, c, _a: _comment_reply_to(n, c),
        "PullRequestReviewComment.commit": lambda n, _c, _a: _CommitNode(
            n.repo, n.comment.commit_id
        ),
        "PullRequestReviewComment.originalCommit": lambda n, _c, _a: _CommitNode(
            n.repo, n.comment.original_commit_id
        ),
        "PullRequestReviewComment.pullRequestReview": lambda n, c, _a: _comment_review(n, c),
        "PullRequestCommit.id": lambda n, _c, _a: _node_id("PullRequestCommit", n.repo.id, n.sha),
        "PullRequestCommit.commit": lambda n, _c, _a: n,
        "Commit.id": lambda n, _c, _a: _node_id("Commit", n.repo.id, n.sha),
        "Commit.oid": lambda n, _c, _a: n.sha,
        "Commit.statusCheckRollup": lambda n, c, _a: _commit_rollup(n, c),
        "StatusCheckRollup.id": lambda n, _c, _a: _node_id("StatusCheckRollup", n.repo.id, n.sha),
        "StatusCheckRollup.state": lambda n, _c, _a: n.state,
        "StatusCheckRollup.commit": lambda n, _c, _a: _CommitNode(n.repo, n.sha),
        "StatusCheckRollup.contexts": lambda n, c, a: _paginate(_rollup_contexts(n, c), a),
        "CheckRun.id": lambda n, _c, _a: n.run.node_id,
        "CheckRun.databaseId": lambda n, _c, _a: n.run.id,
        "CheckRun.name": lambda n, _c, _a: n.run.name,
        "CheckRun.status": lambda n, _c, _a: n.run.status.upper(),
        "CheckRun.conclusion": lambda n, _c, _a: _upper(n.run.conclusion),
        "CheckRun.detailsUrl": lambda n, _c, _a: n.run.details_url,
        "CheckRun.startedAt": lambda n, _c, _a: n.run.started_at,
        "CheckRun.completedAt": lambda n, _c, _a: n.run.completed_at,
        "CheckRun.title": lambda n, _c, _a: n.run.output_title,
        "CheckRun.summary": lambda n, _c, _a: n.run.output_summary,
        "CheckRun.text": lambda n, _c, _a: n.run.output_text,
        "StatusContext.id": lambda n, _c, _a: n.status.node_id,
        "StatusContext.context": lambda n, _c, _a: n.status.context,
        "StatusContext.state": lambda n, _c, _a: n.status.state.upper(),
        "StatusContext.description": lambda n, _c, _a: n.status.description,
        "StatusContext.targetUrl": lambda n, _c, _a: n.status.target_url,
        "StatusContext.createdAt": lambda n, _c, _a: n.status.created_at,
        "StatusContext.creator": lambda n, c, _a: _actor(c.state, n.status.creator),
        "ResolveReviewThreadPayload.clientMutationId": lambda p, _c, _a: p.client_mutation_id,
        "ResolveReviewThreadPayload.thread": lambda p, _c, _a: p.value,
        "AddPullRequestReviewThreadReplyPayload.clientMutationId": lambda p, _c, _a: (
            p.client_mutation_id
        ),
        "AddPullRequestReviewThreadReplyPayload.comment": lambda p, _c, _a: p.value,
    }
    for connection in (
        "PullRequestReviewConnection",
        "PullRequestReviewThreadConnection",
        "PullRequestReviewCommentConnection",
        "StatusCheckRollupContextConnection",
    ):
        table.update(_connection_resolvers(connection))
        table.update(_edge_resolvers(connection.replace("Connection", "Edge")))
    table.update(_connection_resolvers("PullRequestCommitConnection", with_edges=False))
    table.update(_actor_resolvers("User"))
    table.update(_actor_resolvers("Bot"))
    del table["Bot.name"]
    return table


_resolver_lock = threading.Lock()
_resolver_table: dict[str, Resolver] = {}


def resolvers() -> dict[str, Resolver]:
    """Resolver of every field of the emulated schema, by ``Type.field``."""
    with _resolver_lock:
        if not _resolver_table:
            _resolver_table.update(_build_resolvers())
        return _resolver_table


def _resolve_field(source: Any, info: GraphQLResolveInfo[Any], **args: Any) -> Any:
    key = f"{info.parent_type.name}.{info.field_name}"
    resolver = resolvers().get(key)
    if resolver is None:
        raise GraphQLRequestError(f"The emulator cannot answer {key}.", UNSUPPORTED)
    return resolver(source, info.context, args)


def _resolve_type(value: Any, _info: GraphQLResolveInfo[Any], _abstract: Any) -> str:
    if isinstance(value, User):
        return "Bot" if value.bot else "User"
    if isinstance(value, _CheckRunNode):
        return "CheckRun"
    if isinstance(value, _StatusNode):
        return "StatusContext"
    raise TypeError(f"no GraphQL type for {type(value).__name__}")
