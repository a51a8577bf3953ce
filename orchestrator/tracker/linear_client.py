"""The Linear GraphQL client: authentication, errors, rate limits and Relay pagination.

Every request is one POST of a document from `orchestrator.tracker.linear_queries`.
A personal API key is sent bare (``Authorization: lin_api_...``), an OAuth token
after ``Bearer``, as Linear documents. The key is registered with the log
redactor the moment the client holds it.

Linear refuses before running a request with HTTP 400 and reads the reason in
``errors[].extensions.code``. ``RATELIMITED`` stops the client until the reset
the ``X-RateLimit-*`` headers name: until then every call raises
:class:`LinearRateLimited` without a request (the daemon pauses on it as on a
spent GitHub budget). The remaining budgets are recorded in the same
:class:`~orchestrator.github.accounting.Accounting` as GitHub's, as the
resources ``linear_requests`` and ``linear_complexity``.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from orchestrator.github.accounting import Accounting
from orchestrator.github.errors import RateLimited
from orchestrator.logs import get_logger, redact_text, register_secret
from orchestrator.tracker.base import TrackerError

log = get_logger(__name__)

DEFAULT_ENDPOINT = "https://api.linear.app/graphql"
# How long to stay away when Linear says RATELIMITED but names no reset.
DEFAULT_BACKOFF = timedelta(seconds=60)
# Attempts for a read that failed on the network or with a 5xx (writes are never resent).
READ_ATTEMPTS = 3


@dataclass(frozen=True)
class LinearRateLimited(RateLimited):
    """Linear's ``resource`` budget (requests or complexity) is spent until ``reset_at``."""

    def __str__(self) -> str:
        return f"Linear {self.resource} budget spent on {self.route}; resets at {self.reset_at}"


@dataclass(frozen=True)
class LinearError(TrackerError):
    """Linear refused ``operation`` with ``code`` (or the call failed on the way)."""

    operation: str
    code: str
    message: str
    # Whether trying again may succeed (network, 5xx). For a write it also means
    # that its effect is unknown: the caller reads before it writes again.
    retryable: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "message", redact_text(self.message)[:2000])

    def __str__(self) -> str:
        return f"Linear {self.operation}: {self.code}: {self.message}"

    @property
    def summary(self) -> str:
        return f"Linear: {self.operation}: {self.code}: {self.message}"


def authorization_header(api_key: str) -> str:
    """The ``Authorization`` value: an API key bare, an OAuth token after ``Bearer``."""
    key = api_key.strip()
    if key.lower().startswith("bearer "):
        return key
    if key.startswith("lin_oauth_"):
        return f"Bearer {key}"
    return key


def _reset(headers: Mapping[str, str], name: str) -> datetime | None:
    raw = headers.get(f"x-ratelimit-{name}-reset")
    try:
        return datetime.fromtimestamp(int(raw) / 1000, UTC) if raw else None
    except ValueError:
        return None


def _int(headers: Mapping[str, str], key: str) -> int | None:
    raw = headers.get(key)
    try:
        return int(raw) if raw is not None else None
    except ValueError:
        return None


class LinearClient:
    """Sends documents to one Linear GraphQL endpoint with one API key."""

    def __init__(
        self,
        endpoint: str,
        api_key: str,
        *,
        accounting: Accounting | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        sleep: Callable[[float], None] = time.sleep,
        timeout: float = 30.0,
    ) -> None:
        if not endpoint.startswith(("http://", "https://")):
            raise ValueError(f"tracker.endpoint: the Linear URL must be http(s), got {endpoint!r}")
        if not api_key or not api_key.strip():
            raise ValueError("tracker.api_key: the Linear API key is empty")
        register_secret(api_key.strip())
        self.endpoint = endpoint
        self._authorization = authorization_header(api_key)
        self.accounting = accounting if accounting is not None else Accounting()
        self._clock = clock
        self._sleep = sleep
        self._timeout = timeout
        self._lock = threading.Lock()
        self._limited: LinearRateLimited | None = None
        self.requests = 0

    def __repr__(self) -> str:
        return f"LinearClient({self.endpoint!r})"

    @property
    def limited_until(self) -> datetime | None:
        """Until when the client sends nothing (a RATELIMITED answer), if it is waiting."""
        with self._lock:
            limited = self._limited
        return limited.reset_at if limited is not None else None

    def execute(
        self,
        operation: str,
        document: str,
        variables: Mapping[str, Any] | None = None,
        *,
        write: bool = False,
    ) -> dict[str, Any]:
        """The ``data`` of one request; raises LinearRateLimited or LinearError."""
        route = f"linear {operation}"
        attempts = 1 if write else READ_ATTEMPTS
        for attempt in range(1, attempts + 1):
            self._check_limited()
            try:
                return self._once(operation, route, document, variables)
            except LinearError as error:
                if not error.retryable or attempt == attempts:
                    raise
                log.info("linear_retry", operation=operation, code=error.code, attempt=attempt)
                self._sleep(float(attempt))
        raise AssertionError("unreachable")

    def pages(
        self,
        operation: str,
        document: str,
        variables: Mapping[str, Any],
        path: tuple[str, ...],
    ) -> Iterator[list[dict[str, Any]]]:
        """Each page of the connection at ``path`` in the answer, following ``endCursor``."""
        after: str | None = None
        while True:
            data: Any = self.execute(operation, document, {**variables, "after": after})
            for key in path:
                data = data.get(key) if isinstance(data, dict) else None
            if not isinstance(data, dict):
                return
            yield list(data.get("nodes") or [])
            info = data.get("pageInfo") or {}
            after = info.get("endCursor")
            if not info.get("hasNextPage") or not after:
                return

    def _check_limited(self) -> None:
        with self._lock:
            limited = self._limited
            if limited is not None and self._clock() >= limited.reset_at:
                self._limited = limited = None
        if limited is not None:
            raise limited

    def _once(
        self, operation: str, route: str, document: str, variables: Mapping[str, Any] | None
    ) -> dict[str, Any]:
        payload = json.dumps(
            {"query": document, "variables": dict(variables or {}), "operationName": operation}
        ).encode()
        request = urllib.request.Request(  # noqa: S310 (the URL is checked to be http(s))
            self.endpoint,
            data=payload,
            method="POST",
            headers={
                "content-type": "application/json",
                "authorization": self._authorization,
                "user-agent": "orchestrator",
            },
        )
        self.requests += 1
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as answer:  # noqa: S310
                status, headers, raw = answer.status, _lower(answer.headers), answer.read()
        except urllib.error.HTTPError as exc:
            status, headers, raw = exc.code, _lower(exc.headers), exc.read()
        except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
            raise LinearError(operation, "NETWORK", str(exc), retryable=True) from None
        self._account(route, headers)
        try:
            body = json.loads(raw) if raw.strip() else None
        except ValueError:
            body = None
        if not isinstance(body, dict):
            text = raw[:300].decode(errors="replace")
            raise LinearError(operation, f"HTTP_{status}", text, retryable=status >= 500)
        errors = body.get("errors") or []
        codes = [((e.get("extensions") or {}).get("code") or "") for e in errors]
        if "RATELIMITED" in codes:
            raise self._rate_limited(route, headers)
        data = body.get("data")
        if errors or not isinstance(data, dict):
            first = errors[0] if errors else {}
            message = str(first.get("message") or f"HTTP {status} without data")
            code = codes[0] if codes and codes[0] else f"HTTP_{status}"
            raise LinearError(operation, code, message, retryable=status >= 500)
        return data

    def _account(self, route: str, headers: Mapping[str, str]) -> None:
        points = _int(headers, "x-complexity") or 0
        self.accounting.record(route, units=points, not_modified=False)
        for name in ("requests", "complexity"):
            remaining = _int(headers, f"x-ratelimit-{name}-remaining")
            if remaining is not None:
                self.accounting.record_budget(
                    f"linear_{name}",
                    remaining,
                    _int(headers, f"x-ratelimit-{name}-limit"),
                    _reset(headers, name),
                )

    def _rate_limited(self, route: str, headers: Mapping[str, str]) -> LinearRateLimited:
        """Stop sending until the spent budget's reset; the error to raise now."""
        now = self._clock()
        requests_left = _int(headers, "x-ratelimit-requests-remaining")
        resource = "requests" if requests_left is not None and requests_left < 1 else "complexity"
        reset_at = _reset(headers, resource) or _reset(headers, "requests")
        if reset_at is None or reset_at <= now:
            reset_at = now + DEFAULT_BACKOFF
        limited = LinearRateLimited(f"linear_{resource}", reset_at, route)
        with self._lock:
            self._limited = limited
        self.accounting.record_rate_limited()
        log.warning(
            "rate_limited", resource=limited.resource, reset_at=reset_at.isoformat(), route=route
        )
        return limited


def _lower(headers: Any) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in headers.items()} if headers else {}
