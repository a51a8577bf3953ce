"""The daemon's scheduler: four fixed jobs on an APScheduler 3 background scheduler.

The jobs are the poll tick (``polling.interval_ms``, first run at once), the
heartbeat, the claim pass (every second, or the poll interval when shorter)
and the lease reaper. Each runs one instance at a time, coalesced, with a
misfire grace of one period, on an in-memory job store.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from apscheduler.events import EVENT_JOB_ERROR, JobExecutionEvent
from apscheduler.executors.pool import ThreadPoolExecutor as SchedulerPool
from apscheduler.jobstores.memory import MemoryJobStore
from apscheduler.schedulers.background import BackgroundScheduler

REAPER_INTERVAL_S = 60.0
# How often every replica looks for queued turns and cancellations (a database query).
CLAIM_INTERVAL_S = 1.0
POLL_JOB = "poll"


class _BusyPollFilter(logging.Filter):
    """Drops APScheduler's notice that a poll run was skipped because a tick still runs.

    A running poll job keeps ticking while ticks are requested, and makes the
    whole tick a skipped run owed before it ends; the notice would repeat on every
    busy interval.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not ("_poll_job" in message and "maximum number of running instances" in message)


_BUSY_POLL_FILTER = _BusyPollFilter()


@dataclass(frozen=True)
class Jobs:
    """What the scheduler runs, and how often."""

    poll: Callable[[], None]
    heartbeat: Callable[[], None]
    claim: Callable[[], None]
    reap: Callable[[], None]
    on_error: Callable[[JobExecutionEvent], None]
    interval_s: float
    heartbeat_s: float


def start_scheduler(jobs: Jobs) -> BackgroundScheduler:
    """Build the scheduler with the four jobs and start it (the poll job runs at once)."""
    scheduler = BackgroundScheduler(
        jobstores={"default": MemoryJobStore()},
        executors={"default": SchedulerPool(4)},
        timezone=UTC,
    )
    periodic = (
        (jobs.poll, POLL_JOB, jobs.interval_s, max(1, math.ceil(jobs.interval_s))),
        (jobs.heartbeat, "heartbeat", jobs.heartbeat_s, max(1, math.ceil(jobs.heartbeat_s))),
        (jobs.claim, "claim", min(CLAIM_INTERVAL_S, jobs.interval_s), 1),
        (jobs.reap, "reaper", REAPER_INTERVAL_S, int(REAPER_INTERVAL_S)),
    )
    for func, job_id, seconds, grace in periodic:
        scheduler.add_job(
            func,
            "interval",
            seconds=seconds,
            id=job_id,
            max_instances=1,
            coalesce=True,
            misfire_grace_time=grace,
            **({"next_run_time": datetime.now(UTC)} if job_id == POLL_JOB else {}),
        )
    scheduler.add_listener(jobs.on_error, EVENT_JOB_ERROR)
    scheduler_log = logging.getLogger("apscheduler.scheduler")
    if _BUSY_POLL_FILTER not in scheduler_log.filters:
        scheduler_log.addFilter(_BUSY_POLL_FILTER)
    scheduler.start()
    return scheduler
