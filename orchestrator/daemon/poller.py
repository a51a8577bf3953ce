"""The poll job and one tick over every repository this replica leads.

A tick is three steps: the policy's reload step (:meth:`RepoSet.refresh`), the
rate-limit deferral, then one cycle per led repository
(:meth:`orchestrator.tick.cycle.Tick.passes`), whose outcome is one of
:class:`Ran`, ``RateLimited``, :class:`DatabaseAway` or :class:`Failed`. A tick
that changed something asks for a follow-up over the issues it changed; the
poll job chains those (:mod:`orchestrator.daemon.tick_requests`).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from orchestrator.daemon.polling_status import CycleCosts
from orchestrator.daemon.tick_requests import TickRequests
from orchestrator.github.accounting import Accounting
from orchestrator.github.errors import RateLimited
from orchestrator.logs import bind_context, error_fields, get_logger, redact_text
from orchestrator.repos.cluster import ClusterRole
from orchestrator.repos.feed_keeper import FeedKeeper
from orchestrator.repos.repo_set import RepoSet, Unit
from orchestrator.store.database import Database
from orchestrator.store.outage import DatabaseHealth, is_unreachable, short_message
from orchestrator.tick.cycle import TickReport, combined
from orchestrator.tick.request import WHOLE, CycleRequest

log = get_logger(__name__)


@dataclass(frozen=True)
class Ran:
    """A repository's cycle ran; what it saw and did."""

    report: TickReport


@dataclass(frozen=True)
class Failed:
    """A repository's cycle failed; the line the status shows (no credential in it)."""

    line: str


@dataclass(frozen=True)
class DatabaseAway:
    """The database was out of reach: the whole tick stops there."""

    line: str


Outcome = Ran | RateLimited | Failed | DatabaseAway | None


@dataclass
class TickStats:
    """What the status shows of the ticks, and the counters since start."""

    ticks: int = 0
    last_tick_at: datetime | None = None
    last_tick_duration_s: float | None = None
    last_tick_error: str | None = None
    last_tick_issues: int = 0
    rate_limited_until: datetime | None = None
    dispatches: int = 0
    rate_limit_deferrals: int = 0
    cycle_costs: CycleCosts = field(default_factory=CycleCosts)


@dataclass(frozen=True)
class PollerParts:
    """What the poller reads and drives, all the daemon's own."""

    repos: RepoSet
    cluster: ClusterRole
    db: Database
    feeds: FeedKeeper
    health: DatabaseHealth
    accounting: Accounting
    clock: Callable[[], datetime]
    # Starts the turns a pass dispatched in this replica's free threads.
    start_turns: Callable[[], object]
    # Whether the daemon is stopping (no new dispatches).
    stopping: Callable[[], bool]
    # Rebinds the thread's log context after a repository's lines.
    bind: Callable[[], None]


class Poller:
    """Runs ticks, one at a time, and the scheduler's poll job."""

    def __init__(self, parts: PollerParts, requests: TickRequests, *, freeze_heap: bool) -> None:
        self.parts = parts
        self.requests = requests
        self.stats = TickStats()
        # Whether what the first whole tick read is moved out of the collector's walks.
        self._freeze_heap = freeze_heap
        self._heap_frozen = False
        self._lock = threading.Lock()

    def poll_job(self, stop: threading.Event) -> None:
        """The scheduler's job: the scheduled whole tick, then the follow-ups it asks for."""
        interval_s = lambda: self.parts.repos.view.interval_s  # noqa: E731
        for request in self.requests.chain(interval_s, stop):
            self.tick(request)

    def tick(self, request: CycleRequest = WHOLE) -> TickReport | None:
        """One tick in the calling thread: reload, then one cycle per led repository (None
        when it was deferred, skipped or failed)."""
        with self._lock:
            self.parts.repos.refresh()
            now = self.parts.clock()
            if self._deferred(now):
                return None
            outcomes = self._cycles(request, now)
            return self._conclude(outcomes, request, now)

    def _deferred(self, now: datetime) -> bool:
        until = self.stats.rate_limited_until
        if until is None:
            return False
        if now < until:
            log.info("tick_deferred", rate_limited_until=until.isoformat())
            self.stats.rate_limit_deferrals += 1
            return True
        self.stats.rate_limited_until = None
        return False

    def _cycles(self, request: CycleRequest, now: datetime) -> list[Outcome]:
        """Each polled repository's outcome, until GitHub's budget or the database runs out."""
        outcomes: list[Outcome] = []
        try:
            for unit in list(self.parts.repos.units.values()):
                repo_request = request.of_repo(unit.repo)
                if repo_request is None:
                    continue
                outcome = self._cycle(unit, repo_request, now)
                outcomes.append(outcome)
                if isinstance(outcome, RateLimited | DatabaseAway):
                    break
        finally:
            self.parts.bind()
        return outcomes

    def _cycle(self, unit: Unit, request: CycleRequest, now: datetime) -> Outcome:
        """One repository's part of a tick; None when another replica leads it."""
        parts = self.parts
        bind_context(repo=unit.repo)
        try:
            leadership = parts.cluster.lead(unit.repo)
            if not leadership.leading:
                return None
            # Turns that ended before this tick are seen by it; the claim job asks for none.
            unit.finished_claims = parts.db.claims.finished_count(unit.repo)
            # A start or a takeover resumes the feed the last leader saved.
            parts.feeds.resume(unit.parts.github.feed)
            passes: list[TickReport] = []
            for report in unit.parts.tick.passes(
                request,
                view=parts.cluster.scaled(unit.view),
                agents=parts.repos.agents,
                source=parts.repos.repo_source(unit.repo),
                now=now,
                dispatching=not parts.stopping(),
                fence=leadership.fence,
            ):
                passes.append(report)
                if report.execution.dispatched:
                    # Claimed at once, before the next pass of the same tick.
                    parts.start_turns()
        except RateLimited as limited:
            return limited
        except Exception as error:
            if is_unreachable(error):
                parts.health.failed(error, where="tick")
                return DatabaseAway(f"database unreachable: {short_message(error)}")
            log.exception("tick_failed")
            # Shown on the status API and the dashboard: no credential an error may quote.
            failure = redact_text(f"{type(error).__name__}: {error}")
            return Failed(f"{unit.repo}: {failure}" if len(parts.repos.units) > 1 else failure)
        if request.whole:
            self.save_feed(unit)
        return Ran(combined(passes))

    def _conclude(
        self, outcomes: list[Outcome], request: CycleRequest, now: datetime
    ) -> TickReport | None:
        """Count the tick, keep its error line, and ask for what follows from it."""
        stats = self.stats
        reports = [o.report for o in outcomes if isinstance(o, Ran)]
        errors = [o.line for o in outcomes if isinstance(o, Failed)]
        limited = next((o for o in outcomes if isinstance(o, RateLimited)), None)
        away = next((o for o in outcomes if isinstance(o, DatabaseAway)), None)
        ran = bool(reports or errors) or limited is not None
        if ran:
            stats.ticks += 1
            stats.last_tick_at = now
            stats.last_tick_duration_s = (self.parts.clock() - now).total_seconds()
            stats.cycle_costs.add(self.parts.accounting.take_tick_units())
        if away is not None:
            stats.last_tick_error = away.line
            return None
        if ran:
            stats.last_tick_error = "; ".join(errors) or None
        if limited is not None:
            self._rate_limited(limited)
        if not reports:
            if not errors:
                self.parts.health.succeeded()
            return None
        report = combined(reports, issues=sum(r.issues for r in reports))
        stats.last_tick_issues = report.issues
        if request.whole and not errors:
            self._freeze()
        self.parts.health.succeeded()
        stats.dispatches += report.execution.dispatched
        if report.execution.dispatched:
            # The leader takes what its own threads can run at once; other replicas the rest.
            self.parts.start_turns()
        if report.execution.rate_limited is not None:
            self._rate_limited(report.execution.rate_limited)
        elif report.execution.changed:
            # What was just done (a push, a PR, a transition) lets the next step be planned
            # now, for the issues it changed.
            self.requests.follow_up(report.execution.touched)
        return report

    def _freeze(self) -> None:
        if self._freeze_heap and not self._heap_frozen and not self.parts.repos.catching_up():
            # What the first whole tick read (records, pull request states, the issue feed)
            # mostly lives as long as the process: the garbage collector stops walking it
            # at every collection (at 10,000 issues that walking took about 15% of a tick).
            gc.freeze()
            self._heap_frozen = True

    def save_feed(self, unit: Unit, *, force: bool = False) -> None:
        """Save a repository's issue feed for the next start; a failure costs that start a
        full read."""
        try:
            self.parts.feeds.save(unit.parts.github.feed, force=force)
        except Exception as error:
            if is_unreachable(error):
                self.parts.health.failed(error, where="feed")
            else:
                log.warning("issue_feed_not_saved", **error_fields(error))

    def _rate_limited(self, limited: RateLimited) -> None:
        self.stats.rate_limited_until = limited.reset_at
        self.stats.rate_limit_deferrals += 1
        log.warning(
            "rate_limited",
            resource=limited.resource,
            until=limited.reset_at.isoformat(),
            route=limited.route,
        )
