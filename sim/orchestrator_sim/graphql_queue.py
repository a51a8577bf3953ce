"""GraphQL for merging: ``mergePullRequest``, the merge queue and auto-merge.

Mutations need write access (disabling auto-merge: write, or being the pull
request's author) and refuse what GitHub refuses with its messages: a head
that moved since ``expectedHeadOid`` (``Head branch was modified. Review and
try the merge again.``), a direct merge where a merge queue is required
(``Changes must be made through the merge queue``), auto-merge on a
repository that does not allow it, or on a pull request that can merge now.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from orchestrator.logs import get_logger
from orchestrator_sim.graphql_mutations import pull_for_writer
from orchestrator_sim.graphql_support import (
    CommitNode,
    Context,
    GraphQLRequestError,
    Payload,
    PullNode,
    Resolver,
    actor,
    connection_resolvers,
    node_id,
    paginate,
    repo_visible,
)
from orchestrator_sim.records import PullRequest, Repo, parse_node_id
from orchestrator_sim.records_rules import AutoMergeRequest, QueueEntry, RulesetRule
from orchestrator_sim.rulesets import rule_int

log = get_logger(__name__)


@dataclass(frozen=True)
class QueueNode:
    """One base branch's merge queue as a GraphQL source."""

    repo: Repo
    branch: str
    rule: RulesetRule


@dataclass(frozen=True)
class EntryNode:
    """A merge queue entry; ``position`` is kept for an entry that already left the queue."""

    repo: Repo
    entry: QueueEntry
    position: int | None = None


@dataclass(frozen=True)
class AutoMergeNode:
    """A pull request's auto-merge request."""

    repo: Repo
    pr: PullRequest
    request: AutoMergeRequest


def _pull(ctx: Context, node: str, operation: str, *, author_may: bool = False) -> PullNode:
    return PullNode(*pull_for_writer(ctx, node, operation, author_may=author_may))


def _method(data: dict[str, Any]) -> str:
    return str(data.get("mergeMethod") or "MERGE").lower()


def _merge_pull_request(_: Any, ctx: Context, args: dict[str, Any]) -> Payload:
    data = args["input"]
    node = _pull(ctx, data["pullRequestId"], "MergePullRequest")
    ctx.emulator.merge_pull(
        node.repo,
        node.pr.number,
        ctx.user.login,
        sha=data.get("expectedHeadOid"),
        method=_method(data),
        title=data.get("commitHeadline"),
        message=data.get("commitBody"),
    )
    log.info("graphql_mutation", operation="mergePullRequest", login=ctx.user.login)
    return Payload(data.get("clientMutationId"), node)


def _enqueue(_: Any, ctx: Context, args: dict[str, Any]) -> Payload:
    data = args["input"]
    node = _pull(ctx, data["pullRequestId"], "EnqueuePullRequest")
    entry = ctx.state.enqueue(
        node.repo,
        node.pr,
        ctx.user.login,
        expected_head=data.get("expectedHeadOid"),
        jump=bool(data.get("jump")),
    )
    log.info("graphql_mutation", operation="enqueuePullRequest", login=ctx.user.login)
    return Payload(data.get("clientMutationId"), EntryNode(node.repo, entry))


def _dequeue(_: Any, ctx: Context, args: dict[str, Any]) -> Payload:
    """``id`` names the pull request (as GitHub documents) or its merge queue entry."""
    data = args["input"]
    ident = data["id"]
    parsed = parse_node_id(ident)
    pull_id = ident
    if parsed is not None and parsed[0] == "MergeQueueEntry":
        for repo in ctx.state.repos.values():
            for queued in repo.merge_queue:
                if queued.id == parsed[1] and repo_visible(ctx.state, repo, ctx.user):
                    pull_id = repo.pulls[queued.number].node_id
    node = _pull(ctx, pull_id, "DequeuePullRequest")
    entry = ctx.state.queue_entry(node.repo, node.pr.number)
    if entry is None:
        raise GraphQLRequestError("Pull request is not in the merge queue", "UNPROCESSABLE")
    position = ctx.state.queue_position(node.repo, entry)
    ctx.state.dequeue(node.repo, node.pr.number, ctx.user.login)
    log.info("graphql_mutation", operation="dequeuePullRequest", login=ctx.user.login)
    return Payload(data.get("clientMutationId"), EntryNode(node.repo, entry, position))


def _enable_auto_merge(_: Any, ctx: Context, args: dict[str, Any]) -> Payload:
    data = args["input"]
    node = _pull(ctx, data["pullRequestId"], "EnablePullRequestAutoMerge")
    ctx.state.enable_auto_merge(
        node.repo,
        node.pr,
        ctx.user.login,
        method=_method(data),
        expected_head=data.get("expectedHeadOid"),
        headline=data.get("commitHeadline"),
        body=data.get("commitBody"),
        author_email=data.get("authorEmail"),
    )
    log.info("graphql_mutation", operation="enablePullRequestAutoMerge", login=ctx.user.login)
    return Payload(data.get("clientMutationId"), node)


def _disable_auto_merge(_: Any, ctx: Context, args: dict[str, Any]) -> Payload:
    data = args["input"]
    node = _pull(ctx, data["pullRequestId"], "DisablePullRequestAutoMerge", author_may=True)
    ctx.state.disable_auto_merge(node.repo, node.pr, ctx.user.login)
    log.info("graphql_mutation", operation="disablePullRequestAutoMerge", login=ctx.user.login)
    return Payload(data.get("clientMutationId"), node)


# ------------------------------------------------------------------- fields


def _merge_queue(repo: Repo, ctx: Context, args: dict[str, Any]) -> QueueNode | None:
    branch = args.get("branch") or repo.default_branch
    rule = ctx.state.queue_rule(repo, branch)
    return QueueNode(repo, branch, rule) if rule is not None else None


def _entries(node: QueueNode, ctx: Context, args: dict[str, Any]) -> Any:
    entries = ctx.state.queue_entries(node.repo, node.branch)
    ranked = list(enumerate(entries, start=1))
    return paginate(
        ranked, args, key=lambda pair: pair[0], wrap=lambda pair: EntryNode(node.repo, pair[1])
    )


def _entry_of(node: PullNode, ctx: Context) -> EntryNode | None:
    entry = ctx.state.queue_entry(node.repo, node.pr.number)
    return EntryNode(node.repo, entry) if entry is not None else None


def _auto_merge_of(node: PullNode) -> AutoMergeNode | None:
    request = node.repo.auto_merges.get(node.pr.number)
    return AutoMergeNode(node.repo, node.pr, request) if request is not None else None


def _position(node: EntryNode, ctx: Context) -> int:
    if node.position is not None:
        return node.position
    return ctx.state.queue_position(node.repo, node.entry)


def _queue_of(node: EntryNode, ctx: Context) -> QueueNode | None:
    rule = ctx.state.queue_rule(node.repo, node.entry.base_ref)
    return QueueNode(node.repo, node.entry.base_ref, rule) if rule is not None else None


def _commit(repo: Repo, sha: str | None) -> CommitNode | None:
    return CommitNode(repo, sha) if sha else None


def _configuration() -> dict[str, Resolver]:
    def number(name: str, default: int) -> Resolver:
        return lambda rule, _c, _a: rule_int(rule, name, default)

    return {
        "MergeQueue.configuration": lambda n, _c, _a: n.rule,
        "MergeQueueConfiguration.checkResponseTimeout": number(
            "check_response_timeout_minutes", 60
        ),
        "MergeQueueConfiguration.maximumEntriesToBuild": number("max_entries_to_build", 5),
        "MergeQueueConfiguration.maximumEntriesToMerge": number("max_entries_to_merge", 5),
        "MergeQueueConfiguration.minimumEntriesToMerge": number("min_entries_to_merge", 1),
        "MergeQueueConfiguration.minimumEntriesToMergeWaitTime": number(
            "min_entries_to_merge_wait_minutes", 5
        ),
        "MergeQueueConfiguration.mergeMethod": lambda rule, _c, _a: rule.parameters.get(
            "merge_method", "MERGE"
        ),
        "MergeQueueConfiguration.mergingStrategy": lambda rule, _c, _a: rule.parameters.get(
            "grouping_strategy", "ALLGREEN"
        ),
    }


def _payload(type_name: str, field: str, *, with_actor: bool = True) -> dict[str, Resolver]:
    table: dict[str, Resolver] = {
        f"{type_name}.clientMutationId": lambda p, _c, _a: p.client_mutation_id,
        f"{type_name}.{field}": lambda p, _c, _a: p.value,
    }
    if with_actor:
        table[f"{type_name}.actor"] = lambda _p, c, _a: c.user
    return table


def resolvers() -> dict[str, Resolver]:
    """The merging mutations and the fields of the queue, its entries and auto-merge."""
    table: dict[str, Resolver] = {
        "Mutation.mergePullRequest": _merge_pull_request,
        "Mutation.enqueuePullRequest": _enqueue,
        "Mutation.dequeuePullRequest": _dequeue,
        "Mutation.enablePullRequestAutoMerge": _enable_auto_merge,
        "Mutation.disablePullRequestAutoMerge": _disable_auto_merge,
        "Repository.autoMergeAllowed": lambda repo, _c, _a: repo.allow_auto_merge,
        "Repository.mergeQueue": _merge_queue,
        "PullRequest.autoMergeRequest": lambda n, _c, _a: _auto_merge_of(n),
        "PullRequest.isInMergeQueue": lambda n, c, _a: _entry_of(n, c) is not None,
        "PullRequest.isMergeQueueEnabled": lambda n, c, _a: (
            c.state.queue_rule(n.repo, n.pr.base_ref) is not None
        ),
        "PullRequest.mergeCommit": lambda n, _c, _a: _commit(n.repo, n.pr.merge_commit_sha),
        "PullRequest.mergeQueueEntry": lambda n, c, _a: _entry_of(n, c),
        "MergeQueue.id": lambda n, _c, _a: node_id("MergeQueue", n.repo.id, n.branch),
        "MergeQueue.entries": _entries,
        "MergeQueue.repository": lambda n, _c, _a: n.repo,
        "MergeQueueEntry.id": lambda n, _c, _a: n.entry.node_id,
        "MergeQueueEntry.baseCommit": lambda n, _c, _a: _commit(n.repo, n.entry.group_parent),
        "MergeQueueEntry.headCommit": lambda n, _c, _a: _commit(n.repo, n.entry.group_sha),
        "MergeQueueEntry.enqueuedAt": lambda n, _c, _a: n.entry.enqueued_at,
        "MergeQueueEntry.enqueuer": lambda n, c, _a: actor(c.state, n.entry.enqueuer),
        "MergeQueueEntry.estimatedTimeToMerge": lambda _n, _c, _a: None,
        "MergeQueueEntry.jump": lambda n, _c, _a: n.entry.jump,
        "MergeQueueEntry.mergeQueue": lambda n, c, _a: _queue_of(n, c),
        "MergeQueueEntry.position": lambda n, c, _a: _position(n, c),
        "MergeQueueEntry.pullRequest": lambda n, _c, _a: PullNode(
            n.repo, n.repo.pulls[n.entry.number]
        ),
        "MergeQueueEntry.solo": lambda _n, _c, _a: False,
        "MergeQueueEntry.state": lambda n, _c, _a: n.entry.state,
        "AutoMergeRequest.authorEmail": lambda n, _c, _a: n.request.author_email,
        "AutoMergeRequest.commitBody": lambda n, _c, _a: n.request.commit_body,
        "AutoMergeRequest.commitHeadline": lambda n, _c, _a: n.request.commit_headline,
        "AutoMergeRequest.enabledAt": lambda n, _c, _a: n.request.enabled_at,
        "AutoMergeRequest.enabledBy": lambda n, c, _a: actor(c.state, n.request.enabled_by),
        "AutoMergeRequest.mergeMethod": lambda n, _c, _a: n.request.merge_method.upper(),
        "AutoMergeRequest.pullRequest": lambda n, _c, _a: PullNode(n.repo, n.pr),
    }
    table.update(_configuration())
    table.update(_payload("MergePullRequestPayload", "pullRequest"))
    table.update(_payload("EnqueuePullRequestPayload", "mergeQueueEntry", with_actor=False))
    table.update(_payload("DequeuePullRequestPayload", "mergeQueueEntry", with_actor=False))
    table.update(_payload("EnablePullRequestAutoMergePayload", "pullRequest"))
    table.update(_payload("DisablePullRequestAutoMergePayload", "pullRequest"))
    table.update(connection_resolvers("MergeQueueEntryConnection"))
    return table
