"""One daemon per embedded database: an exclusive lock on a file beside the SQLite file.

Two daemons on one SQLite file would both poll, dispatch and write; the second
refuses to start instead, naming the process that holds the lock. The lock is
an ``flock`` on ``<database>.lock``, so it disappears with the process, even
after a SIGKILL.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import IO


class AlreadyRunning(RuntimeError):
    """Another daemon holds the database's lock."""


class InstanceLock:
    """An exclusive, non-blocking ``flock`` held for the life of the daemon."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._handle: IO[str] | None = None

    def acquire(self) -> None:
        """Take the lock or raise :class:`AlreadyRunning` with the holder's process id."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(self.path, "a+", encoding="utf-8")  # noqa: SIM115 (held until release)
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "unknown"
            handle.close()
            raise AlreadyRunning(
                f"another orchestrator daemon (pid {holder}) already uses this database; "
                f"lock file {self.path}. Stop it first, or give this one another --db."
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        self._handle = handle

    def release(self) -> None:
        handle, self._handle = self._handle, None
        if handle is not None:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
            handle.close()

    @property
    def held(self) -> bool:
        return self._handle is not None
