"""The scheduler's jobs besides the poll: heartbeat, claim pass and lease reaper.

Each job's database work is guarded: an outage is counted on the database's
health (the status shows it), not raised into the scheduler or traced.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from orchestrator.daemon.systemd import SystemdNotifier, watchdog_interval_s
from orchestrator.logs import get_logger
from orchestrator.repos.cluster import ClusterRole
from orchestrator.repos.repo_set import RepoSet
from orchestrator.store.database import Database
from orchestrator.store.outage import DatabaseHealth, is_unreachable
from orchestrator.turns.claimer import TurnClaimer
from orchestrator.turns.pool import TurnSlot

log = get_logger(__name__)

DEFAULT_HEARTBEAT_S = 10.0


@dataclass
class BackgroundJobs:
    """The heartbeat, claim and reaper jobs of one daemon."""

    db: Database
    health: DatabaseHealth
    claimer: TurnClaimer
    cluster: ClusterRole
    repos: RepoSet
    notifier: SystemdNotifier
    # Set once systemd has heard READY=1 (it then hears WATCHDOG=1 at each heartbeat).
    ready: threading.Event
    request_tick: Callable[[], object]
    claim_ready: Callable[[], object]
    stopping: Callable[[], bool]
    # Rebinds the thread's log context (scheduler threads do not inherit it).
    bind: Callable[[], None]

    def heartbeat_s(self) -> float:
        """How often claims and the poll lease are renewed: well within the lease, whatever
        systemd's watchdog asks for."""
        return min(watchdog_interval_s() or DEFAULT_HEARTBEAT_S, self.cluster.heartbeat_s)

    def guarded(self, where: str, job: Callable[[], None]) -> None:
        """Run a job's database work; an outage is counted, not raised or traced."""
        try:
            job()
        except Exception as error:
            if not is_unreachable(error):
                raise
            self.health.failed(error, where=where)
        else:
            self.health.succeeded()

    def heartbeat(self) -> None:
        self.bind()
        if self.ready.is_set():
            self.notifier.watchdog()
        self.guarded("heartbeat", self.beat)

    def beat(self) -> None:
        """Renew the claims, then the poll leases; a takeover asks for a tick now."""
        # Claims first: a turn whose claim was lost is cancelled before anything else.
        self.claimer.renew()
        if self.cluster.heartbeat(*self.repos.units) and not self.stopping():
            # The previous leader is gone: tick now rather than at the next interval.
            self.request_tick()

    def claim(self) -> None:
        self.bind()
        self.guarded("claim", self._claim_and_follow)

    def _claim_and_follow(self) -> None:
        self.claim_ready()
        ended = False
        for repo in self.cluster.leading:
            unit = self.repos.units.get(repo)
            if unit is None:
                continue
            finished = self.db.claims.finished_count(repo)
            if finished != unit.finished_claims:
                unit.finished_claims = finished
                ended = True
        if ended:
            # A turn ended on some replica: plan its next step now.
            self.request_tick()

    def reap(self) -> None:
        self.guarded("reaper", self._reap)

    def _reap(self) -> None:
        reaped = self.cluster.reap()
        if reaped:
            log.info("leases_reaped", count=reaped)

    def first_event(self, slot: TurnSlot, at: datetime) -> None:
        """Note a turn's first event on its run (the pool calls this)."""
        self.guarded("run", lambda: self.db.runs.first_event(slot.run_id, at=at))
