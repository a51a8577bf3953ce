"""A GraphQL document's complexity, computed the way Linear documents it.

Linear's rate-limiting page (https://linear.app/developers/rate-limiting,
"Complexity") scores a query as: each property (a scalar or enum field) 0.1
point, each object 1 point, and a connection multiplies the points of its
children by its page size (``first``, or 50 when not given); the sum is rounded
up. Points are counted here in tenths so the sum is exact.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLObjectType,
    GraphQLSchema,
    InlineFragmentNode,
    OperationDefinitionNode,
    SelectionSetNode,
    get_named_type,
    is_leaf_type,
    value_from_ast,
    value_from_ast_untyped,
)

DEFAULT_PAGE_SIZE = 50


def query_complexity(
    schema: GraphQLSchema,
    operation: OperationDefinitionNode,
    fragments: Mapping[str, FragmentDefinitionNode],
    variables: Mapping[str, Any],
) -> int:
    """The operation's points, rounded up (a mutation is scored like a query)."""
    root = schema.mutation_type if operation.operation.value == "mutation" else schema.query_type
    if root is None:
        return 0
    given = dict(variables)
    for definition in operation.variable_definitions or ():
        name = definition.variable.name.value
        if given.get(name) is None and definition.default_value is not None:
            given[name] = value_from_ast_untyped(definition.default_value)
    tenths = _selection_tenths(schema, root, operation.selection_set, fragments, given)
    return math.ceil(tenths / 10)


def _selection_tenths(
    schema: GraphQLSchema,
    parent: GraphQLObjectType,
    selection_set: SelectionSetNode,
    fragments: Mapping[str, FragmentDefinitionNode],
    variables: Mapping[str, Any],
) -> int:
    total = 0
    for selection in selection_set.selections:
        if isinstance(selection, FieldNode):
            total += _field_tenths(schema, parent, selection, fragments, variables)
        elif isinstance(selection, InlineFragmentNode):
            total += _selection_tenths(
                schema, parent, selection.selection_set, fragments, variables
            )
        elif isinstance(selection, FragmentSpreadNode):
            fragment = fragments.get(selection.name.value)
            if fragment is not None:
                total += _selection_tenths(
                    schema, parent, fragment.selection_set, fragments, variables
                )
    return total


def _field_tenths(
    schema: GraphQLSchema,
    parent: GraphQLObjectType,
    node: FieldNode,
    fragments: Mapping[str, FragmentDefinitionNode],
    variables: Mapping[str, Any],
) -> int:
    name = node.name.value
    definition = parent.fields.get(name)
    if definition is None or node.selection_set is None:
        return 1
    named = get_named_type(definition.type)
    if is_leaf_type(named) or not isinstance(named, GraphQLObjectType):
        return 1
    children = _selection_tenths(schema, named, node.selection_set, fragments, variables)
    if named.name.endswith("Connection"):
        return 10 + _page_size(node, definition.args.get("first"), variables) * children
    return 10 + children


def _page_size(node: FieldNode, argument: Any, variables: Mapping[str, Any]) -> int:
    for given in node.arguments or ():
        if given.name.value == "first" and argument is not None:
            value = value_from_ast(given.value, argument.type, dict(variables))
            if isinstance(value, int) and value >= 0:
                return value
    return DEFAULT_PAGE_SIZE
