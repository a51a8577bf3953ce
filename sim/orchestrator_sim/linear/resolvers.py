"""Resolvers of the Linear subset schema: queries, connections and the tracker's mutations.

`resolve_field` is graphql-core's field resolver for the whole schema: a
``(type, field)`` entry of `RESOLVERS` when there is one, else the record's
snake_case attribute (``createdAt`` is ``created_at``) or a dict key.
Connections are Relay-style (``nodes``, ``edges``, ``pageInfo``); the cursor
of a node is its id, and a page continues after that node's place in the
order (``createdAt`` or ``updatedAt``, newest first).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from graphql import GraphQLError, GraphQLResolveInfo

from orchestrator_sim.linear import filters
from orchestrator_sim.linear.records import PRIORITY_LABELS, LinearIssue, LinearUser
from orchestrator_sim.linear.state import LinearInputError, LinearState

Resolver = Callable[..., Any]


@dataclass(frozen=True, slots=True)
class Context:
    """What every resolver of one request sees."""

    state: LinearState
    viewer: LinearUser
    now: datetime


def _refusal(message: str, code: str, kind: str, status: int) -> GraphQLError:
    """An error in Linear's shape (``extensions``: code, type, statusCode ...)."""
    return GraphQLError(
        message,
        extensions={
            "code": code,
            "type": kind,
            "statusCode": status,
            "userError": True,
            "userPresentableMessage": message,
        },
    )


def input_error(message: str) -> GraphQLError:
    """Linear's shape for bad arguments (``extensions.code`` INVALID_INPUT)."""
    return _refusal(message, "INVALID_INPUT", "invalid input", 400)


def forbidden(message: str) -> GraphQLError:
    """Linear's shape for a request its user may not make (``extensions.code`` FORBIDDEN)."""
    return _refusal(message, "FORBIDDEN", "forbidden", 403)


def _ctx(info: GraphQLResolveInfo[Any]) -> Context:
    context: Context = info.context
    return context


def connection(
    items: Sequence[Any],
    *,
    first: int | None,
    after: str | None,
    order_by: str | None,
    lookup: dict[str, Any],
) -> dict[str, Any]:
    """One Relay page of ``items`` (already filtered), newest first by ``order_by``."""
    if first is not None and first < 0:
        raise input_error("first must not be negative")
    attribute = "updated_at" if order_by == "updatedAt" else "created_at"

    def key(item: Any) -> tuple[str, str]:
        return (getattr(item, attribute), item.id)

    ordered = sorted(items, key=key, reverse=True)
    if after:
        anchor = lookup.get(after)
        if anchor is None:
            raise input_error(f"cursor {after!r} is not a valid cursor")
        mark = key(anchor)
        ordered = [item for item in ordered if key(item) < mark]
        previous = True
    else:
        previous = False
    size = 50 if first is None else first
    page = ordered[:size]
    return {
        "nodes": page,
        "edges": [{"cursor": item.id, "node": item} for item in page],
        "pageInfo": {
            "startCursor": page[0].id if page else None,
            "endCursor": page[-1].id if page else None,
            "hasNextPage": len(ordered) > size,
            "hasPreviousPage": previous,
        },
    }


def _page(
    items: Sequence[Any],
    lookup: dict[str, Any],
    args: dict[str, Any],
) -> dict[str, Any]:
    return connection(
        items,
        first=args.get("first"),
        after=args.get("after"),
        order_by=args.get("orderBy"),
        lookup=lookup,
    )


def _guard(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except LinearInputError as exc:
        raise input_error(str(exc)) from None


# ------------------------------------------------------------------ queries


def _issues(_root: Any, info: GraphQLResolveInfo[Any], **args: Any) -> Any:
    ctx = _ctx(info)
    state = ctx.state
    found = _guard(
        lambda: [
            issue
            for issue in state.issues.values()
            if issue.archived_at is None
            and filters.issue_matches(state, args.get("filter"), issue, ctx.now, ctx.viewer.id)
        ]
    )
    return _page(found, state.issues, args)


def _issue(_root: Any, info: GraphQLResolveInfo[Any], id: str) -> Any:
    state = _ctx(info).state
    try:
        return state.issue(id)
    except LinearInputError:
        raise input_error("Entity not found: Issue") from None


def _workflow_states(_root: Any, info: GraphQLResolveInfo[Any], **args: Any) -> Any:
    ctx = _ctx(info)
    state = ctx.state
    found = _guard(
        lambda: [
            s
            for s in state.states.values()
            if filters.state_matches(state, args.get("filter"), s, ctx.now)
        ]
    )
    return _page(found, state.states, args)


def _teams(_root: Any, info: GraphQLResolveInfo[Any], **args: Any) -> Any:
    ctx = _ctx(info)
    found = _guard(
        lambda: [
            t
            for t in ctx.state.teams.values()
            if filters.team_matches(args.get("filter"), t, ctx.now)
        ]
    )
    return _page(found, ctx.state.teams, args)


def _team(_root: Any, info: GraphQLResolveInfo[Any], id: str) -> Any:
    try:
        return _ctx(info).state.team(id)
    except LinearInputError:
        raise input_error("Entity not found: Team") from None


def _issue_labels(_root: Any, info: GraphQLResolveInfo[Any], **args: Any) -> Any:
    ctx = _ctx(info)
    found = _guard(
        lambda: [
            lab
            for lab in ctx.state.labels.values()
            if filters.label_matches(args.get("filter"), lab, ctx.now)
        ]
    )
    return _page(found, ctx.state.labels, args)


# ---------------------------------------------------------------- mutations


def _payload(info: GraphQLResolveInfo[Any], name: str, entity: Any) -> dict[str, Any]:
    return {"success": True, "lastSyncId": float(_ctx(info).state.sync_id), name: entity}


def _issue_update(_root: Any, info: GraphQLResolveInfo[Any], id: str, input: dict[str, Any]) -> Any:
    state = _ctx(info).state
    try:
        state.issue(id)
    except LinearInputError:
        raise input_error("Entity not found: Issue") from None
    viewer = _ctx(info).viewer
    return _payload(info, "issue", _guard(lambda: state.update_issue(id, input, actor=viewer)))


def _comment_create(_root: Any, info: GraphQLResolveInfo[Any], input: dict[str, Any]) -> Any:
    ctx = _ctx(info)
    if not input.get("issueId"):
        raise input_error("commentCreate needs an issueId")
    comment = _guard(
        lambda: ctx.state.add_comment(input["issueId"], ctx.viewer.id, input.get("body") or "")
    )
    return _payload(info, "comment", comment)


def _comment_update(
    _root: Any, info: GraphQLResolveInfo[Any], id: str, input: dict[str, Any]
) -> Any:
    ctx = _ctx(info)
    if input.get("body") is None:
        raise input_error("commentUpdate needs a body")
    comment = _guard(lambda: ctx.state.update_comment(id, input["body"], by=ctx.viewer))
    return _payload(info, "comment", comment)


def _attachment_create(_root: Any, info: GraphQLResolveInfo[Any], input: dict[str, Any]) -> Any:
    ctx = _ctx(info)
    attachment = _guard(
        lambda: ctx.state.upsert_attachment(
            input["issueId"],
            input["url"],
            input["title"],
            subtitle=input.get("subtitle"),
            metadata=input.get("metadata"),
            icon_url=input.get("iconUrl"),
            creator=ctx.viewer,
        )
    )
    return _payload(info, "attachment", attachment)


def _attachment_link_url(
    _root: Any,
    info: GraphQLResolveInfo[Any],
    issueId: str,
    url: str,
    title: str | None = None,
) -> Any:
    ctx = _ctx(info)
    attachment = _guard(
        lambda: ctx.state.upsert_attachment(issueId, url, title or url, creator=ctx.viewer)
    )
    return _payload(info, "attachment", attachment)


def _user_update(_root: Any, info: GraphQLResolveInfo[Any], id: str, input: dict[str, Any]) -> Any:
    """A user's own full name and display name, which Linear lets each user edit (an admin
    may edit anyone's): the emulator lets a test play a member who renames herself."""
    ctx = _ctx(info)
    target = ctx.viewer if id == "me" else ctx.state.users.get(id)
    if target is None:
        raise input_error("Entity not found: User")
    if target.id != ctx.viewer.id and not ctx.viewer.admin:
        raise forbidden("Only admins can update other users' profiles")
    user = _guard(
        lambda: ctx.state.update_user(
            target.id, name=input.get("name"), display_name=input.get("displayName")
        )
    )
    return _payload(info, "user", user)


# ------------------------------------------------------------ object fields


def _related(attribute: str, table: str) -> Resolver:
    def resolve(source: Any, info: GraphQLResolveInfo[Any]) -> Any:
        key = getattr(source, attribute)
        return getattr(_ctx(info).state, table).get(key) if key else None

    return resolve


def _issue_children(table: str, attribute: str = "issue_id") -> Resolver:
    def resolve(source: LinearIssue, info: GraphQLResolveInfo[Any], **args: Any) -> Any:
        rows = getattr(_ctx(info).state, table)
        found = [row for row in rows.values() if getattr(row, attribute) == source.id]
        return _page(found, rows, args)

    return resolve


def _issue_labels_of(source: LinearIssue, info: GraphQLResolveInfo[Any], **args: Any) -> Any:
    state = _ctx(info).state
    found = [state.labels[i] for i in source.label_ids if i in state.labels]
    return _page(found, state.labels, args)


def _labels_by_id(attribute: str) -> Resolver:
    """A history entry's added or removed labels (null when none, as Linear answers)."""

    def resolve(source: Any, info: GraphQLResolveInfo[Any]) -> Any:
        labels = _ctx(info).state.labels
        found = [labels[i] for i in getattr(source, attribute) if i in labels]
        return found or None

    return resolve


def _ids(attribute: str) -> Resolver:
    def resolve(source: Any, _info: GraphQLResolveInfo[Any]) -> Any:
        return list(getattr(source, attribute)) or None

    return resolve


def _team_states(source: Any, info: GraphQLResolveInfo[Any], **args: Any) -> Any:
    ctx = _ctx(info)
    found = _guard(
        lambda: [
            s
            for s in ctx.state.team_states(source.id)
            if filters.state_matches(ctx.state, args.get("filter"), s, ctx.now)
        ]
    )
    return _page(found, ctx.state.states, args)


def _team_labels(source: Any, info: GraphQLResolveInfo[Any], **args: Any) -> Any:
    ctx = _ctx(info)
    found = _guard(
        lambda: [
            lab
            for lab in ctx.state.labels.values()
            if lab.team_id in (None, source.id)
            and filters.label_matches(args.get("filter"), lab, ctx.now)
        ]
    )
    return _page(found, ctx.state.labels, args)


RESOLVERS: dict[tuple[str, str], Resolver] = {
    ("Query", "viewer"): lambda _r, info: _ctx(info).viewer,
    ("Query", "issues"): _issues,
    ("Query", "issue"): _issue,
    ("Query", "workflowStates"): _workflow_states,
    ("Query", "teams"): _teams,
    ("Query", "team"): _team,
    ("Query", "issueLabels"): _issue_labels,
    ("Mutation", "issueUpdate"): _issue_update,
    ("Mutation", "commentCreate"): _comment_create,
    ("Mutation", "commentUpdate"): _comment_update,
    ("Mutation", "attachmentCreate"): _attachment_create,
    ("Mutation", "attachmentLinkURL"): _attachment_link_url,
    ("Mutation", "userUpdate"): _user_update,
    ("User", "isMe"): lambda s, info: s.id == _ctx(info).viewer.id,
    ("User", "url"): lambda s, info: f"{_ctx(info).state.url_base}/profiles/{s.display_name}",
    ("Issue", "state"): _related("state_id", "states"),
    ("Issue", "team"): _related("team_id", "teams"),
    ("Issue", "project"): _related("project_id", "projects"),
    ("Issue", "assignee"): _related("assignee_id", "users"),
    ("Issue", "labels"): _issue_labels_of,
    ("Issue", "labelIds"): lambda s, _info: list(s.label_ids),
    ("Issue", "comments"): _issue_children("comments"),
    ("Issue", "attachments"): _issue_children("attachments"),
    ("Issue", "relations"): _issue_children("relations"),
    ("Issue", "inverseRelations"): _issue_children("relations", "related_issue_id"),
    ("Issue", "history"): _issue_children("history"),
    ("Issue", "branchName"): lambda s, info: _ctx(info).state.branch_name(s, _ctx(info).viewer),
    ("Issue", "url"): lambda s, info: _ctx(info).state.issue_url(s),
    ("Issue", "priorityLabel"): lambda s, _info: PRIORITY_LABELS[s.priority],
    ("WorkflowState", "team"): _related("team_id", "teams"),
    ("Team", "displayName"): lambda s, _info: s.name,
    ("Team", "states"): _team_states,
    ("Team", "labels"): _team_labels,
    ("Project", "url"): lambda s, info: f"{_ctx(info).state.url_base}/project/{s.slug_id}",
    ("IssueLabel", "team"): _related("team_id", "teams"),
    ("Comment", "user"): _related("user_id", "users"),
    ("Comment", "issue"): _related("issue_id", "issues"),
    ("Comment", "url"): lambda s, info: _comment_url(info, s),
    ("Attachment", "issue"): _related("issue_id", "issues"),
    ("Attachment", "metadata"): lambda s, _info: json.loads(s.metadata_json),
    ("IssueRelation", "issue"): _related("issue_id", "issues"),
    ("IssueHistory", "issue"): _related("issue_id", "issues"),
    ("IssueHistory", "actor"): _related("actor_id", "users"),
    ("IssueHistory", "fromState"): _related("from_state_id", "states"),
    ("IssueHistory", "toState"): _related("to_state_id", "states"),
    ("IssueHistory", "addedLabels"): _labels_by_id("added_label_ids"),
    ("IssueHistory", "removedLabels"): _labels_by_id("removed_label_ids"),
    ("IssueHistory", "addedLabelIds"): _ids("added_label_ids"),
    ("IssueHistory", "removedLabelIds"): _ids("removed_label_ids"),
    ("IssueRelation", "relatedIssue"): _related("related_issue_id", "issues"),
}


def _comment_url(info: GraphQLResolveInfo[Any], comment: Any) -> str:
    state = _ctx(info).state
    issue = state.issues[comment.issue_id]
    return f"{state.issue_url(issue)}#comment-{comment.id[:8]}"


_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


def resolve_field(source: Any, info: GraphQLResolveInfo[Any], **args: Any) -> Any:
    """graphql-core's field resolver for the subset schema."""
    special = RESOLVERS.get((info.parent_type.name, info.field_name))
    if special is not None:
        return special(source, info, **args)
    if isinstance(source, dict):
        return source.get(info.field_name)
    return getattr(source, _CAMEL.sub("_", info.field_name).lower(), None)
