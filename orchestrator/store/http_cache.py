"""The HTTP cache behind conditional requests: URL -> ETag, Last-Modified, body.

The database keeps every answer; a bounded in-memory copy in front of it (least
recently used first out, by size) answers the lookups of a tick without a
query each. Writes go to the database first, then to memory. Reads of several
URLs take one query per :data:`BATCH` keys, and :meth:`HttpCache.warm` fills
the memory in one query at start-up.

Several replicas share the table, so the memory may hold an older answer than
the database for a URL another replica refreshed. That is safe: an ETag and
the body stored with it always belong together, so an older pair only costs a
200 where the newer one would have had a 304.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy import delete, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session, sessionmaker

from orchestrator.store.models import HttpCacheEntry

# Keys per query of a batched read (well under SQLite's and PostgreSQL's parameter limits).
BATCH = 500
# The memory's bound by default, in bytes of bodies and URLs.
DEFAULT_MEMORY_BYTES = 64 << 20
# What an entry costs beyond its strings (the objects and the LRU's links), roughly.
ENTRY_OVERHEAD_BYTES = 200


@dataclass(frozen=True, slots=True)
class CachedResponse:
    """What was stored for a URL after its last 200 answer."""

    url: str
    etag: str | None
    last_modified: str | None
    body: str


class Answer(Protocol):
    """An answer to store: :class:`CachedResponse` and the GitHub client's entries fit."""

    @property
    def url(self) -> str: ...

    @property
    def etag(self) -> str | None: ...

    @property
    def last_modified(self) -> str | None: ...

    @property
    def body(self) -> str: ...


def entry_size(entry: Answer) -> int:
    """The bytes an entry counts for against the memory bound (characters, near enough)."""
    return (
        len(entry.body)
        + len(entry.url)
        + len(entry.etag or "")
        + len(entry.last_modified or "")
        + ENTRY_OVERHEAD_BYTES
    )


class HttpCache:
    """Read and write cached answers: the database, behind a bounded memory. Thread-safe."""

    def __init__(
        self, sessions: sessionmaker[Session], *, memory_bytes: int = DEFAULT_MEMORY_BYTES
    ) -> None:
        self._sessions = sessions
        self.memory_bytes = memory_bytes
        self._memory: OrderedDict[str, CachedResponse] = OrderedDict()
        self._held = 0
        self._lock = threading.Lock()

    @property
    def held(self) -> tuple[int, int]:
        """What the memory holds now: entries, and bytes counted as :func:`entry_size` does."""
        with self._lock:
            return len(self._memory), self._held

    # ------------------------------------------------------------------ reads

    def get(self, url: str) -> CachedResponse | None:
        return self.get_many((url,)).get(url)

    def get_many(self, urls: Iterable[str]) -> dict[str, CachedResponse]:
        """The stored answers of those URLs that have one; one query per :data:`BATCH` misses."""
        found: dict[str, CachedResponse] = {}
        missing: list[str] = []
        with self._lock:
            for url in urls:
                entry = self._memory.get(url)
                if entry is not None:
                    self._memory.move_to_end(url)
                    found[url] = entry
                else:
                    missing.append(url)
        unique = list(dict.fromkeys(missing))
        for start in range(0, len(unique), BATCH):
            read = self._read(unique[start : start + BATCH])
            found.update(read)
            with self._lock:
                for entry in read.values():
                    # A concurrent put is newer than this read: it stays.
                    if entry.url not in self._memory:
                        self._remember(entry)
        return found

    def warm(self) -> int:
        """Fill the memory from the database in one query, newest first; the entries read."""
        columns = _columns()
        picked: list[CachedResponse] = []
        room = self.memory_bytes
        with self._sessions() as session:
            rows = session.execute(
                select(*columns).order_by(HttpCacheEntry.updated_at.desc())
            ).yield_per(BATCH)
            for row in rows:
                entry = CachedResponse(*row)
                room -= entry_size(entry)
                if room < 0:
                    break
                picked.append(entry)
        with self._lock:
            # Oldest first, so the newest end up the most recently used.
            for entry in reversed(picked):
                if entry.url not in self._memory:
                    self._remember(entry)
        return len(picked)

    # ----------------------------------------------------------------- writes

    def put(
        self,
        url: str,
        *,
        etag: str | None,
        last_modified: str | None,
        body: str,
        now: datetime,
    ) -> None:
        self.put_many([CachedResponse(url, etag, last_modified, body)], now=now)

    def put_many(self, entries: Iterable[Answer], *, now: datetime) -> None:
        """Store answers in one transaction (the last one wins for a URL given twice)."""
        latest = {
            entry.url: CachedResponse(entry.url, entry.etag, entry.last_modified, entry.body)
            for entry in entries
        }
        if not latest:
            return
        values = [
            {
                "url": entry.url,
                "etag": entry.etag,
                "last_modified": entry.last_modified,
                "body": entry.body,
                "updated_at": now,
            }
            for entry in latest.values()
        ]
        with self._sessions.begin() as session:
            upsert = _upsert(session)
            for start in range(0, len(values), BATCH):
                session.execute(upsert, values[start : start + BATCH])
        with self._lock:
            for entry in latest.values():
                self._remember(entry)

    def delete(self, url: str) -> None:
        with self._sessions.begin() as session:
            session.execute(delete(HttpCacheEntry).where(HttpCacheEntry.url == url))
        with self._lock:
            self._forget(url)

    # ----------------------------------------------------------------- memory

    def _read(self, urls: Sequence[str]) -> dict[str, CachedResponse]:
        with self._sessions() as session:
            rows = session.execute(select(*_columns()).where(HttpCacheEntry.url.in_(urls)))
            return {row.url: CachedResponse(*row) for row in rows}

    def _remember(self, entry: CachedResponse) -> None:
        """Keep ``entry`` as the most recent, then drop the least recent ones over the bound."""
        self._forget(entry.url)
        size = entry_size(entry)
        if size > self.memory_bytes:
            return
        self._memory[entry.url] = entry
        self._held += size
        while self._held > self.memory_bytes:
            _, dropped = self._memory.popitem(last=False)
            self._held -= entry_size(dropped)

    def _forget(self, url: str) -> None:
        old = self._memory.pop(url, None)
        if old is not None:
            self._held -= entry_size(old)


def _columns() -> tuple[Any, ...]:
    return (
        HttpCacheEntry.url,
        HttpCacheEntry.etag,
        HttpCacheEntry.last_modified,
        HttpCacheEntry.body,
    )


def _upsert(session: Session) -> Any:
    """``INSERT ... ON CONFLICT (url) DO UPDATE`` in the session's dialect."""
    dialect = session.get_bind().dialect.name
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    statement = insert(HttpCacheEntry)
    excluded = statement.excluded
    return statement.on_conflict_do_update(
        index_elements=[HttpCacheEntry.url],
        set_={
            "etag": excluded.etag,
            "last_modified": excluded.last_modified,
            "body": excluded.body,
            "updated_at": excluded.updated_at,
        },
    )
