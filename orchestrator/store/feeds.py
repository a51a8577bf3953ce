"""Saved issue feeds: one row per repository, written by the polling leader."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.orm import Session, sessionmaker

from orchestrator.store.models import FeedSnapshot


class FeedStore:
    """Save and load a repository's feed state (opaque bytes to the store)."""

    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self._sessions = sessions

    def load(self, repo: str) -> tuple[bytes, datetime] | None:
        """The saved state and when it was saved, or None."""
        with self._sessions() as session:
            row = session.get(FeedSnapshot, repo)
            return (bytes(row.state), row.saved_at) if row is not None else None

    def save(self, repo: str, state: bytes, *, now: datetime) -> None:
        with self._sessions.begin() as session:
            row = session.get(FeedSnapshot, repo)
            if row is None:
                session.add(FeedSnapshot(repo=repo, state=state, saved_at=now))
            else:
                row.state = state
                row.saved_at = now

    def forget(self, repo: str) -> None:
        with self._sessions.begin() as session:
            row = session.get(FeedSnapshot, repo)
            if row is not None:
                session.delete(row)
