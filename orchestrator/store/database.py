"""The store's entry point: one engine, one session factory, and the repositories."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from sqlalchemy import Engine, text
from sqlalchemy.orm import Session, sessionmaker

from orchestrator.store.claims import ClaimStore
from orchestrator.store.engine import describe_url, is_sqlite, make_engine
from orchestrator.store.feeds import FeedStore
from orchestrator.store.fencing import DATABASE_CLOCK, STORE_CLOCK, StoreClock
from orchestrator.store.http_cache import HttpCache
from orchestrator.store.issues import IssueStore
from orchestrator.store.leases import LeaseStore
from orchestrator.store.migrate import ensure_schema
from orchestrator.store.outbox import Outbox
from orchestrator.store.replicas import ReplicaStore
from orchestrator.store.runs import RunStore


@dataclass
class Database:
    """A connected store. Build it with :meth:`open`; close it with :meth:`close`."""

    url: str
    engine: Engine
    sessions: sessionmaker[Session]
    issues: IssueStore = field(init=False)
    outbox: Outbox = field(init=False)
    runs: RunStore = field(init=False)
    leases: LeaseStore = field(init=False)
    http_cache: HttpCache = field(init=False)
    claims: ClaimStore = field(init=False)
    replicas: ReplicaStore = field(init=False)
    feeds: FeedStore = field(init=False)

    def __post_init__(self) -> None:
        self.issues = IssueStore(self.sessions)
        self.outbox = Outbox(self.sessions)
        self.runs = RunStore(self.sessions)
        self.leases = LeaseStore(self.sessions)
        self.http_cache = HttpCache(self.sessions)
        self.claims = ClaimStore(self.sessions)
        self.replicas = ReplicaStore(self.sessions)
        self.feeds = FeedStore(self.sessions)

    @classmethod
    def open(
        cls,
        url: str,
        *,
        migrate: bool = True,
        clock: StoreClock = DATABASE_CLOCK,
        upgrade_command: str | None = None,
    ) -> Database:
        """Connect; with ``migrate``, upgrade SQLite or refuse a PostgreSQL schema behind.

        ``clock`` judges leases, claims, presence and runs: the database's own on
        PostgreSQL, the daemon's on SQLite (:class:`~orchestrator.store.fencing.DatabaseClock`).
        ``upgrade_command`` is what a refusal tells to run.
        """
        engine = make_engine(url)
        if migrate:
            try:
                ensure_schema(url, engine, upgrade_command=upgrade_command)
            except BaseException:
                engine.dispose()
                raise
        sessions = sessionmaker(engine, expire_on_commit=False, info={STORE_CLOCK: clock})
        return cls(url=url, engine=engine, sessions=sessions)

    @property
    def is_sqlite(self) -> bool:
        return is_sqlite(self.url)

    @property
    def display_url(self) -> str:
        return describe_url(self.url)

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A session in one transaction: committed on success, rolled back on error."""
        with self.sessions.begin() as session:
            yield session

    def ping(self) -> bool:
        """Whether the database answers a trivial query."""
        try:
            with self.engine.connect() as conn:
                conn.execute(text("SELECT 1"))
            return True
        except Exception:
            return False

    def close(self) -> None:
        self.engine.dispose()
