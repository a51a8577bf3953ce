"""GitHub Issues as the tracker: candidates by label, tracker states as labels.

Candidates come from the repository's :class:`~orchestrator.github.feed.IssueFeed`:
a full, conditional read of the labelled issues once, then one conditional page
of the issues updated since, per poll (a free 304 while nothing changed). One
adapter serves a repository; each call takes the calling thread's gateway, so
workers and the tick share its memos.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import replace
from datetime import datetime
from typing import Any, Protocol

from orchestrator.domain.accounts import same_account
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
    LabelAction,
    LabelEvent,
    ThreadComment,
    TrackedIssue,
)
from orchestrator.domain.workpad.render import is_workpad_comment
from orchestrator.github.errors import GitHubError, Problem, RateLimited
from orchestrator.github.feed import IssueFeed
from orchestrator.github.feed_state import FeedItem
from orchestrator.github.gateway import GitHubGateway, carries_marker
from orchestrator.github.outcomes import ApprovalActor, CommentUpserted
from orchestrator.logs import get_logger, issue_key
from orchestrator.tracker.base import (
    DetailsAsk,
    IssueFacts,
    OwnComment,
    TrackerSettings,
)

log = get_logger(__name__)


class Accounts(Protocol):
    """Who the daemon is on GitHub, and how it sees another account."""

    @property
    def login(self) -> str: ...

    def actor(self, login: str, user_type: str | None = None) -> Actor: ...


class GatewayAccounts:
    """The accounts as one gateway reads them (the daemon's access shares its login)."""

    def __init__(self, gateway: Callable[[], GitHubGateway], repo: str) -> None:
        self._gateway = gateway
        self.repo = repo

    @property
    def login(self) -> str:
        return self._gateway().client.login

    def actor(self, login: str, user_type: str | None = None) -> Actor:
        return self._gateway().actor(self.repo, login, user_type, self.login)


def _time(value: object) -> datetime:
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


def _issue(repo: str, item: FeedItem, settings: TrackerSettings) -> TrackedIssue:
    return TrackedIssue(
        ref=IssueRef(repo, item.number),
        title=item.title,
        is_open=item.is_open,
        labels=item.labels,
        created_at=_time(item.created_at),
        tracker_state=settings.shown_state(item.labels, item.is_open),
    )


def _done_or_problem(value: object, **data: str | int | None) -> EffectResult:
    """A gateway's answer as the write's result; a spent budget stops the caller at once."""
    if isinstance(value, RateLimited):
        raise value
    if isinstance(value, GitHubError):
        return EffectResult.failed(str(value))
    return EffectResult.done(**data)


# Conversions kept before the memo starts over (a bound; the feed holds fewer items).
CONVERTED_LIMIT = 50_000


def issue_feed(settings: TrackerSettings) -> IssueFeed:
    """The feed this tracker reads its candidates from (one per repository and daemon)."""
    return IssueFeed(settings.repo, required_labels=settings.required_labels)


def approval_events(
    gateway: GitHubGateway, repo: str, number: int, labels: Iterable[str]
) -> tuple[LabelEvent, ...]:
    """Who added each of ``labels`` to the issue or pull request ``number`` (an unreadable
    one is left out, logged: no evidence, no approval)."""
    events: list[LabelEvent] = []
    for label in sorted(labels):
        found: ApprovalActor | Problem | None = gateway.approval_actor(repo, number, label)
        if isinstance(found, RateLimited):
            raise found
        if isinstance(found, GitHubError):
            log.warning(
                "approval_actor_unreadable",
                issue=issue_key(repo, number),
                label=label,
                error=str(found),
            )
            continue
        if isinstance(found, ApprovalActor):
            actor = Actor(login=found.login, is_bot=found.is_bot, can_write=found.can_write)
            events.append(LabelEvent(label, LabelAction.ADDED, actor, found.at))
    return tuple(events)


class GitHubIssuesTracker:
    """The tracker port on the GitHub repository's own issues."""

    def __init__(
        self,
        gateway: Callable[[], GitHubGateway],
        settings: TrackerSettings,
        accounts: Accounts | None = None,
        feed: IssueFeed | None = None,
    ) -> None:
        self._gateway = gateway
        self.settings = settings
        self.accounts = accounts or GatewayAccounts(gateway, settings.repo)
        self.feed = feed if feed is not None else issue_feed(settings)
        # Whether the feed was brought up to date by fetch_candidates and nothing was
        # written since: the refresh_by_ids that completes the poll reads it as it is.
        self._fresh = False
        self._converted: dict[int, tuple[FeedItem, TrackedIssue]] = {}
        # The comments of blocked issues, by number, with the issue's updated_at they are of.
        self._comments: dict[int, tuple[str, tuple[IssueComment, ...]]] = {}
        self._lock = threading.Lock()

    @property
    def gateway(self) -> GitHubGateway:
        return self._gateway()

    # -- the poll -----------------------------------------------------------

    def fetch_candidates(self) -> list[TrackedIssue]:
        """Brings the feed up to date (one free 304 while nothing changed) and reads it."""
        self.feed.refresh(self.gateway.client)
        self._fresh = True
        issues = [self._issue(item) for item in self.feed.candidates()]
        return [issue for issue in issues if self.settings.is_candidate(issue)]

    def _issue(self, item: FeedItem) -> TrackedIssue:
        """The item as a TrackedIssue, converted once per version of the item."""
        known = self._converted.get(item.number)
        if known is not None and known[0] == item:
            return known[1]
        issue = _issue(self.settings.repo, item, self.settings)
        if len(self._converted) > CONVERTED_LIMIT:
            self._converted.clear()
        self._converted[item.number] = (item, issue)
        return issue

    def refresh_by_ids(self, refs: Iterable[IssueRef]) -> dict[IssueRef, TrackedIssue]:
        """These issues as the feed holds them; the ones it never saw are read by number.

        The feed keeps exactly these (besides the candidates) from now on: pass every
        tracked issue that is not a candidate, each poll. Issues that are no longer
        wanted lose their remembered comments.
        """
        refs = list(refs)
        if not self._fresh:
            self.feed.refresh(self.gateway.client)
        self._fresh = False
        wanted = {ref.number: ref for ref in refs if ref.repo == self.settings.repo}
        found = self.feed.keep(self.gateway.client, wanted)
        result = {wanted[number]: self._issue(item) for number, item in found.items()}
        for ref in refs:
            if ref.repo != self.settings.repo:
                result.update(self._read_other(ref))
        return result

    def _read_other(self, ref: IssueRef) -> dict[IssueRef, TrackedIssue]:
        try:
            data = self.gateway.issue(ref.repo, ref.number)
        except GitHubError as error:
            if error.status in (404, 410):
                return {}
            raise
        return {ref: _issue(ref.repo, FeedItem.of(data), self.settings)}

    def changes(self) -> set[int]:
        """None beyond the feed's: the repository's feed is this tracker's."""
        return set()

    def repo_stopped(self, *, fresh: bool = False) -> bool:
        """Never beyond the repository's own issues: they are this tracker's."""
        return False

    def with_details(self, issue: TrackedIssue, ask: DetailsAsk) -> TrackedIssue:
        events = (
            approval_events(
                self.gateway,
                issue.ref.repo,
                issue.ref.number,
                issue.labels & ask.flow.approval_labels,
            )
            if ask.approval
            else ()
        )
        comments = self._replies(issue.ref) if ask.replies_since is not None else ()
        if not events and not comments:
            return issue
        return replace(issue, label_events=events, comments=comments)

    def forget_except(self, live: set[IssueRef]) -> None:
        """Drop the remembered comments of issues no longer tracked."""
        with self._lock:
            for number in [
                n for n in self._comments if IssueRef(self.settings.repo, n) not in live
            ]:
                del self._comments[number]

    def _replies(self, ref: IssueRef) -> tuple[IssueComment, ...]:
        # A new comment moves the issue's updated_at: while it stays, so do the comments.
        updated_at = self.feed.updated_at(ref.number)
        with self._lock:
            remembered = self._comments.get(ref.number)
        if updated_at is not None and remembered is not None and remembered[0] == updated_at:
            return remembered[1]
        comments = tuple(
            IssueComment(
                id=int(item["id"]), author=self._author(item), created_at=_time(item["created_at"])
            )
            for item in self.gateway.issue_comments(ref.repo, ref.number)
        )
        if updated_at is not None:
            with self._lock:
                self._comments[ref.number] = (updated_at, comments)
        return comments

    def _author(self, item: dict[str, Any]) -> Actor:
        user = item.get("user") or {}
        return self.accounts.actor(str(user.get("login", "ghost")), user.get("type"))

    # -- one issue, read now ---------------------------------------------------

    def labels_now(self, ref: IssueRef) -> frozenset[str]:
        return self.gateway.issue_labels(ref.repo, ref.number)

    def facts(self, ref: IssueRef) -> IssueFacts:
        data = self.gateway.issue(ref.repo, ref.number)
        return IssueFacts(
            identifier=f"{ref.repo}#{ref.number}",
            title=str(data.get("title") or ""),
            body=str(data.get("body") or ""),
            url=str(data.get("html_url") or ""),
            id=str(data.get("node_id") or ref.number),
            created_at=_text_or_none(data.get("created_at")),
            updated_at=_text_or_none(data.get("updated_at")),
        )

    def thread(self, ref: IssueRef, since: datetime) -> tuple[ThreadComment, ...]:
        found = []
        for item in self.gateway.issue_comments(ref.repo, ref.number):
            created = _time(item["created_at"])
            author = self._author(item)
            if created > since and not author.is_bot:
                found.append(ThreadComment(author, str(item.get("body") or ""), created))
        return tuple(found)

    def _own_comments(self, ref: IssueRef) -> list[dict[str, Any]]:
        login = self.accounts.login
        return [
            item
            for item in self.gateway.issue_comments(ref.repo, ref.number)
            if same_account((item.get("user") or {}).get("login"), login)
        ]

    def own_workpads(self, ref: IssueRef) -> list[OwnComment]:
        return [
            OwnComment(str(item["id"]), str(item.get("body") or ""), str(item.get("node_id") or ""))
            for item in self._own_comments(ref)
            if is_workpad_comment(str(item.get("body") or ""))
        ]

    def confirm(self, effect: SideEffect) -> EffectResult | None:
        ref = effect.issue
        match effect.payload:
            case UpsertWorkpad() as workpad:
                return self._comment(ref, workpad.marker, workpad.body)
            case PostComment():
                return self._comment(ref, effect_marker(effect.idempotency_key), None)
            case CloseIssue():
                closed = self.gateway.issue(ref.repo, ref.number).get("state") == "closed"
                return EffectResult.done(changed=0) if closed else None
            case SetLabels() as labels:
                return EffectResult.done() if labels.held_by(self.labels_now(ref)) else None
            case _:
                return None

    def _comment(self, ref: IssueRef, marker: str, body: str | None) -> EffectResult | None:
        for item in self._own_comments(ref):
            text = str(item.get("body") or "")
            if carries_marker(text, marker) and (body is None or text == body):
                return EffectResult.done(comment_id=int(item["id"]))
        return None

    # -- writes -------------------------------------------------------------

    def set_tracker_state(self, ref: IssueRef, state: str) -> None:
        self._fresh = False
        state_labels = set(self.settings.state_labels.values())
        wanted = self.settings.state_labels.get(state)
        result = self.gateway.set_issue_labels(
            ref.repo,
            ref.number,
            add=[wanted] if wanted else [],
            remove=state_labels - {wanted} if wanted else state_labels,
        )
        if isinstance(result, Exception):
            raise result

    def upsert_workpad(self, ref: IssueRef, marker: str, body: str) -> EffectResult:
        return self.upsert_comment(ref, marker, body)

    def upsert_comment(self, ref: IssueRef, marker: str, body: str) -> EffectResult:
        result = self.gateway.upsert_comment(ref.repo, ref.number, marker, body)
        if not isinstance(result, CommentUpserted):
            return _done_or_problem(result)
        return EffectResult.done(comment_id=result.comment_id, action=result.action.value)

    def close(
        self, ref: IssueRef, *, reason: str, state: str, keep: frozenset[str] = frozenset()
    ) -> EffectResult:
        """Show ``state`` (its label, when it has one; labels in ``keep`` stay) and close."""
        self._fresh = False
        gateway = self.gateway
        labels = self.settings.state_labels
        wanted = labels.get(state)
        if wanted:
            others = set(labels.values()) - {wanted} - keep
            shown = gateway.set_issue_labels(ref.repo, ref.number, add=[wanted], remove=others)
            if isinstance(shown, Exception):
                return _done_or_problem(shown)
        closed = gateway.close_issue(ref.repo, ref.number, reason)
        return _done_or_problem(closed, changed=int(closed is True))


def _text_or_none(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
