"""An in-memory tracker that honours the whole port, for tests of what sits above it.

Issues, their comments and their label events live in dicts; a test puts issues
and people's comments in, and reads what the runtime wrote back out
(``comments``, ``state_changes``, ``closed``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from orchestrator.domain.actions import SideEffect
from orchestrator.domain.record_updates import EffectResult
from orchestrator.domain.side_effects import (
    CloseIssue,
    PostComment,
    SetLabels,
    UpsertWorkpad,
    effect_marker,
)
from orchestrator.domain.snapshot import (
    Actor,
    IssueComment,
    IssueRef,
    ThreadComment,
    TrackedIssue,
)
from orchestrator.domain.workpad import is_workpad_comment
from orchestrator.tracker.base import (
    DetailsAsk,
    IssueFacts,
    OwnComment,
    TrackerSettings,
)


@dataclass(frozen=True)
class MemoryComment:
    """One comment on an issue; ``own`` when the daemon wrote it."""

    id: int
    author: Actor
    body: str
    created_at: datetime
    own: bool = False


class MemoryTracker:
    """Issues held in dicts; states are labels, as with GitHub Issues (module docstring)."""

    def __init__(
        self,
        settings: TrackerSettings,
        issues: Iterable[TrackedIssue] = (),
        *,
        repo_stop_label: str | None = None,
        login: str = "orchestrator-bot",
    ) -> None:
        self.settings = settings
        self.repo_stop_label = repo_stop_label
        self.login = login
        self._issues = {issue.ref: issue for issue in issues}
        self._lock = threading.Lock()
        self._moved: set[int] = set()
        self.comments: dict[IssueRef, list[MemoryComment]] = {}
        self.state_changes: list[tuple[IssueRef, str]] = []
        self.closed: list[tuple[IssueRef, str]] = []

    # -- what a test puts in ---------------------------------------------------

    def put(self, issue: TrackedIssue) -> None:
        with self._lock:
            self._issues[issue.ref] = self._with_state(issue)
            self._moved.add(issue.ref.number)

    def comment(self, ref: IssueRef, author: Actor, body: str, at: datetime) -> MemoryComment:
        """A person's comment on the issue."""
        with self._lock:
            return self._add(ref, author, body, at, own=False)

    def _add(
        self, ref: IssueRef, author: Actor, body: str, at: datetime, own: bool
    ) -> MemoryComment:
        thread = self.comments.setdefault(ref, [])
        made = MemoryComment(sum(len(c) for c in self.comments.values()) + 1, author, body, at, own)
        thread.append(made)
        self._moved.add(ref.number)
        return made

    def _issue(self, ref: IssueRef) -> TrackedIssue:
        found = self._issues.get(ref)
        if found is None:
            raise KeyError(f"{ref}: no such issue in the tracker")
        return found

    # -- the poll -----------------------------------------------------------

    def fetch_candidates(self) -> list[TrackedIssue]:
        with self._lock:
            issues = [self._with_state(issue) for issue in self._issues.values()]
        return sorted((i for i in issues if self.settings.is_candidate(i)), key=lambda i: i.ref)

    def refresh_by_ids(self, refs: Iterable[IssueRef]) -> dict[IssueRef, TrackedIssue]:
        with self._lock:
            return {ref: self._with_state(self._issues[ref]) for ref in refs if ref in self._issues}

    def changes(self) -> set[int]:
        with self._lock:
            moved, self._moved = self._moved, set()
        return moved

    def repo_stopped(self, *, fresh: bool = False) -> bool:
        label = self.repo_stop_label
        with self._lock:
            return label is not None and any(
                issue.is_open and label.casefold() in {x.casefold() for x in issue.labels}
                for issue in self._issues.values()
            )

    def with_details(self, issue: TrackedIssue, ask: DetailsAsk) -> TrackedIssue:
        """The label events the test put on the issue count while approval is asked for."""
        events = (
            tuple(e for e in issue.label_events if e.label in issue.labels) if ask.approval else ()
        )
        comments: tuple[IssueComment, ...] = ()
        if ask.replies_since is not None:
            with self._lock:
                comments = tuple(
                    IssueComment(c.id, c.author, c.created_at)
                    for c in self.comments.get(issue.ref, [])
                    if not c.own
                )
        return replace(issue, label_events=events, comments=comments)

    def forget_except(self, live: set[IssueRef]) -> None:
        """Nothing is remembered beyond the issues themselves."""

    # -- one issue, read now ---------------------------------------------------

    def labels_now(self, ref: IssueRef) -> frozenset[str]:
        with self._lock:
            return self._issue(ref).labels

    def facts(self, ref: IssueRef) -> IssueFacts:
        with self._lock:
            issue = self._issue(ref)
        return IssueFacts(
            identifier=str(ref),
            title=issue.title,
            body="",
            url="",
            id=str(ref),
            created_at=issue.created_at.isoformat(),
        )

    def thread(self, ref: IssueRef, since: datetime) -> tuple[ThreadComment, ...]:
        with self._lock:
            return tuple(
                ThreadComment(c.author, c.body, c.created_at)
                for c in self.comments.get(ref, [])
                if not c.own and not c.author.is_bot and c.created_at > since
            )

    def own_workpads(self, ref: IssueRef) -> list[OwnComment]:
        with self._lock:
            return [
                OwnComment(str(c.id), c.body)
                for c in self.comments.get(ref, [])
                if c.own and is_workpad_comment(c.body)
            ]

    def confirm(self, effect: SideEffect) -> EffectResult | None:
        ref = effect.issue
        match effect.payload:
            case UpsertWorkpad() as workpad:
                return self._marked(ref, workpad.marker, workpad.body)
            case PostComment():
                return self._marked(ref, effect_marker(effect.idempotency_key), None)
            case CloseIssue():
                with self._lock:
                    closed = not self._issue(ref).is_open
                return EffectResult.done(changed=0) if closed else None
            case SetLabels() as labels:
                return EffectResult.done() if labels.held_by(self.labels_now(ref)) else None
            case _:
                return None

    def _marked(self, ref: IssueRef, marker: str, body: str | None) -> EffectResult | None:
        with self._lock:
            for c in self.comments.get(ref, []):
                if c.own and marker in c.body and (body is None or c.body == body):
                    return EffectResult.done(comment_id=c.id)
        return None

    # -- writes -------------------------------------------------------------

    def set_tracker_state(self, ref: IssueRef, state: str) -> None:
        state_labels = set(self.settings.state_labels.values())
        with self._lock:
            issue = self._issue(ref)
            labels = set(issue.labels) - state_labels
            if state in self.settings.state_labels:
                labels.add(self.settings.state_labels[state])
            self._issues[ref] = replace(issue, labels=frozenset(labels), tracker_state=state)
            self.state_changes.append((ref, state))

    def upsert_workpad(self, ref: IssueRef, marker: str, body: str) -> EffectResult:
        return self.upsert_comment(ref, marker, body)

    def upsert_comment(self, ref: IssueRef, marker: str, body: str) -> EffectResult:
        with self._lock:
            self._issue(ref)
            thread = self.comments.setdefault(ref, [])
            for position, c in enumerate(thread):
                if c.own and marker in c.body:
                    if c.body == body:
                        return EffectResult.done(comment_id=c.id, action="unchanged")
                    thread[position] = replace(c, body=body)
                    return EffectResult.done(comment_id=c.id, action="updated")
            me = Actor(self.login, is_bot=True)
            made = self._add(ref, me, body, datetime.now(UTC), own=True)
        return EffectResult.done(comment_id=made.id, action="created")

    def close(
        self, ref: IssueRef, *, reason: str, state: str, keep: frozenset[str] = frozenset()
    ) -> EffectResult:
        with self._lock:
            issue = self._issue(ref)
            if not issue.is_open:
                return EffectResult.done(changed=0)
            wanted = self.settings.state_labels.get(state)
            labels = set(issue.labels)
            if wanted:
                labels = (labels - (set(self.settings.state_labels.values()) - keep)) | {wanted}
            self._issues[ref] = replace(
                issue, is_open=False, labels=frozenset(labels), tracker_state=state
            )
            self.closed.append((ref, reason))
            self._moved.add(ref.number)
        return EffectResult.done(changed=1)

    def _with_state(self, issue: TrackedIssue) -> TrackedIssue:
        return replace(issue, tracker_state=self.settings.shown_state(issue.labels, issue.is_open))
