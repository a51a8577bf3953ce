"""What a stopping daemon settles once its turns have ended: feeds, claims, runs, leases."""

from __future__ import annotations

from orchestrator.daemon.poller import Poller
from orchestrator.daemon.startup import Assembled
from orchestrator.store.database import Database
from orchestrator.store.outage import DatabaseHealth, is_unreachable


def settle(
    parts: Assembled, db: Database, health: DatabaseHealth, *, replica_id: str
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
