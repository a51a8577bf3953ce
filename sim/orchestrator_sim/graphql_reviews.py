"""GraphQL resolvers for pull-request reviews, review threads and review comments."""

from __future__ import annotations

from orchestrator_sim.graphql_support import (
    CommentNode,
    CommitNode,
    Context,
    PullNode,
    Resolver,
    ReviewNode,
    ThreadNode,
    actor,
    connection_resolvers,
    paginate,
)
from orchestrator_sim.records import ReviewThread


def _sorted_reviews(node: PullNode, ctx: Context) -> list[ReviewNode]:
    reviews = ctx.state.pull_reviews(node.repo, node.pr.number)
    return [ReviewNode(node.repo, r) for r in sorted(reviews, key=lambda r: r.id)]


def _sorted_threads(node: PullNode, ctx: Context) -> list[ThreadNode]:
    threads = ctx.state.pull_threads(node.repo, node.pr.number)
    return [ThreadNode(node.repo, t) for t in sorted(threads, key=lambda t: t.id)]


def _thread_comments(node: ThreadNode) -> list[CommentNode]:
    comments = (node.repo.review_comments.get(i) for i in node.thread.comment_ids)
    return [CommentNode(node.repo, c) for c in comments if c is not None]


def _comment_reply_to(node: CommentNode) -> CommentNode | None:
    target = node.comment.in_reply_to_id
    found = node.repo.review_comments.get(target) if target is not None else None
    return CommentNode(node.repo, found) if found is not None else None


def _comment_review(node: CommentNode) -> ReviewNode | None:
    review_id = node.comment.review_id
    found = node.repo.reviews.get(review_id) if review_id is not None else None
    return ReviewNode(node.repo, found) if found is not None else None


def _original_line(thread: ReviewThread) -> int | None:
    return thread.original_line if thread.original_line is not None else thread.line


def _comment_line(node: CommentNode) -> int | None:
    thread = node.repo.threads.get(node.comment.thread_id)
    return None if thread is not None and thread.outdated else node.comment.line


def _comment_original_line(node: CommentNode) -> int | None:
    thread = node.repo.threads.get(node.comment.thread_id)
    return _original_line(thread) if thread is not None else node.comment.line


def resolvers() -> dict[str, Resolver]:
    """Fields of reviews, threads and review comments, and the PullRequest fields listing them."""
    table: dict[str, Resolver] = {
        "PullRequest.reviews": lambda n, c, a: paginate(
            _sorted_reviews(n, c), a, key=lambda r: r.review.id
        ),
        "PullRequest.reviewThreads": lambda n, c, a: paginate(
            _sorted_threads(n, c), a, key=lambda t: t.thread.id
        ),
        "PullRequestReview.id": lambda n, _c, _a: n.review.node_id,
        "PullRequestReview.databaseId": lambda n, _c, _a: n.review.id,
        "PullRequestReview.author": lambda n, c, _a: actor(c.state, n.review.author),
        "PullRequestReview.state": lambda n, _c, _a: n.review.state,
        "PullRequestReview.body": lambda n, _c, _a: n.review.body,
        "PullRequestReview.commit": lambda n, _c, _a: CommitNode(n.repo, n.review.commit_id),
        "PullRequestReview.createdAt": lambda n, _c, _a: n.review.submitted_at,
        "PullRequestReview.submittedAt": lambda n, _c, _a: n.review.submitted_at,
        "PullRequestReviewThread.id": lambda n, _c, _a: n.thread.node_id,
        "PullRequestReviewThread.isResolved": lambda n, _c, _a: n.thread.resolved,
        "PullRequestReviewThread.isOutdated": lambda n, _c, _a: n.thread.outdated,
        "PullRequestReviewThread.isCollapsed": lambda n, _c, _a: n.thread.resolved,
        "PullRequestReviewThread.path": lambda n, _c, _a: n.thread.path,
        "PullRequestReviewThread.line": lambda n, _c, _a: (
            None if n.thread.outdated else n.thread.line
        ),
        "PullRequestReviewThread.originalLine": lambda n, _c, _a: _original_line(n.thread),
        "PullRequestReviewThread.diffSide": lambda n, _c, _a: n.thread.side,
        "PullRequestReviewThread.resolvedBy": lambda n, c, _a: actor(c.state, n.thread.resolved_by),
        "PullRequestReviewThread.comments": lambda n, _c, a: paginate(
            _thread_comments(n), a, key=lambda c: c.comment.id
        ),
        "PullRequestReviewComment.id": lambda n, _c, _a: n.comment.node_id,
        "PullRequestReviewComment.databaseId": lambda n, _c, _a: n.comment.id,
        "PullRequestReviewComment.author": lambda n, c, _a: actor(c.state, n.comment.author),
        "PullRequestReviewComment.body": lambda n, _c, _a: n.comment.body,
        "PullRequestReviewComment.createdAt": lambda n, _c, _a: n.comment.created_at,
        "PullRequestReviewComment.updatedAt": lambda n, _c, _a: n.comment.updated_at,
        "PullRequestReviewComment.diffHunk": lambda n, _c, _a: n.comment.diff_hunk,
        "PullRequestReviewComment.path": lambda n, _c, _a: n.comment.path,
        "PullRequestReviewComment.line": lambda n, _c, _a: _comment_line(n),
        "PullRequestReviewComment.originalLine": lambda n, _c, _a: _comment_original_line(n),
        "PullRequestReviewComment.replyTo": lambda n, _c, _a: _comment_reply_to(n),
        "PullRequestReviewComment.commit": lambda n, _c, _a: CommitNode(
            n.repo, n.comment.commit_id
        ),
        "PullRequestReviewComment.originalCommit": lambda n, _c, _a: CommitNode(
            n.repo, n.comment.original_commit_id
        ),
        "PullRequestReviewComment.pullRequestReview": lambda n, _c, _a: _comment_review(n),
    }
    for connection in (
        "PullRequestReviewConnection",
        "PullRequestReviewThreadConnection",
        "PullRequestReviewCommentConnection",
    ):
        table.update(connection_resolvers(connection))
    return table
