"""The part of the emulated GraphQL schema about what a merge needs: the repository's
merge settings, the pull request's base commit and the ``updatePullRequestBranch``
mutation, as extensions of the types `orchestrator_sim.graphql_schema` declares.

Like the rest of the emulated schema, every field here exists in GitHub's with
the same type (the contract test covers the whole schema).
"""

from __future__ import annotations

MERGING_SDL = """
extend type Mutation {
  updatePullRequestBranch(input: UpdatePullRequestBranchInput!): UpdatePullRequestBranchPayload
}

extend type Repository {
  mergeCommitAllowed: Boolean!
  squashMergeAllowed: Boolean!
  rebaseMergeAllowed: Boolean!
}

extend type PullRequest {
  baseRefOid: GitObjectID!
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
"""
