"""GraphQL resolvers for issues, conversation comments, labels and ``node(id:)`` lookups."""

from __future__ import annotations

from typing import Any

from orchestrator_sim.graphql_support import (
    CommentNode,
    Context,
    GraphQLRequestError,
    IssueCommentNode,
    IssueNode,
    PullNode,
    Resolver,
    ReviewNode,
    ThreadNode,
    actor,
    connection_resolvers,
    paginate,
    repo_visible,
)
from orchestrator_sim.records import Issue, Repo, parse_node_id
from orchestrator_sim.state import SimState


def _repository_issue(repo: Repo, _: Context, args: dict[str, Any]) -> IssueNode:
    number = args["number"]
    issue = repo.issues.get(number)
    # A pull request's number is not an issue here, as on GitHub.
    if issue is None or issue.is_pull:
        raise GraphQLRequestError(
            f"Could not resolve to an Issue with the number of {number}.", "NOT_FOUND"
        )
    return IssueNode(repo, issue)


def issue_comments(ctx: Context, repo: Repo, issue: Issue, args: dict[str, Any]) -> Any:
    """The conversation comments of an issue or pull request, oldest first, as a page."""
    comments = sorted(ctx.state.issue_comments(repo, issue.number), key=lambda c: c.id)
    nodes = [IssueCommentNode(repo, c) for c in comments]
    return paginate(nodes, args, key=lambda n: n.comment.id)


def issue_labels(ctx: Context, repo: Repo, issue: Issue, args: dict[str, Any]) -> Any:
    """The labels on an issue or pull request, in the order they were added, as a page."""
    labels = ctx.state.issue_labels(repo, issue)
    return paginate(labels, args, key=lambda label: label.id)


def _lookup_node(ctx: Context, node_id: str) -> Any:
    """The object behind a node id made by the emulator, or None."""
    parsed = parse_node_id(node_id)
    if parsed is None:
        return None
    kind, ident = parsed
    state = ctx.state
    if kind in ("User", "Bot"):
        return next((u for u in state.users.values() if u.id == ident), None)
    for repo in state.repos.values():
        found = _in_repo(state, repo, kind, ident)
        if found is not None:
            return found if repo_visible(state, repo, ctx.user) else None
    return None


def _in_repo(state: SimState, repo: Repo, kind: str, ident: int) -> Any:
    if kind == "Repository":
        return repo if repo.id == ident else None
    if kind == "PullRequest":
        pr = state.index(repo).pulls_by_id.get(ident)
        return PullNode(repo, pr) if pr is not None else None
    if kind == "Issue":
        issue = state.index(repo).issues_by_id.get(ident)
        return IssueNode(repo, issue) if issue is not None and not issue.is_pull else None
    if kind == "IssueComment":
        comment = repo.comments.get(ident)
        return IssueCommentNode(repo, comment) if comment is not None else None
    if kind == "PullRequestReview":
        review = repo.reviews.get(ident)
        return ReviewNode(repo, review) if review is not None else None
    if kind == "PullRequestReviewThread":
        thread = repo.threads.get(ident)
        return ThreadNode(repo, thread) if thread is not None else None
    if kind == "PullRequestReviewComment":
        found = repo.review_comments.get(ident)
        return CommentNode(repo, found) if found is not None else None
    if kind == "Label":
        return next((label for label in repo.labels.values() if label.id == ident), None)
    return None


def _query_node(_: Any, ctx: Context, args: dict[str, Any]) -> Any:
    found = _lookup_node(ctx, args["id"])
    if found is None:
        raise GraphQLRequestError(
            f"Could not resolve to a node with the global id of '{args['id']}'", "NOT_FOUND"
        )
    return found


def _label_fields() -> dict[str, Resolver]:
    def field(name: str) -> Resolver:
        return lambda label, _c, _a: getattr(label, name)

    return {
        "Label.id": lambda label, _c, _a: label.node_id,
        "Label.name": field("name"),
        "Label.color": field("color"),
    }


def resolvers() -> dict[str, Resolver]:
    """Fields of Issue, IssueComment and Label, and the root's ``node``."""
    table: dict[str, Resolver] = {
        "Query.node": _query_node,
        "Repository.issue": _repository_issue,
        "Issue.id": lambda n, _c, _a: n.issue.node_id,
        "Issue.databaseId": lambda n, _c, _a: n.issue.id,
        "Issue.number": lambda n, _c, _a: n.issue.number,
        "Issue.title": lambda n, _c, _a: n.issue.title,
        "Issue.body": lambda n, _c, _a: n.issue.body or "",
        "Issue.author": lambda n, c, _a: actor(c.state, n.issue.author),
        "Issue.state": lambda n, _c, _a: n.issue.state.upper(),
        "Issue.closed": lambda n, _c, _a: n.issue.state == "closed",
        "Issue.closedAt": lambda n, _c, _a: n.issue.closed_at,
        "Issue.createdAt": lambda n, _c, _a: n.issue.created_at,
        "Issue.updatedAt": lambda n, _c, _a: n.issue.updated_at,
        "Issue.labels": lambda n, c, a: issue_labels(c, n.repo, n.issue, a),
        "Issue.comments": lambda n, c, a: issue_comments(c, n.repo, n.issue, a),
        "IssueComment.id": lambda n, _c, _a: n.comment.node_id,
        "IssueComment.databaseId": lambda n, _c, _a: n.comment.id,
        "IssueComment.author": lambda n, c, _a: actor(c.state, n.comment.author),
        "IssueComment.body": lambda n, _c, _a: n.comment.body,
        "IssueComment.createdAt": lambda n, _c, _a: n.comment.created_at,
        "IssueComment.updatedAt": lambda n, _c, _a: n.comment.updated_at,
        "IssueComment.lastEditedAt": lambda n, _c, _a: n.comment.last_edited_at,
        "IssueComment.editor": lambda n, c, _a: actor(c.state, n.comment.editor),
    }
    table.update(_label_fields())
    table.update(connection_resolvers("IssueCommentConnection"))
    table.update(connection_resolvers("LabelConnection"))
    return table
