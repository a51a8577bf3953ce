"""The Linear emulator against Linear's published schema.

(a) the emulator's subset schema is a subset of Linear's, type by type, field
by field, argument by argument, with equal types; (b) every document the
tracker sends validates against Linear's schema; (c) every answer the emulator
gives to those documents has the shape Linear's schema promises (the answer is
re-executed against Linear's schema with the answer itself as the only data
source, so a missing, extra or mistyped field is an error).

Linear's schema is read from ``../shared/contracts/linear/schema.graphql``
beside the repository; without it these tests are skipped.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from graphql import (
    ExecutionResult,
    GraphQLEnumType,
    GraphQLInputObjectType,
    GraphQLInterfaceType,
    GraphQLObjectType,
    GraphQLResolveInfo,
    GraphQLScalarType,
    GraphQLSchema,
    GraphQLUnionType,
    build_schema,
    execute,
    is_non_null_type,
    parse,
    validate,
)

from orchestrator.sim.linear.api import subset_schema
from orchestrator.sim.linear.complexity import query_complexity
from orchestrator.sim.linear.limits import MAX_QUERY_COMPLEXITY
from orchestrator.tracker.linear_queries import DOCUMENTS
from tests.sim.linear_world import LinearWorld, running_linear

SCHEMA_PATH = Path(__file__).resolve().parents[2].parent / "shared/contracts/linear/schema.graphql"

pytestmark = pytest.mark.skipif(
    not SCHEMA_PATH.exists(),
    reason=f"Linear's published schema is not at {SCHEMA_PATH} (the contract checkout is absent)",
)


@cache
def official() -> GraphQLSchema:
    return build_schema(SCHEMA_PATH.read_text(encoding="utf-8"))


def _own_types(schema: GraphQLSchema) -> dict[str, Any]:
    builtin = {"String", "Int", "Float", "Boolean", "ID"}
    return {
        name: kind
        for name, kind in schema.type_map.items()
        if not name.startswith("__") and name not in builtin
    }


def test_subset_types_are_linear_types_with_the_same_fields_and_arguments() -> None:
    linear = official()
    problems: list[str] = []
    for name, kind in _own_types(subset_schema()).items():
        theirs = linear.type_map.get(name)
        if theirs is None or type(theirs) is not type(kind):
            problems.append(f"{name}: not a {type(kind).__name__} of Linear's schema")
            continue
        if isinstance(kind, GraphQLEnumType):
            assert isinstance(theirs, GraphQLEnumType)
            extra = set(kind.values) - set(theirs.values)
            problems.extend(f"{name}.{value}: no such enum value" for value in sorted(extra))
        if isinstance(kind, GraphQLObjectType | GraphQLInterfaceType):
            assert isinstance(theirs, GraphQLObjectType | GraphQLInterfaceType)
            mine = {i.name for i in kind.interfaces}
            problems.extend(
                f"{name}: Linear's type does not implement {i}"
                for i in sorted(mine - {i.name for i in theirs.interfaces})
            )
            for field_name, field in kind.fields.items():
                other = theirs.fields.get(field_name)
                if other is None:
                    problems.append(f"{name}.{field_name}: no such field")
                    continue
                if str(field.type) != str(other.type):
                    problems.append(
                        f"{name}.{field_name}: {field.type} here, {other.type} on Linear"
                    )
                for arg_name, arg in field.args.items():
                    their_arg = other.args.get(arg_name)
                    if their_arg is None or str(arg.type) != str(their_arg.type):
                        problems.append(f"{name}.{field_name}({arg_name}): not Linear's argument")
                for arg_name, their_arg in other.args.items():
                    required = is_non_null_type(their_arg.type) and their_arg.default_value is None
                    if required and arg_name not in field.args:
                        problems.append(f"{name}.{field_name}: lacks required argument {arg_name}")
        if isinstance(kind, GraphQLInputObjectType):
            assert isinstance(theirs, GraphQLInputObjectType)
            for field_name, field in kind.fields.items():
                other_input = theirs.fields.get(field_name)
                if other_input is None or str(field.type) != str(other_input.type):
                    problems.append(f"{name}.{field_name}: not Linear's input field")
            for field_name, other_input in theirs.fields.items():
                if is_non_null_type(other_input.type) and field_name not in kind.fields:
                    problems.append(f"{name}: lacks required input field {field_name}")
        if isinstance(kind, GraphQLUnionType):
            assert isinstance(theirs, GraphQLUnionType)
            extra_members = {t.name for t in kind.types} - {t.name for t in theirs.types}
            problems.extend(f"{name}: {member} is not a member" for member in sorted(extra_members))
        if isinstance(kind, GraphQLScalarType):
            assert isinstance(theirs, GraphQLScalarType)
    roots = subset_schema()
    assert roots.query_type is not None and roots.mutation_type is not None
    assert linear.query_type is not None and linear.mutation_type is not None
    assert roots.query_type.name == linear.query_type.name
    assert roots.mutation_type.name == linear.mutation_type.name
    assert problems == []


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_tracker_documents_validate_against_linear_and_the_emulator(name: str) -> None:
    document = parse(DOCUMENTS[name])
    assert [e.message for e in validate(official(), document)] == []
    assert [e.message for e in validate(subset_schema(), document)] == []


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_tracker_documents_stay_under_linears_single_query_limit(name: str) -> None:
    from graphql import FragmentDefinitionNode, OperationDefinitionNode

    document = parse(DOCUMENTS[name])
    (operation,) = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    fragments = {
        d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
    }
    assert 0 < query_complexity(official(), operation, fragments, {}) < MAX_QUERY_COMPLEXITY


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LinearWorld]:
    with running_linear(tmp_path_factory.mktemp("linear-contract")) as found:
        found.control.comment("ENG-1", "alice", "Please also check the logout page.")
        yield found


def _variables(world: LinearWorld) -> dict[str, dict[str, Any]]:
    issue = world.control.issue("ENG-1")
    team = world.control.summary()["teams"][0]
    in_progress = next(s["id"] for s in team["states"] if s["name"] == "In Progress")
    labels = world.data("{ issueLabels(first: 10) { nodes { id name } } }")["issueLabels"]["nodes"]
    agent = next(label["id"] for label in labels if label["name"] == "agent")
    created = world.data(
        DOCUMENTS["CreateComment"], {"issueId": issue["id"], "body": "## Workpad\n- [ ] plan"}
    )
    return {
        "Viewer": {},
        "TeamStates": {"teamKey": "ENG"},
        "IssueLabels": {"names": ["agent", "bug"]},
        "IssuesPage": {
            "filter": {
                "team": {"key": {"eq": "ENG"}},
                "labels": {"name": {"eq": "agent"}},
                "updatedAt": {"gt": "2025-01-01T00:00:00.000Z"},
            },
            "first": 1,
        },
        "Issue": {"id": "ENG-1"},
        "SetState": {"id": issue["id"], "stateId": in_progress},
        "ChangeLabels": {"id": issue["id"], "added": [], "removed": [agent]},
        "CreateComment": {"issueId": issue["id"], "body": "Started."},
        "UpdateComment": {
            "id": created["commentCreate"]["comment"]["id"],
            "body": "## Workpad\n- [x] plan",
        },
        "LinkPullRequest": {
            "issueId": issue["id"],
            "url": "https://github.com/acme/widgets/pull/7",
            "title": "Fix the login page",
            "subtitle": "Open",
            "metadata": {"number": 7, "state": "open"},
        },
    }


def _echo(source: Any, info: GraphQLResolveInfo[Any], **_args: Any) -> Any:
    """Resolve a field from the answer being checked, by its response key."""
    return source.get(info.path.key) if isinstance(source, dict) else None


def test_emulator_answers_have_linears_shapes(world: LinearWorld) -> None:
    variables = _variables(world)
    for name in sorted(DOCUMENTS):
        answer = world.gql(DOCUMENTS[name], variables[name])
        assert answer.status == 200, (name, answer.body)
        assert "errors" not in answer.body, (name, answer.body)
        data = answer.body["data"]
        checked = execute(
            official(),
            parse(DOCUMENTS[name]),
            root_value=data,
            variable_values=variables[name],
            field_resolver=_echo,
        )
        assert isinstance(checked, ExecutionResult)
        assert checked.errors is None, (name, checked.errors)
        assert checked.data == data, name


def test_the_issues_page_answer_is_not_empty(world: LinearWorld) -> None:
    """The shape check above is only as good as the data it sees."""
    data = world.data(DOCUMENTS["IssuesPage"], {"filter": {"team": {"key": {"eq": "ENG"}}}})
    nodes = data["issues"]["nodes"]
    assert {n["identifier"] for n in nodes} == {"ENG-1", "ENG-2"}
    blocked = next(n for n in nodes if n["identifier"] == "ENG-1")
    assert blocked["inverseRelations"]["nodes"][0]["type"] == "blocks"
    assert blocked["inverseRelations"]["nodes"][0]["issue"]["identifier"] == "ENG-2"
    assert blocked["project"]["slugId"] == "website-1a2b"
