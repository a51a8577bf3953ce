"""Waiting until an in-process daemon runs no agent turn, as tests that drive ticks do."""

from __future__ import annotations

import time

from orchestrator.daemon.daemon import Daemon


def wait_idle(daemon: Daemon, timeout_s: float) -> bool:
    """Wait until no agent turn of ``daemon`` runs; False when ``timeout_s`` ran out first.

    While it waits, the claims and the poll lease are renewed at the heartbeat's pace,
    as the scheduler would: a turn longer than the lease keeps its claim.
    """
    pool, jobs = daemon.parts.pool, daemon.parts.jobs
    deadline = time.monotonic() + timeout_s
    while True:
        remaining = deadline - time.monotonic()
        if pool.wait_idle(max(0.0, min(remaining, jobs.heartbeat_s()))):
            return True
        if remaining <= 0:
            return False
        jobs.guarded("heartbeat", jobs.beat)
