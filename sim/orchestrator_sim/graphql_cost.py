"""GitHub's GraphQL rate-limit formula: what a query document costs before it runs.

GitHub adds up the requests every connection in a query needs, counting a
connection nested inside other connections once per node its parents may
return (the product of the enclosing ``first``/``last`` values), divides the
sum by 100, rounds to the nearest whole number and charges at least 1 point.
The same walk counts the nodes a query may return, which GitHub caps at 500,000.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLInterfaceType,
    GraphQLObjectType,
    GraphQLSchema,
    GraphQLUnionType,
    InlineFragmentNode,
    IntValueNode,
    OperationDefinitionNode,
    SelectionSetNode,
    VariableNode,
    build_client_schema,
    get_named_type,
)

if TYPE_CHECKING:
    from graphql import IntrospectionQuery

POINTS_DIVISOR = 100
MAX_PAGE_SIZE = 100
MAX_NODES = 500_000

SCHEMA_PATH_ENV = "ORCHESTRATOR_GRAPHQL_SCHEMA"
DEFAULT_SCHEMA_PATH = (
    Path(__file__).resolve().parents[2] / ".cache" / "contracts" / "graphql" / "schema.json"
)

# Names that only a connection's selection carries; used when no schema is at hand.
_CONNECTION_CHILDREN = frozenset({"edges", "nodes", "pageInfo"})


@dataclass(frozen=True)
class QueryCost:
    """What one operation costs: requests its connections need, nodes it may return, points."""

    requests: int
    nodes: int

    @property
    def points(self) -> int:
        """Points GitHub charges: requests / 100, rounded half up, at least 1."""
        return max(1, (self.requests + POINTS_DIVISOR // 2) // POINTS_DIVISOR)

    @classmethod
    def of(cls, uses: Iterable[ConnectionUse]) -> QueryCost:
        """The cost of an operation from its connections (see `connection_uses`)."""
        requests = nodes = 0
        for use in uses:
            requests += use.requests
            nodes += use.requests * use.page_size
        return cls(requests=requests, nodes=nodes)


class SchemaUnavailableError(RuntimeError):
    """GitHub's GraphQL schema file is missing or unreadable."""


class SchemaMissingError(SchemaUnavailableError):
    """GitHub's GraphQL schema file is not there (an install without the test contracts)."""


_schema_lock = threading.Lock()
_schema_cache: dict[Path, GraphQLSchema] = {}


def github_schema_path() -> Path:
    """Where GitHub's introspection schema is read from (``make contracts`` caches it)."""
    override = os.environ.get(SCHEMA_PATH_ENV)
    return Path(override) if override else DEFAULT_SCHEMA_PATH


def load_github_schema(path: Path | None = None) -> GraphQLSchema:
    """Build GitHub's schema from its introspection JSON once per path and keep it.

    GitHub's schema breaks a deprecation rule graphql-core checks on interfaces,
    which would make every ``validate()`` call refuse to run; the schema is
    GitHub's own, so that self-check is switched off.
    """
    target = (path or github_schema_path()).resolve()
    with _schema_lock:
        cached = _schema_cache.get(target)
        if cached is not None:
            return cached
        try:
            with target.open(encoding="utf-8") as handle:
                introspection = json.load(handle)
        except FileNotFoundError as exc:
            raise SchemaMissingError(
                f"GitHub's GraphQL schema is missing at {target}: run `make contracts`"
            ) from exc
        except (OSError, ValueError) as exc:
            raise SchemaUnavailableError(
                f"GitHub's GraphQL schema at {target} cannot be read: {exc}"
            ) from exc
        if not isinstance(introspection, dict) or "__schema" not in introspection:
            raise SchemaUnavailableError(
                f"{target} is not an introspection result (no top-level __schema key)"
            )
        schema = build_client_schema(cast("IntrospectionQuery", introspection))
        schema._validation_errors = []
        _schema_cache[target] = schema
        return schema


def query_cost(
    document: DocumentNode,
    variables: Mapping[str, Any] | None = None,
    *,
    operation_name: str | None = None,
    schema: GraphQLSchema | None = None,
) -> QueryCost:
    """Cost of the operation ``operation_name`` (or the only one) in ``document``.

    With a schema, a connection is a field whose type is a ``...Connection``
    object; without one, a field taking ``first``/``last`` or selecting
    ``edges``/``nodes``/``pageInfo``. A connection without ``first`` or
    ``last`` is assumed to return a full page of 100.
    """
    uses = connection_uses(document, variables, operation_name=operation_name, schema=schema)
    return QueryCost.of(uses)


@dataclass(frozen=True)
class ConnectionUse:
    """One connection field as a query asks for it, with its place in the nesting.

    ``requests`` is how many times GitHub must fetch it (the product of the
    enclosing page sizes); ``first``/``last`` are the resolved argument values
    (None when absent or not an integer); ``selects_items`` says whether
    ``nodes`` or ``edges`` are asked for.
    """

    path: tuple[str, ...]
    field_name: str
    requests: int
    first: int | None
    last: int | None
    selects_items: bool

    @property
    def page_size(self) -> int:
        """Nodes one fetch may return: the smaller of first/last, else a full page."""
        values = [v for v in (self.first, self.last) if v is not None]
        return max(0, min(values)) if values else MAX_PAGE_SIZE


def connection_uses(
    document: DocumentNode,
    variables: Mapping[str, Any] | None = None,
    *,
    operation_name: str | None = None,
    schema: GraphQLSchema | None = None,
) -> list[ConnectionUse]:
    """Every connection the operation asks for, in document order, fragments followed."""
    operation = select_operation(document, operation_name)
    walker = _CostWalker(document, operation, variables or {}, schema)
    walker.walk(operation.selection_set, _root_type(schema, operation), multiplier=1, path=())
    return walker.uses


def paging_variables(document: DocumentNode) -> frozenset[str]:
    """The variables ``document`` passes as ``first`` or ``last``: the only ones its cost
    (`connection_uses`) reads."""
    names: set[str] = set()
    pending = [
        d.selection_set
        for d in document.definitions
        if isinstance(d, OperationDefinitionNode | FragmentDefinitionNode)
    ]
    while pending:
        selection_set = pending.pop()
        for selection in selection_set.selections:
            if isinstance(selection, FieldNode):
                for argument in selection.arguments or ():
                    value = argument.value
                    if argument.name.value in ("first", "last") and isinstance(value, VariableNode):
                        names.add(value.name.value)
            inner = getattr(selection, "selection_set", None)
            if inner is not None:
                pending.append(inner)
    return frozenset(names)


def select_operation(
    document: DocumentNode, operation_name: str | None = None
) -> OperationDefinitionNode:
    """The operation a request runs: the named one, or the only one in the document."""
    operations = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    if operation_name is not None:
        for operation in operations:
            if operation.name is not None and operation.name.value == operation_name:
                return operation
        raise ValueError(f"no operation named {operation_name!r} in the document")
    if len(operations) != 1:
        raise ValueError(
            f"the document has {len(operations)} operations: name the one to run (operationName)"
        )
    return operations[0]


def _root_type(
    schema: GraphQLSchema | None, operation: OperationDefinitionNode
) -> GraphQLObjectType | None:
    if schema is None:
        return None
    kind = operation.operation.value
    if kind == "query":
        return schema.query_type
    if kind == "mutation":
        return schema.mutation_type
    return schema.subscription_type


_ParentType = GraphQLObjectType | GraphQLInterfaceType | GraphQLUnionType | None
# Marks a field the schema knows and whose type is not a composite (a scalar or an enum).
_LEAF = "leaf"


class _CostWalker:
    """Walks one operation's selections, following fragments, summing connection requests."""

    def __init__(
        self,
        document: DocumentNode,
        operation: OperationDefinitionNode,
        variables: Mapping[str, Any],
        schema: GraphQLSchema | None,
    ) -> None:
        self._schema = schema
        self._fragments = {
            d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
        }
        self.uses: list[ConnectionUse] = []
        self._variables = dict(variables)
        for definition in operation.variable_definitions or ():
            name = definition.variable.name.value
            if name not in self._variables and isinstance(definition.default_value, IntValueNode):
                self._variables[name] = int(definition.default_value.value)

    def walk(
        self,
        selection_set: SelectionSetNode | None,
        parent: _ParentType,
        *,
        multiplier: int,
        path: tuple[str, ...],
        seen: tuple[str, ...] = (),
    ) -> None:
        """Record every connection under ``selection_set`` with how often it is fetched."""
        for fields, field_parent, chain in self._merged_fields(selection_set, parent, seen):
            resolved = self._field_type(field_parent, fields[0])
            if resolved == _LEAF:
                continue
            field_type = resolved if not isinstance(resolved, str) else None
            children = _merge_selections(fields)
            field_path = (*path, _response_key(fields[0]))
            inner = multiplier
            if self._is_connection(fields, field_type):
                use = ConnectionUse(
                    path=field_path,
                    field_name=fields[0].name.value,
                    requests=multiplier,
                    first=self._argument(fields[0], "first"),
                    last=self._argument(fields[0], "last"),
                    selects_items=self._selects_items(children, chain),
                )
                self.uses.append(use)
                inner = multiplier * use.page_size
            self.walk(children, field_type, multiplier=inner, path=field_path, seen=chain)

    def _merged_fields(
        self, selection_set: SelectionSetNode | None, parent: _ParentType, seen: tuple[str, ...]
    ) -> Iterator[tuple[list[FieldNode], _ParentType, tuple[str, ...]]]:
        """Fields grouped the way GraphQL merges them: same response key on the same type.

        Each group carries the fragments it was reached through, so a fragment
        that spreads itself further down is not followed again.
        """
        groups: dict[tuple[str, str], tuple[list[FieldNode], _ParentType, tuple[str, ...]]] = {}
        for field, field_parent, chain in self._collect(selection_set, parent, seen):
            key = (field_parent.name if field_parent else "", _response_key(field))
            if key in groups:
                fields, _, known = groups[key]
                fields.append(field)
                groups[key] = (fields, field_parent, (*known, *chain))
            else:
                groups[key] = ([field], field_parent, chain)
        yield from groups.values()

    def _collect(
        self, selection_set: SelectionSetNode | None, parent: _ParentType, seen: tuple[str, ...]
    ) -> Iterator[tuple[FieldNode, _ParentType, tuple[str, ...]]]:
        if selection_set is None:
            return
        for selection in selection_set.selections:
            if isinstance(selection, FieldNode):
                yield selection, parent, seen
            elif isinstance(selection, InlineFragmentNode):
                condition = (
                    self._named_type(selection.type_condition.name.value)
                    if selection.type_condition is not None
                    else parent
                )
                yield from self._collect(selection.selection_set, condition, seen)
            elif isinstance(selection, FragmentSpreadNode):
                name = selection.name.value
                fragment = self._fragments.get(name)
                # A fragment spreading itself is invalid GraphQL; stop rather than loop.
                if fragment is None or name in seen:
                    continue
                condition = self._named_type(fragment.type_condition.name.value)
                yield from self._collect(fragment.selection_set, condition, (*seen, name))

    def _selects_items(self, selection_set: SelectionSetNode | None, seen: tuple[str, ...]) -> bool:
        """Whether a connection's selection asks for its ``nodes`` or ``edges``."""
        return any(
            field.name.value in {"nodes", "edges"}
            for field, _, _ in self._collect(selection_set, None, seen)
        )

    def _named_type(self, name: str) -> _ParentType:
        if self._schema is None:
            return None
        found = self._schema.get_type(name)
        if isinstance(found, GraphQLObjectType | GraphQLInterfaceType | GraphQLUnionType):
            return found
        return None

    def _field_type(self, parent: _ParentType, field: FieldNode) -> _ParentType | str:
        """The field's composite type, ``_LEAF`` for a known scalar, None when unknown."""
        if field.name.value.startswith("__"):
            return _LEAF
        if parent is None or isinstance(parent, GraphQLUnionType):
            return None
        definition = parent.fields.get(field.name.value)
        if definition is None:
            return None
        named = get_named_type(definition.type)
        if isinstance(named, GraphQLObjectType | GraphQLInterfaceType | GraphQLUnionType):
            return named
        return _LEAF

    def _is_connection(self, fields: list[FieldNode], field_type: _ParentType) -> bool:
        if field_type is not None:
            return isinstance(field_type, GraphQLObjectType) and field_type.name.endswith(
                "Connection"
            )
        for field in fields:
            if any(arg.name.value in {"first", "last"} for arg in field.arguments or ()):
                return True
            if field.selection_set is not None and any(
                isinstance(s, FieldNode) and s.name.value in _CONNECTION_CHILDREN
                for s in field.selection_set.selections
            ):
                return True
        return False

    def _argument(self, field: FieldNode, name: str) -> int | None:
        for arg in field.arguments or ():
            if arg.name.value == name:
                return self._int_argument(arg.value)
        return None

    def _int_argument(self, node: object) -> int | None:
        if isinstance(node, IntValueNode):
            return int(node.value)
        if isinstance(node, VariableNode):
            value = self._variables.get(node.name.value)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
        return None


def _response_key(field: FieldNode) -> str:
    return field.alias.value if field.alias is not None else field.name.value


def _merge_selections(fields: list[FieldNode]) -> SelectionSetNode | None:
    selections = [s for f in fields if f.selection_set for s in f.selection_set.selections]
    if not selections:
        return None
    return SelectionSetNode(selections=tuple(selections))
