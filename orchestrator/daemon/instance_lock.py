"""One daemon per embedded database: exclusive locks on the SQLite file and on a file beside it.

Two daemons on one SQLite file would both poll, dispatch and write; the second
refuses to start instead, naming the process that holds the lock. The locks
are ``flock``s, so they disappear with the process, even after a SIGKILL:

- on ``<database>.lock``, which also holds the holder's process id;
- on the database file itself, so that a daemon reaching the same file by
  another name (a hard link, a symlink, another relative path) refuses too.

``flock`` and the POSIX record locks SQLite takes are independent on Linux, so
the second lock does not get in SQLite's way. It has one rule, though: closing
any descriptor of a file drops every POSIX lock the process holds on it,
SQLite's included. The lock is therefore taken before the process opens the
database, released after it closed it, and a second lock on a file this
process already holds is refused without opening the file.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from orchestrator.store.sqlite_faults import StorageFault, describe_storage_error

# The (device, inode) of every database file locked by this process.
_HELD_HERE: set[tuple[int, int]] = set()


class AlreadyRunning(RuntimeError):
    """Another daemon holds the database's lock."""


class InstanceLock:
    """Exclusive, non-blocking ``flock``s on a SQLite file, held for the life of the daemon."""

    def __init__(self, database: Path) -> None:
        self.database = database
        self.path = Path(f"{database}.lock")
        self._lock_fd: int | None = None
        self._database_fd: int | None = None
        self._identity: tuple[int, int] | None = None

    def acquire(self) -> None:
        """Take the locks, creating the database file if there is none yet.

        Raises :class:`AlreadyRunning` with the holder's process id, or
        :class:`StorageFault` when the files cannot be created or written.
        """
        try:
            self._lock_fd = self._lock_file()
            self._lock_database()
            # Unbuffered: a full disk fails here, not later in close().
            os.ftruncate(self._lock_fd, 0)
            os.pwrite(self._lock_fd, f"{os.getpid()}\n".encode(), 0)
        except OSError as error:
            self.release()
            line = describe_storage_error(error, self.database)
            raise StorageFault(line or f"SQLite database {self.database}: {error}") from None
        except AlreadyRunning:
            self.release()
            raise

    def release(self) -> None:
        fd, self._database_fd = self._database_fd, None
        if fd is not None:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
        if self._identity is not None:
            _HELD_HERE.discard(self._identity)
            self._identity = None
        fd, self._lock_fd = self._lock_fd, None
        if fd is not None:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    @property
    def held(self) -> bool:
        return self._lock_fd is not None and self._database_fd is not None

    def _lock_file(self) -> int:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise AlreadyRunning(
                f"another orchestrator daemon (pid {holder}) already uses this database; "
                f"lock file {self.path}. Stop it first, or give this one another --db."
            ) from None
        return fd

    def _lock_database(self) -> None:
        try:
            known = os.stat(self.database)
        except FileNotFoundError:
            pass
        else:
            if (known.st_dev, known.st_ino) in _HELD_HERE:
                raise self._taken(str(os.getpid()))
        # Read-only is enough for flock, and creates the file on a first start.
        fd = os.open(self.database, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
        stat = os.fstat(fd)
        identity = (stat.st_dev, stat.st_ino)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise self._taken(flock_holder(identity)) from None
        self._database_fd = fd
        self._identity = identity
        _HELD_HERE.add(identity)

    def _taken(self, holder: str) -> AlreadyRunning:
        return AlreadyRunning(
            f"another orchestrator daemon (pid {holder}) already uses this database; "
            f"database file {self.database}, reached by another name (a hard link, a symlink "
            "or another path). Stop it first, or give this one another --db."
        )


def flock_holder(identity: tuple[int, int], locks: Path = Path("/proc/locks")) -> str:
    """The process id holding an ``flock`` on the file (device, inode), or ``unknown``."""
    device, inode = identity
    wanted = f"{os.major(device):02x}:{os.minor(device):02x}:{inode}"
    try:
        lines = locks.read_text(encoding="ascii", errors="replace").splitlines()
    except OSError:
        return "unknown"
    for line in lines:
        # "1: FLOCK  ADVISORY  WRITE 4242 fe:00:1234 0 EOF"; waiters carry "->" and are skipped.
        fields = line.split()
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == wanted:
            pid = fields[4]
            return pid if pid.isdigit() and pid != "0" else "unknown"
    return "unknown"
