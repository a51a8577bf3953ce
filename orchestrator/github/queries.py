"""The GraphQL documents the product sends to GitHub, in one place.

The gateway builds its requests from here, the emulator executes the very same
text, and the contract tests validate it against GitHub's published schema, so
what is tested is what production sends. Pull requests are addressed by number
through aliases (``pr0``, ``pr1``, ...) on one repository, with one variable per
number, so a batch's text depends only on its size.

Costs under GitHub's formula (see docs/github-contract.md):

- fingerprint of N pull requests: 2 connections per PR (the head commit's check
  contexts, reached through objects, and the review threads) = 2N requests, so
  100 PRs cost 2 points and up to 74 cost 1;
- full state of N pull requests: per PR 1 (reviews) + 1 (threads) + 50
  (comments in each of 50 threads) + 1 (the head commit's check contexts)
  = 53 requests, so the full batch of 10 costs 5 points and one PR costs 1;
- a follow-up page (a cut list read to its end) and each mutation cost 1 point.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

MAX_FINGERPRINT_BATCH = 100
MAX_STATE_BATCH = 10

# Page sizes of the full state query; a connection that reports hasNextPage was cut.
STATE_REVIEWS_PAGE = 50
STATE_THREADS_PAGE = 50
STATE_COMMENTS_PAGE = 20
STATE_CONTEXTS_PAGE = 100
FINGERPRINT_THREADS_PAGE = 100
THREAD_COMMENTS_PAGE_SIZE = 100

FINGERPRINT_OPERATION = "PullRequestFingerprints"
STATE_OPERATION = "PullRequestStates"
RESOLVE_THREAD_OPERATION = "ResolveReviewThread"
MARK_READY_OPERATION = "MarkPullRequestReady"
COMMENT_EDITOR_OPERATION = "CommentEditor"
REPLY_TO_THREAD_OPERATION = "ReplyToReviewThread"

HEAD_CHECKS_OPERATION = "HeadCommitChecks"
REVIEWS_PAGE_OPERATION = "PullRequestReviewsPage"
THREADS_PAGE_OPERATION = "PullRequestThreadsPage"
THREAD_COMMENTS_OPERATION = "ReviewThreadCommentsPage"

# The fields read of each list item, shared by the batch query and the follow-up pages.
CONTEXT_FIELDS = """
fragment CheckContextFields on StatusCheckRollupContext {
  __typename
  ... on CheckRun {
    databaseId
    name
    status
    conclusion
    detailsUrl
  }
  ... on StatusContext {
    context
    state
    description
    targetUrl
  }
}
"""

REVIEW_FIELDS = """
fragment ReviewFields on PullRequestReview {
  id
  databaseId
  author {
    __typename
    login
  }
  state
  body
  commit {
    oid
  }
  submittedAt
}
"""

COMMENT_FIELDS = """
fragment ThreadCommentFields on PullRequestReviewComment {
  id
  databaseId
  author {
    __typename
    login
  }
  body
  createdAt
  diffHunk
}
"""

THREAD_FIELDS = f"""
fragment ThreadFields on PullRequestReviewThread {{
  id
  isResolved
  isOutdated
  path
  line
  comments(first: {STATE_COMMENTS_PAGE}) {{
    totalCount
    pageInfo {{
      hasNextPage
      endCursor
    }}
    nodes {{
      ...ThreadCommentFields
    }}
  }}
}}
"""

# The checks are read from the commit the head branch points at (an object, not a
# connection, so it costs nothing extra) and only trusted when that commit is the
# pull request's headRefOid; ``commits(last: 1)`` is ordered by commit date on GitHub
# and is not always the head.
#
# GitHub has no "unresolved" filter on reviewThreads: the fingerprint fetches one
# page of bare isResolved flags, which is one request per PR whatever the page size.
# The head commit's contexts (check runs and statuses, each with its state) make the
# fingerprint change whenever a check is created, rerun or completed, since check
# runs do not move the pull request's updatedAt.
FINGERPRINT_FRAGMENT = f"""
fragment PullRequestFingerprint on PullRequest {{
  number
  headRefOid
  state
  isDraft
  updatedAt
  mergeable
  mergeStateStatus
  reviewDecision
  headRef {{
    target {{
      __typename
      ... on Commit {{
        oid
        statusCheckRollup {{
          state
          contexts(first: {STATE_CONTEXTS_PAGE}) {{
            totalCount
            pageInfo {{
              hasNextPage
            }}
            nodes {{
              __typename
              ... on CheckRun {{
                databaseId
                status
                conclusion
              }}
              ... on StatusContext {{
                context
                state
              }}
            }}
          }}
        }}
      }}
    }}
  }}
  reviewThreads(first: {FINGERPRINT_THREADS_PAGE}) {{
    totalCount
    nodes {{
      isResolved
    }}
  }}
}}
"""

ROLLUP_FIELDS = f"""
fragment RollupFields on StatusCheckRollup {{
  state
  contexts(first: {STATE_CONTEXTS_PAGE}) {{
    totalCount
    pageInfo {{
      hasNextPage
      endCursor
    }}
    nodes {{
      ...CheckContextFields
    }}
  }}
}}
"""

STATE_FRAGMENT = (
    f"""
fragment PullRequestState on PullRequest {{
  id
  number
  headRefOid
  state
  isDraft
  updatedAt
  mergeable
  mergeStateStatus
  reviewDecision
  reviews(last: {STATE_REVIEWS_PAGE}) {{
    totalCount
    pageInfo {{
      hasPreviousPage
      startCursor
    }}
    nodes {{
      ...ReviewFields
    }}
  }}
  reviewThreads(first: {STATE_THREADS_PAGE}) {{
    totalCount
    pageInfo {{
      hasNextPage
      endCursor
    }}
    nodes {{
      ...ThreadFields
    }}
  }}
  headRef {{
    target {{
      __typename
      ... on Commit {{
        oid
        statusCheckRollup {{
          ...RollupFields
        }}
      }}
    }}
  }}
}}
"""
    + REVIEW_FIELDS
    + THREAD_FIELDS
    + COMMENT_FIELDS
    + ROLLUP_FIELDS
    + CONTEXT_FIELDS
)

_RATE = "  rateLimit {\n    cost\n    remaining\n    resetAt\n  }\n"

HEAD_CHECKS_PAGE = (
    f"""
query {HEAD_CHECKS_OPERATION}(
  $owner: String!, $name: String!, $oid: GitObjectID!, $after: String
) {{
{_RATE}  repository(owner: $owner, name: $name) {{
    object(oid: $oid) {{
      __typename
      ... on Commit {{
        oid
        statusCheckRollup {{
          state
          contexts(first: {STATE_CONTEXTS_PAGE}, after: $after) {{
            totalCount
            pageInfo {{
              hasNextPage
              endCursor
            }}
            nodes {{
              ...CheckContextFields
            }}
          }}
        }}
      }}
    }}
  }}
}}
"""
    + CONTEXT_FIELDS
)


def _pull_request_page(operation: str, connection: str, fragment: str, backwards: bool) -> str:
    """A follow-up page of one of a pull request's connections (``name:size``), by cursor."""
    cursor, size_arg, info = (
        ("before", "last", "hasPreviousPage\n          startCursor")
        if backwards
        else ("after", "first", "hasNextPage\n          endCursor")
    )
    name, size = connection.split(":")
    return f"""
query {operation}($owner: String!, $name: String!, $number: Int!, ${cursor}: String) {{
{_RATE}  repository(owner: $owner, name: $name) {{
    pullRequest(number: $number) {{
      {name}({size_arg}: {size}, {cursor}: ${cursor}) {{
        totalCount
        pageInfo {{
          {info}
        }}
        nodes {{
          ...{fragment}
        }}
      }}
    }}
  }}
}}
"""


REVIEWS_PAGE = (
    _pull_request_page(
        REVIEWS_PAGE_OPERATION, f"reviews:{STATE_REVIEWS_PAGE}", "ReviewFields", backwards=True
    )
    + REVIEW_FIELDS
)

THREADS_PAGE = (
    _pull_request_page(
        THREADS_PAGE_OPERATION, f"reviewThreads:{STATE_THREADS_PAGE}", "ThreadFields", False
    )
    + THREAD_FIELDS
    + COMMENT_FIELDS
)

THREAD_COMMENTS_PAGE = (
    f"""
query {THREAD_COMMENTS_OPERATION}($thread: ID!, $after: String) {{
{_RATE}  node(id: $thread) {{
    __typename
    ... on PullRequestReviewThread {{
      id
      comments(first: {THREAD_COMMENTS_PAGE_SIZE}, after: $after) {{
        totalCount
        pageInfo {{
          hasNextPage
          endCursor
        }}
        nodes {{
          ...ThreadCommentFields
        }}
      }}
    }}
  }}
}}
"""
    + COMMENT_FIELDS
)

RESOLVE_REVIEW_THREAD = f"""
mutation {RESOLVE_THREAD_OPERATION}($threadId: ID!) {{
  resolveReviewThread(input: {{threadId: $threadId}}) {{
    thread {{
      id
      isResolved
    }}
  }}
}}
"""

REPLY_TO_REVIEW_THREAD = f"""
mutation {REPLY_TO_THREAD_OPERATION}($threadId: ID!, $body: String!) {{
  addPullRequestReviewThreadReply(input: {{pullRequestReviewThreadId: $threadId, body: $body}}) {{
    comment {{
      id
      databaseId
      author {{
        __typename
        login
      }}
      body
      createdAt
    }}
  }}
}}
"""


MARK_READY_FOR_REVIEW = f"""
mutation {MARK_READY_OPERATION}($pullRequestId: ID!) {{
  markPullRequestReadyForReview(input: {{pullRequestId: $pullRequestId}}) {{
    pullRequest {{
      id
      isDraft
    }}
  }}
}}
"""


COMMENT_EDITOR = f"""
query {COMMENT_EDITOR_OPERATION}($id: ID!) {{
  rateLimit {{
    cost
    remaining
    resetAt
  }}
  node(id: $id) {{
    __typename
    ... on IssueComment {{
      id
      author {{
        __typename
        login
      }}
      lastEditedAt
      editor {{
        __typename
        login
      }}
    }}
  }}
}}
"""


@dataclass(frozen=True)
class GraphQLRequest:
    """One GraphQL call: the document, the operation to run and its variables."""

    operation_name: str
    query: str
    variables: Mapping[str, Any] = field(default_factory=dict)

    def payload(self) -> dict[str, Any]:
        """The JSON body GitHub's ``POST /graphql`` expects."""
        return {
            "query": self.query,
            "variables": dict(self.variables),
            "operationName": self.operation_name,
        }


def pull_request_alias(index: int) -> str:
    """Response key of the ``index``-th pull request of a batch (``pr0``, ``pr1``, ...)."""
    return f"pr{index}"


@cache
def fingerprint_query(count: int) -> str:
    """Fingerprint document for ``count`` pull requests (1 to 100) of one repository."""
    return _batch_query(
        FINGERPRINT_OPERATION,
        "PullRequestFingerprint",
        FINGERPRINT_FRAGMENT,
        count,
        MAX_FINGERPRINT_BATCH,
    )


@cache
def state_query(count: int) -> str:
    """Full state document for ``count`` pull requests (1 to 10) of one repository."""
    return _batch_query(STATE_OPERATION, "PullRequestState", STATE_FRAGMENT, count, MAX_STATE_BATCH)


def fingerprint_request(owner: str, name: str, numbers: Sequence[int]) -> GraphQLRequest:
    """Fingerprint of up to 100 pull requests; ``pr{i}`` in the answer is ``numbers[i]``."""
    _check_batch(owner, name, numbers, MAX_FINGERPRINT_BATCH)
    return GraphQLRequest(
        FINGERPRINT_OPERATION,
        fingerprint_query(len(numbers)),
        _batch_variables(owner, name, numbers),
    )


def state_request(owner: str, name: str, numbers: Sequence[int]) -> GraphQLRequest:
    """Full state of up to 10 pull requests; ``pr{i}`` in the answer is ``numbers[i]``."""
    _check_batch(owner, name, numbers, MAX_STATE_BATCH)
    return GraphQLRequest(
        STATE_OPERATION, state_query(len(numbers)), _batch_variables(owner, name, numbers)
    )


def resolve_thread_request(thread_id: str) -> GraphQLRequest:
    """Mark one review thread resolved (by its GraphQL node id)."""
    if not thread_id:
        raise ValueError("thread_id must be a non-empty review thread node id")
    return GraphQLRequest(RESOLVE_THREAD_OPERATION, RESOLVE_REVIEW_THREAD, {"threadId": thread_id})


def reply_to_thread_request(thread_id: str, body: str) -> GraphQLRequest:
    """Reply to one review thread (by its GraphQL node id) with ``body``."""
    if not thread_id:
        raise ValueError("thread_id must be a non-empty review thread node id")
    if not body.strip():
        raise ValueError("a review thread reply needs a non-empty body")
    return GraphQLRequest(
        REPLY_TO_THREAD_OPERATION, REPLY_TO_REVIEW_THREAD, {"threadId": thread_id, "body": body}
    )


def head_checks_request(
    owner: str, name: str, oid: str, after: str | None = None
) -> GraphQLRequest:
    """One page of the check contexts of the commit ``oid`` (100 a page)."""
    return GraphQLRequest(
        HEAD_CHECKS_OPERATION,
        HEAD_CHECKS_PAGE,
        {"owner": owner, "name": name, "oid": oid, "after": after},
    )


def reviews_page_request(owner: str, name: str, number: int, before: str) -> GraphQLRequest:
    """The reviews of a pull request before the cursor ``before`` (50 a page)."""
    return GraphQLRequest(
        REVIEWS_PAGE_OPERATION,
        REVIEWS_PAGE,
        {"owner": owner, "name": name, "number": number, "before": before},
    )


def threads_page_request(owner: str, name: str, number: int, after: str) -> GraphQLRequest:
    """The review threads of a pull request after the cursor ``after`` (50 a page)."""
    return GraphQLRequest(
        THREADS_PAGE_OPERATION,
        THREADS_PAGE,
        {"owner": owner, "name": name, "number": number, "after": after},
    )


def thread_comments_request(thread_id: str, after: str | None) -> GraphQLRequest:
    """The comments of one review thread after the cursor ``after`` (100 a page)."""
    return GraphQLRequest(
        THREAD_COMMENTS_OPERATION, THREAD_COMMENTS_PAGE, {"thread": thread_id, "after": after}
    )


def mark_ready_request(pull_request_id: str) -> GraphQLRequest:
    """Take a draft pull request (by its node id) out of draft."""
    if not pull_request_id:
        raise ValueError("pull_request_id must be a non-empty pull request node id")
    return GraphQLRequest(
        MARK_READY_OPERATION, MARK_READY_FOR_REVIEW, {"pullRequestId": pull_request_id}
    )


def comment_editor_request(node_id: str) -> GraphQLRequest:
    """Who last edited one issue comment, and when (by its node id)."""
    if not node_id:
        raise ValueError("node_id must be a non-empty issue comment node id")
    return GraphQLRequest(COMMENT_EDITOR_OPERATION, COMMENT_EDITOR, {"id": node_id})


def product_documents() -> dict[str, str]:
    """Every distinct document shape the product sends, by a descriptive name.

    Batch documents differ only in how many aliases they carry, so the smallest
    and the largest batch stand for all sizes in between.
    """
    return {
        "fingerprint_1": fingerprint_query(1),
        f"fingerprint_{MAX_FINGERPRINT_BATCH}": fingerprint_query(MAX_FINGERPRINT_BATCH),
        "state_1": state_query(1),
        f"state_{MAX_STATE_BATCH}": state_query(MAX_STATE_BATCH),
        "resolve_review_thread": RESOLVE_REVIEW_THREAD,
        "reply_to_review_thread": REPLY_TO_REVIEW_THREAD,
        "mark_ready_for_review": MARK_READY_FOR_REVIEW,
        "head_checks_page": HEAD_CHECKS_PAGE,
        "reviews_page": REVIEWS_PAGE,
        "threads_page": THREADS_PAGE,
        "thread_comments_page": THREAD_COMMENTS_PAGE,
        "comment_editor": COMMENT_EDITOR,
    }


def _batch_query(operation: str, fragment_name: str, fragment: str, count: int, limit: int) -> str:
    if not 1 <= count <= limit:
        raise ValueError(f"{operation} takes 1 to {limit} pull requests, not {count}")
    variables = ", ".join(f"$n{i}: Int!" for i in range(count))
    aliases = "\n".join(
        f"    {pull_request_alias(i)}: pullRequest(number: $n{i}) {{ ...{fragment_name} }}"
        for i in range(count)
    )
    return (
        f"query {operation}($owner: String!, $name: String!, {variables}) {{\n"
        "  rateLimit {\n    cost\n    remaining\n    resetAt\n  }\n"
        f"  repository(owner: $owner, name: $name) {{\n{aliases}\n  }}\n}}\n{fragment}"
    )


def _batch_variables(owner: str, name: str, numbers: Sequence[int]) -> dict[str, Any]:
    variables: dict[str, Any] = {"owner": owner, "name": name}
    variables.update({f"n{i}": number for i, number in enumerate(numbers)})
    return variables


def _check_batch(owner: str, name: str, numbers: Sequence[int], limit: int) -> None:
    if not owner or not name:
        raise ValueError(f"repository owner and name are required, got {owner!r}/{name!r}")
    if not 1 <= len(numbers) <= limit:
        raise ValueError(f"a batch holds 1 to {limit} pull requests, got {len(numbers)}")
    for number in numbers:
        if isinstance(number, bool) or not isinstance(number, int) or number < 1:
            raise ValueError(f"pull request numbers are positive integers, got {number!r}")
    if len(set(numbers)) != len(numbers):
        raise ValueError(f"pull request numbers repeat in the batch: {list(numbers)}")
