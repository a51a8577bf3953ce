"""The name a GraphQL request is logged under: the first field of its mutation.

Kept apart from the GraphQL executor so the server can name writes without
importing it (graphql-core is imported only when a request needs it).
"""

from __future__ import annotations

from typing import Any


def mutation_name(body: dict[str, Any]) -> str | None:
    """The first field of a GraphQL mutation (``resolveReviewThread`` ...), None for queries."""
    query = body.get("query")
    if not isinstance(query, str):
        return None
    from graphql import GraphQLError, OperationDefinitionNode, OperationType, parse
    from graphql.language import FieldNode

    try:
        document = parse(query)
    except GraphQLError:
        return None
    wanted = body.get("operationName")
    for definition in document.definitions:
        if not isinstance(definition, OperationDefinitionNode):
            continue
        if wanted and (definition.name is None or definition.name.value != wanted):
            continue
        if definition.operation != OperationType.MUTATION:
            return None
        for selection in definition.selection_set.selections:
            if isinstance(selection, FieldNode):
                return str(selection.name.value)
        return "mutation"
    return None
