"""Which ``Host`` headers the web server answers: its defence against DNS rebinding.

A page on another site can make a browser send requests to 127.0.0.1 by
pointing its own host name at that address; the browser then sends that name
in ``Host``. Answering only names the server knows (its listen address, the
loopback names when it listens on loopback, ``server.allowed_hosts``) refuses
those requests. A wildcard listen address (``0.0.0.0``, ``::``) names no host,
so there any IP address is accepted too: a rebinding page always sends a name,
and probes and scrapers that reach a pod or a machine by its address keep
working.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass

WILDCARD_ADDRESSES = frozenset({"0.0.0.0", "::", ""})  # noqa: S104 - recognised, not bound
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
ANY_HOST = "*"


def host_name(value: str) -> str:
    """The name of a ``Host`` header or an address without its port and brackets, lowercased.

    ``example.com:8080`` -> ``example.com``; ``[::1]:8080`` -> ``::1``; a bare
    IPv6 address is kept whole.
    """
    text = value.strip().lower()
    if text.startswith("["):
        end = text.find("]")
        return text[1:end] if end > 0 else text
    if text.count(":") == 1:
        text = text.split(":", 1)[0]
    return text.rstrip(".")


def is_ip_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def is_loopback(name: str) -> bool:
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class HostRule:
    """The ``Host`` names a server bound to ``bound`` answers."""

    bound: str
    names: frozenset[str]
    any_host: bool

    @classmethod
    def of(cls, bound: str, allowed_hosts: Iterable[str] = ()) -> HostRule:
        """The rule for a server listening on ``bound`` with ``server.allowed_hosts``."""
        address = host_name(bound)
        allowed = {host_name(name) for name in allowed_hosts}
        names = (allowed - {ANY_HOST}) | ({address} - WILDCARD_ADDRESSES)
        if address in WILDCARD_ADDRESSES or is_loopback(address):
            names |= LOOPBACK_NAMES
        return cls(address, frozenset(names), ANY_HOST in allowed)

    @property
    def wildcard(self) -> bool:
        return self.bound in WILDCARD_ADDRESSES

    def accepts(self, header: str | None) -> bool:
        """Whether a request with this ``Host`` header is for this server.

        A request without the header (HTTP/1.0) cannot come from a browser and is accepted.
        """
        if self.any_host or not header:
            return True
        name = host_name(header)
        if name in self.names:
            return True
        return self.wildcard and is_ip_address(name)
