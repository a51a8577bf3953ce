"""The daemon's scheduler: four fixed jobs on an APScheduler 3 background scheduler.

The jobs are the poll tick (``polling.interval_ms``, first run at once), the
heartbeat, the claim pass (every second, or the poll interval when shorter)
and the lease reaper. Each runs one instance at a time, coalesced, with a
misfire grace of one period, on an in-memory job store. A job that raised, a
missed run and a run skipped at the instance limit are logged as stable events
(:func:`log_job_event`), not as APScheduler's sentences.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from apscheduler.events import (
    EVENT_JOB_ERROR,
    EVENT_JOB_MAX_INSTANCES,
    EVENT_JOB_MISSED,
    JobEvent,
    JobExecutionEvent,
    JobSubmissionEvent,
)
from apscheduler.executors.pool import ThreadPoolExecutor as SchedulerPool
from apscheduler.jobstores.memory import MemoryJobStore
from apscheduler.schedulers.background import BackgroundScheduler

from orchestrator.logs import get_logger

log = get_logger(__name__)

REAPER_INTERVAL_S = 60.0
# How often every replica looks for queued turns and cancellations (a database query).
CLAIM_INTERVAL_S = 1.0
POLL_JOB = "poll"


class _SchedulerNotices(logging.Filter):
    """Drops APScheduler's free-text lines about a job that failed, missed or was skipped.

    :func:`log_job_event` logs each of them as a stable event with its details in
    fields; APScheduler's own line (a sentence, and for a failure a traceback
    folded into the message) would say it a second time.
    """

    TEMPLATES = frozenset(
        {
            'Job "%s" raised an exception',
            'Run time of job "%s" was missed by %s',
            'Execution of job "%s" skipped: maximum number of running instances reached (%d)',
        }
    )

    def filter(self, record: logging.LogRecord) -> bool:
        return record.msg not in self.TEMPLATES


_SCHEDULER_NOTICES = _SchedulerNotices()
_SCHEDULER_LOGGERS = ("apscheduler.scheduler", "apscheduler.executors.default")
JOB_EVENTS = EVENT_JOB_ERROR | EVENT_JOB_MISSED | EVENT_JOB_MAX_INSTANCES


def log_job_event(event: JobEvent) -> None:
    """One scheduler event as a stable log line: ``scheduler_job_failed``,
    ``scheduler_job_missed`` or ``scheduler_job_skipped``.

    Only a failure carries a ``traceback`` field. A poll run skipped because a tick
    still runs is not logged: a running poll job keeps ticking while ticks are
    requested, and makes the whole tick a skipped run owed before it ends (the
    line would repeat on every busy interval).
    """
    if isinstance(event, JobExecutionEvent) and event.code == EVENT_JOB_ERROR:
        error = event.exception
        log.error(
            "scheduler_job_failed",
            job=event.job_id,
            scheduled_at=event.scheduled_run_time.isoformat(),
            error_type=type(error).__name__,
            error=str(error),
            traceback=event.traceback,
        )
    elif isinstance(event, JobExecutionEvent) and event.code == EVENT_JOB_MISSED:
        late = datetime.now(UTC) - event.scheduled_run_time
        log.warning(
            "scheduler_job_missed",
            job=event.job_id,
            scheduled_at=event.scheduled_run_time.isoformat(),
            late_s=round(late.total_seconds(), 3),
        )
    elif isinstance(event, JobSubmissionEvent) and event.job_id != POLL_JOB:
        log.warning(
            "scheduler_job_skipped",
            job=event.job_id,
            reason="max_instances",
            scheduled_at=event.scheduled_run_times[-1].isoformat()
            if event.scheduled_run_times
            else None,
        )


@dataclass(frozen=True)
class Jobs:
    """What the scheduler runs, and how often."""

    poll: Callable[[], None]
    heartbeat: Callable[[], None]
    claim: Callable[[], None]
    reap: Callable[[], None]
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
    scheduler.add_listener(log_job_event, JOB_EVENTS)
    for name in _SCHEDULER_LOGGERS:
        scheduler_log = logging.getLogger(name)
        if _SCHEDULER_NOTICES not in scheduler_log.filters:
            scheduler_log.addFilter(_SCHEDULER_NOTICES)
    scheduler.start()
    return scheduler
