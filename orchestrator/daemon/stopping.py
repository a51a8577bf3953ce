"""How a daemon stops: no new turns, the scheduler's jobs end, running turns get their grace
period, the rest are cancelled; then feeds, claims, runs and leases are settled."""

from __future__ import annotations

from apscheduler.schedulers.background import BackgroundScheduler

from orchestrator.daemon.poller import Poller
from orchestrator.daemon.startup import DaemonParts
from orchestrator.daemon.systemd import SystemdNotifier
from orchestrator.logs import get_logger
from orchestrator.store.database import Database
from orchestrator.store.outage import DatabaseHealth, is_unreachable
from orchestrator.turns.pool import WorkerPool

log = get_logger(__name__)

# Extra time for cancelled turns to end (the agent's own grace period comes on top).
CANCEL_WAIT_S = 10.0


def finish_turns(pool: WorkerPool, wait_s: float, *, cancel_wait_s: float) -> int:
    """Give the running turns ``wait_s`` to finish, then cancel the rest and give them
    ``cancel_wait_s`` to end; returns how many were cancelled."""
    if pool.wait_idle(wait_s):
        return 0
    cancelled = pool.cancel_all("shutdown")
    log.warning("turns_cancelled", count=cancelled)
    pool.wait_idle(cancel_wait_s)
    return cancelled


def stop_turns(
    parts: DaemonParts,
    *,
    grace_s: float,
    scheduler: BackgroundScheduler | None,
    notifier: SystemdNotifier,
) -> None:
    """Tell systemd, take no new turn, end the scheduler's jobs (after the tick in progress),
    let running turns finish within ``grace_s`` and cancel the rest."""
    pool = parts.pool
    notifier.stopping()
    log.info("daemon_stopping", grace_s=grace_s, running=pool.busy)
    pool.stop_accepting()
    if scheduler is not None:
        scheduler.shutdown(wait=True)
    agent_grace_s = parts.repo_set.agents.settings.grace_period_ms / 1000
    finish_turns(pool, grace_s, cancel_wait_s=agent_grace_s + CANCEL_WAIT_S)
    pool.shutdown()


def settle(
    parts: DaemonParts, db: Database, health: DatabaseHealth, *, replica_id: str
) -> tuple[int, int]:
    """Save the led repositories' feeds, apply the held turn results, mark the unfinished
    runs interrupted, release the claims and leave the cluster.

    Returns how many runs were interrupted and leases released. A database out of reach
    is counted, not raised: the leases expire on their own and the next start recovers
    the runs.
    """
    units = parts.repo_set.units
    poller: Poller = parts.poller
    for repo in parts.cluster.leading:
        if repo in units:
            poller.save_feed(units[repo], force=True)
    try:
        parts.claimer.apply_held(parts.repo_set.work_for)
        interrupted = db.runs.interrupt_unfinished(
            now=poller.parts.clock(), replica_id=None if db.is_sqlite else replica_id
        )
        parts.claimer.release()
        return interrupted, parts.cluster.leave()
    except Exception as error:
        if not is_unreachable(error):
            raise
        health.failed(error, where="shutdown")
        return 0, 0
