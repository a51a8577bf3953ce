"""GraphQL mutations the emulator answers, each checked for permission as GitHub does."""

from __future__ import annotations

from typing import Any

from orchestrator.logs import get_logger
from orchestrator_sim.graphql_support import (
    CommentNode,
    Context,
    GraphQLRequestError,
    Payload,
    PullNode,
    Resolver,
    ThreadNode,
    repo_visible,
)
from orchestrator_sim.records import Repo, ReviewThread

log = get_logger(__name__)


def _thread_for_mutation(ctx: Context, node_id: str) -> tuple[Repo, ReviewThread]:
    found = ctx.state.find_thread_by_node_id(node_id)
    if found is None or not repo_visible(ctx.state, found[0], ctx.user):
        raise GraphQLRequestError(
            f"Could not resolve to a node with the global id of '{node_id}'", "NOT_FOUND"
        )
    return found


def _resolve_review_thread(_: Any, ctx: Context, args: dict[str, Any]) -> Payload:
    data = args["input"]
    repo, thread = _thread_for_mutation(ctx, data["threadId"])
    author = repo.issues[thread.pull_number].author
    allowed = ctx.state.has_permission(repo, ctx.user.login, "write") or (
        author.lower() == ctx.user.login.lower()
    )
    if not allowed:
        raise GraphQLRequestError(
            f"{ctx.user.login} does not have the correct permissions to execute "
            "`ResolveReviewThread`",
            "FORBIDDEN",
        )
    updated = ctx.state.resolve_thread(repo, thread.id, ctx.user.login)
    log.info("graphql_mutation", operation="resolveReviewThread", login=ctx.user.login)
    return Payload(data.get("clientMutationId"), ThreadNode(repo, updated))


def _reply_to_review_thread(_: Any, ctx: Context, args: dict[str, Any]) -> Payload:
    data = args["input"]
    repo, thread = _thread_for_mutation(ctx, data["pullRequestReviewThreadId"])
    comment = ctx.state.reply_to_thread(repo, thread.id, ctx.user.login, data["body"])
    log.info("graphql_mutation", operation="addPullRequestReviewThreadReply", login=ctx.user.login)
    return Payload(data.get("clientMutationId"), CommentNode(repo, comment))


def _mark_ready_for_review(_: Any, ctx: Context, args: dict[str, Any]) -> Payload:
    data = args["input"]
    node_id = data["pullRequestId"]
    found = ctx.state.find_pull_by_node_id(node_id)
    if found is None or not repo_visible(ctx.state, found[0], ctx.user):
        raise GraphQLRequestError(
            f"Could not resolve to a node with the global id of '{node_id}'", "NOT_FOUND"
        )
    repo, pr = found
    if not ctx.state.has_permission(repo, ctx.user.login, "write"):
        raise GraphQLRequestError(
            f"{ctx.user.login} does not have the correct permissions to execute "
            "`MarkPullRequestReadyForReview`",
            "FORBIDDEN",
        )
    updated = ctx.state.mark_ready_for_review(repo, pr.number, ctx.user.login)
    log.info("graphql_mutation", operation="markPullRequestReadyForReview", login=ctx.user.login)
    return Payload(data.get("clientMutationId"), PullNode(repo, updated))


def resolvers() -> dict[str, Resolver]:
    """The mutation root's fields and their payloads."""
    return {
        "Mutation.resolveReviewThread": _resolve_review_thread,
        "Mutation.addPullRequestReviewThreadReply": _reply_to_review_thread,
        "ResolveReviewThreadPayload.clientMutationId": lambda p, _c, _a: p.client_mutation_id,
        "ResolveReviewThreadPayload.thread": lambda p, _c, _a: p.value,
        "AddPullRequestReviewThreadReplyPayload.clientMutationId": lambda p, _c, _a: (
            p.client_mutation_id
        ),
        "AddPullRequestReviewThreadReplyPayload.comment": lambda p, _c, _a: p.value,
        "Mutation.markPullRequestReadyForReview": _mark_ready_for_review,
        "MarkPullRequestReadyForReviewPayload.clientMutationId": lambda p, _c, _a: (
            p.client_mutation_id
        ),
        "MarkPullRequestReadyForReviewPayload.pullRequest": lambda p, _c, _a: p.value,
    }
