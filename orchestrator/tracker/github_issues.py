"""GitHub Issues as the tracker: candidates by label, tracker states as labels.

Candidates come from the repository's :class:`~orchestrator.github.feed.IssueFeed`:
a full, conditional read of the labelled issues once, then one conditional page
of the issues updated since, per poll (a free 304 while nothing changed).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from orchestrator.domain.snapshot import IssueRef, TrackedIssue
from orchestrator.github.errors import GitHubError
from orchestrator.github.feed import IssueFeed
from orchestrator.github.feed_state import FeedItem
from orchestrator.github.gateway import GitHubGateway
from orchestrator.tracker.base import TrackerSettings


def _issue(repo: str, item: FeedItem, settings: TrackerSettings) -> TrackedIssue:
    return TrackedIssue(
        ref=IssueRef(repo, item.number),
        title=item.title,
        is_open=item.is_open,
        labels=item.labels,
        created_at=datetime.fromisoformat(item.created_at.replace("Z", "+00:00")),
        tracker_state=settings.shown_state(item.labels, item.is_open),
    )


# Conversions kept before the memo starts over (a bound; the feed holds fewer items).
CONVERTED_LIMIT = 50_000


def issue_feed(settings: TrackerSettings) -> IssueFeed:
    """The feed this tracker reads its candidates from (one per repository and daemon)."""
    return IssueFeed(settings.repo, required_labels=settings.required_labels)


class GitHubIssuesTracker:
    """The tracker adapter on the GitHub gateway."""

    def __init__(
        self, gateway: GitHubGateway, settings: TrackerSettings, feed: IssueFeed | None = None
    ) -> None:
        self.gateway = gateway
        self.settings = settings
        self.feed = feed if feed is not None else issue_feed(settings)
        # Whether the feed was brought up to date by fetch_candidates and nothing was
        # written since: the refresh_by_ids that completes the poll reads it as it is.
        self._fresh = False
        self._converted: dict[int, tuple[FeedItem, TrackedIssue]] = {}

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
        tracked issue that is not a candidate, each poll.
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
            data = self.gateway.client.request(
                "GET", f"/repos/{ref.repo}/issues/{ref.number}", conditional=True
            ).data
        except GitHubError as error:
            if error.status in (404, 410):
                return {}
            raise
        return {ref: _issue(ref.repo, FeedItem.of(data), self.settings)}

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
