"""Retry policy: continuation now after success, exponential backoff after failures."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from orchestrator.domain.retry import RetryKind, decide_retry, failure_backoff_ms, is_due

END = datetime(2026, 3, 14, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("failures", "cap", "expected"),
    [
        (0, 300_000, 0),
        (1, 300_000, 10_000),
        (2, 300_000, 20_000),
        (3, 300_000, 40_000),
        (5, 300_000, 160_000),
        (6, 300_000, 300_000),
        (1_000, 300_000, 300_000),
        (3, 15_000, 15_000),
        (1, 0, 0),
    ],
)
def test_backoff_doubles_from_ten_seconds_up_to_the_cap(
    failures: int, cap: int, expected: int
) -> None:
    assert failure_backoff_ms(failures, cap) == expected


def test_success_continues_immediately() -> None:
    decision = decide_retry(
        failed=False, failures=0, finished_at=END, max_backoff_ms=300_000, max_failures=3
    )
    assert decision.kind is RetryKind.CONTINUE
    assert decision.due_at == END


def test_failure_retries_after_the_backoff() -> None:
    decision = decide_retry(
        failed=True, failures=2, finished_at=END, max_backoff_ms=300_000, max_failures=3
    )
    assert decision.kind is RetryKind.RETRY
    assert decision.due_at == END + timedelta(seconds=20)
    assert decision.delay_ms == 20_000


def test_too_many_failures_give_up() -> None:
    decision = decide_retry(
        failed=True, failures=3, finished_at=END, max_backoff_ms=300_000, max_failures=3
    )
    assert decision.kind is RetryKind.GIVE_UP
    assert decision.due_at is None


def test_due_compares_with_the_given_time() -> None:
    assert is_due(None, END)
    assert is_due(END, END)
    assert not is_due(END + timedelta(seconds=1), END)
