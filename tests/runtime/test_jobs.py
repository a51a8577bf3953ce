"""The scheduler's failures as stable log events, not APScheduler's sentences."""

from __future__ import annotations

import io
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import structlog
from apscheduler.events import EVENT_JOB_MISSED, JobExecutionEvent

from orchestrator.daemon.jobs import Jobs, log_job_event, start_scheduler
from orchestrator.logs import clear_context, configure_logging


@pytest.fixture
def stream() -> Iterator[io.StringIO]:
    out = io.StringIO()
    configure_logging(fmt="json", level="info", stream=out)
    clear_context()
    yield out
    structlog.reset_defaults()


def lines(out: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.getvalue().splitlines() if line.strip()]


def wait_for(found: Callable[[], bool], timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not found():
        assert time.monotonic() < deadline, "not logged in time"
        time.sleep(0.02)


def test_a_job_that_raises_and_one_still_running_are_named_events(stream: io.StringIO) -> None:
    release = threading.Event()

    def poll() -> None:
        raise RuntimeError("the poll broke")

    def heartbeat() -> None:
        # Longer than its interval: the next run is skipped at the instance limit.
        release.wait(5)

    scheduler = start_scheduler(
        Jobs(
            poll=poll,
            heartbeat=heartbeat,
            claim=lambda: None,
            reap=lambda: None,
            interval_s=0.2,
            heartbeat_s=0.2,
        )
    )
    try:
        wait_for(
            lambda: (
                {"scheduler_job_failed", "scheduler_job_skipped"}
                <= {line["event"] for line in lines(stream)}
            )
        )
    finally:
        release.set()
        scheduler.shutdown(wait=True)
    logged = lines(stream)
    failed = next(line for line in logged if line["event"] == "scheduler_job_failed")
    assert (failed["job"], failed["error_type"], failed["error"]) == (
        "poll",
        "RuntimeError",
        "the poll broke",
    )
    assert "test_jobs.py" in failed["traceback"] and "in poll" in failed["traceback"]
    assert "exception" not in failed
    skipped = next(line for line in logged if line["event"] == "scheduler_job_skipped")
    assert (skipped["job"], skipped["reason"]) == ("heartbeat", "max_instances")
    assert "traceback" not in skipped
    # APScheduler's own sentences are not written next to them.
    assert not [line for line in logged if str(line["logger"]).startswith("apscheduler")]


def test_a_missed_run_is_a_named_event_without_a_traceback(stream: io.StringIO) -> None:
    scheduled = datetime.now(UTC) - timedelta(seconds=3)
    log_job_event(JobExecutionEvent(EVENT_JOB_MISSED, "reaper", "default", scheduled))
    (missed,) = lines(stream)
    assert missed["event"] == "scheduler_job_missed"
    assert missed["job"] == "reaper" and missed["late_s"] >= 3
    assert missed["scheduled_at"] == scheduled.isoformat()
    assert "traceback" not in missed


def test_apschedulers_own_sentences_are_dropped_and_its_other_errors_kept(
    stream: io.StringIO,
) -> None:
    idle = Jobs(
        poll=lambda: None,
        heartbeat=lambda: None,
        claim=lambda: None,
        reap=lambda: None,
        interval_s=60,
        heartbeat_s=60,
    )
    scheduler = start_scheduler(idle)
    scheduler.shutdown(wait=True)
    executors = logging.getLogger("apscheduler.executors.default")
    executors.warning('Run time of job "%s" was missed by %s', "reaper", "0:00:03")
    executors.error('Job "%s" raised an exception', "poll")
    logging.getLogger("apscheduler.scheduler").warning(
        'Execution of job "%s" skipped: maximum number of running instances reached (%d)',
        "claim",
        1,
    )
    executors.error("Error running job %s", "poll")
    assert [line["event"] for line in lines(stream)] == ["Error running job poll"]
