"""The GraphQL documents the Linear tracker sends, in one place.

Each document is valid against Linear's published schema and answered by the
emulator (`orchestrator_sim.linear`); the contract tests check both and that
the emulator's answers have the shapes Linear's schema promises. Page sizes
are explicit because Linear charges a connection's children once per
requested node (50 when ``first`` is not given) and refuses a single query
above 10,000 complexity points.
"""

from __future__ import annotations

ISSUE_FIELDS = """
fragment TrackedIssue on Issue {
  id
  identifier
  number
  title
  description
  priority
  branchName
  url
  createdAt
  updatedAt
  state { id name type }
  team { id key }
  project { id slugId name }
  assignee { id }
  labels(first: 20) { nodes { id name } }
  inverseRelations(first: 20) {
    nodes { type issue { id identifier state { type } } }
  }
}
"""

VIEWER = """
query Viewer {
  viewer { id name displayName email }
}
"""

TEAM_STATES = """
query TeamStates($teamKey: String!) {
  workflowStates(filter: { team: { key: { eq: $teamKey } } }, first: 50) {
    nodes { id name type position }
  }
}
"""

ISSUE_LABELS = """
query IssueLabels($names: [String!]!) {
  issueLabels(filter: { name: { in: $names } }, first: 50) {
    nodes { id name team { id } }
  }
}
"""

# Candidate issues, oldest change last; ``$filter`` narrows by team, project,
# state, labels and ``updatedAt: { gt: ... }`` for incremental polls.
ISSUES_PAGE = (
    """
query IssuesPage($filter: IssueFilter, $first: Int = 25, $after: String) {
  issues(filter: $filter, first: $first, after: $after, orderBy: updatedAt) {
    nodes { ...TrackedIssue }
    pageInfo { hasNextPage endCursor }
  }
}
"""
    + ISSUE_FIELDS
)

# The cheap probe of an incremental poll: which issues changed, by id and updatedAt
# only (about a hundredth of an IssuesPage's complexity). Nothing new: the poll ends.
CHANGED_ISSUES = """
query ChangedIssues($filter: IssueFilter, $after: String) {
  issues(filter: $filter, first: 50, after: $after, orderBy: updatedAt) {
    nodes { id updatedAt }
    pageInfo { hasNextPage endCursor }
  }
}
"""

ISSUE = (
    """
query Issue($id: String!) {
  issue(id: $id) {
    ...TrackedIssue
    comments(first: 50) {
      nodes { id body user { id } createdAt updatedAt editedAt }
    }
    attachments(first: 20) {
      nodes { id url title subtitle }
    }
  }
}
"""
    + ISSUE_FIELDS
)

# The issue's comments page by page (the workpad may be older than the first page).
ISSUE_COMMENTS = """
query IssueComments($id: String!, $after: String) {
  issue(id: $id) {
    id
    comments(first: 50, after: $after) {
      nodes { id body user { id } }
      pageInfo { hasNextPage endCursor }
    }
  }
}
"""

# Who moved the issue into its state and who added its labels, newest first, read only
# for an issue whose approval matters (see orchestrator.tracker.linear_approval). The
# issue's state and labels come along, so one answer says what is present and who put it
# there; the actor's flags tell a trusted person from a guest, an app or a suspended user.
ISSUE_HISTORY = """
query IssueHistory($id: String!, $after: String) {
  issue(id: $id) {
    id
    updatedAt
    state { id name }
    labels(first: 20) { nodes { id name } }
    history(first: 25, after: $after) {
      nodes {
        id
        createdAt
        actor { id displayName email active guest app }
        toState { id name }
        addedLabels { id name }
      }
      pageInfo { hasNextPage endCursor }
    }
  }
}
"""

# The issue's comments with who wrote them, newest first: read only for an issue blocked
# on a question for a person, to notice a reply (orchestrator.tracker.linear_replies).
ISSUE_REPLIES = """
query IssueReplies($id: String!, $after: String) {
  issue(id: $id) {
    id
    updatedAt
    comments(first: 50, after: $after) {
      nodes {
        id
        body
        createdAt
        user { id displayName email active guest app }
      }
      pageInfo { hasNextPage endCursor }
    }
  }
}
"""

SET_STATE = """
mutation SetState($id: String!, $stateId: String!) {
  issueUpdate(id: $id, input: { stateId: $stateId }) {
    success
    issue { id updatedAt state { id name type } }
  }
}
"""

CHANGE_LABELS = """
mutation ChangeLabels($id: String!, $added: [String!], $removed: [String!]) {
  issueUpdate(id: $id, input: { addedLabelIds: $added, removedLabelIds: $removed }) {
    success
    issue { id updatedAt labels(first: 20) { nodes { id name } } }
  }
}
"""

CREATE_COMMENT = """
mutation CreateComment($issueId: String!, $body: String!) {
  commentCreate(input: { issueId: $issueId, body: $body }) {
    success
    comment { id body createdAt updatedAt }
  }
}
"""

UPDATE_COMMENT = """
mutation UpdateComment($id: String!, $body: String!) {
  commentUpdate(id: $id, input: { body: $body }) {
    success
    comment { id body updatedAt editedAt }
  }
}
"""

# attachmentCreate is idempotent per issue and URL: linking the same pull
# request again updates the attachment instead of adding one.
LINK_PULL_REQUEST = """
mutation LinkPullRequest(
  $issueId: String!, $url: String!, $title: String!, $subtitle: String, $metadata: JSONObject
) {
  attachmentCreate(
    input: { issueId: $issueId, url: $url, title: $title, subtitle: $subtitle, metadata: $metadata }
  ) {
    success
    attachment { id url title subtitle metadata }
  }
}
"""

DOCUMENTS: dict[str, str] = {
    "Viewer": VIEWER,
    "TeamStates": TEAM_STATES,
    "IssueLabels": ISSUE_LABELS,
    "IssuesPage": ISSUES_PAGE,
    "ChangedIssues": CHANGED_ISSUES,
    "Issue": ISSUE,
    "IssueComments": ISSUE_COMMENTS,
    "IssueHistory": ISSUE_HISTORY,
    "IssueReplies": ISSUE_REPLIES,
    "SetState": SET_STATE,
    "ChangeLabels": CHANGE_LABELS,
    "CreateComment": CREATE_COMMENT,
    "UpdateComment": UPDATE_COMMENT,
    "LinkPullRequest": LINK_PULL_REQUEST,
}
