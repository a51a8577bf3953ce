"""GitHub's GraphQL cost formula, row by row, with each figure worked out by hand."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from graphql import GraphQLSchema, parse

from orchestrator.github.queries import product_documents
from orchestrator_sim.graphql_cost import (
    ConnectionUse,
    QueryCost,
    SchemaUnavailableError,
    connection_uses,
    load_github_schema,
    query_cost,
    select_operation,
)


@pytest.fixture(scope="module")
def schema() -> GraphQLSchema:
    return load_github_schema()


@dataclass(frozen=True)
class Row:
    """One document and the requests, nodes and points GitHub's formula gives it."""

    name: str
    query: str
    requests: int
    nodes: int
    points: int
    variables: dict[str, Any] | None = None


ROWS = [
    # One connection of 100 PRs: 1 request; 100 nodes; 1 / 100 rounds to 0, so the minimum 1.
    Row(
        "shallow_100_prs",
        """{ repository(owner: "o", name: "r") {
               pullRequests(first: 100) { nodes { number headRefOid } } } }""",
        requests=1,
        nodes=100,
        points=1,
    ),
    # GitHub's published example: 1 (repositories) + 100 (issues per repository)
    # + 100 x 50 (labels per issue) = 5,101 requests -> 51 points;
    # nodes 100 + 100 x 50 + 100 x 50 x 60 = 305,100.
    Row(
        "github_documented_example",
        """{ viewer { login repositories(first: 100) { edges { repository: node { name
               issues(first: 50) { totalCount edges { node { title
                 labels(first: 60) { edges { node { name } } } } } } } } } } }""",
        requests=5101,
        nodes=305_100,
        points=51,
    ),
    # 100 PRs x 50 threads x 20 comments: 1 + 100 (threads per PR) + 100 x 50
    # (comments per thread) = 5,101 -> 51 points; nodes 100 + 5,000 + 100,000.
    Row(
        "deep_threads_and_comments",
        """{ repository(owner: "o", name: "r") { pullRequests(first: 100) { nodes {
               reviewThreads(first: 50) { nodes {
                 comments(first: 20) { nodes { body } } } } } } } }""",
        requests=5101,
        nodes=105_100,
        points=51,
    ),
    # The same through variables: the sizes come from the variables, not the text.
    Row(
        "deep_with_variables",
        """query($prs: Int!, $threads: Int!, $comments: Int!) {
             repository(owner: "o", name: "r") { pullRequests(first: $prs) { nodes {
               reviewThreads(first: $threads) { nodes {
                 comments(first: $comments) { nodes { body } } } } } } } }""",
        requests=5101,
        nodes=105_100,
        points=51,
        variables={"prs": 100, "threads": 50, "comments": 20},
    ),
    # A default value stands in for a missing variable: 1 + 10 (threads per PR) = 11;
    # nodes 10 + 10 x 100 = 1,010; 0.11 rounds to 0 -> minimum 1.
    Row(
        "variable_default",
        """query($n: Int = 10) { repository(owner: "o", name: "r") {
             pullRequests(first: $n) { nodes { reviewThreads(first: 100) { totalCount } } } } }""",
        requests=11,
        nodes=1010,
        points=1,
    ),
    # last counts like first: 1 (PRs) + 100 (last commit per PR) + 100 x 1 (contexts
    # per commit) = 201 -> 2 points; nodes 100 + 100 + 100 x 1 x 100 = 10,200.
    Row(
        "last_commit_rollup",
        """{ repository(owner: "o", name: "r") { pullRequests(first: 100) { nodes {
               commits(last: 1) { nodes { commit { statusCheckRollup {
                 contexts(first: 100) { nodes { __typename } } } } } } } } } }""",
        requests=201,
        nodes=10_200,
        points=2,
    ),
    # Rounding is half up: 1 + 83 x 3 = 250 requests -> 2.5 -> 3 points.
    Row(
        "rounds_half_up",
        """{ repository(owner: "o", name: "r") { issues(first: 83) { nodes {
               labels(first: 1) { totalCount } comments(first: 1) { totalCount }
               assignees(first: 1) { totalCount } } } } }""",
        requests=250,
        nodes=83 + 83 * 3,
        points=3,
    ),
    # Just under: 1 + 82 x 3 = 247 requests -> 2.47 -> 2 points.
    Row(
        "rounds_down_below_half",
        """{ repository(owner: "o", name: "r") { issues(first: 82) { nodes {
               labels(first: 1) { totalCount } comments(first: 1) { totalCount }
               assignees(first: 1) { totalCount } } } } }""",
        requests=247,
        nodes=82 + 82 * 3,
        points=2,
    ),
    # Aliases are separate fields: two PRs, one thread connection each = 2 requests;
    # nodes 100 + 100.
    Row(
        "aliases_count_separately",
        """{ repository(owner: "o", name: "r") {
               a: pullRequest(number: 1) { reviewThreads(first: 100) { totalCount } }
               b: pullRequest(number: 2) { reviewThreads(first: 100) { totalCount } } } }""",
        requests=2,
        nodes=200,
        points=1,
    ),
    # The same response key twice is one field once merged: 1 request, 10 nodes.
    Row(
        "same_field_merges",
        """{ repository(owner: "o", name: "r") { pullRequest(number: 1) {
               reviewThreads(first: 10) { totalCount }
               reviewThreads(first: 10) { nodes { id } } } } }""",
        requests=1,
        nodes=10,
        points=1,
    ),
    # A named fragment is walked wherever it is spread: 3 aliases x (1 + 20) = 63 requests;
    # nodes 3 x (20 + 20 x 5) = 360.
    Row(
        "fragment_spread_per_alias",
        """query { repository(owner: "o", name: "r") {
               a: pullRequest(number: 1) { ...Threads }
               b: pullRequest(number: 2) { ...Threads }
               c: pullRequest(number: 3) { ...Threads } } }
           fragment Threads on PullRequest {
             reviewThreads(first: 20) { nodes { comments(first: 5) { totalCount } } } }""",
        requests=63,
        nodes=360,
        points=1,
    ),
    # A connection inside an inline fragment of a union member still counts: 1 (PRs)
    # + 10 (last commit) + 10 (contexts) + 10 x 100 (annotations per check run)
    # = 1,021 -> 10 points; nodes 10 + 10 + 1,000 + 50,000 = 51,020.
    Row(
        "inline_fragment_on_union",
        """{ repository(owner: "o", name: "r") { pullRequests(first: 10) { nodes {
               commits(last: 1) { nodes { commit { statusCheckRollup {
                 contexts(first: 100) { nodes { ... on CheckRun {
                   annotations(first: 50) { nodes { message } } } } } } } } } } } } }""",
        requests=1021,
        nodes=51_020,
        points=10,
    ),
    # A connection asked without first/last is assumed to be a full page of 100.
    Row(
        "no_page_size_assumes_100",
        """{ repository(owner: "o", name: "r") { issues { totalCount } } }""",
        requests=1,
        nodes=100,
        points=1,
    ),
    # first and last together: the smaller bounds the page (10 x 1 requests for labels).
    Row(
        "first_and_last_take_the_smaller",
        """{ repository(owner: "o", name: "r") { issues(first: 50, last: 10) { nodes {
               labels(first: 5) { totalCount } } } } }""",
        requests=11,
        nodes=10 + 10 * 5,
        points=1,
    ),
    # Plain object fields do not multiply: a connection under repository -> pullRequest ->
    # object fields still costs one request per enclosing connection node.
    Row(
        "objects_do_not_multiply",
        """{ repository(owner: "o", name: "r") { pullRequests(first: 10) { nodes {
               commits(last: 1) { nodes { commit {
                 history(first: 5) { totalCount } } } } } } } }""",
        requests=1 + 10 + 10,
        nodes=10 + 10 + 10 * 5,
        points=1,
    ),
    # headRef, target and statusCheckRollup are plain objects: the contexts of 100 PRs'
    # heads are one request per PR. 1 + 100 = 101 requests -> 1 point;
    # nodes 100 + 100 x 100 = 10,100.
    Row(
        "head_ref_rollup_per_pull",
        """{ repository(owner: "o", name: "r") { pullRequests(first: 100) { nodes {
               headRef { target { ... on Commit { statusCheckRollup {
                 contexts(first: 100) { totalCount checkRunCount nodes { __typename } }
               } } } } } } } }""",
        requests=101,
        nodes=10_100,
        points=1,
    ),
    # A top-level aliased pullRequest(number:) is an object, not a connection: 3 aliases
    # x headRef contexts 1 = 3 requests; nodes 3 x 100.
    Row(
        "aliased_pull_head_contexts",
        """{ repository(owner: "o", name: "r") {
               a: pullRequest(number: 1) { headRef { target { ... on Commit {
                 statusCheckRollup { contexts(first: 100) { nodes { __typename } } } } } } }
               b: pullRequest(number: 2) { headRef { target { ... on Commit {
                 statusCheckRollup { contexts(first: 100) { nodes { __typename } } } } } } }
               c: pullRequest(number: 3) { headRef { target { ... on Commit {
                 statusCheckRollup { contexts(first: 100) { nodes { __typename } } } } } } } } }""",
        requests=3,
        nodes=300,
        points=1,
    ),
    # repository.object is an object: one commit's contexts are 1 request, 100 nodes.
    Row(
        "object_by_oid_contexts",
        """query($oid: GitObjectID!, $after: String) { repository(owner: "o", name: "r") {
             object(oid: $oid) { ... on Commit { statusCheckRollup {
               contexts(first: 100, after: $after) { totalCount nodes { __typename } }
             } } } } }""",
        requests=1,
        nodes=100,
        points=1,
        variables={"oid": "0" * 40},
    ),
    # Conversation comments and commits of 50 PRs: 1 + 50 x 2 = 101 requests -> 1 point;
    # nodes 50 + 50 x 100 + 50 x 1 = 5,100.
    Row(
        "pull_comments_and_last_commit",
        """{ repository(owner: "o", name: "r") {
             pullRequests(first: 50, states: [OPEN], orderBy: {field: UPDATED_AT, direction: DESC})
             { nodes { comments(first: 100) { nodes { editor { login } lastEditedAt } }
                       commits(last: 1) { nodes { commit { oid } } } } } } }""",
        requests=101,
        nodes=5_100,
        points=1,
    ),
    # An issue's comments: repository.issue is an object, so 1 request.
    Row(
        "issue_comments",
        """{ repository(owner: "o", name: "r") { issue(number: 1) {
             comments(first: 100) { totalCount nodes { body } } } } }""",
        requests=1,
        nodes=100,
        points=1,
    ),
    # A mutation without connections needs no requests: the minimum of 1 point.
    Row(
        "mutation_minimum",
        """mutation { resolveReviewThread(input: {threadId: "T"}) { thread { id isResolved } } }""",
        requests=0,
        nodes=0,
        points=1,
    ),
    # Meta fields never cost anything.
    Row(
        "typename_only",
        "{ __typename }",
        requests=0,
        nodes=0,
        points=1,
    ),
]


@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
def test_cost_with_githubs_schema(row: Row, schema: GraphQLSchema) -> None:
    cost = query_cost(parse(row.query), row.variables, schema=schema)
    assert (cost.requests, cost.nodes, cost.points) == (row.requests, row.nodes, row.points)


# Rows whose connections all take first/last or select nodes/edges: the selection
# shape alone identifies them, so the figures match without a schema.
SHAPE_ROWS = [r for r in ROWS if r.name not in {"no_page_size_assumes_100"}]


@pytest.mark.parametrize("row", SHAPE_ROWS, ids=[r.name for r in SHAPE_ROWS])
def test_cost_from_selection_shape(row: Row) -> None:
    cost = query_cost(parse(row.query), row.variables)
    assert (cost.requests, cost.nodes, cost.points) == (row.requests, row.nodes, row.points)


def test_connection_without_page_size_or_children_is_invisible_to_shape_rule() -> None:
    # `issues { totalCount }` has neither first/last nor nodes/edges: without the schema it
    # looks like a plain object, so it is free. The schema rule above charges it.
    cost = query_cost(parse('{ repository(owner: "o", name: "r") { issues { totalCount } } }'))
    assert cost == QueryCost(requests=0, nodes=0)


@pytest.mark.parametrize(
    ("requests", "points"),
    [(0, 1), (1, 1), (49, 1), (50, 1), (149, 1), (150, 2), (249, 2), (250, 3), (5101, 51)],
)
def test_points_divide_by_100_round_half_up_minimum_1(requests: int, points: int) -> None:
    # 50 -> 0.5 rounds up to 1 (and is the minimum anyway); 150 -> 1.5 -> 2; 250 -> 2.5 -> 3.
    assert QueryCost(requests=requests, nodes=0).points == points


@pytest.mark.parametrize(
    ("name", "requests", "points"),
    [
        # 1 PR: the head's check contexts (1; headRef, target and the rollup are plain
        # objects) + review threads (1) = 2 requests.
        ("fingerprint_1", 2, 1),
        # 100 PRs x 2 connections = 200 requests -> 2 points.
        ("fingerprint_100", 200, 2),
        # 1 PR: reviews 1 + threads 1 + comments 50 (one per thread) + head contexts 1
        # = 53 requests -> minimum 1 point.
        ("state_1", 53, 1),
        # 10 PRs x 53 = 530 requests -> 5.3 -> 5 points.
        ("state_10", 530, 5),
        # One commit's check contexts: 1 request.
        ("head_checks_page", 1, 1),
        # reviews(last: 50): 1 request.
        ("reviews_page", 1, 1),
        # threads 1 + comments 50 (one per thread) = 51 requests -> 1 point.
        ("threads_page", 51, 1),
        # node(id:) is a plain object: its comments are 1 request.
        ("thread_comments_page", 1, 1),
        ("comment_editor", 0, 1),
        ("resolve_review_thread", 0, 1),
        ("reply_to_review_thread", 0, 1),
        ("mark_ready_for_review", 0, 1),
    ],
)
def test_product_documents_cost(
    name: str, requests: int, points: int, schema: GraphQLSchema
) -> None:
    document = parse(product_documents()[name])
    by_schema = query_cost(document, schema=schema)
    by_shape = query_cost(document)
    assert (by_schema.requests, by_schema.points) == (requests, points)
    assert by_shape == by_schema


def test_operation_is_chosen_by_name() -> None:
    document = parse(
        """query Cheap { repository(owner: "o", name: "r") { issues(first: 1) { totalCount } } }
           query Dear { repository(owner: "o", name: "r") { issues(first: 100) { nodes {
             comments(first: 100) { totalCount } } } } }"""
    )
    assert query_cost(document, operation_name="Cheap").requests == 1
    assert query_cost(document, operation_name="Dear").requests == 101
    with pytest.raises(ValueError, match="2 operations"):
        query_cost(document)
    with pytest.raises(ValueError, match="no operation named 'Other'"):
        select_operation(document, "Other")


def test_unknown_field_falls_back_to_shape(schema: GraphQLSchema) -> None:
    # `madeUp` is not in GitHub's schema; its first: argument still marks it a connection.
    document = parse(
        """{ repository(owner: "o", name: "r") { madeUp(first: 10) { nodes {
             issues(first: 10) { totalCount } } } } }"""
    )
    assert query_cost(document, schema=schema) == QueryCost(requests=11, nodes=110)


def test_self_spreading_fragment_does_not_loop() -> None:
    document = parse(
        """{ repository(owner: "o", name: "r") { ...Loop } }
           fragment Loop on Repository { issues(first: 2) { totalCount } ...Loop }"""
    )
    assert query_cost(document).requests == 1


def test_fragment_reached_again_below_itself_is_not_followed(schema: GraphQLSchema) -> None:
    # Thread -> pullRequest -> ...Threads again: invalid GraphQL (a cycle); only the outer
    # reviewThreads counts (1 request), nothing loops.
    document = parse(
        """{ repository(owner: "o", name: "r") { pullRequest(number: 1) { ...Threads } } }
           fragment Threads on PullRequest {
             reviewThreads(first: 2) { nodes { pullRequest { ...Threads } } } }"""
    )
    assert query_cost(document, schema=schema) == QueryCost(requests=1, nodes=2)


def test_connection_uses_report_arguments_and_nesting(schema: GraphQLSchema) -> None:
    document = parse(
        """query($n: Int!) { repository(owner: "o", name: "r") {
             pr: pullRequest(number: 1) {
               reviewThreads(first: $n) { totalCount nodes { comments(last: 3) { totalCount } } }
               commits { totalCount } } } }"""
    )
    uses = connection_uses(document, {"n": 4}, schema=schema)
    assert uses == [
        ConnectionUse(
            path=("repository", "pr", "reviewThreads"),
            field_name="reviewThreads",
            requests=1,
            first=4,
            last=None,
            selects_items=True,
        ),
        ConnectionUse(
            path=("repository", "pr", "reviewThreads", "nodes", "comments"),
            field_name="comments",
            requests=4,
            first=None,
            last=3,
            selects_items=False,
        ),
        ConnectionUse(
            path=("repository", "pr", "commits"),
            field_name="commits",
            requests=1,
            first=None,
            last=None,
            selects_items=False,
        ),
    ]
    assert [use.page_size for use in uses] == [4, 3, 100]


def test_missing_schema_file_says_how_to_get_it(tmp_path: Any) -> None:
    with pytest.raises(SchemaUnavailableError, match="run `make contracts`"):
        load_github_schema(tmp_path / "absent.json")


def test_schema_file_without_introspection_is_refused(tmp_path: Any) -> None:
    bad = tmp_path / "schema.json"
    bad.write_text('{"data": {}}', encoding="utf-8")
    with pytest.raises(SchemaUnavailableError, match="no top-level __schema"):
        load_github_schema(bad)
