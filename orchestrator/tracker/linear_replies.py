"""People's replies on a Linear issue: what resumes an issue blocked on a question.

The daemon asks its question on the Linear issue (a comment written with the
API key) and waits in ``blocked``; a comment by a trusted Linear user after
that answers it, as a reply on GitHub does (:mod:`orchestrator.domain.flow_blocked`).
Trust is :mod:`orchestrator.tracker.linear_people`'s: an active member who is
not a guest, not an app user and not the API key's own user (``tracker.approvers``
narrows approvals, not replies). The key's own comments (the workpad, the
question) are left out; every other comment is kept with its author, its text
going to the agent as a trusted or untrusted reply.

The domain keys an issue comment by a number; a Linear comment's UUID maps to a
stable one (:func:`comment_number`), used for nothing but telling comments apart.
The comments are read newest first, 50 a request, until one is older than the
moment asked about, and at most :data:`MAX_REPLY_PAGES` requests.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime

from orchestrator.domain.snapshot import Actor, IssueComment
from orchestrator.tracker import linear_queries as q
from orchestrator.tracker.linear_client import LinearClient
from orchestrator.tracker.linear_people import Answer

OPERATION = "IssueReplies"
MAX_REPLY_PAGES = 4
_ANSWER = Answer(OPERATION)


def comment_number(comment_id: str) -> int:
    """A stable positive number for a Linear comment id (63 bits of its SHA-256)."""
    return int.from_bytes(hashlib.sha256(comment_id.encode()).digest()[:8], "big") >> 1


@dataclass(frozen=True, slots=True)
class LinearReply:
    """One comment on the issue by someone other than the daemon."""

    id: str
    author: Actor
    created_at: datetime
    body: str

    def as_issue_comment(self) -> IssueComment:
        """The comment as the domain sees it."""
        return IssueComment(comment_number(self.id), self.author, self.created_at)


@dataclass(frozen=True, slots=True)
class Replies:
    """The comments one read found, newest first, and the issue's updatedAt then."""

    updated_at: str
    replies: tuple[LinearReply, ...]


def read_replies(
    client: LinearClient, issue: str, viewer_id: str, since: datetime | None = None
) -> Replies:
    """The comments on ``issue`` (an id or ``ENG-12``) written by others than the API key's
    user, newest first; with ``since``, reading stops at the first page reaching back to it."""
    after: str | None = None
    found: list[LinearReply] = []
    updated_at = ""
    for page in range(MAX_REPLY_PAGES):
        data = client.execute(OPERATION, q.ISSUE_REPLIES, {"id": issue, "after": after})
        node = _ANSWER.get(data, "issue", dict, "data")
        if page == 0:
            updated_at = _ANSWER.get(node, "updatedAt", str, "issue")
        comments = _ANSWER.get(node, "comments", dict, "issue")
        older = False
        for index, entry in enumerate(_ANSWER.get(comments, "nodes", list, "issue.comments")):
            where = f"issue.comments.nodes[{index}]"
            user = _ANSWER.get(entry, "user", dict, where, optional=True)
            if user is not None and _ANSWER.get(user, "id", str, f"{where}.user") == viewer_id:
                continue
            at = _ANSWER.moment(_ANSWER.get(entry, "createdAt", str, where), f"{where}.createdAt")
            older = older or (since is not None and at <= since)
            found.append(
                LinearReply(
                    id=_ANSWER.get(entry, "id", str, where),
                    author=_ANSWER.actor(user, viewer_id, f"{where}.user"),
                    created_at=at,
                    body=_ANSWER.get(entry, "body", str, where),
                )
            )
        info = _ANSWER.get(comments, "pageInfo", dict, "issue.comments")
        after = _ANSWER.get(info, "endCursor", str, "issue.comments.pageInfo", optional=True)
        if older or not _ANSWER.get(info, "hasNextPage", bool, "issue.comments.pageInfo"):
            break
        if not after:
            break
    return Replies(updated_at, tuple(found))
