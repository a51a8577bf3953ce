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
    GraphQLSchema,
    GraphQLUnionType,
    build_schema,
    execute,
    is_non_null_type,
    parse,
    validate,
)

from orchestrator.tracker.linear_queries import DOCUMENTS
from orchestrator_sim.linear.api import subset_schema, subset_sdl
from orchestrator_sim.linear.complexity import query_complexity
from orchestrator_sim.linear.limits import MAX_QUERY_COMPLEXITY
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


def subset_problems(subset: GraphQLSchema, linear: GraphQLSchema) -> list[str]:
    """Every way ``subset`` is not a part of ``linear``: a type, field, argument or value."""
    problems: list[str] = []
    for name, kind in _own_types(subset).items():
        theirs = linear.type_map.get(name)
        if theirs is None or type(theirs) is not type(kind):
            problems.append(f"{name}: not a {type(kind).__name__} of Linear's schema")
        elif isinstance(kind, GraphQLEnumType):
            assert isinstance(theirs, GraphQLEnumType)
            extra = set(kind.values) - set(theirs.values)
            problems.extend(f"{name}.{value}: no such enum value" for value in sorted(extra))
        elif isinstance(kind, GraphQLObjectType | GraphQLInterfaceType):
            assert isinstance(theirs, GraphQLObjectType | GraphQLInterfaceType)
            problems.extend(_output_problems(name, kind, theirs))
        elif isinstance(kind, GraphQLInputObjectType):
            assert isinstance(theirs, GraphQLInputObjectType)
            for field_name, field in kind.fields.items():
                other = theirs.fields.get(field_name)
                if other is None or str(field.type) != str(other.type):
                    problems.append(f"{name}.{field_name}: not Linear's input field")
            for field_name, other in theirs.fields.items():
                if is_non_null_type(other.type) and field_name not in kind.fields:
                    problems.append(f"{name}: lacks required input field {field_name}")
        elif isinstance(kind, GraphQLUnionType):
            assert isinstance(theirs, GraphQLUnionType)
            extra_members = {t.name for t in kind.types} - {t.name for t in theirs.types}
            problems.extend(f"{name}: {member} is not a member" for member in sorted(extra_members))
    for root in ("query_type", "mutation_type"):
        mine, their_root = getattr(subset, root), getattr(linear, root)
        if mine is not None and (their_root is None or mine.name != their_root.name):
            problems.append(f"{root}: {mine.name} is not Linear's")
    return problems


def _output_problems(
    name: str,
    kind: GraphQLObjectType | GraphQLInterfaceType,
    theirs: GraphQLObjectType | GraphQLInterfaceType,
) -> list[str]:
    problems = [
        f"{name}: Linear's type does not implement {i.name}"
        for i in kind.interfaces
        if i.name not in {j.name for j in theirs.interfaces}
    ]
    for field_name, field in kind.fields.items():
        other = theirs.fields.get(field_name)
        if other is None:
            problems.append(f"{name}.{field_name}: no such field")
            continue
        if str(field.type) != str(other.type):
            problems.append(f"{name}.{field_name}: {field.type} here, {other.type} on Linear")
        for arg_name, arg in field.args.items():
            their_arg = other.args.get(arg_name)
            if their_arg is None or str(arg.type) != str(their_arg.type):
                problems.append(f"{name}.{field_name}({arg_name}): not Linear's argument")
        for arg_name, their_arg in other.args.items():
            required = is_non_null_type(their_arg.type) and their_arg.default_value is None
            if required and arg_name not in field.args:
                problems.append(f"{name}.{field_name}: lacks required argument {arg_name}")
    return problems


def test_subset_types_are_linear_types_with_the_same_fields_and_arguments() -> None:
    assert subset_problems(subset_schema(), official()) == []
    subset = subset_schema()
    assert subset.query_type is not None and subset.mutation_type is not None


def test_the_subset_check_sees_each_kind_of_difference() -> None:
    tampered = (
        subset_sdl()
        .replace("  priority: Float!\n", "  priority: Int!\n", 1)
        .replace("  branchName: String!\n", "  branchName: String!\n  sprint: String\n", 1)
        .replace("issue(id: String!): Issue!", "issue(id: ID!): Issue!", 1)
        .replace("  updatedAt\n}", "  updatedAt\n  title\n}", 1)
        .replace("input CommentCreateInput {", "input CommentCreateInput {\n  mood: String", 1)
    )
    found = subset_problems(build_schema(tampered), official())
    assert sorted(found) == sorted(
        [
            "Issue.priority: Int! here, Float! on Linear",
            "Issue.sprint: no such field",
            "Query.issue(id): not Linear's argument",
            "PaginationOrderBy.title: no such enum value",
            "CommentCreateInput.mood: not Linear's input field",
        ]
    )


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


def test_the_approval_history_read_costs_less_than_a_tenth_of_an_issues_page() -> None:
    """Read each tick for every issue awaiting approval: it must stay cheap."""
    from graphql import FragmentDefinitionNode, OperationDefinitionNode

    def points(name: str) -> int:
        document = parse(DOCUMENTS[name])
        (operation,) = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
        fragments = {
            d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
        }
        return query_complexity(official(), operation, fragments, {"first": 50})

    assert points("IssueHistory") < 200
    assert points("IssueHistory") * 10 < points("IssuesPage")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LinearWorld]:
    with running_linear(tmp_path_factory.mktemp("linear-contract")) as found:
        found.control.comment("ENG-1", "alice", "Please also check the logout page.")
        # History entries of every kind the tracker reads: a move by a person, labels added
        # by one, and a change no user made (an automation: no actor).
        found.control.set_state("ENG-1", "In Progress", as_user="alice")
        found.control.add_labels("ENG-1", "bug", as_user="alice")
        found.control.set_state("ENG-1", "In Review")
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
        "ChangedIssues": {
            "filter": {"team": {"key": {"eq": "ENG"}}, "updatedAt": {"gte": "-P1D"}},
        },
        "Issue": {"id": "ENG-1"},
        "IssueComments": {"id": "ENG-1"},
        "IssueHistory": {"id": "ENG-1"},
        "IssueReplies": {"id": "ENG-1"},
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
