"""GraphQL resolvers for the query root, the rate limit, repositories, pull requests
and branch refs."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from orchestrator_sim.billing import RateSnapshot
from orchestrator_sim.clock import format_time
from orchestrator_sim.graphql_issues import issue_comments, issue_labels
from orchestrator_sim.graphql_support import (
    UNSUPPORTED,
    CommitNode,
    Context,
    GraphQLRequestError,
    Page,
    PullNode,
    RefNode,
    Resolver,
    actor,
    connection_resolvers,
    node_id,
    paginate,
    repo_visible,
)
from orchestrator_sim.records import Repo

_ISSUE_ORDER = {"CREATED_AT": "created_at", "UPDATED_AT": "updated_at"}


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


def _repository_pulls(repo: Repo, ctx: Context, args: dict[str, Any]) -> Page:
    """``repository.pullRequests``: filtered by state, labels and branches, then ordered
    (oldest first by default, as on GitHub)."""
    states = set(args.get("states") or ())
    labels = [name.lower() for name in args.get("labels") or ()]
    head, base = args.get("headRefName"), args.get("baseRefName")
    nodes = []
    for pr in ctx.state.index(repo).pulls_on(head, base):
        node = PullNode(repo, pr)
        issue = repo.issues[pr.number]
        present = {name.lower() for name in issue.labels}
        if states and _pull_state(node) not in states:
            continue
        if labels and not any(name in present for name in labels):
            continue
        if (head is not None and pr.head_ref != head) or (base is not None and pr.base_ref != base):
            continue
        nodes.append(node)
    order = args.get("orderBy") or {"field": "CREATED_AT", "direction": "ASC"}
    field = order["field"]

    def key(node: PullNode) -> tuple[Any, ...]:
        issue = node.repo.issues[node.pr.number]
        if field == "COMMENTS":
            return (ctx.state.comment_count(node.repo, issue.number), issue.id)
        return (getattr(issue, _ISSUE_ORDER[field]), issue.id)

    descending = order["direction"] == "DESC"
    nodes.sort(key=key, reverse=descending)
    return paginate(nodes, args, key=key, descending=descending)


def _repository_object(repo: Repo, ctx: Context, args: dict[str, Any]) -> CommitNode | None:
    """``repository.object``: a commit by SHA (or a branch name as ``expression``)."""
    oid, expression = args.get("oid"), args.get("expression")
    if oid is None and expression is None:
        raise GraphQLRequestError("Either oid or expression is required.", "UNPROCESSABLE")
    sha = oid if oid is not None else repo.branches.get(str(expression))
    if sha is None:
        raise GraphQLRequestError(
            f"The emulator resolves expression only to a branch name, not {expression!r}.",
            UNSUPPORTED,
        )
    git = ctx.state.git
    info = git.commit_info(repo, sha) if git is not None else None
    if git is not None and (info is None or info.sha != sha):
        return None
    return CommitNode(repo, sha, info)


def _head_ref(node: PullNode) -> RefNode | None:
    """The head branch as it is now; None once it is deleted (as on GitHub)."""
    sha = node.repo.branches.get(node.pr.head_ref)
    return RefNode(node.repo, node.pr.head_ref, sha) if sha is not None else None


def _base_oid(node: PullNode) -> str:
    """The base branch's tip (for a merged pull request, the base it was merged onto)."""
    pr = node.pr
    if pr.merged and pr.merged_base_sha is not None:
        return pr.merged_base_sha
    return node.repo.branches.get(pr.base_ref) or pr.merged_base_sha or ""


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
    """Fields of Query, RateLimit, Repository, Ref and the plain fields of PullRequest."""
    table: dict[str, Resolver] = {
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
        "Repository.mergeCommitAllowed": lambda repo, _c, _a: repo.allow_merge_commit,
        "Repository.squashMergeAllowed": lambda repo, _c, _a: repo.allow_squash_merge,
        "Repository.rebaseMergeAllowed": lambda repo, _c, _a: repo.allow_rebase_merge,
        "Repository.pullRequest": _repository_pull,
        "Repository.pullRequests": _repository_pulls,
        "Repository.object": _repository_object,
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
        "PullRequest.headRef": lambda n, _c, _a: _head_ref(n),
        "PullRequest.headRefName": lambda n, _c, _a: n.pr.head_ref,
        "PullRequest.headRefOid": lambda n, _c, _a: n.pr.head_sha,
        "PullRequest.baseRefName": lambda n, _c, _a: n.pr.base_ref,
        "PullRequest.baseRefOid": lambda n, _c, _a: _base_oid(n),
        "PullRequest.mergeable": lambda n, c, _a: _pull_mergeable(n, c),
        "PullRequest.mergeStateStatus": lambda n, c, _a: c.state.mergeable_state(
            n.repo, n.pr
        ).upper(),
        "PullRequest.reviewDecision": lambda n, c, _a: c.state.review_decision(n.repo, n.pr),
        "PullRequest.repository": lambda n, _c, _a: n.repo,
        "PullRequest.labels": lambda n, c, a: issue_labels(
            c, n.repo, n.repo.issues[n.pr.number], a
        ),
        "PullRequest.comments": lambda n, c, a: issue_comments(
            c, n.repo, n.repo.issues[n.pr.number], a
        ),
        "Ref.id": lambda n, _c, _a: node_id("Ref", n.repo.id, f"refs/heads/{n.name}"),
        "Ref.name": lambda n, _c, _a: n.name,
        "Ref.prefix": lambda _n, _c, _a: "refs/heads/",
        "Ref.target": lambda n, _c, _a: CommitNode(n.repo, n.sha),
    }
    table.update(connection_resolvers("PullRequestConnection"))
    return table
