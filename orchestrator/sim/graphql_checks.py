"""GraphQL resolvers for commits, their status-check rollups, check runs and statuses."""

from __future__ import annotations

from typing import Any

from orchestrator.sim.graphql_support import (
    UNSUPPORTED,
    CheckRunNode,
    CommitNode,
    Context,
    Edge,
    GraphQLRequestError,
    Page,
    PullNode,
    Resolver,
    RollupNode,
    StatusNode,
    actor,
    connection_resolvers,
    cursor_for,
    node_id,
    paginate,
    upper,
)


def _pull_commits(node: PullNode, _: Context, args: dict[str, Any]) -> Page:
    # The state keeps branch heads, not commit lists: only the head commit is known.
    last = args.get("last")
    if last not in (0, 1):
        raise GraphQLRequestError(
            "The emulator lists only a pull request's head commit: ask for commits(last: 1).",
            UNSUPPORTED,
        )
    items = [CommitNode(node.repo, node.pr.head_sha)] if last == 1 else []
    return Page(
        edges=tuple(Edge(cursor_for(0), item) for item in items),
        total=len(items),
        has_next=False,
        has_previous=False,
    )


def _commit_rollup(node: CommitNode, ctx: Context) -> RollupNode | None:
    state = ctx.state.rollup_state(node.repo, node.sha)
    return RollupNode(node.repo, node.sha, state) if state is not None else None


def _rollup_contexts(node: RollupNode, ctx: Context) -> list[Any]:
    runs = sorted(ctx.state.check_runs_for(node.repo, node.sha), key=lambda r: r.id)
    statuses = sorted(ctx.state.latest_statuses(node.repo, node.sha), key=lambda s: s.id)
    return [CheckRunNode(r) for r in runs] + [StatusNode(s) for s in statuses]


def _context_key(item: Any) -> Any:
    if isinstance(item, CheckRunNode):
        return (0, item.run.id)
    return (1, item.status.id)


def resolvers() -> dict[str, Resolver]:
    """Fields of commits, rollups and their contexts, and PullRequest.commits."""
    table: dict[str, Resolver] = {
        "PullRequest.commits": _pull_commits,
        "PullRequestCommit.id": lambda n, _c, _a: node_id("PullRequestCommit", n.repo.id, n.sha),
        "PullRequestCommit.commit": lambda n, _c, _a: n,
        "Commit.id": lambda n, _c, _a: node_id("Commit", n.repo.id, n.sha),
        "Commit.oid": lambda n, _c, _a: n.sha,
        "Commit.statusCheckRollup": lambda n, c, _a: _commit_rollup(n, c),
        "StatusCheckRollup.id": lambda n, _c, _a: node_id("StatusCheckRollup", n.repo.id, n.sha),
        "StatusCheckRollup.state": lambda n, _c, _a: n.state,
        "StatusCheckRollup.commit": lambda n, _c, _a: CommitNode(n.repo, n.sha),
        "StatusCheckRollup.contexts": lambda n, c, a: paginate(
            _rollup_contexts(n, c), a, key=_context_key
        ),
        "CheckRun.id": lambda n, _c, _a: n.run.node_id,
        "CheckRun.databaseId": lambda n, _c, _a: n.run.id,
        "CheckRun.name": lambda n, _c, _a: n.run.name,
        "CheckRun.status": lambda n, _c, _a: n.run.status.upper(),
        "CheckRun.conclusion": lambda n, _c, _a: upper(n.run.conclusion),
        "CheckRun.detailsUrl": lambda n, _c, _a: n.run.details_url,
        "CheckRun.startedAt": lambda n, _c, _a: n.run.started_at,
        "CheckRun.completedAt": lambda n, _c, _a: n.run.completed_at,
        "CheckRun.title": lambda n, _c, _a: n.run.output_title,
        "CheckRun.summary": lambda n, _c, _a: n.run.output_summary,
        "CheckRun.text": lambda n, _c, _a: n.run.output_text,
        "StatusContext.id": lambda n, _c, _a: n.status.node_id,
        "StatusContext.context": lambda n, _c, _a: n.status.context,
        "StatusContext.state": lambda n, _c, _a: n.status.state.upper(),
        "StatusContext.description": lambda n, _c, _a: n.status.description,
        "StatusContext.targetUrl": lambda n, _c, _a: n.status.target_url,
        "StatusContext.createdAt": lambda n, _c, _a: n.status.created_at,
        "StatusContext.creator": lambda n, c, _a: actor(c.state, n.status.creator),
    }
    table.update(connection_resolvers("StatusCheckRollupContextConnection"))
    table.update(connection_resolvers("PullRequestCommitConnection", with_edges=False))
    return table
