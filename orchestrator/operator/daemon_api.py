"""Where the operator commands find a running daemon's API, and the token it wants.

``--url`` (or the ``url`` preference) names the daemon; without it the
address is ``server.host:server.port`` of the policy file the other commands
read (``--workflow``, default ./WORKFLOW.md), with the environment's
``ORCHESTRATOR_SERVER__*`` overrides. The file is read leniently, only its
``server`` keys: the operator's shell may lack variables the rest of the
policy needs. The token is ``$ORCHESTRATOR_API_TOKEN`` when set, else the
policy's ``server.token``. :func:`fetch_state` reads ``/api/v1/state`` there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from orchestrator.web.hosts import WILDCARD_ADDRESSES, host_name
from orchestrator.workflow.build import sqlite_absolute
from orchestrator.workflow.catalog import settings
from orchestrator.workflow.coerce import Conversion, ConversionError, convert
from orchestrator.workflow.document import parse_document
from orchestrator.workflow.layers import RawValue, from_document, from_environment
from orchestrator.workflow.loader import display_name

TOKEN_ENV = "ORCHESTRATOR_API_TOKEN"
SERVER_KEYS = ("server.host", "server.port", "server.token")


@dataclass(frozen=True)
class DaemonAddress:
    """A daemon's API: its base URL and the bearer token to send."""

    url: str
    token: str | None
    # Why the token is missing although the policy names one (an unset variable).
    token_problem: str | None = None


@dataclass(frozen=True)
class NoAddress:
    """Why no daemon address can be known (shown instead of the live status)."""

    reason: str


@dataclass(frozen=True)
class ServerKeys:
    """Some keys of a policy file (its ``server`` keys) as far as they could be read."""

    values: Mapping[str, object]
    problems: Mapping[str, str]


def read_server_keys(workflow: Path, env: Mapping[str, str]) -> ServerKeys | NoAddress:
    """``server.host``, ``server.port`` and ``server.token`` of ``workflow`` and the environment."""
    return read_keys(workflow, env, SERVER_KEYS)


def read_keys(
    workflow: Path, env: Mapping[str, str], keys: tuple[str, ...]
) -> ServerKeys | NoAddress:
    """``keys`` of ``workflow`` and the environment, read leniently.

    A key that cannot be read keeps its default and its problem is kept;
    nothing else of the policy is checked.
    """
    source = display_name(workflow)
    try:
        text = workflow.read_text(encoding="utf-8")
    except FileNotFoundError:
        return NoAddress(f"no {source} here; pass --workflow or --url")
    except (OSError, UnicodeDecodeError) as exc:
        return NoAddress(f"cannot read {source}: {exc}")
    document, problems = parse_document(text, source)
    if document is None:
        first = problems[0] if problems else f"{source}: cannot be parsed"
        return NoAddress(str(first))
    file_layer, _ = from_document(document, source)
    env_layer, _ = from_environment(env)
    values: dict[str, object] = {}
    failures: dict[str, str] = {}
    for key in keys:
        spec = settings()[key]
        raw: RawValue | None = env_layer.get(key) or file_layer.get(key)
        values[key] = spec.default
        if raw is None:
            continue
        conversion = Conversion(spec, env, workflow.resolve().parent, raw.textual)
        try:
            values[key] = convert(conversion, raw.value)
        except ConversionError as exc:
            failures[key] = f"{source}: {key}: {exc.message}"
    return ServerKeys(values, failures)


def policy_database_url(workflow: Path, env: Mapping[str, str]) -> str | None:
    """``database.url`` of ``workflow`` as ``orchestrator run`` would open it, else None.

    None when there is no such file (the default database is meant then); a
    value that cannot be read (an unset variable) is a ``ValueError`` naming it.
    """
    keys = read_keys(workflow, env, ("database.url",))
    if isinstance(keys, NoAddress):
        if workflow.exists():
            raise ValueError(keys.reason)
        return None
    problem = keys.problems.get("database.url")
    if problem is not None:
        raise ValueError(problem)
    url = keys.values["database.url"]
    assert isinstance(url, str)
    return sqlite_absolute(url, workflow.resolve().parent)


def api_url(host: str, port: int) -> str:
    """The URL to reach a server listening on ``host:port`` from this machine.

    A wildcard listen address is reached on loopback.
    """
    name = host_name(host)
    if name in WILDCARD_ADDRESSES:
        name = "::1" if name == "::" else "127.0.0.1"
    if ":" in name:
        name = f"[{name}]"
    return f"http://{name}:{port}"


def find_daemon(
    url: str | None, workflow: Path, env: Mapping[str, str]
) -> DaemonAddress | NoAddress:
    """Where to ask for the live status: ``url`` if given, else the policy's ``server`` keys."""
    keys = read_server_keys(workflow, env)
    env_token = env.get(TOKEN_ENV) or None
    policy_token: str | None = None
    token_problem: str | None = None
    if isinstance(keys, ServerKeys):
        found = keys.values["server.token"]
        policy_token = found if isinstance(found, str) else None
        token_problem = keys.problems.get("server.token")
    token = env_token or policy_token
    if env_token:
        token_problem = None
    if url:
        return DaemonAddress(url.rstrip("/"), token, token_problem)
    if isinstance(keys, NoAddress):
        return keys
    for key in ("server.host", "server.port"):
        if key in keys.problems:
            return NoAddress(keys.problems[key])
    host, port = keys.values["server.host"], keys.values["server.port"]
    assert isinstance(host, str) and isinstance(port, int)
    if port == 0:
        return NoAddress(
            f"{display_name(workflow)}: server.port is 0 (the daemon picks a free port): pass --url"
        )
    return DaemonAddress(api_url(host, port), token, token_problem)


class DaemonUnreachable(Exception):
    """The daemon did not answer with its state; the message says what happened."""


def fetch_state(address: DaemonAddress, *, timeout_s: float) -> dict[str, Any]:
    """``GET /api/v1/state`` of the daemon at ``address``; raises :class:`DaemonUnreachable`."""
    headers = {"Authorization": f"Bearer {address.token}"} if address.token else {}
    try:
        response = httpx.get(f"{address.url}/api/v1/state", headers=headers, timeout=timeout_s)
    except httpx.HTTPError as exc:
        raise DaemonUnreachable(f"cannot reach the daemon at {address.url}: {exc}") from exc
    if response.status_code != 200:
        message = f"{address.url}: HTTP {response.status_code}: {_error_text(response)}"
        if response.status_code == 401:
            message += "; " + (
                address.token_problem
                or f"set {TOKEN_ENV} (or server.token in the policy) to the daemon's token"
            )
        raise DaemonUnreachable(message)
    try:
        data = response.json()
    except ValueError as exc:
        raise DaemonUnreachable(f"{address.url}: the answer is not JSON: {exc}") from exc
    if not isinstance(data, dict) or "issues" not in data:
        raise DaemonUnreachable(f"{address.url}: the answer is not an orchestrator's state")
    return data


def _error_text(response: httpx.Response) -> str:
    """The message of the API's error envelope, else the start of the body."""
    try:
        return str(response.json()["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return response.text.strip()[:200]
