"""Rendered answers of read routes, kept while the emulator's state does not change.

A REST route whose answer depends only on the state (not on the clock) is
marked ``cacheable``; its rendered body and ETag are kept under the request
(path, query, base URL, caller) and the state's ``version``, so asking again
for an unchanged list page, or sending its ETag back for a 304, costs no
rendering. Any change to the state moves ``version`` on and retires every
entry. The cache holds at most ``budget`` bytes of bodies, oldest use first out.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass, field

# Bytes of rendered bodies one emulator keeps (a page of 100 issues is about 400 KB).
DEFAULT_BUDGET = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Rendered:
    """One answer ready to send: status, JSON body bytes (None: no body), headers, ETag."""

    status: int
    payload: bytes | None
    headers: dict[str, str] = field(default_factory=dict)
    etag: str | None = None


class RenderCache:
    """Answers by request key, each valid for the one state version it was rendered at."""

    def __init__(self, budget: int = DEFAULT_BUDGET) -> None:
        self.budget = budget
        self._entries: OrderedDict[Hashable, tuple[int, Rendered]] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    def get(self, key: Hashable, version: int) -> Rendered | None:
        """The answer kept for ``key`` at ``version``, or None."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry[0] != version:
                return None
            self._entries.move_to_end(key)
            return entry[1]

    def put(self, key: Hashable, version: int, rendered: Rendered) -> None:
        """Keep ``rendered`` for ``key`` at ``version`` (replacing an older answer)."""
        size = len(rendered.payload or b"")
        if size > self.budget:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._size -= len(old[1].payload or b"")
            self._entries[key] = (version, rendered)
            self._size += size
            while self._size > self.budget:
                _key, (_version, dropped) = self._entries.popitem(last=False)
                self._size -= len(dropped.payload or b"")
