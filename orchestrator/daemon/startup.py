"""The daemon's start-up steps that come before its parts: the policy, the database,
and what a previous life left behind.

Each step refuses with a :class:`DaemonError` whose message says what to
change; nothing is left open behind a refusal.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy.engine import make_url

from orchestrator.daemon.background import BackgroundJobs
from orchestrator.daemon.descriptors import DescriptorLimit
from orchestrator.daemon.instance_lock import InstanceLock
from orchestrator.daemon.poller import Poller, PollerParts
from orchestrator.daemon.recovery import RecoveryReport, recover_after_restart
from orchestrator.daemon.systemd import SystemdNotifier
from orchestrator.daemon.tick_requests import TickRequests
from orchestrator.effects.switches import SwitchBoard
from orchestrator.github.accounting import Accounting
from orchestrator.github.credentials import TokenProvider
from orchestrator.logs import get_logger, register_secret
from orchestrator.repos.cluster import ClusterRole
from orchestrator.repos.feed_keeper import FeedKeeper
from orchestrator.repos.parts import AssemblyError, Shared
from orchestrator.repos.repo_set import RepoSet
from orchestrator.store.database import Database
from orchestrator.store.engine import choose_database, describe_url, is_sqlite, sqlite_path
from orchestrator.store.migrate import SchemaAheadError, SchemaBehindError
from orchestrator.store.outage import DatabaseHealth, is_unreachable, short_message
from orchestrator.store.records import RecordStore
from orchestrator.store.sqlite_faults import StorageFault, describe_storage_error
from orchestrator.turns.claimer import TurnClaimer
from orchestrator.turns.pool import WorkerPool
from orchestrator.wiring.access import GitHubAccess
from orchestrator.wiring.credentials import policy_credentials
from orchestrator.wiring.policy_view import PolicyView, WiringError, first_view
from orchestrator.workflow import PolicyError, PolicySource

if TYPE_CHECKING:
    from orchestrator.daemon.daemon import Daemon

log = get_logger(__name__)


class DaemonError(RuntimeError):
    """The daemon cannot start; the message says what to change."""


@dataclass(frozen=True)
class Store:
    """The open database, and the single-daemon lock held on its file (SQLite)."""

    db: Database
    lock: InstanceLock | None

    def close(self) -> None:
        try:
            self.db.close()
        finally:
            if self.lock is not None:
                self.lock.release()


def open_store(url: str, *, upgrade_command: str | None = None) -> Store:
    """Lock the SQLite file (one daemon per file), then open and migrate the database.

    Every failure is one line: a schema this release cannot run on (with
    ``upgrade_command`` when it is behind), a server that cannot be reached or
    refuses the login, a SQLite file that cannot be used.
    """
    lock: InstanceLock | None = None
    if is_sqlite(url):
        database = make_url(url).database
        if database and database != ":memory:":
            lock = InstanceLock(Path(database))
            try:
                lock.acquire()
            except StorageFault as error:
                raise AssemblyError(str(error)) from None
    try:
        return Store(Database.open(url, upgrade_command=upgrade_command), lock)
    except Exception as error:
        if lock is not None:
            lock.release()
        if isinstance(error, SchemaBehindError | SchemaAheadError):
            raise AssemblyError(str(error)) from None
        cause = short_message(error) if is_unreachable(error) else str(error)
        message = f"cannot open the database {describe_url(url)}: {cause}"
        raise AssemblyError(describe_storage_error(error, sqlite_path(url)) or message) from None


@dataclass(frozen=True)
class LoadedPolicy:
    """The policy file, as the first repository sees it, and the credential it names."""

    source: PolicySource
    view: PolicyView
    credentials: TokenProvider


def load_policy(path: Path, env: Mapping[str, str] | None) -> LoadedPolicy:
    """Read and check the policy; its server tokens are never logged from here on."""
    try:
        source = PolicySource(path, env=env)
    except PolicyError as error:
        raise DaemonError(f"invalid policy:\n{error}") from None
    try:
        view = first_view(source.current)
        credentials = policy_credentials(view.policy)
    except WiringError as error:
        raise DaemonError(str(error)) from None
    register_secret(view.policy.server.token)
    register_secret(view.policy.server.metrics_token)
    return LoadedPolicy(source, view, credentials)


def open_database(flag: str | None, loaded: LoadedPolicy, policy_path: Path) -> tuple[Store, str]:
    """The database ``--db``, the environment or the policy names, locked (SQLite) and
    migrated, and its URL."""
    database = choose_database(flag, loaded.view.policy.database.url, policy_path)
    try:
        store = open_store(database.url, upgrade_command=database.command("upgrade"))
        return store, database.url
    except AssemblyError as error:
        raise DaemonError(str(error)) from None


def log_descriptors(limit: DescriptorLimit) -> None:
    log.info(
        "descriptor_limit",
        soft=limit.soft,
        hard=limit.hard,
        started_with=limit.started_with,
        web_budget=limit.web_budget,
    )


def recover(
    store: Store,
    records: RecordStore,
    github: GitHubAccess,
    *,
    clock: Callable[[], datetime],
    replica_id: str,
) -> tuple[RecoveryReport, int]:
    """Settle what a crash left behind; hand back the turn claims this replica held.

    Returns the recovery's report and how many claims were released.
    """
    db = store.db
    replica = None if db.is_sqlite else replica_id
    report = recover_after_restart(
        db=db, records=records, github=github, now=clock, replica_id=replica
    )
    # A starting process holds no turn: what a previous life of this replica (or, on
    # SQLite, of the only daemon) still holds is handed back to be claimed again.
    released = db.claims.release(replica)
    if db.is_sqlite:
        # The file lock makes this the only daemon: leases of a killed one are void.
        db.leases.clear()
    return report, released


@dataclass(frozen=True)
class Identity:
    """Who this replica is, and what its parts are made with."""

    replica_id: str
    lease_s: float
    clock: Callable[[], datetime]
    env: Mapping[str, str] | None
    accounting: Accounting
    health: DatabaseHealth


@dataclass(frozen=True)
class DaemonHooks:
    """What the daemon's parts call back into the daemon for."""

    request_tick: Callable[[], object]
    claim_ready: Callable[[], object]
    stopping: Callable[[], bool]
    bind: Callable[[], None]
    # Set once systemd has heard READY=1.
    ready: threading.Event
    notifier: SystemdNotifier


@dataclass(frozen=True)
class DaemonParts:
    """The daemon's parts, made once at start-up; the daemon holds them as they are."""

    cluster: ClusterRole
    feeds: FeedKeeper
    records: RecordStore
    switches: SwitchBoard
    pool: WorkerPool
    claimer: TurnClaimer
    repo_set: RepoSet
    poller: Poller
    jobs: BackgroundJobs


def assemble(
    db: Database,
    loaded: LoadedPolicy,
    *,
    db_url: str,
    identity: Identity,
    requests: TickRequests,
    hooks: DaemonHooks,
    freeze_heap: bool,
) -> DaemonParts:
    """The daemon's shared parts, each repository's (checked against GitHub), the poller
    and the other jobs."""
    clock, policy = identity.clock, loaded.view.policy
    cluster = ClusterRole(db, replica_id=identity.replica_id, lease_s=identity.lease_s, clock=clock)
    records = RecordStore(db)
    switches = SwitchBoard(loaded.view.kill_switch_file)
    pool = WorkerPool(policy.agent.max_concurrent_agents, clock=clock)
    pool.on_finished = hooks.request_tick
    claimer = TurnClaimer(
        db=db,
        records=records,
        pool=pool,
        replica_id=identity.replica_id,
        lease_ttl=lambda: cluster.ttl,
        clock=clock,
    )
    shared = Shared(
        db=db,
        records=records,
        switches=switches,
        pool=pool,
        accounting=identity.accounting,
        health=identity.health,
        replica_id=identity.replica_id,
        clock=clock,
    )
    repo_set = RepoSet(
        loaded.source,
        shared,
        view=loaded.view,
        credentials=loaded.credentials,
        claimer=claimer,
        cluster=cluster,
        db_url=db_url,
        env=identity.env,
    )
    repo_set.open()
    feeds = FeedKeeper(db.feeds, clock=clock)
    poller_parts = PollerParts(
        repos=repo_set,
        cluster=cluster,
        db=db,
        feeds=feeds,
        health=identity.health,
        accounting=identity.accounting,
        clock=clock,
        start_turns=hooks.claim_ready,
        stopping=hooks.stopping,
        bind=hooks.bind,
    )
    jobs = BackgroundJobs(
        db=db,
        health=identity.health,
        claimer=claimer,
        cluster=cluster,
        repos=repo_set,
        notifier=hooks.notifier,
        ready=hooks.ready,
        request_tick=hooks.request_tick,
        claim_ready=hooks.claim_ready,
        stopping=hooks.stopping,
        bind=hooks.bind,
    )
    pool.on_first_event = jobs.first_event
    return DaemonParts(
        cluster=cluster,
        feeds=feeds,
        records=records,
        switches=switches,
        pool=pool,
        claimer=claimer,
        repo_set=repo_set,
        poller=Poller(poller_parts, requests, freeze_heap=freeze_heap),
        jobs=jobs,
    )


def log_started(daemon: Daemon, *, released: int, hardened: bool, warmed: int) -> None:
    """The line that says the daemon started, and with what."""
    recovery = daemon.recovery
    sandbox = daemon.parts.repo_set.agents.sandbox
    log.info(
        "daemon_started",
        repos=list(daemon.repos),
        claims_released=released,
        hardened=hardened,
        policy=str(daemon.policy_path),
        database=daemon.db.display_url,
        replica_id=daemon.replica_id,
        rollout_mode=daemon.view.flow.rollout_mode.value,
        sandbox=sandbox.mode.value if sandbox else None,
        http_cache_warmed=warmed,
        interrupted_runs=recovery.interrupted_runs if recovery else 0,
        intents_confirmed=recovery.confirmed if recovery else 0,
        intents_unconfirmed=recovery.unconfirmed if recovery else 0,
    )
