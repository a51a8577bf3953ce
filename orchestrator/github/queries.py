"""The GraphQL documents the product sends to GitHub, in one place.

The gateway builds its requests from here, the emulator executes the very same
text, and the contract tests validate it against GitHub's published schema, so
what is tested is what production sends. Pull requests are addressed by number
through aliases (``pr0``, ``pr1``, ...) on one repository, with one variable per
number, so a batch's text depends only on its size.

Costs under GitHub's formula (see docs/github-contract.md):

- fingerprint of N pull requests: 2 connections per PR (the last commit and the
  review threads) = 2N requests, so 100 PRs cost 2 points and up to 74 cost 1;
- full state of N pull requests: per PR 1 (reviews) + 1 (threads) + 50
  (comments in each of 50 threads) + 1 (last commit) + 1 (its check contexts)
  = 54 requests, so the full batch of 10 costs 5 points and one PR costs 1;
- each mutation costs 1 point.
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

FINGERPRINT_OPERATION = "PullRequestFingerprints"
STATE_OPERATION = "PullRequestStates"
RESOLVE_THREAD_OPERATION = "ResolveReviewThread"
REPLY_TO_THREAD_OPERATION = "ReplyToReviewThread"

# GitHub has no "unresolved" filter on reviewThreads: the fingerprint fetches one
# page of bare isResolved flags, which is one request per PR whatever the page size.
FINGERPRINT_FRAGMENT = f"""
fragment PullRequestFingerprint on PullRequest {{
  number
  headRefOid
  state
  updatedAt
  mergeable
  reviewDecision
  commits(last: 1) {{
    nodes {{
      commit {{
        oid
        statusCheckRollup {{
          state
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

STATE_FRAGMENT = f"""
fragment PullRequestState on PullRequest {{
  number
  headRefOid
  state
  updatedAt
  mergeable
  reviewDecision
  reviews(last: {STATE_REVIEWS_PAGE}) {{
    totalCount
    pageInfo {{
      hasPreviousPage
      startCursor
    }}
    nodes {{
      id
      databaseId
      author {{
        __typename
        login
      }}
      state
      body
      commit {{
        oid
      }}
      submittedAt
    }}
  }}
  reviewThreads(first: {STATE_THREADS_PAGE}) {{
    totalCount
    pageInfo {{
      hasNextPage
      endCursor
    }}
    nodes {{
      id
      isResolved
      isOutdated
      path
      line
      comments(first: {STATE_COMMENTS_PAGE}) {{
        totalCount
        nodes {{
          id
          databaseId
          author {{
            __typename
            login
          }}
          body
          createdAt
          diffHunk
        }}
      }}
    }}
  }}
  commits(last: 1) {{
    nodes {{
      commit {{
        oid
        statusCheckRollup {{
          state
          contexts(first: {STATE_CONTEXTS_PAGE}) {{
            totalCount
            pageInfo {{
              hasNextPage
              endCursor
            }}
            nodes {{
              __typename
              ... on CheckRun {{
                databaseId
                name
                status
                conclusion
                detailsUrl
              }}
              ... on StatusContext {{
                context
                state
                description
                targetUrl
              }}
            }}
          }}
        }}
      }}
    }}
  }}
}}
"""

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
