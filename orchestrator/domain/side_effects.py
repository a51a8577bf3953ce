"""What each kind of side effect carries: one frozen value type per kind.

The planner builds these; the gate records them in the outbox as JSON (the
field names are the JSON keys, so entries written before these types existed
read back the same) and the writers read their fields by name, checked by mypy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from enum import StrEnum
from typing import Any, ClassVar


def effect_marker(key: str) -> str:
    """The hidden marker that finds the comment or reply written for one idempotency key."""
    return f"<!-- orchestrator-effect: {key} -->"


class SideEffectKind(StrEnum):
    """The closed set of writes to GitHub or the git remote."""

    PUSH_BRANCH = "push_branch"
    CREATE_PR = "create_pr"
    UPDATE_PR_BODY = "update_pr_body"
    UPSERT_WORKPAD = "upsert_workpad"
    UPSERT_REVIEW_COMMENT = "upsert_review_comment"
    SET_LABELS = "set_labels"
    REPLY_THREAD = "reply_thread"
    RESOLVE_THREAD = "resolve_thread"
    REQUEST_REVIEW = "request_review"
    POST_COMMENT = "post_comment"
    MARK_PR_READY = "mark_pr_ready"
    MERGE_PR = "merge_pr"
    CLOSE_ISSUE = "close_issue"


@dataclass(frozen=True, slots=True)
class PushBranch:
    """Push the workspace's ``head_sha`` to the issue branch (fast-forward only)."""

    KIND: ClassVar[SideEffectKind] = SideEffectKind.PUSH_BRANCH
    branch: str
    head_sha: str
    # The pull request's head the push must fast-forward (None: no pull request yet).
    expected_remote_sha: str | None = None
    # Why: "implementation", "review_fix", "rework".
    purpose: str = ""


@dataclass(frozen=True, slots=True)
class CreatePR:
    """Find or create the pull request of the issue branch."""

    KIND: ClassVar[SideEffectKind] = SideEffectKind.CREATE_PR
    branch: str
    base: str | None
    title: str
    body: str
    notes: tuple[str, ...] = ()
    draft: bool = False


@dataclass(frozen=True, slots=True)
class UpdatePRBody:
    """Rewrite the pull request's description, keeping what people changed since ``previous``."""

    KIND: ClassVar[SideEffectKind] = SideEffectKind.UPDATE_PR_BODY
    pr_number: int
    body: str
    notes: tuple[str, ...] = ()
    previous: str | None = None


@dataclass(frozen=True, slots=True)
class UpsertWorkpad:
    """Create or update the issue's one workpad comment, found by ``marker``."""

    KIND: ClassVar[SideEffectKind] = SideEffectKind.UPSERT_WORKPAD
    marker: str
    heading: str
    body: str


@dataclass(frozen=True, slots=True)
class UpsertReviewComment:
    """Create or update the pull request's one review comment with a review pass."""

    KIND: ClassVar[SideEffectKind] = SideEffectKind.UPSERT_REVIEW_COMMENT
    pr_number: int
    head_sha: str
    pass_number: int
    body: str


@dataclass(frozen=True, slots=True)
class SetLabels:
    """Add and remove labels on the issue, or on ``on_number`` (its pull request)."""

    KIND: ClassVar[SideEffectKind] = SideEffectKind.SET_LABELS
    add: tuple[str, ...] = ()
    remove: tuple[str, ...] = ()
    on_number: int | None = None

    def held_by(self, labels: frozenset[str]) -> bool:
        """Whether ``labels`` already show this change (after a crash: it took effect)."""
        return set(self.add) <= labels and not (set(self.remove) & labels)


@dataclass(frozen=True, slots=True)
class ReplyThread:
    """Answer a review thread."""

    KIND: ClassVar[SideEffectKind] = SideEffectKind.REPLY_THREAD
    thread_id: str
    body: str


@dataclass(frozen=True, slots=True)
class ResolveThread:
    """Resolve a review thread the reply settled."""

    KIND: ClassVar[SideEffectKind] = SideEffectKind.RESOLVE_THREAD
    thread_id: str


@dataclass(frozen=True, slots=True)
class RequestReview:
    """Ask reviewers to look at the pull request again."""

    KIND: ClassVar[SideEffectKind] = SideEffectKind.REQUEST_REVIEW
    pr_number: int
    reviewers: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class PostComment:
    """A comment on the issue (a question for a human, or a notice)."""

    KIND: ClassVar[SideEffectKind] = SideEffectKind.POST_COMMENT
    body: str


@dataclass(frozen=True, slots=True)
class MarkPRReady:
    """Take a draft pull request out of draft."""

    KIND: ClassVar[SideEffectKind] = SideEffectKind.MARK_PR_READY
    pr_number: int
    node_id: str = ""


@dataclass(frozen=True, slots=True)
class MergePR:
    """Merge the pull request only if its head is exactly ``head_sha``; the approvers and
    approval labels go along for the re-check right before the call."""

    KIND: ClassVar[SideEffectKind] = SideEffectKind.MERGE_PR
    pr_number: int
    head_sha: str
    method: str
    approvers: tuple[str, ...] = ()
    approval_labels: tuple[str, ...] = ()
    approval_required: bool = False


@dataclass(frozen=True, slots=True)
class CloseIssue:
    """Close the issue once its pull request's merge is confirmed."""

    KIND: ClassVar[SideEffectKind] = SideEffectKind.CLOSE_ISSUE
    pr_number: int
    reason: str = "completed"


EffectPayload = (
    PushBranch
    | CreatePR
    | UpdatePRBody
    | UpsertWorkpad
    | UpsertReviewComment
    | SetLabels
    | ReplyThread
    | ResolveThread
    | RequestReview
    | PostComment
    | MarkPRReady
    | MergePR
    | CloseIssue
)

PAYLOAD_TYPES: Mapping[SideEffectKind, type[EffectPayload]] = {
    cls.KIND: cls
    for cls in (
        PushBranch,
        CreatePR,
        UpdatePRBody,
        UpsertWorkpad,
        UpsertReviewComment,
        SetLabels,
        ReplyThread,
        ResolveThread,
        RequestReview,
        PostComment,
        MarkPRReady,
        MergePR,
        CloseIssue,
    )
}


class PayloadError(ValueError):
    """A stored payload does not fit its kind; the message names the field."""


def payload_json(payload: EffectPayload) -> dict[str, Any]:
    """The payload as the outbox stores it: its fields, tuples as lists."""
    found: dict[str, Any] = {}
    for spec in fields(payload):
        value = getattr(payload, spec.name)
        found[spec.name] = list(value) if isinstance(value, tuple) else value
    return found


def payload_from_json(kind: SideEffectKind, data: Mapping[str, Any]) -> EffectPayload:
    """The payload of ``kind`` an outbox entry stored (keys it does not know are ignored).

    Raises :class:`PayloadError` naming the field that is missing or of the wrong type.
    """
    cls = PAYLOAD_TYPES[kind]
    values: dict[str, Any] = {}
    for spec in fields(cls):
        if spec.name not in data:
            continue
        value = data[spec.name]
        if isinstance(value, list):
            if not all(isinstance(item, str) for item in value):
                raise PayloadError(f"{kind}.{spec.name}: expected a list of strings")
            value = tuple(value)
        values[spec.name] = value
    try:
        return cls(**values)
    except TypeError as error:
        raise PayloadError(f"{kind}: {error}") from None
