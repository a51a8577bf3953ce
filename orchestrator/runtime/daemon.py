"""The daemon's lifecycle: start-up, the scheduler's jobs, ticks on request, signals, shutdown.

Start-up loads the policy (refusing an invalid one), opens the store (the
SQLite file's lock, migrations), builds the parts from the policy and checks
GitHub (:mod:`orchestrator.runtime.assembly`), joins the cluster
(:mod:`orchestrator.runtime.cluster`) and recovers what a crash left behind.
The scheduler (:mod:`orchestrator.runtime.jobs`) then runs four fixed jobs:
the poll tick (``polling.interval_ms``, one at a time, coalesced), the
heartbeat (systemd's watchdog, claims and the poll lease), the claim pass and
the lease reaper. A tick can be asked for at once (a turn finished, the refresh
endpoint); requests coalesce into one pending tick. SIGTERM stops dispatching,
lets running turns finish within the grace period, cancels the rest, marks
their runs and releases the leases; SIGHUP reloads the policy now.
"""

from __future__ import annotations

import faulthandler
import gc
import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Protocol

from apscheduler.schedulers.background import BackgroundScheduler

from orchestrator.agent import RepoSource, SettingsError
from orchestrator.domain.snapshot import IssueRef
from orchestrator.github.accounting import Accounting
from orchestrator.github.credentials import TokenProvider
from orchestrator.github.errors import RateLimited
from orchestrator.github.retry import RetryPolicy
from orchestrator.logs import (
    bind_context,
    bind_process,
    error_fields,
    get_logger,
    redact_text,
    register_secret,
    unbind_context,
)
from orchestrator.runtime.assembly import (
    AssemblyError,
    Parts,
    Shared,
    Store,
    build_parts,
    github_access,
    guess_clone_url,
    open_store,
    preflight,
    web_base,
)
from orchestrator.runtime.claimer import RepoWork, TurnClaimer
from orchestrator.runtime.cluster import DEFAULT_LEASE_S, ClusterRole
from orchestrator.runtime.containment import log_sandbox, sandbox_status
from orchestrator.runtime.descriptors import (
    DescriptorLimit,
    current_limit,
    raise_limit,
    web_connection_cap,
)
from orchestrator.runtime.feed_keeper import FeedKeeper
from orchestrator.runtime.hardening import forbid_inspection
from orchestrator.runtime.jobs import Jobs, start_scheduler
from orchestrator.runtime.notify import SystemdNotifier, watchdog_interval_s
from orchestrator.runtime.polling_status import CycleCosts, PollingStatus, resource_costs
from orchestrator.runtime.records import RecordStore
from orchestrator.runtime.recovery import RecoveryReport, recover_after_restart
from orchestrator.runtime.status import BudgetStatus, RuntimeStatus
from orchestrator.runtime.sweep import SweepStatus
from orchestrator.runtime.switches import SwitchBoard
from orchestrator.runtime.tick import TickReport, combined
from orchestrator.runtime.units import DiscoveryError, Unit, opted_in, tracked_repos
from orchestrator.runtime.wiring import (
    AgentWiring,
    PolicyView,
    WiringError,
    agent_secrets,
    agent_wiring_key,
    build_agent_wiring,
    credential_key,
    first_view,
    github_endpoint,
    policy_credentials,
    tracker_settings,
)
from orchestrator.runtime.workers import TurnSlot, WorkerPool
from orchestrator.store.database import Database
from orchestrator.store.engine import choose_database
from orchestrator.store.outage import DatabaseHealth, is_unreachable, short_message
from orchestrator.workflow import Policy, PolicyError, PolicySource, Workflow
from orchestrator.workflow.source import ReloadOutcome

log = get_logger(__name__)

DEFAULT_HEARTBEAT_S = 10.0
# Follow-up ticks a busy flow may chain before waiting for the next interval.
MAX_CHAINED_TICKS = 25
# Extra time for cancelled turns to end (the agent's own grace period comes on top).
CANCEL_WAIT_S = 10.0
# How often the main thread wakes to run the handlers of signals other threads received.
SIGNAL_POLL_S = 0.25
REPLICA_ENV = "ORCHESTRATOR_REPLICA_ID"


class _Unreachable:
    """A repository's tick found the database out of reach: the whole tick stops there."""


_UNREACHABLE = _Unreachable()


class DaemonError(RuntimeError):
    """The daemon cannot start; the message says what to change."""


class WebHandle(Protocol):
    """What the web layer's start function returns."""

    url: str

    def stop(self) -> None: ...


def _utc_now() -> datetime:
    return datetime.now(UTC)


def default_replica_id() -> str:
    """This replica's name: ``ORCHESTRATOR_REPLICA_ID``, else the host name and process id."""
    return os.environ.get(REPLICA_ENV) or f"{socket.gethostname()}-{os.getpid()}"


class Daemon:
    """The orchestrator daemon; also the web layer's ``DaemonControl``."""

    def __init__(
        self,
        policy_path: str | os.PathLike[str],
        *,
        db_url: str | None = None,
        port: int | None = None,
        serve_web: bool = True,
        grace_s: float | None = None,
        replica_id: str | None = None,
        lease_s: float = DEFAULT_LEASE_S,
        env: Mapping[str, str] | None = None,
        harden: bool = True,
        github_retry: RetryPolicy | None = None,
        clock: Callable[[], datetime] = _utc_now,
        freeze_heap: bool = False,
    ) -> None:
        self.policy_path = Path(policy_path)
        # Whether the process is the daemon's own (``orchestrator run``): then what the first
        # whole tick read is moved out of the garbage collector's walks (gc.freeze).
        self._freeze_heap = freeze_heap
        self._github_retry = github_retry
        self._db_flag = db_url
        self._port = port
        self._serve_web = serve_web
        # None: the policy's agent.shutdown_grace_ms, read when the stop begins.
        self._grace_flag = grace_s
        self.replica_id = replica_id or default_replica_id()
        self.lease_s = lease_s
        self._env = env
        self._harden = harden
        self._hardened = False
        self.descriptors: DescriptorLimit = current_limit()
        self.clock = clock
        self.notifier = SystemdNotifier()
        self.db_health = DatabaseHealth()
        self.accounting = Accounting()
        self.cycle_costs = CycleCosts()
        self.last_tick_issues = 0
        self._tick_lock = threading.Lock()
        self._request_lock = threading.Lock()
        self._pending = False
        self._heap_frozen = False
        # What the pending tick is to look at: None, everything; else only these issues.
        self._focus: set[IssueRef] | None = None
        self._ticking = False
        self._stop = threading.Event()
        self._ready = threading.Event()
        # Set by the signal handlers (which only set flags); the main thread acts on it.
        self._signalled = threading.Event()
        self._reload_requested = False
        self._stopping = False
        self._scheduler: BackgroundScheduler | None = None
        self._web: WebHandle | None = None
        self._store: Store | None = None
        self._agents_key: tuple[object, ...] | None = None
        self._db_url = ""
        # The repositories this daemon polls, in the policy's order (the first is ``view``'s).
        self.units: dict[str, Unit] = {}
        # When the App installation's repositories were last read (tracker.repo_opt_in_label).
        self._discovered: tuple[str, ...] = ()
        self._discovered_at: float | None = None
        # Live status, read by status().
        self.started_at = clock()
        self.ticks = 0
        self.last_tick_at: datetime | None = None
        self.last_tick_duration_s: float | None = None
        self.last_tick_error: str | None = None
        self.rate_limited_until: datetime | None = None
        # Counters since start, for the metrics.
        self.dispatches = 0
        self.rate_limit_deferrals = 0
        self.policy_reload_errors = 0
        self.recovery: RecoveryReport | None = None
        # Set by start().
        self.source: PolicySource
        self.view: PolicyView
        self.db: Database
        self.records: RecordStore
        self.feeds: FeedKeeper
        self.switches: SwitchBoard
        self.pool: WorkerPool
        self.agents: AgentWiring
        self.claimer: TurnClaimer
        self.cluster: ClusterRole
        self._credentials: TokenProvider

    @property
    def grace_s(self) -> float:
        """How long running turns may finish on SIGTERM: ``--grace-seconds``, else the policy's."""
        if self._grace_flag is not None:
            return self._grace_flag
        policy = self.view.policy if hasattr(self, "view") else Policy()
        return policy.agent.shutdown_grace_ms / 1000

    @property
    def leading(self) -> tuple[str, ...]:
        """The repositories this replica polls now (empty on a follower)."""
        return self.cluster.leading if hasattr(self, "cluster") else ()

    @property
    def parts(self) -> Parts:
        """The first repository's parts (GitHub access, builder, gate, turn runner)."""
        return next(iter(self.units.values())).parts

    @property
    def repos(self) -> tuple[str, ...]:
        """The repositories this daemon polls."""
        return tuple(self.units)

    # =============================================================== start-up

    def start(self) -> None:
        """Everything before the first tick; raises :class:`DaemonError` with the reason."""
        # Every line of this process names its replica, the web server's and scheduler's too.
        bind_process(replica=self.replica_id)
        self._hardened = forbid_inspection() if self._harden else False
        # The daemon's own process takes every descriptor it may have (see descriptors.py).
        self.descriptors = raise_limit() if self._harden else current_limit()
        log.info(
            "descriptor_limit",
            soft=self.descriptors.soft,
            hard=self.descriptors.hard,
            started_with=self.descriptors.started_with,
            web_budget=self.descriptors.web_budget,
        )
        try:
            self.source = PolicySource(self.policy_path, env=self._env)
        except PolicyError as error:
            raise DaemonError(f"invalid policy:\n{error}") from None
        try:
            self.view = first_view(self.source.current)
            self._credentials = policy_credentials(self.view.policy)
        except WiringError as error:
            raise DaemonError(str(error)) from None
        register_secret(self.view.policy.server.token)
        register_secret(self.view.policy.server.metrics_token)
        database = choose_database(self._db_flag, self.view.policy.database.url, self.policy_path)
        self._db_url = database.url
        try:
            self._store = open_store(self._db_url, upgrade_command=database.command("upgrade"))
        except AssemblyError as error:
            raise DaemonError(str(error)) from None
        self.db = self._store.db
        # The first tick's conditional requests then find their ETags in memory.
        warmed = self.db.http_cache.warm()
        bind_context(replica=self.replica_id)
        self.cluster = ClusterRole(
            self.db, replica_id=self.replica_id, lease_s=self.lease_s, clock=self.clock
        )
        self.feeds = FeedKeeper(self.db.feeds, clock=self.clock)
        self.records = RecordStore(self.db)
        self.switches = SwitchBoard(self.view.kill_switch_file)
        self.pool = WorkerPool(self.view.policy.agent.max_concurrent_agents, clock=self.clock)
        self.pool.on_first_event = self._first_event
        self.pool.on_finished = self.request_tick
        self.claimer = TurnClaimer(
            db=self.db,
            records=self.records,
            pool=self.pool,
            replica_id=self.replica_id,
            lease_ttl=lambda: self.cluster.ttl,
            clock=self.clock,
        )
        try:
            self._build_agents(self.view.workflow)
            repos = self._find_repos(self.view)
            self.view = self.view.of_repo(repos[0])
            self.units = {repo: self._unit(self.view.of_repo(repo)) for repo in repos}
        except (SettingsError, WiringError, AssemblyError, DiscoveryError, RateLimited) as error:
            self._close()
            raise DaemonError(str(error)) from None
        self.recovery = recover_after_restart(
            db=self.db,
            records=self.records,
            github=self.parts.github,
            now=self.clock,
            replica_id=None if self.db.is_sqlite else self.replica_id,
        )
        # A starting process holds no turn: what a previous life of this replica (or, on
        # SQLite, of the only daemon) still holds is handed back to be claimed again.
        released = self.db.claims.release(None if self.db.is_sqlite else self.replica_id)
        if self.db.is_sqlite:
            # The file lock makes this the only daemon: leases of a killed one are void.
            self.db.leases.clear()
        for unit in self.units.values():
            unit.finished_claims = self.db.claims.finished_count(unit.repo)
        self._bind()
        self.cluster.join()
        log.info(
            "daemon_started",
            repos=list(self.units),
            claims_released=released,
            hardened=self._hardened,
            policy=str(self.policy_path),
            database=self.db.display_url,
            replica_id=self.replica_id,
            rollout_mode=self.view.flow.rollout_mode.value,
            sandbox=self.agents.sandbox.mode.value if self.agents.sandbox else None,
            http_cache_warmed=warmed,
            interrupted_runs=self.recovery.interrupted_runs,
            intents_confirmed=self.recovery.confirmed,
            intents_unconfirmed=self.recovery.unconfirmed,
        )

    def _bind(self) -> None:
        """Bind this thread's log context: the replica, and the repository when there is one
        (with several, each repository's lines name their own)."""
        bind_context(replica=self.replica_id)
        if len(self.units) == 1:
            bind_context(repo=self.view.repo)
        else:
            unbind_context("repo")

    def _shared(self) -> Shared:
        return Shared(
            db=self.db,
            records=self.records,
            switches=self.switches,
            pool=self.pool,
            accounting=self.accounting,
            health=self.db_health,
            replica_id=self.replica_id,
            clock=self.clock,
        )

    def _unit(self, view: PolicyView) -> Unit:
        """The parts of ``view``'s repository, checked against GitHub (preflight)."""
        unit = Unit(view, self._build_parts(view))
        unit.source = preflight(unit.parts.github, view)
        return unit

    def _build_parts(self, view: PolicyView) -> Parts:
        repo = view.repo
        return build_parts(
            self._shared(),
            view,
            credentials=self._credentials,
            agents=lambda: self.agents,
            repo_source=lambda: self.repo_source(repo),
            claimer=self.claimer,
            retry=self._github_retry,
        )

    def _find_repos(self, view: PolicyView) -> tuple[str, ...]:
        """The repositories to poll: those the policy names, and the App installation's that
        carry ``tracker.repo_opt_in_label`` (read again every discovery interval)."""
        label = view.policy.tracker.repo_opt_in_label
        if label:
            access = github_access(
                self._shared(), view, credentials=self._credentials, retry=self._github_retry
            )
            self._discovered = opted_in(access, label)
            self._discovered_at = time.monotonic()
            log.info("repos_discovered", label=label, repos=list(self._discovered))
        repos = tracked_repos(view, self._discovered if label else ())
        if not repos:
            raise WiringError(
                f"tracker.repo_opt_in_label: no repository of the App's installation has the "
                f"label {label!r}; create it in a repository to track that repository, or name "
                "one in tracker.repos"
            )
        return repos

    def _build_agents(self, workflow: Workflow) -> None:
        policy = workflow.policy
        key = agent_wiring_key(policy)
        if key == self._agents_key:
            return
        self.agents = build_agent_wiring(
            policy,
            secrets=agent_secrets(policy),
            on_event=self.pool.on_event,
            db_url=self._db_url,
            env=self._env,
        )
        self._agents_key = key
        if self.agents.sandbox is not None:
            log_sandbox(self.agents.sandbox)

    def repo_source(self, repo: str | None = None) -> RepoSource:
        """Where workspaces clone ``repo`` (default: the first) from (the token as a header
        only)."""
        unit = self.units[repo] if repo is not None else next(iter(self.units.values()))
        if unit.source is None:
            unit.source = unit.parts.github.repo_source(guess_clone_url(unit.view))
        return unit.source

    def _work_for(self, repo: str) -> RepoWork | None:
        unit = self.units.get(repo)
        return unit.work(self.repo_source(repo)) if unit is not None else None

    # =============================================================== control

    def request_tick(self) -> bool:
        """Ask for a tick now; False when one is already pending (the requests coalesce)."""
        with self._request_lock:
            self._focus = None
            if self._pending:
                return False
            self._pending = True
            wake = not self._ticking
        scheduler = self._scheduler
        if wake and scheduler is not None and scheduler.running:
            try:
                scheduler.modify_job("poll", next_run_time=datetime.now(UTC))
            except LookupError:
                return True
        return True

    def set_brake(self, active: bool) -> None:
        """Create or remove the local kill-switch file; a tick follows at once."""
        self.switches.set_brake(active)
        log.warning("brake", active=active, file=str(self.switches.kill_switch_file))
        if active:
            self.pool.cancel_all("kill_switch")
        self.request_tick()

    def reload_policy(self) -> None:
        """Re-read the policy at the next tick whatever the file's stat says (SIGHUP)."""
        self.source.request_reload()
        log.info("policy_reload_requested", path=str(self.policy_path))
        self.request_tick()

    # ================================================================= ticks

    def tick(
        self, only: frozenset[IssueRef] | None = None, *, follow_moved: bool = False
    ) -> TickReport | None:
        """Run one tick now in the calling thread (None when it was skipped or failed).

        With ``only``, a follow-up tick over those issues alone; with ``follow_moved``
        (the scheduler's ticks), what moved is followed through before the pass over
        every issue (see :meth:`Tick.run`).
        """
        with self._tick_lock:
            return self._tick_once(only, follow_moved)

    def _tick_once(
        self, only: frozenset[IssueRef] | None = None, follow_moved: bool = False
    ) -> TickReport | None:
        self._refresh_policy()
        now = self.clock()
        if self.rate_limited_until is not None:
            if now < self.rate_limited_until:
                log.info("tick_deferred", rate_limited_until=self.rate_limited_until.isoformat())
                self.rate_limit_deferrals += 1
                return None
            self.rate_limited_until = None
        reports: list[TickReport] = []
        errors: list[str] = []
        ran = False
        try:
            for unit in list(self.units.values()):
                focus = None if only is None else frozenset(r for r in only if r.repo == unit.repo)
                if focus is not None and not focus:
                    continue
                outcome = self._tick_unit(unit, now, focus, follow_moved)
                if isinstance(outcome, RateLimited):
                    self._rate_limited(outcome)
                    ran = True
                    break
                if isinstance(outcome, _Unreachable):
                    return None
                if isinstance(outcome, str):
                    errors.append(outcome)
                    ran = True
                elif outcome is not None:
                    reports.append(outcome)
                    ran = True
        finally:
            if ran or reports:
                self.ticks += 1
                self.last_tick_at = now
                self.last_tick_duration_s = (self.clock() - now).total_seconds()
                self.cycle_costs.add(self.accounting.take_tick_units())
            self._bind()
        if errors:
            self.last_tick_error = "; ".join(errors)
        elif ran:
            self.last_tick_error = None
        if not reports:
            if not errors:
                self.db_health.succeeded()
            return None
        report = combined(reports, issues=sum(r.issues for r in reports))
        self.last_tick_issues = report.issues
        if (
            self._freeze_heap
            and only is None
            and not errors
            and not self._heap_frozen
            and not self._catching_up()
        ):
            # What the first whole tick read (records, pull request states, the issue feed)
            # mostly lives as long as the process: the garbage collector stops walking it
            # at every collection (at 10,000 issues that walking took about 15% of a tick).
            gc.freeze()
            self._heap_frozen = True
        self.db_health.succeeded()
        self.dispatches += report.execution.dispatched
        if report.execution.dispatched:
            # The leader takes what its own threads can run at once; other replicas the rest.
            self.claim_ready()
        if report.execution.rate_limited is not None:
            self._rate_limited(report.execution.rate_limited)
        elif report.execution.changed:
            # What was just done (a push, a PR, a transition) lets the next step be planned
            # now, for the issues it changed.
            self._ask_again(report.execution.touched)
        return report

    def _tick_unit(
        self,
        unit: Unit,
        now: datetime,
        only: frozenset[IssueRef] | None,
        follow_moved: bool,
    ) -> TickReport | RateLimited | str | _Unreachable | None:
        """One repository's part of a tick: its report; None when another replica leads it;
        the rate limit that stopped it; or the error that failed it (a line)."""
        bind_context(repo=unit.repo)
        try:
            leadership = self.cluster.lead(unit.repo)
            if not leadership.leading:
                return None
            # Turns that ended before this tick are seen by it; the claim job asks for none.
            unit.finished_claims = self.db.claims.finished_count(unit.repo)
            # A start or a takeover resumes the feed the last leader saved.
            self.feeds.resume(unit.parts.github.feed)
        except Exception as error:
            if not is_unreachable(error):
                raise
            self.db_health.failed(error, where="tick")
            self.last_tick_error = f"database unreachable: {short_message(error)}"
            return _UNREACHABLE
        try:
            report = unit.parts.tick.run(
                view=self.cluster.scaled(unit.view),
                agents=self.agents,
                source=self.repo_source(unit.repo),
                now=now,
                dispatching=not self._stopping,
                fence=leadership.fence,
                only=only,
                on_dispatched=self.claim_ready,
                follow_moved=follow_moved,
            )
        except RateLimited as limited:
            return limited
        except Exception as error:
            if is_unreachable(error):
                self.db_health.failed(error, where="tick")
                self.last_tick_error = f"database unreachable: {short_message(error)}"
                return _UNREACHABLE
            log.exception("tick_failed")
            # Shown on the status API and the dashboard: no credential an error may quote.
            failure = redact_text(f"{type(error).__name__}: {error}")
            return f"{unit.repo}: {failure}" if len(self.units) > 1 else failure
        if only is None:
            self._save_feed(unit)
        return report

    def _save_feed(self, unit: Unit, *, force: bool = False) -> None:
        """Save a repository's issue feed for the next start; a failure costs that start a
        full read."""
        try:
            self.feeds.save(unit.parts.github.feed, force=force)
        except Exception as error:
            if is_unreachable(error):
                self.db_health.failed(error, where="feed")
            else:
                log.warning("issue_feed_not_saved", **error_fields(error))

    def _rate_limited(self, limited: RateLimited) -> None:
        self.rate_limited_until = limited.reset_at
        self.rate_limit_deferrals += 1
        log.warning(
            "rate_limited",
            resource=limited.resource,
            until=limited.reset_at.isoformat(),
            route=limited.route,
        )

    def _catching_up(self) -> bool:
        return any(
            c.left
            for unit in self.units.values()
            for c in unit.parts.tick.builder.catching_up.values()
        )

    def _ask_again(self, issues: set[IssueRef]) -> None:
        """Ask for a follow-up tick over ``issues`` (a whole tick, if one is pending)."""
        with self._request_lock:
            if not self._pending:
                self._pending = True
                self._focus = set(issues)
            elif self._focus is not None:
                self._focus |= issues

    def claim_ready(self) -> int:
        """Start queued turns in this replica's free threads; pass cancellations on."""
        self.claimer.pass_cancellations()
        if self._stopping:
            return 0
        return self.claimer.claim_ready(agents=self.agents, work_for=self._work_for)

    def _guarded(self, where: str, job: Callable[[], None]) -> None:
        """Run a scheduler job's database work; an outage is counted, not raised or traced."""
        try:
            job()
        except Exception as error:
            if not is_unreachable(error):
                raise
            self.db_health.failed(error, where=where)
        else:
            self.db_health.succeeded()

    def _claim_job(self) -> None:
        # Scheduler threads do not inherit the main thread's context variables.
        self._bind()
        self._guarded("claim", self._claim_and_follow)

    def _claim_and_follow(self) -> None:
        self.claim_ready()
        ended = False
        for repo in self.leading:
            unit = self.units.get(repo)
            if unit is None:
                continue
            finished = self.db.claims.finished_count(repo)
            if finished != unit.finished_claims:
                unit.finished_claims = finished
                ended = True
        if ended:
            # A turn ended on some replica: plan its next step now.
            self.request_tick()

    def _refresh_policy(self) -> None:
        outcome = self.source.refresh()
        if outcome is ReloadOutcome.REJECTED:
            self.policy_reload_errors += 1
        if outcome is not ReloadOutcome.APPLIED:
            if self._discovery_due():
                self._apply_units(self.view)
            return
        workflow = self.source.current
        try:
            view = first_view(workflow)
            key = credential_key(workflow.policy)
            self._build_agents(workflow)
            credentials = (
                self._credentials
                if key == self.parts.github.credential_key
                else policy_credentials(workflow.policy)
            )
        except (WiringError, SettingsError) as error:
            log.error("policy_not_applied", error=str(error))
            return
        previous = self.view
        self._credentials = credentials
        self.switches.kill_switch_file = view.kill_switch_file
        self.pool.resize(workflow.policy.agent.max_concurrent_agents)
        self._apply_units(view)
        if self.view.interval_s != previous.interval_s and self._scheduler is not None:
            self._scheduler.reschedule_job("poll", trigger="interval", seconds=self.view.interval_s)
        log.info(
            "policy_reload",
            digest=workflow.digest[:12],
            rollout_mode=self.view.flow.rollout_mode.value,
            repos=list(self.units),
        )

    def _discovery_due(self) -> bool:
        tracker = self.view.policy.tracker
        if not tracker.repo_opt_in_label or self._discovered_at is None:
            return False
        elapsed = time.monotonic() - self._discovered_at
        return elapsed >= tracker.repo_discovery_interval_ms / 1000

    def _apply_units(self, view: PolicyView) -> None:
        """Poll the repositories ``view``'s policy names now: keep the parts of those whose
        GitHub access is unchanged, make those of the others, let go of the rest.

        A repository whose parts cannot be made (preflight refused it) is left out
        with an error line and tried again at the next reload or discovery; one
        the daemon already polled keeps its parts.
        """
        try:
            repos = self._find_repos(view)
        except (DiscoveryError, RateLimited, WiringError) as error:
            # The installation could not be read: the repositories polled so far stay.
            self._discovered_at = time.monotonic()
            log.error("repos_not_discovered", error=str(error))
            repos = tracked_repos(view, self._discovered) or tuple(self.units)
        policy = view.policy
        endpoint, key = github_endpoint(policy), credential_key(policy)
        units: dict[str, Unit] = {}
        for repo in repos:
            repo_view = view.of_repo(repo)
            unit = self.units.get(repo)
            tracker = tracker_settings(policy, repo_view.flow, repo)
            if unit is not None and unit.parts.github.same_as(endpoint, key, tracker):
                unit.view = repo_view
                units[repo] = unit
                continue
            try:
                units[repo] = self._unit(repo_view)
            except AssemblyError as error:
                log.error("repo_not_polled", repo=repo, error=str(error))
                if unit is not None:
                    units[repo] = unit
        if not units:
            log.error("policy_not_applied", error="no repository could be polled")
            return
        for repo in self.units.keys() - units.keys():
            self.cluster.drop(repo)
            log.info("repo_dropped", repo=repo)
        for repo in units.keys() - self.units.keys():
            units[repo].finished_claims = self.db.claims.finished_count(repo)
            log.info("repo_added", repo=repo)
        self.units = units
        self.view = next(iter(units.values())).view
        self._bind()

    # ============================================================ scheduling

    def _heartbeat_s(self) -> float:
        # Renew well within the lease, whatever systemd's watchdog asks for.
        return min(watchdog_interval_s() or DEFAULT_HEARTBEAT_S, self.cluster.heartbeat_s)

    def run_scheduler(self) -> None:
        """Start the scheduler's jobs and the web server, then report READY."""
        interval = self.view.interval_s
        heartbeat = self._heartbeat_s()
        self._start_web()
        self._scheduler = start_scheduler(
            Jobs(
                poll=self._poll_job,
                heartbeat=self._heartbeat,
                claim=self._claim_job,
                reap=self._reap,
                interval_s=interval,
                heartbeat_s=heartbeat,
            )
        )
        self.notifier.ready(f"polling {', '.join(self.units)} every {interval:g} s")
        # systemd hears READY=1 before the first WATCHDOG=1.
        self._ready.set()
        log.info("daemon_ready", interval_s=interval, heartbeat_s=heartbeat)

    def _poll_job(self) -> None:
        # Scheduler threads do not inherit the main thread's context variables.
        self._bind()
        with self._request_lock:
            self._ticking = True
        chained = 0
        whole_at = time.monotonic()
        try:
            while not self._stop.is_set():
                with self._request_lock:
                    # The scheduled tick looks at everything; a follow-up asked for by a
                    # tick's changes only at the issues it changed.
                    focus = self._focus if chained else None
                    self._pending = False
                    self._focus = None
                if focus is None:
                    whole_at = time.monotonic()
                self.tick(frozenset(focus) if focus is not None else None, follow_moved=True)
                chained += 1
                with self._request_lock:
                    if time.monotonic() - whole_at >= self.view.interval_s:
                        # The scheduler skipped a run while this one chained follow-ups:
                        # the whole tick it owed is made now, not an interval later.
                        self._pending, self._focus = True, None
                    again = self._pending and chained < MAX_CHAINED_TICKS
                    if not again:
                        self._ticking = False
                        return
        finally:
            with self._request_lock:
                self._ticking = False

    def _heartbeat(self) -> None:
        self._bind()
        if self._ready.is_set():
            self.notifier.watchdog()
        self._guarded("heartbeat", self._beat)

    def _beat(self) -> None:
        # Claims first: a turn whose claim was lost is cancelled before anything else.
        self.claimer.renew()
        if self.cluster.heartbeat(*self.units) and not self._stopping:
            # The previous leader is gone: tick now rather than at the next interval.
            self.request_tick()

    def _reap(self) -> None:
        self._guarded("reaper", self._reap_now)

    def _reap_now(self) -> None:
        reaped = self.cluster.reap()
        if reaped:
            log.info("leases_reaped", count=reaped)

    def _first_event(self, slot: TurnSlot, at: datetime) -> None:
        try:
            self.db.runs.first_event(slot.run_id, at=at)
        except Exception as error:
            if not is_unreachable(error):
                raise
            self.db_health.failed(error, where="run")

    def _start_web(self) -> None:
        if not self._serve_web:
            return
        try:
            from orchestrator.web.server import start_web
        except ImportError:
            log.info("web_unavailable", reason="orchestrator.web.server is not installed")
            return
        server = self.view.policy.server
        port = self._port if self._port is not None else server.port
        cap = web_connection_cap(server.max_connections, self.descriptors)
        if cap < server.max_connections:
            log.warning(
                "web_connections_clamped",
                max_connections=server.max_connections,
                serving=cap,
                descriptor_limit=self.descriptors.soft,
                reason="the web server may hold a quarter of the descriptors at most",
            )
        try:
            self._web = start_web(
                server.host,
                port,
                db=self.db,
                status=self.status,
                control=self,
                token=server.token,
                metrics_token=server.metrics_token,
                allowed_hosts=server.allowed_hosts,
                html_base=web_base(self.view),
                max_connections=cap,
                header_timeout_s=server.header_timeout_ms / 1000,
            )
        except OSError as error:
            raise DaemonError(f"server.port: cannot serve the dashboard: {error}") from None

    # =============================================================== running

    def serve_forever(self) -> int:
        """Run until SIGTERM or SIGINT (main thread only); returns the exit status."""
        self.install_signals()
        try:
            self.run_scheduler()
        except DaemonError:
            self.shutdown(grace_s=0)
            raise
        while not self._stop.is_set():
            # Never an unbounded wait: a signal the kernel hands to another thread only
            # sets a flag, and its handler runs when this thread next runs Python code.
            if not self._signalled.wait(SIGNAL_POLL_S):
                continue
            self._signalled.clear()
            if self._reload_requested and not self._stop.is_set():
                self._reload_requested = False
                self.reload_policy()
        self.shutdown()
        return 0

    def run_once(self) -> int:
        """One tick, then wait for the turns it started, then stop (cron-style use)."""
        self.tick()
        limit = self.view.policy.agent.turn_timeout_ms / 1000 + CANCEL_WAIT_S
        if not self.pool.wait_idle(limit):
            self.pool.cancel_all("shutdown")
            self.pool.wait_idle(CANCEL_WAIT_S)
        self.shutdown(grace_s=0)
        return 0

    def stop(self) -> None:
        """Ask :meth:`serve_forever` to shut down (what SIGTERM does)."""
        self._stop.set()
        self._signalled.set()

    def install_signals(self) -> None:
        """SIGTERM/SIGINT stop, SIGHUP reloads, SIGUSR1 dumps stacks (main thread only).

        Handlers only set flags: the main thread does the work outside the handler.
        """

        def terminate(_signum: int, _frame: FrameType | None) -> None:
            self._stop.set()
            self._signalled.set()

        def reload(_signum: int, _frame: FrameType | None) -> None:
            self._reload_requested = True
            self._signalled.set()

        signal.signal(signal.SIGTERM, terminate)
        signal.signal(signal.SIGINT, terminate)
        signal.signal(signal.SIGHUP, reload)
        # SIGUSR1 writes every thread's stack to stderr (a daemon that seems stuck).
        faulthandler.register(signal.SIGUSR1, all_threads=True)

    def shutdown(self, grace_s: float | None = None) -> None:
        """Stop dispatching, let turns finish within the grace period, cancel the rest, clean up."""
        grace = self.grace_s if grace_s is None else grace_s
        self.notifier.stopping()
        log.info("daemon_stopping", grace_s=grace, running=self.pool.busy)
        self._stopping = True
        self._stop.set()
        self.pool.stop_accepting()
        scheduler, self._scheduler = self._scheduler, None
        if scheduler is not None:
            scheduler.shutdown(wait=True)
        if not self.pool.wait_idle(grace):
            cancelled = self.pool.cancel_all("shutdown")
            log.warning("turns_cancelled", count=cancelled)
            wait = self.agents.settings.grace_period_ms / 1000 + CANCEL_WAIT_S
            self.pool.wait_idle(wait)
        self.pool.shutdown()
        now = self.clock()
        interrupted = released = 0
        for repo in self.leading:
            if repo in self.units:
                self._save_feed(self.units[repo], force=True)
        try:
            self.claimer.apply_held(self._work_for)
            interrupted = self.db.runs.interrupt_unfinished(
                now=now, replica_id=None if self.db.is_sqlite else self.replica_id
            )
            self.claimer.release()
            released = self.cluster.leave()
        except Exception as error:
            if not is_unreachable(error):
                raise
            # The leases expire on their own; the next start recovers the runs.
            self.db_health.failed(error, where="shutdown")
        if self._web is not None:
            self._web.stop()
            self._web = None
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
        failure = self.source.last_error
        budgets = tuple(
            BudgetStatus(resource, budget.remaining, budget.limit, budget.reset_at)
            for resource, budget in sorted(self.accounting.budgets.items())
        )
        fence = self.cluster.fence
        return RuntimeStatus(
            as_of=self.clock(),
            replica_id=self.replica_id,
            started_at=self.started_at,
            rollout_mode=self.view.flow.rollout_mode.value,
            policy_path=str(self.policy_path),
            repos=self.repos,
            policy_error="\n".join(failure.messages) if failure is not None else None,
            brake_active=self.switches.local_file_active(),
            stopped_repos=self.switches.stopped_repos(),
            last_tick_at=self.last_tick_at,
            last_tick_duration_s=self.last_tick_duration_s,
            ticks=self.ticks,
            last_tick_error=self.last_tick_error,
            running=self.pool.turns(),
            budgets=budgets,
            rate_limited_until=self.rate_limited_until,
            github_units_spent=self.accounting.total_units(),
            leading=self.leading,
            leader_epoch=fence.epoch if fence is not None else None,
            poll_interval_s=self.view.interval_s,
            dispatches=self.dispatches,
            rate_limit_deferrals=self.rate_limit_deferrals,
            policy_reload_errors=self.policy_reload_errors,
            sandbox=sandbox_status(self.agents.sandbox),
            polling=self._polling_status(),
        )

    def _polling_status(self) -> PollingStatus | None:
        builders = [self.units[r].parts.builder for r in self.leading if r in self.units]
        if not builders:
            return None
        return PollingStatus(
            interval_s=self.view.interval_s,
            issues=self.last_tick_issues,
            costs=resource_costs(
                self.cycle_costs.per_cycle(),
                dict(self.accounting.budgets),
                self.view.interval_s,
                self.clock(),
            ),
            sweep=SweepStatus.combined([b.sweep.status() for b in builders]),
            catching_up=tuple(
                c.describe() for b in builders for c in b.catching_up.values() if c.left
            ),
        )

    # ================================================================= tests

    def wait_idle(self, timeout_s: float) -> bool:
        """Wait until no agent turn runs (tests and ``--once`` drive ticks this way).

        While it waits, the claims and the lease are renewed at the heartbeat's pace,
        as the scheduler would: a turn longer than the lease keeps its claim.
        """
        deadline = time.monotonic() + timeout_s
        while True:
            remaining = deadline - time.monotonic()
            if self.pool.wait_idle(max(0.0, min(remaining, self._heartbeat_s()))):
                return True
            if remaining <= 0:
                return False
            self._guarded("heartbeat", self._beat)
