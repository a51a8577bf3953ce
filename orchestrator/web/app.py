"""The Starlette application: dashboard, issue timelines, JSON API, metrics, health.

Every mutating endpoint needs the bearer token from ``server.token`` (and is
refused while none is configured); when a token is set, reads need it too.
``/metrics`` also accepts ``server.metrics_token``, and needs one of the two
once either is set. What no token guards is answered only for the host names
the server knows (:mod:`orchestrator.web.hosts`), so that a DNS-rebinding page
cannot read it. Health checks stay open so a container runtime can probe them.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy.exc import SQLAlchemyError
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from orchestrator.daemon.status import RuntimeStatus
from orchestrator.logs import get_logger
from orchestrator.store.database import Database
from orchestrator.web.control import DaemonControl
from orchestrator.web.hosts import HostRule, host_name
from orchestrator.web.metrics import make_registry, metrics_text
from orchestrator.web.pages import dashboard as dashboard_html
from orchestrator.web.pages import issue as issue_html
from orchestrator.web.views import dashboard as dashboard_view
from orchestrator.web.views import issue as issue_view

OPEN_PATHS = frozenset({"/healthz", "/readyz"})
MIN_TICK_AGE = timedelta(seconds=60)
# Refused hosts are logged once each; past this many, new ones are not logged.
MAX_LOGGED_HOSTS = 256

log = get_logger(__name__)


def error(status: int, code: str, message: str) -> JSONResponse:
    """The one error envelope of the API."""
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


def create_app(
    *,
    db: Database,
    status: Callable[[], RuntimeStatus | None],
    control: DaemonControl | None,
    token: str | None = None,
    metrics_token: str | None = None,
    hosts: HostRule | None = None,
    html_base: str = "https://github.com",
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> Starlette:
    """The operator's web application over the store and the daemon's live status.

    ``hosts`` decides which ``Host`` headers are answered where no token
    guards the route (default: a server listening on 127.0.0.1).
    """
    registry = make_registry(db, status)
    host_rule = hosts or HostRule.of("127.0.0.1")
    refused_hosts: set[str] = set()

    def authorized(request: Request, mutating: bool, *, metrics: bool = False) -> Response | None:
        if request.url.path in OPEN_PATHS:
            return None
        accepted = [t for t in (token, metrics_token if metrics else None) if t]
        if not accepted:
            if (refused := misdirected(request)) is not None:
                return refused
            if mutating:
                return error(
                    403,
                    "token_not_configured",
                    "set server.token to enable the operator API's write endpoints",
                )
            return None
        given = request.headers.get("authorization", "").encode()
        # Every token is compared, so the time taken does not tell which one nearly matched.
        matches = [hmac.compare_digest(given, f"Bearer {t}".encode()) for t in accepted]
        if not any(matches):
            return error(401, "unauthorized", "a valid 'Authorization: Bearer <token>' is required")
        return None

    def misdirected(request: Request) -> Response | None:
        """421 for a ``Host`` this server does not answer to, logged once per host."""
        header = request.headers.get("host")
        if host_rule.accepts(header):
            return None
        name = host_name(header or "")[:253]
        if name not in refused_hosts and len(refused_hosts) < MAX_LOGGED_HOSTS:
            refused_hosts.add(name)
            log.warning("web_host_refused", host=name, path=request.url.path)
        return PlainTextResponse(
            "421 Misdirected Request: this server does not answer to that Host; "
            "add the name to server.allowed_hosts, or set server.token\n",
            status_code=421,
        )

    def current() -> RuntimeStatus | None:
        return status()

    def cluster_view(live: RuntimeStatus | None, now: datetime) -> dashboard_view.ClusterView:
        return dashboard_view.cluster(db, now, live.repos[0] if live and live.repos else None)

    async def dashboard(request: Request) -> Response:
        if (denied := authorized(request, False)) is not None:
            return denied
        now = clock()
        live = current()
        rows = dashboard_view.issue_rows(db, live, now)
        cluster = cluster_view(live, now)
        head = dashboard_view.header(live, cluster.leader) if live else _no_status_header()
        return HTMLResponse(dashboard_html.dashboard(head, rows, html_base, cluster.replicas))

    async def issue_page(request: Request) -> Response:
        if (denied := authorized(request, False)) is not None:
            return denied
        data = _timeline(request)
        if data is None:
            return HTMLResponse("<h1>Not tracked</h1><p><a href='/'>dashboard</a></p>", 404)
        return HTMLResponse(issue_html.issue_page(data, html_base))

    def _timeline(request: Request) -> dict[str, Any] | None:
        p = request.path_params
        return issue_view.timeline(db, f"{p['owner']}/{p['repo']}", int(p["number"]))

    async def api_state(request: Request) -> Response:
        if (denied := authorized(request, False)) is not None:
            return denied
        now = clock()
        live = current()
        cluster = cluster_view(live, now)
        return JSONResponse(
            {
                "as_of": now.isoformat(),
                "daemon": dashboard_view.header(live, cluster.leader).as_json() if live else None,
                "leader": cluster.leader,
                "replicas": [replica.as_json() for replica in cluster.replicas],
                "queued_turns": cluster.queued_turns,
                "issues": [row.as_json() for row in dashboard_view.issue_rows(db, live, now)],
            }
        )

    async def api_issue(request: Request) -> Response:
        if (denied := authorized(request, False)) is not None:
            return denied
        data = _timeline(request)
        if data is None:
            p = request.path_params
            return error(
                404, "issue_not_found", f"{p['owner']}/{p['repo']}#{p['number']} is not tracked"
            )
        return JSONResponse(data)

    async def api_refresh(request: Request) -> Response:
        if (denied := authorized(request, True)) is not None:
            return denied
        if control is None:
            return error(503, "daemon_not_running", "no daemon is attached to this server")
        queued = control.request_tick()
        return JSONResponse({"status": "queued" if queued else "coalesced"}, status_code=202)

    async def api_brake(request: Request) -> Response:
        if (denied := authorized(request, True)) is not None:
            return denied
        if control is None:
            return error(503, "daemon_not_running", "no daemon is attached to this server")
        active = request.method == "POST"
        control.set_brake(active)
        return JSONResponse({"brake": active})

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(request: Request) -> Response:
        problems = readiness_problems(db, current(), clock())
        if problems:
            return JSONResponse({"status": "unready", "problems": problems}, status_code=503)
        return JSONResponse({"status": "ready"})

    async def metrics(request: Request) -> Response:
        if (denied := authorized(request, False, metrics=True)) is not None:
            return denied
        return Response(
            metrics_text(registry), media_type="text/plain; version=0.0.4; charset=utf-8"
        )

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        codes = {404: "not_found", 405: "method_not_allowed"}
        code = codes.get(exc.status_code, "http_error")
        if request.url.path.startswith("/api/") or exc.status_code == 405:
            response = error(
                exc.status_code, code, f"{request.method} {request.url.path}: {exc.detail}"
            )
            if exc.headers:
                response.headers.update(exc.headers)
            return response
        return HTMLResponse(f"<h1>{exc.status_code}</h1><p>{exc.detail}</p>", exc.status_code)

    routes = [
        Route("/", dashboard, methods=["GET"]),
        Route("/issues/{owner}/{repo}/{number:int}", issue_page, methods=["GET"]),
        Route("/api/v1/state", api_state, methods=["GET"]),
        Route("/api/v1/issues/{owner}/{repo}/{number:int}", api_issue, methods=["GET"]),
        Route("/api/v1/refresh", api_refresh, methods=["POST"]),
        Route("/api/v1/brake", api_brake, methods=["POST", "DELETE"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
    ]
    return Starlette(routes=routes, exception_handlers={HTTPException: http_error})


def readiness_problems(db: Database, status: RuntimeStatus | None, now: datetime) -> list[str]:
    """Why the daemon should not receive traffic now (empty when it is ready).

    The leader must have ticked recently. A follower does not tick: it is ready
    while its heartbeat keeps it alive in the ``replicas`` table, judged on the
    database's clock as the other replicas judge it.
    """
    problems = []
    reachable = db.ping()
    if not reachable:
        problems.append(f"database unreachable: {db.display_url}")
    if status is None:
        problems.append("no daemon status yet")
        return problems
    if status.policy_error:
        problems.append(f"policy invalid: {status.policy_error}")
    if status.leading:
        allowed = max(MIN_TICK_AGE, timedelta(seconds=3 * status.poll_interval_s))
        reference = status.last_tick_at or status.started_at
        if now - reference > allowed:
            last = status.last_tick_at.isoformat() if status.last_tick_at else "never"
            problems.append(f"last tick is stale (last: {last}, allowed age {allowed})")
    elif reachable:
        problems += _heartbeat_problems(db, status.replica_id, now)
    return problems


def _heartbeat_problems(db: Database, replica_id: str, now: datetime) -> list[str]:
    try:
        rows = db.replicas.all(now=now)
    except SQLAlchemyError as failure:
        return [f"database unreachable: {db.display_url}: {type(failure).__name__}"]
    own = next((row for row in rows if row.replica_id == replica_id), None)
    if own is None:
        return [f"replica {replica_id} is not registered in the replicas table"]
    if own.stopped_at is not None:
        return [f"replica {replica_id} is stopping"]
    if not own.alive:
        return [
            f"heartbeat is stale (last: {own.heartbeat_at.isoformat()}, "
            f"counted dead since {own.expires_at.isoformat()})"
        ]
    return []


def _no_status_header() -> dashboard_view.Header:
    return dashboard_view.Header(
        rollout_mode="unknown",
        brake_active=False,
        stopped_repos=(),
        policy_path="",
        policy_error=None,
        budgets=(),
        rate_limited_until=None,
        last_tick_at=None,
        last_tick_error="no daemon attached",
        ticks=0,
        replica_id="-",
        running=0,
        role="unknown",
    )
