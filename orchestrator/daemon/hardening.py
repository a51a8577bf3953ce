"""Keep agents running as the daemon's user from reading the daemon's memory and environment.

With ``PR_SET_DUMPABLE`` cleared, ``/proc/<pid>/environ`` and ``/proc/<pid>/mem``
of the daemon (which hold the GitHub token) belong to root and ptrace attach is
refused, even for processes of the same user. Child processes are not affected:
running a new program resets the flag.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

from orchestrator.logs import get_logger

log = get_logger(__name__)

PR_SET_DUMPABLE = 4
PR_GET_DUMPABLE = 3


def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        return ctypes.CDLL(name, use_errno=True)
    except OSError:
        return None


def forbid_inspection() -> bool:
    """Clear the dumpable flag of this process (Linux only); True when it took effect."""
    if not sys.platform.startswith("linux"):
        return False
    libc = _libc()
    if libc is None:
        log.warning("prctl_unavailable", reason="libc not found")
        return False
    if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        log.warning("prctl_failed", errno=ctypes.get_errno())
        return False
    return True


def is_dumpable() -> bool | None:
    """The current dumpable flag (None when it cannot be read)."""
    if not sys.platform.startswith("linux"):
        return None
    libc = _libc()
    if libc is None:
        return None
    return bool(libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0))
