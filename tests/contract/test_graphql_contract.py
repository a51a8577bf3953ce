"""Every GraphQL document the product sends is valid on GitHub, and the emulator's
schema is a faithful subset of GitHub's, so what the emulator answers GitHub answers too."""

from __future__ import annotations

import pytest
from graphql import (
    GraphQLEnumType,
    GraphQLInputObjectType,
    GraphQLInterfaceType,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLSchema,
    GraphQLUnionType,
    parse,
    validate,
)

from orchestrator.github.queries import (
    MAX_FINGERPRINT_BATCH,
    MAX_STATE_BATCH,
    fingerprint_query,
    product_documents,
    state_query,
)
from orchestrator_sim.graphql_api import emulated_schema
from orchestrator_sim.graphql_cost import load_github_schema

DOCUMENTS = product_documents()


@pytest.fixture(scope="module")
def github() -> GraphQLSchema:
    return load_github_schema()


def _errors(schema: GraphQLSchema, text: str) -> list[str]:
    return [error.message for error in validate(schema, parse(text))]


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_product_document_is_valid_on_github(name: str, github: GraphQLSchema) -> None:
    assert _errors(github, DOCUMENTS[name]) == []


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_product_document_is_inside_the_emulated_subset(name: str) -> None:
    assert _errors(emulated_schema(), DOCUMENTS[name]) == []


# The shapes the emulator answers beyond the product's own documents (the strict-GitHub
# tests in tests/sim send them): each is valid on GitHub and inside the subset.
EMULATOR_DOCUMENTS = {
    "head_ref_rollup_counts": """query($n: Int!) { repository(owner: "o", name: "r") {
      pullRequest(number: $n) { isDraft mergeable mergeStateStatus headRef { name prefix
        target { __typename ... on Commit { oid abbreviatedOid message authoredDate
          committedDate statusCheckRollup { state contexts(first: 100) {
            totalCount checkRunCount statusContextCount
            checkRunCountsByState { state count } statusContextCountsByState { state count }
            pageInfo { hasNextPage endCursor } } } } } } } } }""",
    "object_by_oid": """query($oid: GitObjectID!, $after: String) {
      repository(owner: "o", name: "r") { object(oid: $oid) { __typename
        ... on Commit { oid statusCheckRollup { contexts(first: 100, after: $after) {
          nodes { __typename ... on CheckRun { name } } } } } } } }""",
    "issue_comments_with_editor": """query($n: Int!, $after: String) {
      repository(owner: "o", name: "r") { issue(number: $n) { number state
        labels(first: 10) { nodes { name } }
        comments(first: 100, after: $after) { totalCount pageInfo { hasNextPage endCursor }
          nodes { id databaseId body createdAt updatedAt lastEditedAt
            author { __typename login } editor { __typename login } } } } } }""",
    "pull_comments_and_commits": """query($n: Int!) { repository(owner: "o", name: "r") {
      pullRequest(number: $n) { comments(last: 10) { nodes { editor { login } } }
        commits(first: 100) { totalCount nodes { commit { oid authoredDate } } }
        labels(first: 10) { nodes { name color } } } } }""",
    "pull_request_list": """query($after: String) { repository(owner: "o", name: "r") {
      pullRequests(first: 50, after: $after, states: [OPEN], labels: ["agent"],
                   baseRefName: "main", orderBy: {field: UPDATED_AT, direction: DESC}) {
        totalCount pageInfo { hasNextPage endCursor }
        edges { cursor node { number isDraft updatedAt } } } } }""",
    "paged_reviews_threads_comments": """query($n: Int!, $a: String, $b: String) {
      repository(owner: "o", name: "r") { pullRequest(number: $n) {
        reviews(last: 50, before: $b) { pageInfo { hasPreviousPage startCursor }
          nodes { state } }
        reviewThreads(first: 50, after: $a) { pageInfo { hasNextPage endCursor }
          nodes { isOutdated line originalLine
            comments(first: 20) { nodes { line originalLine } } } } } } }""",
    "node_lookup": """query($id: ID!) { node(id: $id) { __typename id
      ... on IssueComment { lastEditedAt editor { login } }
      ... on PullRequestReviewThread { isResolved }
      ... on PullRequest { number } ... on Issue { number } } }""",
    "mark_ready": """mutation($id: ID!) {
      markPullRequestReadyForReview(input: {pullRequestId: $id, clientMutationId: "x"}) {
        clientMutationId pullRequest { id isDraft } } }""",
    "update_branch": """mutation($id: ID!, $oid: GitObjectID) {
      updatePullRequestBranch(input: {pullRequestId: $id, expectedHeadOid: $oid,
                                      updateMethod: REBASE, clientMutationId: "x"}) {
        clientMutationId pullRequest { headRefOid baseRefOid mergeStateStatus } } }""",
    "merge_settings": """{ repository(owner: "o", name: "r") {
      mergeCommitAllowed squashMergeAllowed rebaseMergeAllowed autoMergeAllowed
      pullRequest(number: 1) { baseRefOid mergeStateStatus reviewDecision } } }""",
    "merge_pull_request": """mutation($id: ID!, $oid: GitObjectID) {
      mergePullRequest(input: {pullRequestId: $id, expectedHeadOid: $oid, mergeMethod: SQUASH,
          commitHeadline: "t", commitBody: "b", clientMutationId: "x"}) {
        clientMutationId actor { login } pullRequest { merged mergeCommit { oid } } } }""",
    "enqueue_and_dequeue": """mutation($id: ID!, $oid: GitObjectID) {
      enqueuePullRequest(input: {pullRequestId: $id, expectedHeadOid: $oid, jump: true}) {
        clientMutationId mergeQueueEntry { id position state jump solo enqueuedAt
          enqueuer { login } headCommit { oid } baseCommit { oid } estimatedTimeToMerge
          pullRequest { number } mergeQueue { id } } }
      dequeuePullRequest(input: {id: $id}) { mergeQueueEntry { position } } }""",
    "auto_merge": """mutation($id: ID!, $oid: GitObjectID) {
      enablePullRequestAutoMerge(input: {pullRequestId: $id, expectedHeadOid: $oid,
          mergeMethod: REBASE, commitHeadline: "t", commitBody: "b", authorEmail: "a@b.c"}) {
        actor { login } pullRequest { autoMergeRequest { enabledAt enabledBy { login }
          mergeMethod commitHeadline commitBody authorEmail pullRequest { number } } } }
      disablePullRequestAutoMerge(input: {pullRequestId: $id}) {
        clientMutationId actor { login } pullRequest { autoMergeRequest { enabledAt } } } }""",
    "merge_queue": """query($branch: String, $after: String) {
      repository(owner: "o", name: "r") { autoMergeAllowed mergeQueue(branch: $branch) {
        id repository { nameWithOwner }
        configuration { checkResponseTimeout maximumEntriesToBuild maximumEntriesToMerge
          mergeMethod mergingStrategy minimumEntriesToMerge minimumEntriesToMergeWaitTime }
        entries(first: 100, after: $after) { totalCount pageInfo { hasNextPage endCursor }
          edges { cursor node { position state pullRequest { number headRefOid } } } } }
        pullRequest(number: 1) { isInMergeQueue isMergeQueueEnabled
          mergeQueueEntry { position state } } } }""",
}


@pytest.mark.parametrize("name", sorted(EMULATOR_DOCUMENTS))
def test_emulator_document_is_valid_on_github_and_answered(
    name: str, github: GraphQLSchema
) -> None:
    assert _errors(github, EMULATOR_DOCUMENTS[name]) == []
    assert _errors(emulated_schema(), EMULATOR_DOCUMENTS[name]) == []


@pytest.mark.parametrize("count", [2, 3, 50, MAX_FINGERPRINT_BATCH - 1])
def test_fingerprint_batches_of_every_size_are_valid(count: int, github: GraphQLSchema) -> None:
    assert _errors(github, fingerprint_query(count)) == []


@pytest.mark.parametrize("count", range(2, MAX_STATE_BATCH))
def test_state_batches_of_every_size_are_valid(count: int, github: GraphQLSchema) -> None:
    assert _errors(github, state_query(count)) == []


# Each row: a document GitHub refuses and words its refusal must contain (graphql-core
# phrases some messages differently between versions, so whole sentences are not compared).
@pytest.mark.parametrize(
    ("document", "expected"),
    [
        (
            '{ repository(owner: "o", name: "r") { pullRequest(number: 1) { unresolvedCount } } }',
            ("unresolvedCount", "PullRequest"),
        ),
        (
            '{ repository(owner: "o", name: "r") { pullRequest(number: 1) {'
            " reviewThreads(first: 10, isResolved: false) { totalCount } } } }",
            ("isResolved", "PullRequest.reviewThreads"),
        ),
        (
            '{ repository(owner: "o", name: "r") { pullRequest(number: "1") { number } } }',
            ("Int cannot represent non-integer value",),
        ),
        (
            'mutation { resolveReviewThread(input: {id: "T"}) { thread { id } } }',
            ("ResolveReviewThreadInput", "threadId"),
        ),
        (
            'mutation { addPullRequestReviewThreadReply(input: {pullRequestReviewThreadId: "T"})'
            " { comment { id } } }",
            ("AddPullRequestReviewThreadReplyInput", "body"),
        ),
        (
            '{ repository(owner: "o") { id } }',
            ("repository", "name", "String!"),
        ),
    ],
    ids=[
        "unknown_field",
        "unknown_argument",
        "wrong_argument_type",
        "missing_input_field",
        "reply_without_body",
        "missing_required_argument",
    ],
)
def test_invalid_documents_are_rejected_by_githubs_schema(
    document: str, expected: tuple[str, ...], github: GraphQLSchema
) -> None:
    errors = " | ".join(_errors(github, document))
    assert errors
    for word in expected:
        assert word in errors


def test_emulated_schema_is_a_subset_of_githubs(github: GraphQLSchema) -> None:
    problems: list[str] = []
    for name, ours in emulated_schema().type_map.items():
        if name.startswith("__"):
            continue
        theirs = github.get_type(name)
        if theirs is None:
            problems.append(f"type {name} does not exist on GitHub")
            continue
        if type(theirs) is not type(ours):
            problems.append(f"{name} is a {type(ours).__name__} here, {type(theirs).__name__}")
            continue
        if isinstance(ours, GraphQLEnumType) and isinstance(theirs, GraphQLEnumType):
            extra = set(ours.values) - set(theirs.values)
            if extra:
                problems.append(f"enum {name} has values GitHub lacks: {sorted(extra)}")
        if isinstance(ours, GraphQLUnionType) and isinstance(theirs, GraphQLUnionType):
            extra = {t.name for t in ours.types} - {t.name for t in theirs.types}
            if extra:
                problems.append(f"union {name} has members GitHub lacks: {sorted(extra)}")
        if isinstance(ours, GraphQLObjectType | GraphQLInterfaceType) and isinstance(
            theirs, GraphQLObjectType | GraphQLInterfaceType
        ):
            extra = {i.name for i in ours.interfaces} - {i.name for i in theirs.interfaces}
            if extra:
                problems.append(f"{name} implements interfaces GitHub's lacks: {sorted(extra)}")
            for field_name, field in ours.fields.items():
                their_field = theirs.fields.get(field_name)
                if their_field is None:
                    problems.append(f"{name}.{field_name} does not exist on GitHub")
                    continue
                if str(field.type) != str(their_field.type):
                    problems.append(
                        f"{name}.{field_name} is {field.type} here, {their_field.type} on GitHub"
                    )
                for arg_name, arg in field.args.items():
                    their_arg = their_field.args.get(arg_name)
                    if their_arg is None or str(arg.type) != str(their_arg.type):
                        problems.append(f"{name}.{field_name}({arg_name}: {arg.type}) differs")
                for arg_name, their_arg in their_field.args.items():
                    if isinstance(their_arg.type, GraphQLNonNull) and arg_name not in field.args:
                        problems.append(f"{name}.{field_name} lacks required argument {arg_name}")
        if isinstance(ours, GraphQLInputObjectType) and isinstance(theirs, GraphQLInputObjectType):
            for field_name, their_field in theirs.fields.items():
                ours_field = ours.fields.get(field_name)
                if ours_field is None:
                    if isinstance(their_field.type, GraphQLNonNull):
                        problems.append(f"input {name} lacks required field {field_name}")
                elif str(ours_field.type) != str(their_field.type):
                    problems.append(f"input {name}.{field_name} type differs")
            extra = set(ours.fields) - set(theirs.fields)
            if extra:
                problems.append(f"input {name} has fields GitHub lacks: {sorted(extra)}")
    assert problems == []


def test_emulated_root_fields_exist_on_githubs_roots(github: GraphQLSchema) -> None:
    ours = emulated_schema()
    assert ours.query_type is not None and github.query_type is not None
    assert ours.mutation_type is not None and github.mutation_type is not None
    assert set(ours.query_type.fields) <= set(github.query_type.fields)
    assert set(ours.mutation_type.fields) <= set(github.mutation_type.fields)
