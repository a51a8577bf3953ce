"""The part of the emulated GraphQL schema about merging: the repository's merge
settings, the pull request's base commit, ``updatePullRequestBranch``,
``mergePullRequest``, the merge queue and auto-merge, as extensions of the types
`orchestrator_sim.graphql_schema` declares.

Like the rest of the emulated schema, every type, field, argument and enum value
here exists in GitHub's with the same type (the contract test covers the whole
schema).
"""

from __future__ import annotations

MERGING_SDL = """
extend type Mutation {
  updatePullRequestBranch(input: UpdatePullRequestBranchInput!): UpdatePullRequestBranchPayload
  mergePullRequest(input: MergePullRequestInput!): MergePullRequestPayload
  enqueuePullRequest(input: EnqueuePullRequestInput!): EnqueuePullRequestPayload
  dequeuePullRequest(input: DequeuePullRequestInput!): DequeuePullRequestPayload
  enablePullRequestAutoMerge(
    input: EnablePullRequestAutoMergeInput!
  ): EnablePullRequestAutoMergePayload
  disablePullRequestAutoMerge(
    input: DisablePullRequestAutoMergeInput!
  ): DisablePullRequestAutoMergePayload
}

extend type Repository {
  mergeCommitAllowed: Boolean!
  squashMergeAllowed: Boolean!
  rebaseMergeAllowed: Boolean!
  autoMergeAllowed: Boolean!
  mergeQueue(branch: String): MergeQueue
}

extend type PullRequest {
  baseRefOid: GitObjectID!
  autoMergeRequest: AutoMergeRequest
  isInMergeQueue: Boolean!
  isMergeQueueEnabled: Boolean!
  mergeCommit: Commit
  mergeQueueEntry: MergeQueueEntry
}

enum PullRequestBranchUpdateMethod {
  MERGE
  REBASE
}

input UpdatePullRequestBranchInput {
  clientMutationId: String
  expectedHeadOid: GitObjectID
  pullRequestId: ID!
  updateMethod: PullRequestBranchUpdateMethod
}

type UpdatePullRequestBranchPayload {
  clientMutationId: String
  pullRequest: PullRequest
}

enum PullRequestMergeMethod {
  MERGE
  REBASE
  SQUASH
}

enum MergeQueueEntryState {
  AWAITING_CHECKS
  LOCKED
  MERGEABLE
  QUEUED
  UNMERGEABLE
}

enum MergeQueueMergingStrategy {
  ALLGREEN
  HEADGREEN
}

type MergeQueue implements Node {
  id: ID!
  configuration: MergeQueueConfiguration
  entries(after: String, before: String, first: Int, last: Int): MergeQueueEntryConnection
  repository: Repository
}

type MergeQueueConfiguration {
  checkResponseTimeout: Int
  maximumEntriesToBuild: Int
  maximumEntriesToMerge: Int
  mergeMethod: PullRequestMergeMethod
  mergingStrategy: MergeQueueMergingStrategy
  minimumEntriesToMerge: Int
  minimumEntriesToMergeWaitTime: Int
}

type MergeQueueEntryConnection {
  edges: [MergeQueueEntryEdge]
  nodes: [MergeQueueEntry]
  pageInfo: PageInfo!
  totalCount: Int!
}

type MergeQueueEntryEdge {
  cursor: String!
  node: MergeQueueEntry
}

type MergeQueueEntry implements Node {
  id: ID!
  baseCommit: Commit
  enqueuedAt: DateTime!
  enqueuer: Actor!
  estimatedTimeToMerge: Int
  headCommit: Commit
  jump: Boolean!
  mergeQueue: MergeQueue
  position: Int!
  pullRequest: PullRequest
  solo: Boolean!
  state: MergeQueueEntryState!
}

type AutoMergeRequest {
  authorEmail: String
  commitBody: String
  commitHeadline: String
  enabledAt: DateTime
  enabledBy: Actor
  mergeMethod: PullRequestMergeMethod!
  pullRequest: PullRequest!
}

input MergePullRequestInput {
  authorEmail: String
  clientMutationId: String
  commitBody: String
  commitHeadline: String
  expectedHeadOid: GitObjectID
  mergeMethod: PullRequestMergeMethod = MERGE
  pullRequestId: ID!
}

type MergePullRequestPayload {
  actor: Actor
  clientMutationId: String
  pullRequest: PullRequest
}

input EnqueuePullRequestInput {
  clientMutationId: String
  expectedHeadOid: GitObjectID
  jump: Boolean
  pullRequestId: ID!
}

type EnqueuePullRequestPayload {
  clientMutationId: String
  mergeQueueEntry: MergeQueueEntry
}

input DequeuePullRequestInput {
  clientMutationId: String
  id: ID!
}

type DequeuePullRequestPayload {
  clientMutationId: String
  mergeQueueEntry: MergeQueueEntry
}

input EnablePullRequestAutoMergeInput {
  authorEmail: String
  clientMutationId: String
  commitBody: String
  commitHeadline: String
  expectedHeadOid: GitObjectID
  mergeMethod: PullRequestMergeMethod = MERGE
  pullRequestId: ID!
}

type EnablePullRequestAutoMergePayload {
  actor: Actor
  clientMutationId: String
  pullRequest: PullRequest
}

input DisablePullRequestAutoMergeInput {
  clientMutationId: String
  pullRequestId: ID!
}

type DisablePullRequestAutoMergePayload {
  actor: Actor
  clientMutationId: String
  pullRequest: PullRequest
}
"""
