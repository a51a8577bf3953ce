"""GraphQL resolvers for commits, their status-check rollups, check runs and statuses."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from orchestrator_sim.clock import format_time, parse_time
from orchestrator_sim.gitstore import CommitInfo
from orchestrator_sim.graphql_support import (
    CheckRunNode,
    CommitNode,
    Context,
    GraphQLRequestError,
    Page,
    PullNode,
    Resolver,
    RollupNode,
    StatusNode,
    actor,
    connection_resolvers,
    node_id,
    paginate,
    upper,
)
from orchestrator_sim.records import CheckRun


def _pull_commits(node: PullNode, ctx: Context, args: dict[str, Any]) -> Page:
    """The pull request's commits in GitHub's order: by author date, ties in branch order.

    So ``commits(last: 1)`` is the newest-dated commit, which is not the head
    when the head was made before (and pushed after) another commit.
    """
    infos = ctx.state.pull_commits(node.repo, node.pr)
    if not infos and ctx.state.git is None:
        items = [CommitNode(node.repo, node.pr.head_sha)]
    else:
        items = [CommitNode(node.repo, info.sha, info) for info in infos]
    return paginate(list(enumerate(items)), args, key=lambda pair: pair[0], wrap=_second)


def _second(pair: tuple[int, Any]) -> Any:
    return pair[1]


def _info(node: CommitNode, ctx: Context) -> CommitInfo:
    info = node.info
    if info is None and ctx.state.git is not None:
        info = ctx.state.git.commit_info(node.repo, node.sha)
    if info is None:
        raise GraphQLRequestError(f"The emulator has no commit {node.sha}.", "NOT_FOUND")
    return info


def _date(text: str) -> str:
    return format_time(parse_time(text))


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


def _run_state(run: CheckRun) -> str:
    """A check run as GitHub's CheckRunState: its conclusion once completed, else its status."""
    if run.status == "completed" and run.conclusion is not None:
        return run.conclusion.upper()
    return {"requested": "QUEUED"}.get(run.status, run.status.upper())


@dataclass(frozen=True)
class _Counts:
    check_runs: int
    check_runs_by_state: list[dict[str, Any]]
    statuses: int
    statuses_by_state: list[dict[str, Any]]


def _counts(items: list[Any]) -> _Counts:
    runs = Counter(_run_state(i.run) for i in items if isinstance(i, CheckRunNode))
    statuses = Counter(i.status.state.upper() for i in items if isinstance(i, StatusNode))
    return _Counts(
        check_runs=sum(runs.values()),
        check_runs_by_state=[{"state": k, "count": v} for k, v in sorted(runs.items())],
        statuses=sum(statuses.values()),
        statuses_by_state=[{"state": k, "count": v} for k, v in sorted(statuses.items())],
    )


def _contexts(node: RollupNode, ctx: Context, args: dict[str, Any]) -> Page:
    items = _rollup_contexts(node, ctx)
    return paginate(items, args, key=_context_key, extra=_counts(items))


def resolvers() -> dict[str, Resolver]:
    """Fields of commits, rollups and their contexts, and PullRequest.commits."""
    table: dict[str, Resolver] = {
        "PullRequest.commits": _pull_commits,
        "PullRequestCommit.id": lambda n, _c, _a: node_id("PullRequestCommit", n.repo.id, n.sha),
        "PullRequestCommit.commit": lambda n, _c, _a: n,
        "Commit.id": lambda n, _c, _a: node_id("Commit", n.repo.id, n.sha),
        "Commit.oid": lambda n, _c, _a: n.sha,
        "Commit.abbreviatedOid": lambda n, _c, _a: n.sha[:7],
        "Commit.message": lambda n, c, _a: _info(n, c).message,
        "Commit.authoredDate": lambda n, c, _a: _date(_info(n, c).author_date),
        "Commit.committedDate": lambda n, c, _a: _date(_info(n, c).committer_date),
        "Commit.statusCheckRollup": lambda n, c, _a: _commit_rollup(n, c),
        "StatusCheckRollup.id": lambda n, _c, _a: node_id("StatusCheckRollup", n.repo.id, n.sha),
        "StatusCheckRollup.state": lambda n, _c, _a: n.state,
        "StatusCheckRollup.commit": lambda n, _c, _a: CommitNode(n.repo, n.sha),
        "StatusCheckRollup.contexts": _contexts,
        "StatusCheckRollupContextConnection.checkRunCount": lambda p, _c, _a: p.extra.check_runs,
        "StatusCheckRollupContextConnection.checkRunCountsByState": lambda p, _c, _a: (
            p.extra.check_runs_by_state
        ),
        "StatusCheckRollupContextConnection.statusContextCount": lambda p, _c, _a: p.extra.statuses,
        "StatusCheckRollupContextConnection.statusContextCountsByState": lambda p, _c, _a: (
            p.extra.statuses_by_state
        ),
        "CheckRunStateCount.state": lambda d, _c, _a: d["state"],
        "CheckRunStateCount.count": lambda d, _c, _a: d["count"],
        "StatusContextStateCount.state": lambda d, _c, _a: d["state"],
        "StatusContextStateCount.count": lambda d, _c, _a: d["count"],
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
    table.update(connection_resolvers("PullRequestCommitConnection"))
    return table
