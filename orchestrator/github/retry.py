"""The bounded retry policy for transient GitHub failures, as a pure decision.

5xx answers and network failures are retried with exponential backoff;
secondary rate limits (403/429 with ``Retry-After`` or GitHub's secondary
message) wait what the server asks, if that fits within the bound. A spent
primary budget is never waited for: it becomes a ``RateLimited`` outcome.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

SECONDARY_MARKERS = ("secondary rate limit", "abuse detection")


@dataclass(frozen=True)
class RetryPolicy:
    """How many attempts a call may take and how long it may wait between them."""

    max_attempts: int = 4
    base_delay_s: float = 0.5
    max_delay_s: float = 8.0
    # A Retry-After longer than this is not slept in a worker thread: the call fails, retryable.
    max_retry_after_s: float = 60.0


@dataclass(frozen=True)
class Retry:
    after_s: float


@dataclass(frozen=True)
class GiveUp:
    reason: str


@dataclass(frozen=True)
class PrimaryLimit:
    resource: str
    reset_at: datetime


Decision = Retry | GiveUp | PrimaryLimit | None


def header(headers: dict[str, Any], name: str) -> str | None:
    name = name.lower()
    for key, value in headers.items():
        if key.lower() == name:
            return str(value)
    return None


def is_primary_limit(status: int, headers: dict[str, Any]) -> bool:
    return status in (403, 429) and header(headers, "x-ratelimit-remaining") == "0"


def is_secondary_limit(status: int, headers: dict[str, Any], body: str) -> bool:
    if status not in (403, 429) or is_primary_limit(status, headers):
        return False
    return header(headers, "retry-after") is not None or any(
        marker in body.lower() for marker in SECONDARY_MARKERS
    )


def reset_time(headers: dict[str, Any]) -> datetime:
    raw = header(headers, "x-ratelimit-reset")
    try:
        return datetime.fromtimestamp(int(raw or "0"), UTC)
    except ValueError:
        return datetime.fromtimestamp(0, UTC)


def decide(
    policy: RetryPolicy,
    attempt: int,
    status: int | None,
    headers: dict[str, Any],
    body: str,
    *,
    idempotent: bool = True,
) -> Decision:
    """What to do after attempt number ``attempt`` (1-based) ended with ``status``.

    ``status`` None means the connection failed. Returns None when the answer
    is final (success or a non-retryable error). A non-idempotent request
    (creating something) is retried only when GitHub refused it outright (a
    secondary limit): after a 5xx or a lost connection it may have been applied,
    so the caller must look before creating again.
    """
    if status is not None and is_primary_limit(status, headers):
        return PrimaryLimit(header(headers, "x-ratelimit-resource") or "core", reset_time(headers))
    secondary = status is not None and is_secondary_limit(status, headers, body)
    transient = status is None or status >= 500 or secondary
    if not transient:
        return None
    if not idempotent and not secondary:
        return GiveUp("the write may or may not have been applied")
    if attempt >= policy.max_attempts:
        return GiveUp(f"still failing after {attempt} attempts")
    wait = min(policy.base_delay_s * 2 ** (attempt - 1), policy.max_delay_s)
    retry_after = header(headers, "retry-after")
    if retry_after is not None:
        try:
            asked = float(retry_after)
        except ValueError:
            asked = policy.max_delay_s
        if asked > policy.max_retry_after_s:
            return GiveUp(f"server asked to wait {asked:.0f} s")
        wait = max(wait, asked)
    return Retry(wait)
