"""The emulator's ``POST /linear/graphql``: Linear's GraphQL API for what a tracker sends.

A request is authenticated (``Authorization: <API key>``, or ``Bearer <OAuth
token>``), counted against the key's request budget, parsed and validated
against the subset schema (``schema.graphql`` next to this module: a field
Linear has but the emulator does not model is refused by name), scored with
Linear's complexity formula, charged against the complexity budget, and run by
graphql-core with the resolvers of `orchestrator_sim.linear.resolvers`.

Errors take Linear's shape: ``{"errors": [{"message", "extensions": {"code",
"type", "userError", "userPresentableMessage"}}]}``. Every refusal before
execution (authentication, rate limit, invalid document) is HTTP 400, as
Linear documents for rate limits: a client must read ``extensions.code``
(``AUTHENTICATION_ERROR``, ``RATELIMITED``, ``GRAPHQL_VALIDATION_FAILED``,
``INVALID_INPUT``), not the status. An answer whose errors left no data is 400
too; partial data with errors is 200.
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources
from typing import Any

import anyio
from graphql import (
    ExecutionResult,
    FieldNode,
    FragmentDefinitionNode,
    GraphQLError,
    GraphQLSchema,
    OperationDefinitionNode,
    OperationType,
    build_schema,
    execute,
    parse,
    validate,
)
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from orchestrator.logs import get_logger
from orchestrator_sim.dropped import drop
from orchestrator_sim.faults import FaultInjector
from orchestrator_sim.linear.complexity import query_complexity
from orchestrator_sim.linear.resolvers import Context, resolve_field
from orchestrator_sim.linear.world import LinearWorld

log = get_logger(__name__)

PATH = "/linear/graphql"


@cache
def subset_sdl() -> str:
    """The subset schema's SDL, shipped with the package."""
    return resources.files("orchestrator_sim.linear").joinpath("schema.graphql").read_text("utf-8")


@cache
def subset_schema() -> GraphQLSchema:
    return build_schema(subset_sdl())


# The status each kind of error stands for, reported in ``extensions.statusCode``
# while the HTTP status stays 400 (a rate-limited answer is HTTP 400 with
# ``statusCode`` 429, as Linear answers it).
_STATUS_CODES = {"AUTHENTICATION_ERROR": 401, "RATELIMITED": 429, "INTERNAL_ERROR": 500}


def error(message: str, code: str, kind: str, *, user_error: bool = True) -> dict[str, Any]:
    """One error in Linear's shape."""
    return {
        "message": message,
        "extensions": {
            "code": code,
            "type": kind,
            "statusCode": _STATUS_CODES.get(code, 400),
            "userError": user_error,
            "userPresentableMessage": message,
        },
    }


def _refusal(message: str, code: str, kind: str) -> dict[str, Any]:
    return {"errors": [error(message, code, kind)]}


RATE_LIMITED = "Rate limit exceeded. Please try again later."


def handle(
    world: LinearWorld, authorization: str | None, raw_body: bytes
) -> tuple[int, Any, dict[str, str]]:
    """The status, JSON document and headers answering one GraphQL request."""
    state = world.state
    viewer = state.user_for_credentials(authorization) if authorization else None
    if viewer is None:
        message = (
            "Authentication required, not authenticated"
            if not authorization
            else "Authentication failed: the API key or token is not valid"
        )
        return 400, _refusal(message, "AUTHENTICATION_ERROR", "authentication error"), {}
    limits = world.limits
    if not limits.take_request(viewer.id):
        report = limits.report(viewer.id)
        return 400, _refusal(RATE_LIMITED, "RATELIMITED", "ratelimited"), report.headers()
    try:
        body = json.loads(raw_body)
    except ValueError:
        body = None
    query = body.get("query") if isinstance(body, dict) else None
    variables = body.get("variables") if isinstance(body, dict) else None
    if not isinstance(query, str) or not (variables is None or isinstance(variables, dict)):
        document = _refusal(
            "The body must be JSON with a 'query' string and optional 'variables' object",
            "INVALID_INPUT",
            "invalid input",
        )
        return 400, document, limits.report(viewer.id).headers()
    operation_name = body.get("operationName") if isinstance(body, dict) else None
    schema = subset_schema()
    try:
        parsed = parse(query)
    except GraphQLError as exc:
        document = {"errors": [error(exc.message, "GRAPHQL_PARSE_FAILED", "graphql error")]}
        return 400, document, limits.report(viewer.id).headers()
    problems = validate(schema, parsed)
    if problems:
        document = {
            "errors": [
                error(
                    f"{p.message} (the emulator answers a subset of Linear's schema)"
                    if "Cannot query field" in p.message or "Unknown argument" in p.message
                    else p.message,
                    "GRAPHQL_VALIDATION_FAILED",
                    "graphql error",
                )
                for p in problems
            ]
        }
        return 400, document, limits.report(viewer.id).headers()
    operations = [d for d in parsed.definitions if isinstance(d, OperationDefinitionNode)]
    if operation_name is None and len(operations) > 1:
        message = "Must provide operation name if query contains multiple operations"
        document = _refusal(message, "INVALID_INPUT", "invalid input")
        return 400, document, limits.report(viewer.id).headers()
    chosen = next(
        (
            o
            for o in operations
            if operation_name is None or (o.name and o.name.value == operation_name)
        ),
        None,
    )
    if chosen is None:
        document = _refusal(
            f"Unknown operation named {operation_name!r}", "INVALID_INPUT", "invalid input"
        )
        return 400, document, limits.report(viewer.id).headers()
    fragments = {
        d.name.value: d for d in parsed.definitions if isinstance(d, FragmentDefinitionNode)
    }
    points = query_complexity(schema, chosen, fragments, variables or {})
    if points > limits.max_query_complexity:
        most = limits.max_query_complexity
        message = f"Query too complex: complexity {points} exceeds the maximum of {most}"
        document = _refusal(message, "INVALID_INPUT", "invalid input")
        return 400, document, limits.report(viewer.id, points).headers()
    if not limits.take_complexity(viewer.id, points):
        report = limits.report(viewer.id, points)
        return 400, _refusal(RATE_LIMITED, "RATELIMITED", "ratelimited"), report.headers()
    with state.lock:
        result = execute(
            schema,
            parsed,
            context_value=Context(state, viewer, state.clock()),
            variable_values=variables,
            operation_name=operation_name,
            field_resolver=resolve_field,
        )
    assert isinstance(result, ExecutionResult)
    document = _document(result)
    status = 400 if result.errors and result.data is None else 200
    if chosen.operation == OperationType.MUTATION:
        fields = [s.name.value for s in chosen.selection_set.selections if isinstance(s, FieldNode)]
        world.record_write(viewer.display_name, fields, status)
    return status, document, limits.report(viewer.id, points).headers()


def _document(result: ExecutionResult) -> dict[str, Any]:
    found: dict[str, Any] = {}
    if result.errors:
        errors = []
        for problem in result.errors:
            entry = problem.formatted
            extensions = entry.get("extensions") or {}
            if "code" not in extensions:
                # A resolver that raised something else is an emulator bug; an
                # error before execution (a missing variable) is the request's.
                failed = problem.path is not None
                if failed:
                    log.warning("linear_resolver_failed", error=problem.message)
                entry["extensions"] = (
                    error(problem.message, "INTERNAL_ERROR", "internal error", user_error=False)
                    if failed
                    else error(problem.message, "INVALID_INPUT", "invalid input")
                )["extensions"]
            errors.append(entry)
        found["errors"] = errors
    found["data"] = result.data
    return found


_OPERATION = re.compile(r"\b(?:query|mutation|subscription)\s+([_A-Za-z][_0-9A-Za-z]*)")


def operation_name(raw: bytes) -> str:
    """The request's operation name (``operationName``, else the document's first), or ``""``."""
    try:
        body = json.loads(raw)
    except ValueError:
        return ""
    if not isinstance(body, dict):
        return ""
    if isinstance(body.get("operationName"), str):
        return str(body["operationName"])
    found = _OPERATION.search(str(body.get("query") or ""))
    return found.group(1) if found else ""


def linear_routes(world: LinearWorld, faults: FaultInjector | None = None) -> list[Route]:
    """The Linear API route of one emulator.

    With ``faults`` (the emulator's injector, driven by ``/_control/faults``), a
    rule applies here too when its path matches ``/linear/graphql/<operation>``
    (``/linear/graphql*`` every request, ``/linear/graphql/CreateComment`` the
    operation of that name, from ``operationName`` or the document): ``error``
    answers its status without running the request, ``reset`` drops the
    connection before it, ``lost_response`` runs it (the write happens) and then
    drops the connection, ``latency`` delays it (``secondary`` is GitHub's alone).
    """

    async def endpoint(request: Request) -> Response:
        raw = await request.body()
        target = f"{PATH}/{operation_name(raw)}"
        decision = faults.decide(request.method, target) if faults else None
        rule = decision.rule if decision is not None else None
        if decision is not None and decision.latency_ms:
            await anyio.sleep(decision.latency_ms / 1000)
        if rule is not None and rule.action == "reset":
            return await drop(request)
        if rule is not None and rule.action == "error":
            status = rule.status or 502
            return Response(
                f"{status} Server Error: injected fault\n".encode(),
                status_code=status,
                headers={"content-type": "text/html; charset=utf-8"},
            )
        status, document, headers = await anyio.to_thread.run_sync(
            handle, world, request.headers.get("authorization"), raw
        )
        if rule is not None and rule.action == "lost_response":
            return await drop(request)
        headers["content-type"] = "application/json; charset=utf-8"
        return Response(
            json.dumps(document, separators=(",", ":")).encode(),
            status_code=status,
            headers=headers,
        )

    return [Route(PATH, endpoint, methods=["POST"])]
