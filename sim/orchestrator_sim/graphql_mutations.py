"""GraphQL mutations the emulator answers, each checked for permission as GitHub does."""

from __future__ import annotations

from typing import Any

from orchestrator.logs import get_logger
from orchestrator_sim.errors import Unprocessable
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
from orchestrator_sim.pull_update import CONFLICT, update_branch
from orchestrator_sim.records import PullRequest, Repo, ReviewThread

# How the mutation words a conflict (REST says `CONFLICT`).
UPDATE_CONFLICT = "Cannot update PR branch due to conflicts"

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


def pull_for_writer(
    ctx: Context, node_id: str, operation: str, *, author_may: bool = False
) -> tuple[Repo, PullRequest]:
    """The pull request a mutation names, for a caller with write access to its repository
    (or, with ``author_may``, its author)."""
    found = ctx.state.find_pull_by_node_id(node_id)
    if found is None or not repo_visible(ctx.state, found[0], ctx.user):
        raise GraphQLRequestError(
            f"Could not resolve to a node with the global id of '{node_id}'", "NOT_FOUND"
        )
    repo, pr = found
    author = repo.issues[pr.number].author.lower() == ctx.user.login.lower()
    if not ctx.state.has_permission(repo, ctx.user.login, "write") and not (author_may and author):
        raise GraphQLRequestError(
            f"{ctx.user.login} does not have the correct permissions to execute `{operation}`",
            "FORBIDDEN",
        )
    return found


def _mark_ready_for_review(_: Any, ctx: Context, args: dict[str, Any]) -> Payload:
    data = args["input"]
    repo, pr = pull_for_writer(ctx, data["pullRequestId"], "MarkPullRequestReadyForReview")
    updated = ctx.state.mark_ready_for_review(repo, pr.number, ctx.user.login)
    log.info("graphql_mutation", operation="markPullRequestReadyForReview", login=ctx.user.login)
    return Payload(data.get("clientMutationId"), PullNode(repo, updated))


def _update_pull_request_branch(_: Any, ctx: Context, args: dict[str, Any]) -> Payload:
    """GitHub's "Update branch" (merge or rebase); its refusals are UNPROCESSABLE errors."""
    data = args["input"]
    repo, pr = pull_for_writer(ctx, data["pullRequestId"], "UpdatePullRequestBranch")
    method = (data.get("updateMethod") or "MERGE").lower()
    try:
        update_branch(
            ctx.emulator,
            repo,
            pr.number,
            ctx.user.login,
            expected_head_sha=data.get("expectedHeadOid"),
            method=method,
        )
    except Unprocessable as exc:
        message = UPDATE_CONFLICT if exc.message == CONFLICT else exc.message
        raise GraphQLRequestError(message, "UNPROCESSABLE") from exc
    log.info("graphql_mutation", operation="updatePullRequestBranch", login=ctx.user.login)
    return Payload(data.get("clientMutationId"), PullNode(repo, pr))


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
        "Mutation.updatePullRequestBranch": _update_pull_request_branch,
        "UpdatePullRequestBranchPayload.clientMutationId": lambda p, _c, _a: p.client_mutation_id,
        "UpdatePullRequestBranchPayload.pullRequest": lambda p, _c, _a: p.value,
    }
