"""Route families, cost accounting and the retry decision (pure parts)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from orchestrator.github.accounting import Accounting, route_family
from orchestrator.github.retry import GiveUp, PrimaryLimit, Retry, RetryPolicy, decide


@pytest.mark.parametrize(
    ("method", "path", "family"),
    [
        ("get", "/repos/acme/app/pulls/12", "GET /repos/{owner}/{repo}/pulls/{n}"),
        ("GET", "/repos/a/b/issues?state=open", "GET /repos/{owner}/{repo}/issues"),
        (
            "GET",
            f"/repos/a/b/commits/{'a' * 40}/check-runs",
            "GET /repos/{owner}/{repo}/commits/{sha}/check-runs",
        ),
        ("POST", "/graphql", "POST /graphql"),
        ("GET", "/user", "GET /user"),
    ],
)
def test_route_family(method: str, path: str, family: str) -> None:
    assert route_family(method, path) == family


def test_accounting_counts_units_and_ticks() -> None:
    accounting = Accounting()
    accounting.record("GET /user", units=1, not_modified=False)
    accounting.record("GET /user", units=0, not_modified=True)
    accounting.record("POST /graphql (points)", units=5, not_modified=False)
    assert accounting.total_units() == 6
    assert accounting.requests["GET /user"] == 2 and accounting.not_modified["GET /user"] == 1
    assert accounting.take_tick_units() == {"GET /user": 1, "POST /graphql (points)": 5}
    assert accounting.take_tick_units() == {}


POLICY = RetryPolicy(max_attempts=3, base_delay_s=1, max_delay_s=4, max_retry_after_s=30)


@pytest.mark.parametrize(
    ("name", "attempt", "status", "headers", "idempotent", "expected"),
    [
        ("success is final", 1, 200, {}, True, None),
        ("404 is final", 1, 404, {}, True, None),
        ("5xx backs off", 2, 502, {}, True, Retry(2)),
        ("5xx gives up at the bound", 3, 500, {}, True, GiveUp("still failing after 3 attempts")),
        ("lost connection retried for reads", 1, None, {}, True, Retry(1)),
        (
            "lost connection never retried for creates",
            1,
            None,
            {},
            False,
            GiveUp("the write may or may not have been applied"),
        ),
        ("secondary limit waits Retry-After", 1, 403, {"Retry-After": "7"}, False, Retry(7)),
        (
            "too long a Retry-After is not slept",
            1,
            429,
            {"retry-after": "600"},
            True,
            GiveUp("server asked to wait 600 s"),
        ),
        (
            "primary limit is never waited for",
            1,
            403,
            {
                "X-RateLimit-Remaining": "0",
                "X-RateLimit-Reset": "1800000000",
                "X-RateLimit-Resource": "core",
            },
            True,
            PrimaryLimit("core", datetime.fromtimestamp(1800000000, UTC)),
        ),
    ],
)
def test_retry_decision(
    name: str,
    attempt: int,
    status: int | None,
    headers: dict[str, str],
    idempotent: bool,
    expected: object,
) -> None:
    assert decide(POLICY, attempt, status, headers, "", idempotent=idempotent) == expected, name
