"""The emulator's Starlette application and its GitHub request pipeline.

Every GitHub route (REST, GraphQL, git) goes through the same steps: fault
rules, authentication, secondary limits, the primary budget, the handler, the
ETag and 304 check, rate-limit headers, then counters and the write log.
The control API (`orchestrator_sim.control_api`) and job-log downloads sit
beside it, outside billing.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import importlib
import itertools
import json
from collections.abc import Awaitable, Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp

from orchestrator.logs import get_logger
from orchestrator_sim import (
    rest_apps,
    rest_checks,
    rest_issues,
    rest_pulls,
    rest_repos,
    rest_rulesets,
)
from orchestrator_sim.api import Call, Reply, RouteSpec
from orchestrator_sim.apps import JwtRefused
from orchestrator_sim.billing import (
    RateLimited,
    RateSnapshot,
    SecondaryLimited,
    charge_tally,
)
from orchestrator_sim.control_api import control_routes
from orchestrator_sim.dropped import ConnectionControl, drop
from orchestrator_sim.emulator import Emulator
from orchestrator_sim.errors import DOCS_URL, SimError
from orchestrator_sim.faults import FaultDecision, FaultRule
from orchestrator_sim.githttp import parse_git_path, run_http_backend
from orchestrator_sim.graphql_names import mutation_name
from orchestrator_sim.linear.api import linear_routes
from orchestrator_sim.linear.control import linear_control_routes
from orchestrator_sim.records import User
from orchestrator_sim.render_cache import RenderCache, Rendered

log = get_logger(__name__)

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
GRAPHQL_MODULE = "orchestrator_sim.graphql_api"

_BASE_HEADERS = {
    "x-github-media-type": "github.v3; format=json",
    "x-github-api-version-selected": "2022-11-28",
    "x-oauth-scopes": "repo, workflow",
    "x-accepted-oauth-scopes": "",
    "vary": "Accept, Authorization, Cookie, X-GitHub-OTP",
    "cache-control": "private, max-age=60, s-maxage=60",
}


def all_routes() -> tuple[RouteSpec, ...]:
    """Every REST operation; check-run and status routes precede the plain commit route."""
    return (
        rest_checks.ROUTES
        + rest_issues.ROUTES
        + rest_pulls.ROUTES
        + rest_repos.ROUTES
        + rest_rulesets.ROUTES
    )


@dataclass(slots=True)
class _Outcome:
    status: int
    billed: int
    not_modified: bool
    write: bool
    operation: str | None = None


class GitHubFront:
    """The shared pipeline for GitHub-facing requests of one emulator."""

    def __init__(self, emulator: Emulator) -> None:
        self.emulator = emulator
        self.renders = RenderCache()
        self._request_ids = itertools.count(1)

    # ----------------------------------------------------------------- pieces

    def base_url(self, request: Request) -> str:
        host = request.headers.get("host") or f"{request.url.hostname}:{request.url.port}"
        return f"{request.url.scheme}://{host}"

    def authenticate(self, request: Request) -> tuple[str | None, User | None]:
        """The token and account of a request (None, None without credentials)."""
        header = request.headers.get("authorization", "")
        scheme, _, value = header.partition(" ")
        token: str | None = None
        if scheme.lower() in ("token", "bearer"):
            token = value.strip()
        elif scheme.lower() == "basic":
            try:
                decoded = base64.b64decode(value.strip(), validate=True).decode()
            except (binascii.Error, UnicodeDecodeError):
                decoded = ""
            user_part, _, password = decoded.partition(":")
            token = password or user_part
        if not token:
            return None, None
        user = self.emulator.state.user_for_token(token)
        if user is None:
            # An installation token acts as its App's bot, billed to the installation.
            actor = self.emulator.apps.actor_for_token(token)
            if actor is not None:
                return actor.token or token, actor
        return token, user

    def headers(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        headers = dict(_BASE_HEADERS)
        headers["x-github-request-id"] = f"SIM:{next(self._request_ids):08X}"
        if extra:
            headers.update(extra)
        return headers

    def json_response(
        self, status: int, body: Any, extra: dict[str, str] | None = None
    ) -> Response:
        payload = b"" if body is None else _dump(body)
        headers = self.headers(extra)
        if body is not None:
            headers["content-type"] = "application/json; charset=utf-8"
        return Response(payload, status_code=status, headers=headers)

    def record(self, request: Request, token: str | None, route: str, outcome: _Outcome) -> None:
        billing = self.emulator.billing
        billing.record(
            token,
            route,
            billed=outcome.billed,
            not_modified=outcome.not_modified,
            write=outcome.write,
        )
        if outcome.write:
            billing.record_write(
                token,
                request.method,
                request.url.path,
                status=outcome.status,
                route=route,
                operation=outcome.operation,
            )

    async def fault_reply(self, rule: FaultRule, request: Request) -> Response:
        if rule.action == "reset":
            return await drop(request)
        if rule.action == "secondary":
            return self.secondary_response(SecondaryLimited(rule.status or 403, rule.retry_after))
        status = rule.status or 502
        if status == 500:
            return self.json_response(
                500, {"message": "Server Error", "documentation_url": DOCS_URL}
            )
        return Response(
            f"{status} Server Error: injected fault\n".encode(),
            status_code=status,
            headers={"content-type": "text/html; charset=utf-8"},
        )

    def secondary_response(
        self, exc: SecondaryLimited, snapshot: RateSnapshot | None = None
    ) -> Response:
        extra = {"retry-after": str(exc.retry_after)}
        if snapshot is not None:
            extra.update(snapshot.headers())
        return self.json_response(exc.status, exc.body(), extra)

    def unauthorized(self, token: str | None) -> Response:
        message = "Requires authentication" if token is None else "Bad credentials"
        return self.json_response(
            401, {"message": message, "documentation_url": DOCS_URL, "status": "401"}
        )

    # ------------------------------------------------------------------- REST

    def rest_endpoint(
        self, template: str, specs: dict[str, RouteSpec]
    ) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            method = "GET" if request.method == "HEAD" else request.method
            spec = specs.get(method)
            route = f"{method} {template}"
            if spec is None:
                return self.json_response(
                    404, {"message": "Not Found", "documentation_url": DOCS_URL}
                )
            return await self.serve_rest(request, spec, route)

        return endpoint

    async def admit(
        self,
        request: Request,
        route: str,
        resource: str,
        unauthorized: Callable[[str | None], Response],
    ) -> Response | tuple[str, User, FaultDecision]:
        """What every API request passes first: faults, authentication, secondary limits.

        Returns the answer when the request stops here, else the token, the user
        and the fault decision (latency, or a lost response to play afterwards).
        An admitted request holds a concurrency slot until ``billing.release``.
        """
        decision = self.emulator.faults.decide(request.method, request.url.path)
        rule = decision.rule
        token, user = self.authenticate(request)
        if rule is not None and rule.action != "lost_response":
            await _delay(decision.latency_ms)
            self.record(request, token, route, _Outcome(rule.status or 0, 0, False, False))
            return await self.fault_reply(rule, request)
        if token is None or user is None:
            await _delay(decision.latency_ms)
            self.record(request, token, route, _Outcome(401, 0, False, False))
            return unauthorized(token)
        billing = self.emulator.billing
        try:
            billing.admit(token)
        except SecondaryLimited as exc:
            snapshot = billing.snapshot(token, resource)
            self.record(request, token, route, _Outcome(exc.status, 0, False, False))
            return self.secondary_response(exc, snapshot)
        # Merge queues and auto-merges act on what changed since the last request.
        if self.emulator.settle_needed():
            await anyio.to_thread.run_sync(self.emulator.settle)
        return token, user, decision

    async def serve_rest(self, request: Request, spec: RouteSpec, route: str) -> Response:
        emulator = self.emulator
        admitted = await self.admit(request, route, spec.resource, self.unauthorized)
        if isinstance(admitted, Response):
            return admitted
        token, user, decision = admitted
        rule = decision.rule
        billing = emulator.billing
        try:
            # A slow answer keeps its request in flight (it counts for concurrency limits).
            await _delay(decision.latency_ms)
            if spec.free:
                snapshot = billing.snapshot(token, spec.resource)
                billed = 0
            else:
                try:
                    snapshot = billing.charge(token, spec.resource, 1, user.id)
                except RateLimited as exc:
                    self.record(request, token, route, _Outcome(403, 0, False, False))
                    return self.json_response(403, exc.body(), exc.snapshot.headers())
                billed = 1
            call = Call(
                emulator=emulator,
                method=request.method,
                path=request.url.path,
                params=request.path_params,
                query=request.query_params,
                user=user,
                base_url=self.base_url(request),
                raw_body=await request.body(),
            )
            key = (request.url.path, request.url.query, call.base_url, user.login)
            reply = await anyio.to_thread.run_sync(self.render, spec, call, key)
            extra = dict(reply.headers)
            not_modified = False
            if reply.etag is not None:
                extra["etag"] = reply.etag
                if _etag_matches(request.headers.get("if-none-match"), reply.etag):
                    not_modified = True
                    if billed:
                        snapshot = billing.refund(token, spec.resource, billed)
                        billed = 0
            extra.update(snapshot.headers())
        finally:
            billing.release(token)
        write = request.method in WRITE_METHODS
        self.record(request, token, route, _Outcome(reply.status, billed, not_modified, write))
        if rule is not None:
            return await drop(request)
        if not_modified:
            return Response(b"", status_code=304, headers=self.headers(extra))
        payload = b"" if request.method == "HEAD" else reply.payload or b""
        response = Response(payload, status_code=reply.status, headers=self.headers(extra))
        if reply.payload is not None:
            response.headers["content-type"] = "application/json; charset=utf-8"
        return response

    def render(self, spec: RouteSpec, call: Call, key: Hashable) -> Rendered:
        """The handler's answer as bytes (run in a worker thread).

        A cacheable route's answer is reused for the same request ``key``
        while the state's version stays the same.
        """
        if not spec.cacheable or call.method not in ("GET", "HEAD"):
            return _render(spec, call)
        state = self.emulator.state
        with state.lock:
            version = state.version
            found = self.renders.get(key, version)
            if found is None:
                found = _render(spec, call)
                if found.status == 200:
                    self.renders.put(key, version, found)
            return found

    # ------------------------------------------------------------ App (JWT)

    def app_endpoint(self, spec: RouteSpec) -> Callable[[Request], Awaitable[Response]]:
        """A route an App calls with its JSON web token (never billed, as on GitHub)."""
        route = f"{spec.method} {spec.path}"

        async def endpoint(request: Request) -> Response:
            decision = self.emulator.faults.decide(request.method, request.url.path)
            rule = decision.rule
            await _delay(decision.latency_ms)
            if rule is not None and rule.action != "lost_response":
                self.record(request, None, route, _Outcome(rule.status or 0, 0, False, False))
                return await self.fault_reply(rule, request)
            scheme, _, value = request.headers.get("authorization", "").partition(" ")
            apps = self.emulator.apps
            try:
                if scheme.lower() != "bearer" or not value.strip():
                    raise JwtRefused("A JSON web token could not be decoded")
                app = apps.verify_jwt(value.strip())
            except JwtRefused as refused:
                self.record(request, None, route, _Outcome(401, 0, False, False))
                return self.json_response(
                    401, {"message": str(refused), "documentation_url": DOCS_URL}
                )
            call = Call(
                emulator=self.emulator,
                method=request.method,
                path=request.url.path,
                params=request.path_params,
                query=request.query_params,
                user=apps.bot(app),
                base_url=self.base_url(request),
                raw_body=await request.body(),
            )
            reply = await anyio.to_thread.run_sync(_render, spec, call)
            write = request.method in WRITE_METHODS
            self.record(request, None, route, _Outcome(reply.status, 0, False, write))
            if rule is not None:
                return await drop(request)
            response = Response(
                reply.payload or b"", status_code=reply.status, headers=self.headers(reply.headers)
            )
            if reply.payload is not None:
                response.headers["content-type"] = "application/json; charset=utf-8"
            return response

        return endpoint

    # ---------------------------------------------------------------- GraphQL

    async def serve_graphql(self, request: Request) -> Response:
        route = "POST /graphql"

        def unauthorized(_token: str | None) -> Response:
            return self.json_response(
                401,
                {
                    "message": "This endpoint requires you to be authenticated.",
                    "documentation_url": DOCS_URL,
                },
            )

        admitted = await self.admit(request, route, "graphql", unauthorized)
        if isinstance(admitted, Response):
            return admitted
        token, user, decision = admitted
        rule = decision.rule
        billing = self.emulator.billing
        tally: list[int] = []
        operation: str | None = None
        try:
            await _delay(decision.latency_ms)
            try:
                body = json.loads(await request.body())
            except ValueError:
                body = None
            if not isinstance(body, dict):
                self.record(request, token, route, _Outcome(400, 0, False, False))
                return self.json_response(
                    400, {"message": "Problems parsing JSON", "documentation_url": DOCS_URL}
                )
            operation = mutation_name(body)
            status, document = await self._run_graphql(user, body, tally)
        finally:
            billing.release(token)
        snapshot = billing.snapshot(token, "graphql")
        write = operation is not None
        self.record(request, token, route, _Outcome(status, sum(tally), False, write, operation))
        if rule is not None:
            return await drop(request)
        return self.json_response(status, document, snapshot.headers())

    async def _run_graphql(
        self, user: User, body: dict[str, Any], tally: list[int]
    ) -> tuple[int, Any]:
        billing = self.emulator.billing
        token = user.token or ""
        if billing.snapshot(token, "graphql").remaining <= 0:
            exhausted = billing.snapshot(token, "graphql")
            return 200, RateLimited(exhausted, user.id).graphql_body()
        try:
            module = importlib.import_module(GRAPHQL_MODULE)
        except ModuleNotFoundError as exc:
            if exc.name != GRAPHQL_MODULE:
                raise
            return 200, {
                "errors": [{"message": "GraphQL is not available in this emulator build."}]
            }
        handle = module.handle_graphql

        def run() -> tuple[int, Any]:
            charge_tally.set(tally)
            try:
                status, document = handle(self.emulator, billing, user, body)
            except RateLimited as exc:
                return 200, exc.graphql_body()
            return int(status), document

        try:
            return await anyio.to_thread.run_sync(run)
        except Exception:
            log.exception("sim_graphql_failed")
            return 502, {
                "errors": [{"message": "Something went wrong while executing your query."}]
            }

    # -------------------------------------------------------------------- git

    async def serve_git(self, request: Request) -> Response:
        emulator = self.emulator
        parsed = parse_git_path(request.url.path, request.url.query)
        if parsed is None:
            return PlainTextResponse("Not Found\n", status_code=404)
        route = f"GIT {parsed.service}"
        decision = emulator.faults.decide(request.method, request.url.path)
        if decision.latency_ms:
            await asyncio.sleep(decision.latency_ms / 1000)
        rule = decision.rule
        token, user = self.authenticate(request)
        if rule is not None and rule.action != "lost_response":
            self.record(request, token, route, _Outcome(rule.status or 0, 0, False, False))
            return await self.fault_reply(rule, request)
        if user is None:
            self.record(request, token, route, _Outcome(401, 0, False, False))
            return PlainTextResponse(
                "Authentication required\n",
                status_code=401,
                headers={"www-authenticate": 'Basic realm="GitHub"'},
            )
        state = emulator.state
        repo = state.find_repo(parsed.owner, parsed.name)
        if repo is None or not state.has_permission(repo, user.login, "read"):
            self.record(request, token, route, _Outcome(404, 0, False, False))
            return PlainTextResponse("Repository not found.\n", status_code=404)
        if parsed.is_push and not state.has_permission(repo, user.login, "write"):
            self.record(
                request, token, route, _Outcome(403, 0, False, parsed.subpath != "info/refs")
            )
            return PlainTextResponse(
                f"Permission to {repo.full_name}.git denied to {user.login}.\n", status_code=403
            )
        answer = await run_http_backend(
            emulator,
            repo,
            user,
            parsed,
            method=request.method,
            query=request.url.query,
            content_type=request.headers.get("content-type"),
            content_encoding=request.headers.get("content-encoding"),
            git_protocol=request.headers.get("git-protocol"),
            body=await request.body(),
            base_url=self.base_url(request),
        )
        write = parsed.is_push and parsed.subpath == "git-receive-pack"
        self.record(request, token, route, _Outcome(answer.status, 0, False, write))
        if rule is not None:
            return await drop(request)
        return Response(answer.body, status_code=answer.status, headers=answer.headers)

    # ------------------------------------------------------------ job logs

    async def serve_job_log(self, request: Request) -> Response:
        params = request.path_params
        state = self.emulator.state
        repo = state.find_repo(params["owner"], params["repo"])
        if repo is None:
            return PlainTextResponse("Not Found\n", status_code=404)
        expected = rest_checks.job_log_signature(self.emulator.blob_secret, repo, params["job_id"])
        if request.query_params.get("sig") != expected:
            return PlainTextResponse("Signature does not match\n", status_code=403)
        try:
            with state.lock:
                text = state.check_run_for_job(repo, params["job_id"]).log
        except SimError:
            return PlainTextResponse("Not Found\n", status_code=404)
        return PlainTextResponse(text)


async def _delay(milliseconds: int) -> None:
    if milliseconds:
        await asyncio.sleep(milliseconds / 1000)


def _render(spec: RouteSpec, call: Call) -> Rendered:
    """Run the handler; a GET answered 200 gets the ETag of its body."""
    try:
        reply = spec.handler(call)
    except SimError as exc:
        reply = Reply(exc.status, exc.body())
    except Exception:
        # A bug in a handler must look like GitHub's own 500, not a dropped request.
        log.exception("sim_handler_failed", route=f"{spec.method} {spec.path}")
        reply = Reply(500, {"message": "Server Error", "documentation_url": DOCS_URL})
    payload = None if reply.body is None else _dump(reply.body)
    etag = None
    if call.method in ("GET", "HEAD") and reply.status == 200:
        etag = 'W/"' + hashlib.sha256(payload or b"").hexdigest() + '"'
    return Rendered(reply.status, payload, dict(reply.headers), etag)


def _dump(body: Any) -> bytes:
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()


def _etag_matches(header: str | None, etag: str) -> bool:
    if not header:
        return False
    wanted = etag.removeprefix("W/")
    for candidate in header.split(","):
        value = candidate.strip()
        if value == "*" or value.removeprefix("W/") == wanted:
            return True
    return False


def _group(specs: Iterable[RouteSpec]) -> dict[str, dict[str, RouteSpec]]:
    grouped: dict[str, dict[str, RouteSpec]] = {}
    for spec in specs:
        grouped.setdefault(spec.path, {})[spec.method] = spec
    return grouped


def build_app(emulator: Emulator) -> ASGIApp:
    """The ASGI application serving one emulator: GitHub routes, git, control API."""
    front = GitHubFront(emulator)
    methods = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]
    routes: list[BaseRoute] = list(control_routes(emulator))
    routes.append(
        Route(
            "/_blobs/job-logs/{owner}/{repo}/{job_id:int}",
            front.serve_job_log,
            methods=["GET"],
        )
    )
    routes.append(Route("/graphql", front.serve_graphql, methods=["POST"]))
    routes.extend(linear_control_routes(emulator.linear))
    routes.extend(linear_routes(emulator.linear, emulator.faults))
    for spec in rest_apps.JWT_ROUTES:
        routes.append(Route(spec.path, front.app_endpoint(spec), methods=[spec.method]))
    for template, specs in _group(rest_apps.ROUTES).items():
        routes.append(Route(template, front.rest_endpoint(template, specs), methods=methods))
    for template, specs in _group(all_routes()).items():
        routes.append(Route(template, front.rest_endpoint(template, specs), methods=methods))
    for suffix in ("info/refs", "git-upload-pack", "git-receive-pack"):
        routes.append(Route("/{owner}/{repo}/" + suffix, front.serve_git, methods=["GET", "POST"]))

    async def not_found(request: Request) -> Response:
        return front.json_response(404, {"message": "Not Found", "documentation_url": DOCS_URL})

    routes.append(Route("/{path:path}", not_found, methods=methods))
    app = Starlette(routes=routes)
    return ConnectionControl(app)
