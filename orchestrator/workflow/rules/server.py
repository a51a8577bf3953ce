"""Rules of the ``server`` section: exposure beyond this machine and the allowed host names."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator

from orchestrator.workflow.problems import Problem
from orchestrator.workflow.rules.context import RuleContext

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
_DNS_NAME = re.compile(r"^[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_.])?$")


def check_server(ctx: RuleContext) -> Iterator[Problem]:
    """Who can reach the dashboard and API, and under which host names."""
    server = ctx.policy.server
    if server.host not in LOOPBACK_HOSTS and server.token is None:
        yield ctx.warning(
            "server.host",
            f"{server.host} exposes the dashboard and API beyond this machine without server.token",
        )
    for index, name in enumerate(server.allowed_hosts):
        if not _is_host_name(name):
            yield ctx.error(
                f"server.allowed_hosts[{index}]",
                f"{name!r} is not a host name: write the name alone "
                "(orchestrator.example.com, no scheme, port or path), or * for any host",
            )
    if "*" in server.allowed_hosts and server.token is None:
        yield ctx.warning(
            "server.allowed_hosts",
            "* answers any Host header without server.token: a web page can read the "
            "dashboard and API through DNS rebinding",
        )


def _is_host_name(name: str) -> bool:
    """A DNS name, an IP address (IPv6 bare or in brackets), or ``*``."""
    if name == "*" or _DNS_NAME.match(name):
        return True
    try:
        ipaddress.ip_address(name.removeprefix("[").removesuffix("]"))
    except ValueError:
        return False
    return True
