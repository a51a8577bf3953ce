"""A store clock for tests that move time by hand, on PostgreSQL as on SQLite."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.orm import Session


class CallerClock:
    """Judges leases and claims by the ``now`` each call passes, never the server's clock:
    a test then plays every expiry exactly (SQLite's production clock does the same)."""

    def now(self, session: Session, caller_now: datetime) -> datetime:
        return caller_now


CALLER_CLOCK = CallerClock()
