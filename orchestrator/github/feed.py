"""What changed in a repository's issues and pull requests, read incrementally.

A full read of the candidates (every open issue with the required labels) and
of the carriers of each watched label costs one page per 100 items, every
tick. The feed does that once, at start-up; afterwards one request per tick
asks GitHub for the issues and pull requests updated since shortly before the
newest ``updated_at`` seen (``GET /repos/{repo}/issues?state=all&since=...``),
conditionally, so while nothing changed the tick costs one free 304.
Labels added or removed, a close, a reopen, a retitle and a new comment all
move an item's ``updated_at``, so none of them is missed.

- Each page of the window is asked conditionally on its last answer, so a
  quiet window costs one free 304 per page (one page, unless more than a
  hundred items changed within it).
- The window reaches back at least :attr:`IssueFeed.overlap_s` before the
  newest ``updated_at`` seen, so an update that GitHub dates a little before
  one it had already shown, or that lands while a cold read is still paging, is
  read. It keeps its start until it spans twice that, so the request stays the
  same (and answers 304) after a change has been read.
- Items are kept only while they matter: candidates, carriers of a watched
  label, and issues the caller asked for by number (the tracked ones).

Deleted and transferred issues move no ``updated_at``: a tracked one is found
gone the next time the daemon starts (its number answers 404 or 410).

What the feed keeps is saved and resumed as plain data through
:mod:`orchestrator.github.feed_state`.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import urlencode

from orchestrator.github.client import GitHubClient
from orchestrator.github.errors import GitHubError
from orchestrator.github.feed_state import (
    FeedItem,
    Pages,
    as_list,
    belongs,
    export_state,
    format_time,
    parse_time,
    read_state,
)
from orchestrator.github.retry import header
from orchestrator.logs import get_logger

log = get_logger(__name__)

_NEXT_LINK = re.compile(r'<([^>]+)>;\s*rel="next"')

# How far before the newest update seen each incremental read reaches back (seconds).
DEFAULT_OVERLAP_S = 120.0


@dataclass(frozen=True)
class FeedRead:
    """What one refresh cost and found."""

    cold: bool
    requests: int
    changed: int


class IssueFeed:
    """The open issues and pull requests of one repository that the daemon needs to see.

    Thread-safe; the tick thread refreshes it, any thread may read it. Each call
    takes the client to read with, since clients belong to threads.
    """

    def __init__(
        self,
        repo: str,
        *,
        required_labels: frozenset[str],
        overlap_s: float = DEFAULT_OVERLAP_S,
        monotonic: Callable[[], float] = time.monotonic,
        candidates: bool = True,
    ) -> None:
        self.repo = repo
        self.required_labels = required_labels
        # Whether the repository's issues are the candidates (not when they come from another
        # tracker: then the feed keeps the carriers of the watched labels alone).
        self.has_candidates = candidates
        self.overlap_s = overlap_s
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._items: dict[int, FeedItem] = {}
        # Numbers asked for by the caller: kept whatever their labels.
        self._pinned: set[int] = set()
        self._watched: frozenset[str] = frozenset()
        self._wanted: frozenset[str] = frozenset()
        self._newest: str | None = None
        self._since: str | None = None
        # The newest updated_at read of every item the feed read since it went warm, and the
        # numbers whose updated_at moved since the last call to changes().
        self._seen: dict[int, str] = {}
        self._moved: set[int] = set()
        # The newest updated_at of the first full read: what the feed started from.
        self._started: str | None = None
        # The incremental window's pages: URL -> (ETag, next page's URL).
        self._memo: Pages = {}
        # Grows with every change of what an export holds (see revision).
        self._revision = 0

    # ------------------------------------------------------- saved and resumed

    @property
    def revision(self) -> int:
        """A number that grows whenever what :meth:`export` returns changes."""
        with self._lock:
            return self._revision

    def export(self) -> dict[str, Any] | None:
        """The feed's state as plain data (None while cold), for :meth:`restore`."""
        with self._lock:
            if self._newest is None:
                return None
            return export_state(
                repo=self.repo,
                required_labels=self.required_labels,
                watched=self._watched,
                newest=self._newest,
                since=self._since,
                pages=self._memo,
                pinned=self._pinned,
                items=self._items.values(),
            )

    def restore(self, state: dict[str, Any]) -> bool:
        """Take a state :meth:`export` made, if it belongs to this feed (same repository
        and required labels) and the feed is still cold; the next refresh then reads the
        updates since it, not every issue. ValueError names what is malformed."""
        if not belongs(state, self.repo, self.required_labels):
            return False
        saved = read_state(state)
        with self._lock:
            if self._newest is not None:
                return False
            self._items = saved.items
            self._pinned = saved.pinned
            self._watched = saved.watched
            self._newest = saved.newest
            # An item the feed did not keep moved only if it changed after the save.
            self._started = saved.newest
            self._seen = {number: item.updated_at for number, item in saved.items.items()}
            self._memo = saved.pages if saved.since is not None else {}
            self._since = saved.since
            self._revision += 1
        return True

    # ----------------------------------------------------------------- reads

    @property
    def warm(self) -> bool:
        with self._lock:
            return self._newest is not None

    def candidates(self) -> list[FeedItem]:
        """Open issues (not pull requests) carrying every required label, oldest first."""
        if not self.has_candidates:
            return []
        with self._lock:
            found = [
                item
                for item in self._items.values()
                if item.is_open and not item.is_pull_request and self.required_labels <= item.labels
            ]
        return sorted(found, key=lambda item: item.number)

    def carriers(self, label: str) -> frozenset[int]:
        """Open issues and pull requests carrying ``label``."""
        with self._lock:
            return frozenset(
                number
                for number, item in self._items.items()
                if item.is_open and label in item.labels
            )

    def changes(self) -> set[int]:
        """Issues and pull requests whose ``updated_at`` moved since the last call (any of
        them, kept or not). A cold read moves nothing: it is where the feed starts from."""
        with self._lock:
            moved, self._moved = self._moved, set()
        return moved

    def updated_at(self, number: int) -> str | None:
        """The newest ``updated_at`` the feed read of ``number`` (None: never read)."""
        with self._lock:
            return self._seen.get(number)

    def known(self, numbers: Iterable[int]) -> dict[int, FeedItem]:
        """The items among ``numbers`` the feed holds."""
        with self._lock:
            return {n: self._items[n] for n in numbers if n in self._items}

    def keep(self, client: GitHubClient, numbers: Iterable[int]) -> dict[int, FeedItem]:
        """Keep exactly ``numbers`` (the tracked issues) whatever their labels, reading the
        ones the feed never saw by number; the ones kept before and not now may be dropped.

        Numbers that answer 404 or 410 (deleted, transferred) are left out.
        """
        wanted = set(numbers)
        with self._lock:
            if wanted != self._pinned:
                self._pinned = set(wanted)
                self._revision += 1
            for number in [n for n, item in self._items.items() if not self._matters(item)]:
                del self._items[number]
                self._revision += 1
            unknown = sorted(n for n in wanted if n not in self._items)
        self._take(self._read_numbers(client, unknown).values())
        return self.known(wanted)

    # --------------------------------------------------------------- refresh

    def watch(self, labels: Iterable[str]) -> None:
        """Keep the carriers of ``labels`` too (a change makes the next refresh a full read)."""
        with self._lock:
            self._wanted = frozenset(labels)

    def refresh(self, client: GitHubClient) -> FeedRead:
        """Bring the feed up to date: a full read the first time (or when the watched
        labels changed), one conditional page of recent updates afterwards."""
        with self._lock:
            watched = self._wanted
            cold = self._newest is None or watched != self._watched
        if cold:
            return self._cold(client, watched)
        return self._incremental(client)

    def _cold(self, client: GitHubClient, watched: frozenset[str]) -> FeedRead:
        started = self._monotonic()
        requests = 0
        found: dict[int, FeedItem] = {}
        params: dict[str, Any] = {"state": "open", "sort": "created", "direction": "asc"}
        if self.required_labels:
            params["labels"] = ",".join(sorted(self.required_labels))
        lists = [params] if self.has_candidates else []
        lists += [{"state": "open", "labels": label} for label in sorted(watched)]
        for list_params in lists:
            for data in self._pages(client, list_params, conditional=True):
                requests += 1
                for item in map(FeedItem.of, data):
                    found[item.number] = item
        with self._lock:
            pinned = sorted(n for n in self._pinned if n not in found)
        # The kept issues the lists did not bring are read again by number (free while unchanged).
        for number, item in self._read_numbers(client, pinned).items():
            requests += 1
            found[number] = item
        newest = max((item.updated_at for item in found.values()), default=None)
        if newest is None:
            # Nothing to keep (every issue closed, say): the repository's latest update
            # still dates the next read, or every tick would read everything again.
            requests += 1
            latest = as_list(
                client.request(
                    "GET",
                    f"/repos/{self.repo}/issues",
                    params={"state": "all", "sort": "updated", "direction": "desc", "per_page": 1},
                    conditional=True,
                ).data
            )
            newest = str(FeedItem.of(latest[0]).updated_at) if latest else None
        took = self._monotonic() - started
        with self._lock:
            self._watched = watched
            self._items = found
            for number, item in found.items():
                if self._seen.get(number, "") < item.updated_at:
                    self._seen[number] = item.updated_at
            # A cold read of an empty repository stays cold: nothing dates the next read.
            if newest is not None:
                # Whatever changed while the lists were paging is read again next time.
                self._newest = format_time(parse_time(newest) - timedelta(seconds=took))
                if self._started is None:
                    self._started = newest
            self._memo = {}
            self._since = None
            self._revision += 1
        log.info("issue_feed_cold", repo=self.repo, items=len(found), requests=requests)
        return FeedRead(cold=True, requests=requests, changed=len(found))

    def _incremental(self, client: GitHubClient) -> FeedRead:
        with self._lock:
            assert self._newest is not None
            newest = parse_time(self._newest)
            # The window keeps its start (and so its URLs and ETags: 304s while quiet) until
            # it spans twice the overlap; then it starts again one overlap before the newest.
            since = self._since
            if since is None or newest - parse_time(since) > timedelta(seconds=2 * self.overlap_s):
                since = format_time(newest - timedelta(seconds=self.overlap_s))
            memo = self._memo if since == self._since else {}
        query = urlencode(
            {"state": "all", "since": since, "sort": "updated", "direction": "desc"}
            | {"per_page": 100}
        )
        # Every page is asked, each conditional on its last answer: updates within one
        # second are ordered by id, so a changed item need not come to the first page.
        url: str | None = f"/repos/{self.repo}/issues?{query}"
        requests = 0
        changed: list[FeedItem] = []
        pages: Pages = {}
        while url is not None and url not in pages:
            known = memo.get(url)
            headers = {"If-None-Match": known[0]} if known and known[0] else None
            page = client.request("GET", url, headers=headers, ok=(200, 304))
            requests += 1
            if page.status == 304 and known is not None:
                pages[url] = known
            else:
                changed.extend(FeedItem.of(data) for data in as_list(page.data))
                link = _NEXT_LINK.search(header(page.headers, "link") or "")
                pages[url] = (header(page.headers, "etag"), link.group(1) if link else None)
            url = pages[url][1]
        self._take(changed)
        with self._lock:
            if since != self._since or pages != self._memo:
                self._revision += 1
            self._since = since
            self._memo = pages
        return FeedRead(cold=False, requests=requests, changed=len(changed))

    def _take(self, items: Iterable[FeedItem]) -> None:
        with self._lock:
            for item in items:
                known = self._items.get(item.number)
                if known is not None and known.updated_at > item.updated_at:
                    continue  # an older copy (a page read before a later one)
                seen = self._seen.get(item.number)
                if seen is None or seen < item.updated_at:
                    self._seen[item.number] = item.updated_at
                    # An item first seen moved only if it changed after the feed started
                    # watching (a warm restart's first window holds older updates too).
                    if seen is not None or (
                        self._started is not None and item.updated_at > self._started
                    ):
                        self._moved.add(item.number)
                if self._matters(item):
                    if known != item:
                        self._items[item.number] = item
                        self._revision += 1
                elif known is not None:
                    del self._items[item.number]
                    self._revision += 1
                if self._newest is not None and item.updated_at > self._newest:
                    self._newest = item.updated_at
                    self._revision += 1

    def _matters(self, item: FeedItem) -> bool:
        if item.number in self._pinned:
            return True
        if not item.is_open:
            return False
        if self.has_candidates and not item.is_pull_request and self.required_labels <= item.labels:
            return True
        return bool(item.labels & self._watched)

    def _read_numbers(self, client: GitHubClient, numbers: Iterable[int]) -> dict[int, FeedItem]:
        """Issues read one by one; numbers that answer 404 or 410 are left out."""
        found: dict[int, FeedItem] = {}
        for number in numbers:
            try:
                data = client.request(
                    "GET", f"/repos/{self.repo}/issues/{number}", conditional=True
                ).data
            except GitHubError as error:
                if error.status in (404, 410):
                    continue
                raise
            found[number] = FeedItem.of(data)
        return found

    def _pages(
        self, client: GitHubClient, params: dict[str, Any], *, conditional: bool
    ) -> Iterable[list[Any]]:
        page = client.request(
            "GET",
            f"/repos/{self.repo}/issues",
            params={"per_page": 100, **params},
            conditional=conditional,
        )
        yield as_list(page.data)
        link = _NEXT_LINK.search(header(page.headers, "link") or "")
        while link:
            page = client.request("GET", link.group(1), conditional=conditional)
            yield as_list(page.data)
            link = _NEXT_LINK.search(header(page.headers, "link") or "")
