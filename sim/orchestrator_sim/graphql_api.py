"""The emulator's ``POST /graphql``: GitHub's GraphQL API for the documents the product sends.

A request is parsed, validated against GitHub's published schema (so a field
GitHub does not have is refused the way GitHub refuses it), then against the
emulated subset (`orchestrator_sim.graphql_schema`, so a valid GitHub field the
emulator does not model is refused by name instead of answered wrongly),
checked against GitHub's pagination and node limits, charged at the points of
GitHub's formula, and executed by graphql-core with the resolvers of
`graphql_pulls`, `graphql_reviews`, `graphql_checks`, `graphql_mutations` and
`graphql_queue`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import Any, cast

from graphql import (
    DocumentNode,
    ExecutionResult,
    GraphQLError,
    GraphQLResolveInfo,
    OperationDefinitionNode,
    OperationType,
    execute,
    parse,
    validate,
)
from graphql.error import GraphQLSyntaxError
from graphql.execution.values import get_variable_values

from orchestrator.logs import get_logger
from orchestrator_sim import (
    graphql_checks,
    graphql_issues,
    graphql_mutations,
    graphql_pulls,
    graphql_queue,
    graphql_reviews,
)
from orchestrator_sim.billing import Billing
from orchestrator_sim.emulator import Emulator
from orchestrator_sim.errors import Forbidden, NotFound, SimError
from orchestrator_sim.graphql_cost import (
    MAX_NODES,
    MAX_PAGE_SIZE,
    ConnectionUse,
    QueryCost,
    connection_uses,
    github_schema_path,
    paging_variables,
    select_operation,
)
from orchestrator_sim.graphql_schema import EMULATED_SDL, emulated_schema, github_schema_or_none
from orchestrator_sim.graphql_support import (
    UNSUPPORTED,
    CheckRunNode,
    CommentNode,
    CommitNode,
    Context,
    GraphQLRequestError,
    IssueCommentNode,
    IssueNode,
    PullNode,
    RefNode,
    Resolver,
    ReviewNode,
    RollupNode,
    StatusNode,
    ThreadNode,
    page_info_resolvers,
)
from orchestrator_sim.records import Label, Repo, User

__all__ = [
    "EMULATED_SDL",
    "GraphQLRequestError",
    "emulated_schema",
    "github_schema_or_none",
    "handle_graphql",
    "resolvers",
]

log = get_logger(__name__)

_SIM_ERROR_TYPES = {NotFound: "NOT_FOUND", Forbidden: "FORBIDDEN"}

try:
    from graphql.execution import Executor
except ImportError:  # graphql-core 3.2 collects subfields per set of nodes already.
    _EXECUTE_OPTIONS: dict[str, Any] = {}
else:

    class _SharedSubfields(Executor[Any]):
        """graphql-core 3.3's executor, collecting subfields once per set of field nodes.

        graphql-core remembers them per field list, and each alias of a batch
        has a list of its own; the product's batches spread one fragment under up
        to 100 aliases, so the same selections were collected 100 times over.
        """

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._by_nodes: dict[tuple[Any, ...], Any] = {}

        def collect_subfields(self, return_type: Any, field_details_list: Any) -> Any:
            if any(
                detail.defer_usage is not None or detail.fragment_variable_values is not None
                for detail in field_details_list
            ):
                return super().collect_subfields(return_type, field_details_list)
            key = (return_type, *(id(detail.node) for detail in field_details_list))
            found = self._by_nodes.get(key)
            if found is None:
                found = super().collect_subfields(return_type, field_details_list)
                self._by_nodes[key] = found
            return found

    _EXECUTE_OPTIONS = {"executor_class": _SharedSubfields}


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
    query: str
    document: DocumentNode
    operation: OperationDefinitionNode
    variables: dict[str, Any]


def handle_graphql(
    emulator: Emulator, billing: Billing, user: User, body: dict[str, Any]
) -> tuple[int, dict[str, Any]]:
    """Run one GraphQL request for ``user`` on ``emulator``; return (HTTP status, JSON body).

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
    paging = tuple(
        sorted(
            (name, prepared.variables[name])
            for name in _paging_variables(prepared.query)
            if name in prepared.variables
        )
    )
    uses = _connection_uses(prepared.query, _op_name(prepared), paging)
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
    context = Context(emulator=emulator, user=user, cost=cost, rate=snapshot)
    with emulator.state.lock:
        result = execute(
            emulated,
            prepared.document,
            context_value=context,
            variable_values=prepared.variables,
            operation_name=_op_name(prepared),
            field_resolver=_resolve_field,
            type_resolver=_resolve_type,
            **_EXECUTE_OPTIONS,
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
    return _Request(query=query, document=document, operation=operation, variables=dict(values))


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


@lru_cache(maxsize=256)
def _paging_variables(query: str) -> frozenset[str]:
    document = _checked_document(query, github_schema_path())
    return paging_variables(document) if isinstance(document, DocumentNode) else frozenset()


@lru_cache(maxsize=1024)
def _connection_uses(
    query: str, operation_name: str | None, paging: tuple[tuple[str, Any], ...]
) -> tuple[ConnectionUse, ...]:
    """The connections a checked query asks for, remembered per text and paging variables.

    A batch of pull requests differs from the next only in numbers, which do not
    change its cost; walking a 100-alias document every time took milliseconds.
    """
    document = _checked_document(query, github_schema_path())
    if not isinstance(document, DocumentNode):
        raise TypeError("only a checked document has a cost")
    uses = connection_uses(
        document, dict(paging), operation_name=operation_name, schema=emulated_schema()
    )
    return tuple(uses)


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


# ---------------------------------------------------------------- resolvers


def _actor_resolvers(type_name: str) -> dict[str, Resolver]:
    return {
        f"{type_name}.id": lambda user, _c, _a: user.node_id,
        f"{type_name}.databaseId": lambda user, _c, _a: user.id,
        f"{type_name}.login": lambda user, _c, _a: user.login,
        f"{type_name}.name": lambda user, _c, _a: user.name,
    }


def _build_resolvers() -> dict[str, Resolver]:
    table: dict[str, Resolver] = {}
    modules = (
        graphql_pulls,
        graphql_issues,
        graphql_reviews,
        graphql_checks,
        graphql_mutations,
        graphql_queue,
    )
    for module in modules:
        table.update(module.resolvers())
    table.update(page_info_resolvers())
    table.update(_actor_resolvers("User"))
    table.update(_actor_resolvers("Bot"))
    del table["Bot.name"]
    return table


@cache
def resolvers() -> dict[str, Resolver]:
    """Resolver of every field of the emulated schema, by ``Type.field`` (built once; every
    field of every query looks its resolver up here)."""
    return _build_resolvers()


def _resolve_field(source: Any, info: GraphQLResolveInfo[Any], **args: Any) -> Any:
    key = f"{info.parent_type.name}.{info.field_name}"
    resolver = resolvers().get(key)
    if resolver is None:
        raise GraphQLRequestError(f"The emulator cannot answer {key}.", UNSUPPORTED)
    return resolver(source, info.context, args)


_TYPE_NAMES: dict[type, str] = {
    CheckRunNode: "CheckRun",
    StatusNode: "StatusContext",
    PullNode: "PullRequest",
    ReviewNode: "PullRequestReview",
    ThreadNode: "PullRequestReviewThread",
    CommentNode: "PullRequestReviewComment",
    IssueNode: "Issue",
    IssueCommentNode: "IssueComment",
    CommitNode: "Commit",
    RefNode: "Ref",
    RollupNode: "StatusCheckRollup",
    Repo: "Repository",
    Label: "Label",
}


def _resolve_type(value: Any, _info: GraphQLResolveInfo[Any], _abstract: Any) -> str:
    if isinstance(value, User):
        return "Bot" if value.bot else "User"
    name = _TYPE_NAMES.get(type(value))
    if name is None:
        raise TypeError(f"no GraphQL type for {type(value).__name__}")
    return name
