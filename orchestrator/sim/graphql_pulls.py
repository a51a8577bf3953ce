"""GraphQL resolvers for the query root, the rate limit, repositories and pull requests."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from orchestrator.sim.billing import RateSnapshot
from orchestrator.sim.clock import format_time
from orchestrator.sim.graphql_support import (
    Context,
    GraphQLRequestError,
    PullNode,
    Resolver,
    actor,
    repo_visible,
)
from orchestrator.sim.records import Repo


def _query_repository(_: Any, ctx: Context, args: dict[str, Any]) -> Repo:
    owner, name = args["owner"], args["name"]
    repo = ctx.state.find_repo(owner, name)
    if repo is None or not repo_visible(ctx.state, repo, ctx.user):
        raise GraphQLRequestError(
            f"Could not resolve to a Repository with the name '{owner}/{name}'.", "NOT_FOUND"
        )
    return repo


def _repository_pull(repo: Repo, _: Context, args: dict[str, Any]) -> PullNode:
    number = args["number"]
    pr = repo.pulls.get(number)
    if pr is None:
        raise GraphQLRequestError(
            f"Could not resolve to a PullRequest with the number of {number}.", "NOT_FOUND"
        )
    return PullNode(repo, pr)


def _pull_state(node: PullNode) -> str:
    if node.pr.merged:
        return "MERGED"
    return "CLOSED" if node.repo.issues[node.pr.number].state == "closed" else "OPEN"


def _pull_mergeable(node: PullNode, ctx: Context) -> str:
    value = ctx.state.mergeable(node.repo, node.pr)
    if value is None:
        return "UNKNOWN"
    return "MERGEABLE" if value else "CONFLICTING"


def _rate_reset(rate: RateSnapshot) -> str:
    return format_time(datetime.fromtimestamp(rate.reset, UTC))


def resolvers() -> dict[str, Resolver]:
    """Fields of Query, RateLimit, Repository and the plain fields of PullRequest."""
    return {
        "Query.rateLimit": lambda _s, ctx, _a: ctx,
        "Query.repository": _query_repository,
        "Query.viewer": lambda _s, ctx, _a: ctx.user,
        "RateLimit.cost": lambda ctx, _c, _a: ctx.cost.points,
        "RateLimit.limit": lambda ctx, _c, _a: ctx.rate.limit,
        "RateLimit.nodeCount": lambda ctx, _c, _a: ctx.cost.nodes,
        "RateLimit.remaining": lambda ctx, _c, _a: ctx.rate.remaining,
        "RateLimit.resetAt": lambda ctx, _c, _a: _rate_reset(ctx.rate),
        "RateLimit.used": lambda ctx, _c, _a: ctx.rate.used,
        "Repository.id": lambda repo, _c, _a: repo.node_id,
        "Repository.databaseId": lambda repo, _c, _a: repo.id,
        "Repository.name": lambda repo, _c, _a: repo.name,
        "Repository.nameWithOwner": lambda repo, _c, _a: repo.full_name,
        "Repository.isPrivate": lambda repo, _c, _a: repo.private,
        "Repository.pullRequest": _repository_pull,
        "PullRequest.id": lambda n, _c, _a: n.pr.node_id,
        "PullRequest.databaseId": lambda n, _c, _a: n.pr.id,
        "PullRequest.number": lambda n, _c, _a: n.pr.number,
        "PullRequest.title": lambda n, _c, _a: n.repo.issues[n.pr.number].title,
        "PullRequest.body": lambda n, _c, _a: n.repo.issues[n.pr.number].body or "",
        "PullRequest.author": lambda n, c, _a: actor(c.state, n.repo.issues[n.pr.number].author),
        "PullRequest.state": lambda n, _c, _a: _pull_state(n),
        "PullRequest.isDraft": lambda n, _c, _a: n.pr.draft,
        "PullRequest.closed": lambda n, _c, _a: n.repo.issues[n.pr.number].state == "closed",
        "PullRequest.merged": lambda n, _c, _a: n.pr.merged,
        "PullRequest.mergedAt": lambda n, _c, _a: n.pr.merged_at,
        "PullRequest.closedAt": lambda n, _c, _a: n.repo.issues[n.pr.number].closed_at,
        "PullRequest.createdAt": lambda n, _c, _a: n.repo.issues[n.pr.number].created_at,
        "PullRequest.updatedAt": lambda n, _c, _a: n.repo.issues[n.pr.number].updated_at,
        "PullRequest.headRefName": lambda n, _c, _a: n.pr.head_ref,
        "PullRequest.headRefOid": lambda n, _c, _a: n.pr.head_sha,
        "PullRequest.baseRefName": lambda n, _c, _a: n.pr.base_ref,
        "PullRequest.mergeable": lambda n, c, _a: _pull_mergeable(n, c),
        "PullRequest.mergeStateStatus": lambda n, c, _a: c.state.mergeable_state(
            n.repo, n.pr
        ).upper(),
        "PullRequest.reviewDecision": lambda n, c, _a: c.state.review_decision(n.repo, n.pr),
        "PullRequest.repository": lambda n, _c, _a: n.repo,
    }
