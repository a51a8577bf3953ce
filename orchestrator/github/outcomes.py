"""Typed results of the runtime helpers (expected outcomes are values, not exceptions)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any


@dataclass(frozen=True)
class PRInfo:
    """A pull request as the REST API describes it."""

    number: int
    url: str
    head_sha: str
    head_branch: str
    base: str
    is_open: bool
    merged: bool
    title: str
    body: str
    draft: bool = False
    merge_commit_sha: str | None = None

    @classmethod
    def from_rest(cls, data: dict[str, Any]) -> PRInfo:
        return cls(
            number=int(data["number"]),
            url=str(data.get("html_url") or data.get("url") or ""),
            head_sha=str(data["head"]["sha"]),
            head_branch=str(data["head"]["ref"]),
            base=str(data["base"]["ref"]),
            is_open=data.get("state") == "open",
            merged=bool(data.get("merged") or data.get("merged_at")),
            title=str(data.get("title") or ""),
            body=str(data.get("body") or ""),
            draft=bool(data.get("draft")),
            merge_commit_sha=data.get("merge_commit_sha") if data.get("merged") else None,
        )


@dataclass(frozen=True)
class PROpen:
    """The branch has an open pull request; ``created`` when this call opened it."""

    pr: PRInfo
    created: bool


@dataclass(frozen=True)
class PRClosed:
    """The branch's pull request is closed or merged and the policy says not to reopen it.

    ``action`` is the policy that applies: ``new_branch`` (the runtime continues on a
    fresh branch) or ``stop`` (a human decides).
    """

    pr: PRInfo
    action: str


class CommentAction(StrEnum):
    CREATED = "created"
    UPDATED = "updated"
    UNCHANGED = "unchanged"


@dataclass(frozen=True)
class CommentUpserted:
    """The marked comment now has the wanted body."""

    comment_id: int
    action: CommentAction
    url: str = ""


@dataclass(frozen=True)
class Merged:
    """The pull request was merged with the expected head; ``commit_sha`` is the result."""

    commit_sha: str
    already: bool = False


@dataclass(frozen=True)
class HeadMoved:
    """The head is no longer the expected one: nothing was merged."""

    expected: str
    actual: str | None


@dataclass(frozen=True)
class NotMergeable:
    """GitHub refused to merge (conflicts, branch protection, closed pull request)."""

    reason: str


@dataclass(frozen=True)
class ApprovalActor:
    """Who last added a label, and whether that counts as a human approval."""

    login: str
    is_bot: bool
    can_write: bool
    at: datetime

    @property
    def counts(self) -> bool:
        return self.can_write and not self.is_bot


@dataclass(frozen=True)
class Annotation:
    path: str
    line: int | None
    level: str
    message: str


@dataclass(frozen=True)
class FailingCheck:
    """A failing check on the head with what an agent needs to fix it (all bounded)."""

    name: str
    conclusion: str
    summary: str
    annotations: tuple[Annotation, ...]
    log_tail: str
    details_url: str | None = None
