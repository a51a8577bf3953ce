"""The issue feed outlives the process: the polling leader saves it, a start resumes it.

Without it, every start (or takeover) reads every open labelled issue again: one
page of 100 per request, about 105 requests and several seconds at 10,000 issues,
each billed unless its answer is an unchanged 304. With it, a start reads one
conditional page of the updates since the save (plus the pages of what changed
while no replica polled).

The state is saved after a whole tick when it changed, at most every
``every_s`` seconds, and at shutdown. Any state is safe to resume: the first
read after it asks for every update since its newest ``updated_at``, so an older
save costs more pages, never a missed change. A save that cannot be read (another
version's, damaged) is logged and the feed starts cold.
"""

from __future__ import annotations

import json
import time
import zlib
from collections.abc import Callable
from datetime import datetime

from orchestrator.github.feed import IssueFeed
from orchestrator.logs import get_logger
from orchestrator.store.feeds import FeedStore

log = get_logger(__name__)

# Seconds between two saves of a changing feed.
SAVE_EVERY_S = 60.0
# A saved state larger than this once decompressed is not read (about 40 times 10,000 items).
MAX_STATE_BYTES = 64 * 1024 * 1024


def encode(state: dict[str, object]) -> bytes:
    return zlib.compress(json.dumps(state, separators=(",", ":")).encode(), 6)


def decode(blob: bytes) -> dict[str, object]:
    """The state in ``blob``; ValueError says why it cannot be read."""
    inflater = zlib.decompressobj()
    try:
        raw = inflater.decompress(blob, MAX_STATE_BYTES)
    except zlib.error as error:
        raise ValueError(f"not compressed data: {error}") from None
    if inflater.unconsumed_tail:
        raise ValueError(f"larger than {MAX_STATE_BYTES} bytes once decompressed")
    try:
        state = json.loads(raw)
    except (UnicodeDecodeError, ValueError) as error:
        raise ValueError(f"not JSON: {error}") from None
    if not isinstance(state, dict):
        raise ValueError("not a JSON object")
    return state


class FeedKeeper:
    """Resumes a cold feed from the store and saves a changed one."""

    def __init__(
        self,
        store: FeedStore,
        *,
        clock: Callable[[], datetime],
        every_s: float = SAVE_EVERY_S,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._store = store
        self._clock = clock
        self._every_s = every_s
        self._monotonic = monotonic
        # The feed a resume was tried for (once per feed object), and what was saved last.
        self._tried: IssueFeed | None = None
        self._saved: tuple[IssueFeed, int] | None = None
        self._saved_at: float | None = None

    def resume(self, feed: IssueFeed) -> bool:
        """Before a tick: give a cold feed the saved state, once per feed."""
        if self._tried is feed or feed.warm:
            return False
        self._tried = feed
        found = self._store.load(feed.repo)
        if found is None:
            return False
        blob, saved_at = found
        try:
            resumed = feed.restore(decode(blob))
        except ValueError as error:
            log.warning(
                "issue_feed_unusable",
                reason=f"the saved issue feed of {feed.repo} cannot be read: {error}",
                action="the feed is read again in full",
            )
            return False
        if resumed:
            self._saved = (feed, feed.revision)
            self._saved_at = self._monotonic()
            age_s = max(0.0, (self._clock() - saved_at).total_seconds())
            log.info("issue_feed_resumed", saved_at=saved_at.isoformat(), age_s=round(age_s))
        return resumed

    def save(self, feed: IssueFeed, *, force: bool = False) -> bool:
        """After a whole tick (or at shutdown with ``force``): save the feed if it changed
        since the last save, and the last save is old enough."""
        revision = feed.revision
        if self._saved is not None and self._saved[0] is feed and self._saved[1] == revision:
            return False
        now = self._monotonic()
        if not force and self._saved_at is not None and now - self._saved_at < self._every_s:
            return False
        state = feed.export()
        if state is None:
            return False
        blob = encode(state)
        self._store.save(feed.repo, blob, now=self._clock())
        self._saved = (feed, revision)
        self._saved_at = now
        log.debug("issue_feed_saved", items=len(state.get("items") or ()), size=len(blob))
        return True
