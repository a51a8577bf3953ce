"""The daemon's open-file limit: raised to the hard limit at start, and shared out.

A process starts with a soft ``RLIMIT_NOFILE`` (1,024 under systemd unless the
unit says otherwise) and may raise it up to the hard limit itself. The daemon
does, and keeps three quarters of what it has for its own work (the database,
git, agent pipes, GitHub connections): the web server, whose connections anyone
who can reach it opens, gets at most the last quarter (``server.max_connections``
is clamped to it).
"""

from __future__ import annotations

import resource
from dataclasses import dataclass
from pathlib import Path

# The share of the descriptors the web server may hold: one in WEB_SHARE.
WEB_SHARE = 4
# Linux's ceiling for one process's descriptors when the hard limit is "unlimited".
NR_OPEN = Path("/proc/sys/fs/nr_open")
NR_OPEN_DEFAULT = 1_048_576


@dataclass(frozen=True)
class DescriptorLimit:
    """The soft and hard limits after the raise, and the soft limit the process started with."""

    soft: int
    hard: int
    started_with: int

    @property
    def web_budget(self) -> int:
        """The most connections the web server may hold: a quarter of the soft limit."""
        return self.soft // WEB_SHARE


def _finite(value: int) -> int:
    if value != resource.RLIM_INFINITY:
        return value
    try:
        return int(NR_OPEN.read_text().strip())
    except (OSError, ValueError):
        return NR_OPEN_DEFAULT


def current_limit() -> DescriptorLimit:
    """The limits as they are (unlimited counts as the kernel's ceiling)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return DescriptorLimit(soft=_finite(soft), hard=_finite(hard), started_with=_finite(soft))


def expected_limit() -> DescriptorLimit:
    """The limits :func:`raise_limit` would give this process (nothing is changed)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    started = _finite(soft)
    return DescriptorLimit(
        soft=max(started, _finite(hard)), hard=_finite(hard), started_with=started
    )


def raise_limit() -> DescriptorLimit:
    """Raise the soft limit to the hard one (as far as the kernel allows)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    started = _finite(soft)
    target = _finite(hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (OSError, ValueError):
            target = started
    else:
        target = started
    return DescriptorLimit(soft=target, hard=_finite(hard), started_with=started)


def web_connection_cap(wanted: int, limit: DescriptorLimit) -> int:
    """``server.max_connections`` as the web server applies it under ``limit``."""
    return max(1, min(wanted, limit.web_budget))
