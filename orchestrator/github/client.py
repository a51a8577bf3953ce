"""The low-level GitHub client on PyGithub's requester.

Every request goes through :meth:`GitHubClient.request`, which adds
conditional headers from the ETag cache, applies the retry policy, records the
cost, and turns failures into :class:`GitHubError` or :class:`RateLimited`.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol
from urllib.parse import urlencode, urlparse

from github import Auth, Github

from orchestrator.github.accounting import Accounting, route_family
from orchestrator.github.credentials import StaticToken, TokenProvider
from orchestrator.github.errors import GitHubError, RateLimited
from orchestrator.github.retry import GiveUp, PrimaryLimit, Retry, RetryPolicy, decide, header
from orchestrator.logs import get_logger

log = get_logger(__name__)

_NEXT_LINK = re.compile(r'<([^>]+)>;\s*rel="next"')


class CachedAnswer(Protocol):
    @property
    def etag(self) -> str | None: ...

    @property
    def body(self) -> str: ...


@dataclass(frozen=True, slots=True)
class CacheEntry:
    """One answer to keep for a URL: its validators and its body."""

    url: str
    etag: str | None
    last_modified: str | None
    body: str


class EtagCache(Protocol):
    """Where conditional requests keep their last answer (the store's HttpCache fits).

    ``get_many`` and ``put_many`` read and write many keys at once (the pull
    request poller's states), in one round trip where the cache has a database.
    """

    def get(self, url: str) -> CachedAnswer | None: ...

    def get_many(self, urls: Iterable[str]) -> Mapping[str, CachedAnswer]: ...

    def put(
        self, url: str, *, etag: str | None, last_modified: str | None, body: str, now: datetime
    ) -> None: ...

    def put_many(self, entries: Sequence[CacheEntry], *, now: datetime) -> None: ...


class MemoryEtagCache:
    """An in-process, unbounded ETag cache, for tools and tests that have no database."""

    def __init__(self) -> None:
        self._entries: dict[str, CacheEntry] = {}
        self._lock = threading.Lock()

    def get(self, url: str) -> CachedAnswer | None:
        with self._lock:
            return self._entries.get(url)

    def get_many(self, urls: Iterable[str]) -> Mapping[str, CachedAnswer]:
        with self._lock:
            return {url: self._entries[url] for url in urls if url in self._entries}

    def put(
        self, url: str, *, etag: str | None, last_modified: str | None, body: str, now: datetime
    ) -> None:
        self.put_many([CacheEntry(url, etag, last_modified, body)], now=now)

    def put_many(self, entries: Sequence[CacheEntry], *, now: datetime) -> None:
        with self._lock:
            self._entries.update((entry.url, entry) for entry in entries)


@dataclass(frozen=True)
class Response:
    """A final answer: the status, headers, decoded JSON, and whether it came from cache."""

    status: int
    headers: dict[str, Any]
    data: Any
    from_cache: bool = False


class _ProviderAuth(Auth.Auth):
    """PyGithub authentication that asks the provider for a current token on every request."""

    def __init__(self, provider: TokenProvider) -> None:
        self._provider = provider
        # The token the last request of this client carried (clients are per thread).
        self.last: str | None = None

    @property
    def token_type(self) -> str:
        return "token"

    @property
    def token(self) -> str:
        value = self._provider.token()
        self.last = value
        return value

    @property
    def _masked_token(self) -> str:
        return "token (removed)"


class GitHubClient:
    """Authenticated access to one GitHub API endpoint with one credential.

    ``token`` is a token, or a :class:`TokenProvider` asked for a current one
    on every request (a GitHub App's installation tokens): a request GitHub
    answers 401 with a token the provider can replace is sent once more with
    the new token (a 401 means GitHub did nothing, so no write is repeated).
    """

    def __init__(
        self,
        endpoint: str,
        token: str | TokenProvider,
        *,
        cache: EtagCache | None = None,
        accounting: Accounting | None = None,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        timeout_s: int = 30,
        seconds_between_writes: float = 0.0,
    ) -> None:
        self.credentials: TokenProvider = StaticToken(token) if isinstance(token, str) else token
        self._auth = _ProviderAuth(self.credentials)
        self.endpoint = endpoint.rstrip("/")
        self.cache = cache if cache is not None else MemoryEtagCache()
        self.accounting = accounting or Accounting()
        self.retry = retry or RetryPolicy()
        self._sleep = sleep
        self._clock = clock
        self.github = Github(
            base_url=self.endpoint,
            auth=self._auth,
            retry=None,
            timeout=timeout_s,
            per_page=100,
            seconds_between_requests=0,
            seconds_between_writes=seconds_between_writes,
        )
        self._requester = self.github.requester
        self._login: str | None = None

    @property
    def login(self) -> str:
        """The daemon's own account, fetched once: a GitHub App's bot (``slug[bot]``, from
        ``GET /app``), else the token's user (``GET /user``)."""
        if self._login is None:
            own = self.credentials.own_login()
            if own is None:
                own = str(self.request("GET", "/user").data["login"])
            self._login = own
        return self._login

    def request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        body: Any = None,
        conditional: bool = False,
        ok: Iterable[int] = (200, 201, 202, 204),
        headers: dict[str, str] | None = None,
        idempotent: bool | None = None,
    ) -> Response:
        """Send one request, with retries; raise GitHubError for any status not in ``ok``.

        POST is not idempotent unless said so: it is never repeated after an
        answer that leaves its effect unknown.
        """
        method = method.upper()
        if idempotent is None:
            idempotent = method != "POST"
        family = route_family(method, urlparse(path).path or path)
        cache_key = self._cache_key(path, params) if conditional and method == "GET" else None
        cached = self.cache.get(cache_key) if cache_key else None
        send_headers = dict(headers or {})
        if cached is not None and cached.etag:
            send_headers["If-None-Match"] = cached.etag
        attempt = 0
        renewed = False
        while True:
            attempt += 1
            status, answer_headers, raw = self._send(method, path, params, send_headers, body)
            self._account(family, path, status, answer_headers)
            if status == 401 and not renewed and self._renew():
                # The token expired or was revoked; GitHub did nothing with the request.
                renewed = True
                attempt -= 1
                log.info("github_token_renewed", route=family)
                continue
            decision = decide(
                self.retry, attempt, status, answer_headers, raw, idempotent=idempotent
            )
            if isinstance(decision, PrimaryLimit):
                self.accounting.record_rate_limited()
                log.warning(
                    "rate_limited",
                    route=family,
                    resource=decision.resource,
                    reset_at=decision.reset_at.isoformat(),
                )
                raise RateLimited(decision.resource, decision.reset_at, family)
            if isinstance(decision, Retry):
                log.info("github_retry", route=family, status=status, after_s=decision.after_s)
                self._sleep(decision.after_s)
                continue
            if isinstance(decision, GiveUp):
                raise GitHubError(family, status or 0, f"{decision.reason}: {raw[:300]}", True)
            break
        assert status is not None
        if status == 304 and cached is not None:
            return Response(200, answer_headers, json.loads(cached.body), from_cache=True)
        if status not in set(ok):
            raise GitHubError(family, status, _error_message(raw), retryable=status >= 500)
        data = json.loads(raw) if raw.strip() else None
        if cache_key is not None:
            etag = header(answer_headers, "etag")
            if etag:
                self.cache.put(
                    cache_key,
                    etag=etag,
                    last_modified=header(answer_headers, "last-modified"),
                    body=raw,
                    now=self._clock(),
                )
        return Response(status, answer_headers, data)

    def _renew(self) -> bool:
        used = self._auth.last
        return used is not None and self.credentials.refused(used)

    def request_text(self, path: str, *, max_bytes: int = 1_000_000) -> str:
        """A plain-text answer (job logs), following one redirect; only the tail is kept."""
        family = route_family("GET", path)
        status, answer_headers, raw = self._send_text(path)
        self._account(family, path, status, answer_headers)
        if status == 401 and self._renew():
            status, answer_headers, raw = self._send_text(path)
            self._account(family, path, status, answer_headers)
        decision = decide(self.retry, self.retry.max_attempts, status, answer_headers, raw)
        if isinstance(decision, PrimaryLimit):
            self.accounting.record_rate_limited()
            raise RateLimited(decision.resource, decision.reset_at, family)
        if status is None or status != 200:
            raise GitHubError(family, status or 0, raw[:300], retryable=status is None)
        return raw[-max_bytes:]

    def _send_text(self, path: str) -> tuple[int | None, dict[str, Any], str]:
        try:
            status, answer_headers, raw = self._requester.requestJson(
                "GET", path, follow_302_redirect=True
            )
        except Exception as exc:  # network failures end the read; the caller decides
            return None, {}, f"{type(exc).__name__}: {exc}"
        return status, dict(answer_headers), raw or ""

    def paginate(
        self,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        conditional: bool = False,
        key: str | None = None,
    ) -> list[Any]:
        """Every item of a list endpoint, following ``Link: rel="next"``; with ``key``, the
        items are that member of each page's object (``/installation/repositories``)."""
        params = {"per_page": 100, **(params or {})}
        items: list[Any] = []
        page = self._page(path, params, conditional, key)
        items.extend(page[0])
        while page[1]:
            page = self._page(page[1], None, conditional, key)
            items.extend(page[0])
        return items

    def graphql(self, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        """Run a GraphQL document; its cost is what GitHub reports in ``rateLimit.cost``."""
        response = self.request(
            "POST",
            self._requester.graphql_url,
            body={"query": query, "variables": variables or {}},
            ok=(200,),
            idempotent=not query.lstrip().startswith("mutation"),
        )
        payload = response.data or {}
        errors = payload.get("errors") or []
        if any(error.get("type") == "RATE_LIMITED" for error in errors):
            self.accounting.record_rate_limited()
            raise RateLimited("graphql", _reset_from(response.headers), "POST /graphql")
        if errors:
            messages = "; ".join(str(error.get("message")) for error in errors[:5])
            raise GitHubError("POST /graphql", 200, messages)
        data: dict[str, Any] = payload.get("data") or {}
        # A query's points are what GitHub reports for it; documents without
        # rateLimit are billed at GitHub's minimum of one point.
        cost = (data.get("rateLimit") or {}).get("cost") if isinstance(data, dict) else None
        self.accounting.record("POST /graphql (points)", units=int(cost or 1), not_modified=False)
        return data

    def _page(
        self, path: str, params: dict[str, Any] | None, conditional: bool, key: str | None
    ) -> tuple[list[Any], str | None]:
        response = self.request("GET", path, params=params, conditional=conditional)
        link = header(response.headers, "link") or ""
        match = _NEXT_LINK.search(link)
        data = response.data
        if key is not None:
            data = data.get(key) if isinstance(data, dict) else None
        data = data if isinstance(data, list) else []
        return data, match.group(1) if match else None

    def _send(
        self,
        method: str,
        path: str,
        params: dict[str, Any] | None,
        headers: dict[str, str],
        body: Any,
    ) -> tuple[int | None, dict[str, Any], str]:
        try:
            status, answer_headers, raw = self._requester.requestJson(
                method, path, parameters=params, headers=headers, input=body
            )
        except Exception as exc:  # network failures of any kind are retried
            return None, {}, f"{type(exc).__name__}: {exc}"
        return status, dict(answer_headers), raw or ""

    def _account(self, family: str, path: str, status: int | None, headers: dict[str, Any]) -> None:
        free = status == 304 or urlparse(path).path.endswith("/rate_limit")
        graphql = urlparse(path).path.endswith("/graphql")
        units = 0 if free or status is None else (0 if graphql else 1)
        self.accounting.record(family, units=units, not_modified=status == 304)
        resource = header(headers, "x-ratelimit-resource")
        remaining = header(headers, "x-ratelimit-remaining")
        if resource and remaining is not None:
            limit = header(headers, "x-ratelimit-limit")
            self.accounting.record_budget(
                resource, int(remaining), int(limit) if limit else None, _reset_from(headers)
            )

    def _cache_key(self, path: str, params: dict[str, Any] | None) -> str:
        if not params:
            return path if "://" in path else self.endpoint + path
        query = urlencode(sorted((k, str(v)) for k, v in params.items()))
        base = path if "://" in path else self.endpoint + path
        return f"{base}?{query}"


def _error_message(raw: str) -> str:
    try:
        data = json.loads(raw)
    except ValueError:
        return raw[:500]
    if isinstance(data, dict):
        message = str(data.get("message", ""))
        errors = data.get("errors")
        if errors:
            message += f" {json.dumps(errors)[:500]}"
        return message or raw[:500]
    return raw[:500]


def _reset_from(headers: dict[str, Any]) -> datetime:
    from orchestrator.github.retry import reset_time

    return reset_time(headers)
