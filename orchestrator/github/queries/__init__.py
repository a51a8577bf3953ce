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

Each definition (an operation or a fragment) is a ``.graphql`` file of this
package, named after it. A document is that file followed by every fragment it
spreads, depth first in the order they are first spread; each file is read at
the first use of a document that needs it. The comment lines that open a file
explain it and are not sent.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

MAX_FINGERPRINT_BATCH = 100
MAX_STATE_BATCH = 10

# Page sizes written in the documents; a connection that reports hasNextPage was cut.
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

# The fragments each pull request alias of a batch query spreads.
FINGERPRINT_FRAGMENT_NAME = "PullRequestFingerprint"
STATE_FRAGMENT_NAME = "PullRequestState"

# The documents by the names they have in this module: a definition with the
# fragments it spreads ...
_DOCUMENTS: Mapping[str, str] = {
    "FINGERPRINT_FRAGMENT": FINGERPRINT_FRAGMENT_NAME,
    "STATE_FRAGMENT": STATE_FRAGMENT_NAME,
    "HEAD_CHECKS_PAGE": HEAD_CHECKS_OPERATION,
    "REVIEWS_PAGE": REVIEWS_PAGE_OPERATION,
    "THREADS_PAGE": THREADS_PAGE_OPERATION,
    "THREAD_COMMENTS_PAGE": THREAD_COMMENTS_OPERATION,
    "RESOLVE_REVIEW_THREAD": RESOLVE_THREAD_OPERATION,
    "REPLY_TO_REVIEW_THREAD": REPLY_TO_THREAD_OPERATION,
    "MARK_READY_FOR_REVIEW": MARK_READY_OPERATION,
    "COMMENT_EDITOR": COMMENT_EDITOR_OPERATION,
}
# ... and the fields read of each list item, one fragment alone, shared by the
# batch queries and the follow-up pages.
_FRAGMENTS: Mapping[str, str] = {
    "CONTEXT_FIELDS": "CheckContextFields",
    "REVIEW_FIELDS": "ReviewFields",
    "COMMENT_FIELDS": "ThreadCommentFields",
    "THREAD_FIELDS": "ThreadFields",
    "ROLLUP_FIELDS": "RollupFields",
}

# A named fragment spread (``...ThreadFields``); ``... on Type`` is an inline fragment.
_SPREAD = re.compile(r"\.\.\.\s*(?!on\b)([_A-Za-z][_0-9A-Za-z]*)")


@cache
def definition(name: str) -> str:
    """The operation or fragment ``name`` as its file holds it, without its opening comment."""
    text = resources.files(__name__).joinpath(f"{name}.graphql").read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    while lines and lines[0].startswith("#"):
        lines.pop(0)
    return "".join(lines)


@cache
def document(name: str) -> str:
    """The document that runs ``name``: its definition, then every fragment it spreads."""
    order: list[str] = []

    def visit(part: str) -> None:
        if part in order:
            return
        order.append(part)
        for spread in _SPREAD.findall(definition(part)):
            visit(spread)

    visit(name)
    return "".join("\n" + definition(part) for part in order)


def __getattr__(name: str) -> str:
    """The documents by the names they have in this module, each read at first use."""
    if name in _DOCUMENTS:
        return document(_DOCUMENTS[name])
    if name in _FRAGMENTS:
        return "\n" + definition(_FRAGMENTS[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
        FINGERPRINT_OPERATION, FINGERPRINT_FRAGMENT_NAME, count, MAX_FINGERPRINT_BATCH
    )


@cache
def state_query(count: int) -> str:
    """Full state document for ``count`` pull requests (1 to 10) of one repository."""
    return _batch_query(STATE_OPERATION, STATE_FRAGMENT_NAME, count, MAX_STATE_BATCH)


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
    return GraphQLRequest(
        RESOLVE_THREAD_OPERATION, document(RESOLVE_THREAD_OPERATION), {"threadId": thread_id}
    )


def reply_to_thread_request(thread_id: str, body: str) -> GraphQLRequest:
    """Reply to one review thread (by its GraphQL node id) with ``body``."""
    if not thread_id:
        raise ValueError("thread_id must be a non-empty review thread node id")
    if not body.strip():
        raise ValueError("a review thread reply needs a non-empty body")
    return GraphQLRequest(
        REPLY_TO_THREAD_OPERATION,
        document(REPLY_TO_THREAD_OPERATION),
        {"threadId": thread_id, "body": body},
    )


def head_checks_request(
    owner: str, name: str, oid: str, after: str | None = None
) -> GraphQLRequest:
    """One page of the check contexts of the commit ``oid`` (100 a page)."""
    return GraphQLRequest(
        HEAD_CHECKS_OPERATION,
        document(HEAD_CHECKS_OPERATION),
        {"owner": owner, "name": name, "oid": oid, "after": after},
    )


def reviews_page_request(owner: str, name: str, number: int, before: str) -> GraphQLRequest:
    """The reviews of a pull request before the cursor ``before`` (50 a page)."""
    return GraphQLRequest(
        REVIEWS_PAGE_OPERATION,
        document(REVIEWS_PAGE_OPERATION),
        {"owner": owner, "name": name, "number": number, "before": before},
    )


def threads_page_request(owner: str, name: str, number: int, after: str) -> GraphQLRequest:
    """The review threads of a pull request after the cursor ``after`` (50 a page)."""
    return GraphQLRequest(
        THREADS_PAGE_OPERATION,
        document(THREADS_PAGE_OPERATION),
        {"owner": owner, "name": name, "number": number, "after": after},
    )


def thread_comments_request(thread_id: str, after: str | None) -> GraphQLRequest:
    """The comments of one review thread after the cursor ``after`` (100 a page)."""
    return GraphQLRequest(
        THREAD_COMMENTS_OPERATION,
        document(THREAD_COMMENTS_OPERATION),
        {"thread": thread_id, "after": after},
    )


def mark_ready_request(pull_request_id: str) -> GraphQLRequest:
    """Take a draft pull request (by its node id) out of draft."""
    if not pull_request_id:
        raise ValueError("pull_request_id must be a non-empty pull request node id")
    return GraphQLRequest(
        MARK_READY_OPERATION,
        document(MARK_READY_OPERATION),
        {"pullRequestId": pull_request_id},
    )


def comment_editor_request(node_id: str) -> GraphQLRequest:
    """Who last edited one issue comment, and when (by its node id)."""
    if not node_id:
        raise ValueError("node_id must be a non-empty issue comment node id")
    return GraphQLRequest(
        COMMENT_EDITOR_OPERATION, document(COMMENT_EDITOR_OPERATION), {"id": node_id}
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
        "resolve_review_thread": document(RESOLVE_THREAD_OPERATION),
        "reply_to_review_thread": document(REPLY_TO_THREAD_OPERATION),
        "mark_ready_for_review": document(MARK_READY_OPERATION),
        "head_checks_page": document(HEAD_CHECKS_OPERATION),
        "reviews_page": document(REVIEWS_PAGE_OPERATION),
        "threads_page": document(THREADS_PAGE_OPERATION),
        "thread_comments_page": document(THREAD_COMMENTS_OPERATION),
        "comment_editor": document(COMMENT_EDITOR_OPERATION),
    }


def _batch_query(operation: str, fragment_name: str, count: int, limit: int) -> str:
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
        f"  repository(owner: $owner, name: $name) {{\n{aliases}\n  }}\n}}\n"
        + document(fragment_name)
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
