"""The HTTP cache behind conditional requests: URL -> ETag, Last-Modified, body."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session, sessionmaker

from orchestrator.store.models import HttpCacheEntry


@dataclass(frozen=True)
class CachedResponse:
    """What was stored for a URL after its last 200 answer."""

    url: str
    etag: str | None
    last_modified: str | None
    body: str


class HttpCache:
    """Read and write cached answers."""

    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self._sessions = sessions

    def get(self, url: str) -> CachedResponse | None:
        with self._sessions() as session:
            row = session.get(HttpCacheEntry, url)
            if row is None:
                return None
            return CachedResponse(row.url, row.etag, row.last_modified, row.body)

    def put(
        self,
        url: str,
        *,
        etag: str | None,
        last_modified: str | None,
        body: str,
        now: datetime,
    ) -> None:
        with self._sessions.begin() as session:
            session.merge(
                HttpCacheEntry(
                    url=url, etag=etag, last_modified=last_modified, body=body, updated_at=now
                )
            )

    def delete(self, url: str) -> None:
        with self._sessions.begin() as session:
            row = session.get(HttpCacheEntry, url)
            if row is not None:
                session.delete(row)
