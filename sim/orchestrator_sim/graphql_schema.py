"""The part of GitHub's GraphQL schema the emulator answers, and GitHub's own schema.

Every type, field, argument and enum value of `EMULATED_SDL` exists in GitHub's
schema with the same type (a contract test proves it), so a document valid here
is valid on GitHub.
"""

from __future__ import annotations

import threading
from pathlib import Path

from graphql import GraphQLSchema, build_schema

from orchestrator.logs import get_logger
from orchestrator_sim.graphql_cost import (
    SchemaMissingError,
    SchemaUnavailableError,
    github_schema_path,
    load_github_schema,
)
from orchestrator_sim.graphql_schema_merging import MERGING_SDL

log = get_logger(__name__)

_CORE_SDL = """
schema {
  query: Query
  mutation: Mutation
}

scalar DateTime
scalar GitObjectID
scalar URI

type Query {
  node(id: ID!): Node
  rateLimit: RateLimit
  repository(owner: String!, name: String!): Repository
  viewer: User!
}

type Mutation {
  resolveReviewThread(input: ResolveReviewThreadInput!): ResolveReviewThreadPayload
  addPullRequestReviewThreadReply(
    input: AddPullRequestReviewThreadReplyInput!
  ): AddPullRequestReviewThreadReplyPayload
  markPullRequestReadyForReview(
    input: MarkPullRequestReadyForReviewInput!
  ): MarkPullRequestReadyForReviewPayload
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
  issue(number: Int!): Issue
  object(oid: GitObjectID, expression: String): GitObject
  pullRequest(number: Int!): PullRequest
  pullRequests(
    states: [PullRequestState!]
    labels: [String!]
    headRefName: String
    baseRefName: String
    orderBy: IssueOrder
    after: String
    before: String
    first: Int
    last: Int
  ): PullRequestConnection!
}

input IssueOrder {
  field: IssueOrderField!
  direction: OrderDirection!
}

enum IssueOrderField {
  COMMENTS
  CREATED_AT
  UPDATED_AT
}

enum OrderDirection {
  ASC
  DESC
}

enum IssueState {
  CLOSED
  OPEN
}

type Issue implements Node {
  id: ID!
  databaseId: Int
  number: Int!
  title: String!
  body: String!
  author: Actor
  state: IssueState!
  closed: Boolean!
  closedAt: DateTime
  createdAt: DateTime!
  updatedAt: DateTime!
  labels(after: String, before: String, first: Int, last: Int): LabelConnection
  comments(after: String, before: String, first: Int, last: Int): IssueCommentConnection!
}

type Label implements Node {
  id: ID!
  name: String!
  color: String!
}

type LabelConnection {
  edges: [LabelEdge]
  nodes: [Label]
  pageInfo: PageInfo!
  totalCount: Int!
}

type LabelEdge {
  cursor: String!
  node: Label
}

type IssueComment implements Node {
  id: ID!
  databaseId: Int
  author: Actor
  body: String!
  createdAt: DateTime!
  updatedAt: DateTime!
  lastEditedAt: DateTime
  editor: Actor
}

type IssueCommentConnection {
  edges: [IssueCommentEdge]
  nodes: [IssueComment]
  pageInfo: PageInfo!
  totalCount: Int!
}

type IssueCommentEdge {
  cursor: String!
  node: IssueComment
}

type PullRequestConnection {
  edges: [PullRequestEdge]
  nodes: [PullRequest]
  pageInfo: PageInfo!
  totalCount: Int!
}

type PullRequestEdge {
  cursor: String!
  node: PullRequest
}

interface GitObject {
  id: ID!
  oid: GitObjectID!
}

type Ref implements Node {
  id: ID!
  name: String!
  prefix: String!
  target: GitObject
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
  headRef: Ref
  headRefName: String!
  headRefOid: GitObjectID!
  baseRefName: String!
  mergeable: MergeableState!
  mergeStateStatus: MergeStateStatus!
  reviewDecision: PullRequestReviewDecision
  repository: Repository!
  labels(after: String, before: String, first: Int, last: Int): LabelConnection
  comments(after: String, before: String, first: Int, last: Int): IssueCommentConnection!
  reviews(after: String, before: String, first: Int, last: Int): PullRequestReviewConnection
  reviewThreads(
    after: String
    before: String
    first: Int
    last: Int
  ): PullRequestReviewThreadConnection!
  commits(after: String, before: String, first: Int, last: Int): PullRequestCommitConnection!
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
  edges: [PullRequestCommitEdge]
  nodes: [PullRequestCommit]
  pageInfo: PageInfo!
  totalCount: Int!
}

type PullRequestCommitEdge {
  cursor: String!
  node: PullRequestCommit
}

type PullRequestCommit implements Node {
  id: ID!
  commit: Commit!
}

type Commit implements GitObject & Node {
  id: ID!
  oid: GitObjectID!
  abbreviatedOid: String!
  message: String!
  authoredDate: DateTime!
  committedDate: DateTime!
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
  checkRunCount: Int!
  checkRunCountsByState: [CheckRunStateCount!]
  edges: [StatusCheckRollupContextEdge]
  nodes: [StatusCheckRollupContext]
  pageInfo: PageInfo!
  statusContextCount: Int!
  statusContextCountsByState: [StatusContextStateCount!]
  totalCount: Int!
}

enum CheckRunState {
  ACTION_REQUIRED
  CANCELLED
  COMPLETED
  FAILURE
  IN_PROGRESS
  NEUTRAL
  PENDING
  QUEUED
  SKIPPED
  STALE
  STARTUP_FAILURE
  SUCCESS
  TIMED_OUT
  WAITING
}

type CheckRunStateCount {
  count: Int!
  state: CheckRunState!
}

type StatusContextStateCount {
  count: Int!
  state: StatusState!
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

input MarkPullRequestReadyForReviewInput {
  clientMutationId: String
  pullRequestId: ID!
}

type MarkPullRequestReadyForReviewPayload {
  clientMutationId: String
  pullRequest: PullRequest
}
"""
EMULATED_SDL = _CORE_SDL + MERGING_SDL

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

    The file is a test contract (``make contracts`` fetches it): an installed
    emulator (the demo) runs without it, so its absence is only a debug line. A
    file that is there but cannot be read is a warning. The answer is remembered
    per file path, so either is reported once.
    """
    path = github_schema_path()
    with _schema_lock:
        if path in _github:
            return _github[path]
    try:
        schema: GraphQLSchema | None = load_github_schema(path)
    except SchemaMissingError as exc:
        log.debug("graphql_schema_absent", error=str(exc))
        schema = None
    except SchemaUnavailableError as exc:
        log.warning("graphql_schema_unavailable", error=str(exc))
        schema = None
    with _schema_lock:
        return _github.setdefault(path, schema)
