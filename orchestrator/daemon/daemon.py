"""The daemon's lifecycle: start-up, the scheduler's jobs, ticks on request, signals, shutdown.

Start-up loads the policy (refusing an invalid one), opens the store (the
SQLite file's lock, migrations), builds each repository's parts and checks
GitHub (:mod:`orchestrator.repos.repo_set`), joins the cluster
(:mod:`orchestrator.repos.cluster`) and recovers what a crash left behind.
The scheduler (:mod:`orchestrator.daemon.jobs`) then runs four fixed jobs:
the poll job (:mod:`orchestrator.daemon.poller`, every ``polling.interval_ms``,
one at a time), the heartbeat (systemd's watchdog, claims and the poll lease),
the claim pass and the lease reaper. A tick can be asked for at once (a turn
finished, the refresh endpoint); requests coalesce
(:mod:`orchestrator.daemon.tick_requests`). SIGTERM stops dispatching, lets
running turns finish within the grace period, cancels the rest, marks their
runs and releases the leases (:mod:`orchestrator.daemon.stopping`); SIGHUP
reloads the policy now.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path

from apscheduler.schedulers.background import BackgroundScheduler

from orchestrator.agent import SettingsError
from orchestrator.daemon.dashboard import DashboardError, WebHandle, start_dashboard
from orchestrator.daemon.jobs import Jobs, start_scheduler
from orchestrator.daemon.live_status import live_status
from orchestrator.daemon.process import ProcessSetup, shared_process
from orchestrator.daemon.recovery import RecoveryReport
from orchestrator.daemon.signals import Signals
from orchestrator.daemon.startup import (
    DaemonError,
    DaemonHooks,
    DaemonParts,
    Identity,
    LoadedPolicy,
    Store,
    assemble,
    load_policy,
    log_descriptors,
    log_started,
    open_database,
    recover,
)
from orchestrator.daemon.status import RuntimeStatus
from orchestrator.daemon.stopping import CANCEL_WAIT_S, finish_turns, settle, stop_turns
from orchestrator.daemon.systemd import SystemdNotifier
from orchestrator.daemon.tick_requests import TickRequests
from orchestrator.github.accounting import Accounting
from orchestrator.github.errors import RateLimited
from orchestrator.logs import (
    bind_context,
    bind_process,
    get_logger,
    unbind_context,
)
from orchestrator.repos.cluster import DEFAULT_LEASE_S
from orchestrator.repos.discovery import DiscoveryError
from orchestrator.repos.parts import AssemblyError
from orchestrator.store.database import Database
from orchestrator.store.outage import DatabaseHealth
from orchestrator.tick.cycle import TickReport
from orchestrator.tick.request import WHOLE, CycleRequest
from orchestrator.wiring.policy_view import PolicyView, WiringError
from orchestrator.workflow import Policy

__all__ = ["REPLICA_ENV", "Daemon", "DaemonError", "default_replica_id"]

log = get_logger(__name__)

# How often the main thread wakes to run the handlers of signals other threads received.
SIGNAL_POLL_S = 0.25
REPLICA_ENV = "ORCHESTRATOR_REPLICA_ID"


def _utc_now() -> datetime:
    return datetime.now(UTC)


def default_replica_id() -> str:
    """This replica's name: ``ORCHESTRATOR_REPLICA_ID``, else the host name and process id."""
    return os.environ.get(REPLICA_ENV) or f"{socket.gethostname()}-{os.getpid()}"


class Daemon:
    """The orchestrator daemon; also the web layer's ``DaemonControl``.

    ``process`` says how the process it runs in was set up (:mod:`orchestrator.daemon.process`):
    ``orchestrator run`` passes :func:`~orchestrator.daemon.process.own_process`'s answer;
    a daemon embedded in another program shares that program's process as it is.
    """

    def __init__(
        self,
        policy_path: str | os.PathLike[str],
        *,
        db_url: str | None = None,
        port: int | None = None,
        grace_s: float | None = None,
        replica_id: str | None = None,
        lease_s: float = DEFAULT_LEASE_S,
        env: Mapping[str, str] | None = None,
        clock: Callable[[], datetime] = _utc_now,
        process: ProcessSetup | None = None,
    ) -> None:
        self.policy_path = Path(policy_path)
        self._db_flag, self._port, self._env = db_url, port, env
        self.process = process or shared_process()
        # None: the policy's agent.shutdown_grace_ms, read when the stop begins.
        self._grace_flag = grace_s
        self.replica_id = replica_id or default_replica_id()
        self.lease_s = lease_s
        self.clock = clock
        self.notifier = SystemdNotifier()
        self.db_health = DatabaseHealth()
        self.accounting = Accounting()
        self.started_at = clock()
        self.requests = TickRequests(self._wake_poll)
        self._stop = threading.Event()
        self._ready = threading.Event()
        self.signals = Signals(self._stop)
        self._stopping = False
        self._scheduler: BackgroundScheduler | None = None
        self._web: WebHandle | None = None
        self._store: Store | None = None
        self.recovery: RecoveryReport | None = None
        # Set by start().
        self.db: Database
        self.parts: DaemonParts

    # ============================================================ the parts

    @property
    def grace_s(self) -> float:
        """How long running turns may finish on SIGTERM: ``--grace-seconds``, else the policy's."""
        if self._grace_flag is not None:
            return self._grace_flag
        policy = self.view.policy if hasattr(self, "parts") else Policy()
        return policy.agent.shutdown_grace_ms / 1000

    @property
    def leading(self) -> tuple[str, ...]:
        """The repositories this replica polls now (empty on a follower)."""
        return self.parts.cluster.leading if hasattr(self, "parts") else ()

    @property
    def view(self) -> PolicyView:
        """The policy as the first repository sees it."""
        return self.parts.repo_set.view

    @property
    def repos(self) -> tuple[str, ...]:
        """The repositories this daemon polls."""
        return tuple(self.parts.repo_set.units)

    # ============================================================== start-up

    def start(self) -> None:
        """Everything before the first tick; raises :class:`DaemonError` with the reason."""
        # Every line of this process names its replica, the web server's and scheduler's too.
        bind_process(replica=self.replica_id)
        log_descriptors(self.process.descriptors)
        loaded = load_policy(self.policy_path, self._env)
        self._store, db_url = open_database(self._db_flag, loaded, self.policy_path)
        self.db = self._store.db
        # The first tick's conditional requests then find their ETags in memory.
        warmed = self.db.http_cache.warm()
        bind_context(replica=self.replica_id)
        try:
            self.parts = self._assemble(loaded, db_url)
        except (SettingsError, WiringError, AssemblyError, DiscoveryError, RateLimited) as error:
            self._close()
            raise DaemonError(str(error)) from None
        repo_set = self.parts.repo_set
        self.recovery, released = recover(
            self._store,
            self.parts.records,
            repo_set.first.parts.github,
            clock=self.clock,
            replica_id=self.replica_id,
        )
        for unit in repo_set.units.values():
            unit.finished_claims = self.db.claims.finished_count(unit.repo)
        self._bind()
        self.parts.cluster.join()
        log_started(self, released=released, hardened=self.process.hardened, warmed=warmed)

    def _assemble(self, loaded: LoadedPolicy, db_url: str) -> DaemonParts:
        identity = Identity(
            replica_id=self.replica_id,
            lease_s=self.lease_s,
            clock=self.clock,
            env=self._env,
            accounting=self.accounting,
            health=self.db_health,
        )
        hooks = DaemonHooks(
            request_tick=self.request_tick,
            claim_ready=self.claim_ready,
            stopping=lambda: self._stopping,
            bind=self._bind,
            ready=self._ready,
            notifier=self.notifier,
        )
        return assemble(
            self.db,
            loaded,
            db_url=db_url,
            identity=identity,
            requests=self.requests,
            hooks=hooks,
            freeze_heap=self.process.freeze_heap,
        )

    def _bind(self) -> None:
        """Bind this thread's log context: the replica, and the repository when there is one
        (with several, each repository's lines name their own)."""
        bind_context(replica=self.replica_id)
        if len(self.parts.repo_set.units) == 1:
            bind_context(repo=self.view.repo)
        else:
            unbind_context("repo")

    # =============================================================== control

    def request_tick(self) -> bool:
        """Ask for a tick now; False when one is already pending (the requests coalesce)."""
        return self.requests.whole()

    def _wake_poll(self) -> None:
        scheduler = self._scheduler
        if scheduler is not None and scheduler.running:
            try:
                scheduler.modify_job("poll", next_run_time=datetime.now(UTC))
            except LookupError:
                return

    def set_brake(self, active: bool) -> None:
        """Create or remove the local kill-switch file; a tick follows at once."""
        switches = self.parts.switches
        switches.set_brake(active)
        log.warning("brake", active=active, file=str(switches.kill_switch_file))
        if active:
            self.parts.pool.cancel_all("kill_switch")
        self.request_tick()

    def reload_policy(self) -> None:
        """Re-read the policy at the next tick whatever the file's stat says (SIGHUP)."""
        self.parts.repo_set.source.request_reload()
        log.info("policy_reload_requested", path=str(self.policy_path))
        self.request_tick()

    def tick(self, request: CycleRequest = WHOLE) -> TickReport | None:
        """Run one tick now in the calling thread (None when it was skipped or failed)."""
        return self.parts.poller.tick(request)

    def claim_ready(self) -> int:
        """Start queued turns in this replica's free threads; pass cancellations on."""
        claimer, repo_set = self.parts.claimer, self.parts.repo_set
        claimer.pass_cancellations()
        if self._stopping:
            return 0
        return claimer.claim_ready(agents=repo_set.agents, work_for=repo_set.work_for)

    # ============================================================ scheduling

    def run_scheduler(self) -> None:
        """Start the web server and the scheduler's jobs, then report READY."""
        interval, jobs = self.view.interval_s, self.parts.jobs
        heartbeat = jobs.heartbeat_s()
        try:
            self._web = start_dashboard(
                self.view,
                port=self._port,
                db=self.db,
                descriptors=self.process.descriptors,
                status=self.status,
                control=self,
            )
        except DashboardError as error:
            raise DaemonError(str(error)) from None
        self._scheduler = scheduler = start_scheduler(
            Jobs(
                poll=self._poll_job,
                heartbeat=jobs.heartbeat,
                claim=jobs.claim,
                reap=jobs.reap,
                interval_s=interval,
                heartbeat_s=heartbeat,
            )
        )
        self.parts.repo_set.on_interval = lambda seconds: scheduler.reschedule_job(
            "poll", trigger="interval", seconds=seconds
        )
        self.notifier.ready(f"polling {', '.join(self.repos)} every {interval:g} s")
        # systemd hears READY=1 before the first WATCHDOG=1.
        self._ready.set()
        log.info("daemon_ready", interval_s=interval, heartbeat_s=heartbeat)

    def _poll_job(self) -> None:
        # Scheduler threads do not inherit the main thread's context variables.
        self._bind()
        self.parts.poller.poll_job(self._stop)

    # =============================================================== running

    def serve_forever(self) -> int:
        """Run until SIGTERM or SIGINT (main thread only); returns the exit status."""
        self.signals.install()
        try:
            self.run_scheduler()
        except DaemonError:
            self.shutdown(grace_s=0)
            raise
        while not self._stop.is_set():
            # Never an unbounded wait: a signal the kernel hands to another thread only
            # sets a flag, and its handler runs when this thread next runs Python code.
            if not self.signals.signalled.wait(SIGNAL_POLL_S):
                continue
            self.signals.signalled.clear()
            if self.signals.take_reload() and not self._stop.is_set():
                self.reload_policy()
        self.shutdown()
        return 0

    def run_once(self) -> int:
        """One tick, then wait for the turns it started, then stop (cron-style use)."""
        self.tick()
        limit = self.view.policy.agent.turn_timeout_ms / 1000 + CANCEL_WAIT_S
        finish_turns(self.parts.pool, limit, cancel_wait_s=CANCEL_WAIT_S)
        self.shutdown(grace_s=0)
        return 0

    def stop(self) -> None:
        """Ask :meth:`serve_forever` to shut down (what SIGTERM does)."""
        self._stop.set()
        self.signals.signalled.set()

    def shutdown(self, grace_s: float | None = None) -> None:
        """Stop dispatching, let turns finish within the grace period, cancel the rest, clean up."""
        grace = self.grace_s if grace_s is None else grace_s
        self._stopping = True
        self._stop.set()
        scheduler, self._scheduler = self._scheduler, None
        stop_turns(self.parts, grace_s=grace, scheduler=scheduler, notifier=self.notifier)
        interrupted, released = settle(
            self.parts, self.db, self.db_health, replica_id=self.replica_id
        )
        web, self._web = self._web, None
        if web is not None:
            web.stop()
        log.info("daemon_stopped", interrupted_runs=interrupted, leases_released=released)
        self._close()

    def _close(self) -> None:
        store, self._store = self._store, None
        if store is not None:
            store.close()

    # ================================================================ status

    @property
    def web_url(self) -> str | None:
        """The dashboard's URL, once it serves."""
        return self._web.url if self._web is not None else None

    def status(self) -> RuntimeStatus:
        """The daemon's live state (a fresh frozen value each call)."""
        return live_status(self)
