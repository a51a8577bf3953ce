"""What is wrong with an embedded SQLite file, in one line an operator can act on.

A read-only file or folder, a full disk, a file that is not a database: SQLite
and the kernel report these as bare codes ("unable to open database file",
``EACCES``). :func:`probe_sqlite_writable` opens the file at start-up the way the
daemon will and writes to it; :func:`describe_storage_error` turns such an error,
at start-up or later, into ``SQLite database PATH: CAUSE; WHAT TO DO``.

The decision is :func:`diagnose`, a pure function of what the error says
(:class:`Symptom`) and of what the file system shows (:class:`StorageFacts`,
gathered by :func:`inspect_storage`).
"""

from __future__ import annotations

import errno
import os
import pwd
import sqlite3
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

# An I/O error with less room than this left is taken for a full disk: SQLite
# reports a failed growth of its shared-memory file as "disk I/O error".
LOW_SPACE_BYTES = 1 << 20


class StorageFault(RuntimeError):
    """The SQLite file cannot be used; the message is one line: path, cause, what to do."""


class Symptom(Enum):
    """What an error says happened, before looking at the file system."""

    ACCESS = "access"
    FULL = "full"
    IO = "io"
    NOT_A_DATABASE = "not_a_database"
    DAMAGED = "damaged"


class Cause(Enum):
    """Why the file cannot be used, with what the operator should do about it."""

    READ_ONLY_FILE = "read-only file"
    READ_ONLY_FOLDER = "read-only folder"
    READ_ONLY_FILE_SYSTEM = "read-only file system"
    DISK_FULL = "disk full"
    NOT_A_DATABASE = "not a SQLite database"
    DAMAGED = "damaged SQLite database"
    PERMISSION_DENIED = "permission denied"
    IO_ERROR = "disk I/O error"


_ADVICE = {
    Cause.READ_ONLY_FILE: "make it writable for user {user}, or give --db another file",
    Cause.READ_ONLY_FOLDER: (
        "SQLite creates its -wal and -shm files beside the database: make the folder "
        "writable for user {user}, or give --db a file in another folder"
    ),
    Cause.READ_ONLY_FILE_SYSTEM: (
        "mount it read-write, or give --db a file on a writable file system"
    ),
    Cause.DISK_FULL: (
        "free space on that file system (or raise the quota), "
        "or give --db a file on another file system"
    ),
    Cause.NOT_A_DATABASE: (
        "give --db the orchestrator's database, "
        "or move this file away to start with an empty database"
    ),
    Cause.DAMAGED: ("restore it from a backup, or move it away to start with an empty database"),
    Cause.PERMISSION_DENIED: (
        "give user {user} read and write access to the database file "
        "and write and search access to its folder"
    ),
    Cause.IO_ERROR: "check the disk and the kernel log (dmesg)",
}

# How a cause names the path it is about when that is not the database itself.
_SUBJECT_JOINS = {
    Cause.READ_ONLY_FILE: " ",
    Cause.READ_ONLY_FOLDER: " ",
    Cause.READ_ONLY_FILE_SYSTEM: " at ",
    Cause.DISK_FULL: " at ",
    Cause.PERMISSION_DENIED: " on ",
}

# SQLite's primary result codes (the low byte of an extended code).
_SQLITE_SYMPTOMS = {
    3: Symptom.ACCESS,  # SQLITE_PERM
    8: Symptom.ACCESS,  # SQLITE_READONLY
    10: Symptom.IO,  # SQLITE_IOERR
    11: Symptom.DAMAGED,  # SQLITE_CORRUPT
    13: Symptom.FULL,  # SQLITE_FULL
    14: Symptom.ACCESS,  # SQLITE_CANTOPEN
    26: Symptom.NOT_A_DATABASE,  # SQLITE_NOTADB
}

_OS_SYMPTOMS = {
    errno.ENOSPC: Symptom.FULL,
    errno.EDQUOT: Symptom.FULL,
    errno.EROFS: Symptom.ACCESS,
    errno.EACCES: Symptom.ACCESS,
    errno.EPERM: Symptom.ACCESS,
    errno.EIO: Symptom.IO,
}


@dataclass(frozen=True)
class FileFacts:
    """One file SQLite or the lock writes: the database, its -wal, -shm or .lock."""

    path: Path
    readable: bool
    writable: bool


@dataclass(frozen=True)
class StorageFacts:
    """What the file system shows about a database file, for the user the daemon runs as."""

    database: Path
    folder: Path  # the database's folder, or its nearest ancestor that exists
    folder_searchable: bool
    folder_writable: bool
    read_only_mount: bool
    free_bytes: int | None
    files: tuple[FileFacts, ...]  # those that exist, the database first
    user: str


@dataclass(frozen=True)
class Diagnosis:
    """The cause, and the path it is about (the database, a companion file, the folder)."""

    cause: Cause
    subject: Path

    def line(self, database: Path, user: str) -> str:
        cause = self.cause.value
        join = _SUBJECT_JOINS.get(self.cause)
        if join is not None and self.subject != database:
            cause = f"{cause}{join}{self.subject}"
        advice = _ADVICE[self.cause].format(user=user)
        return f"SQLite database {database}: {cause}; {advice}"


def symptom_of(error: BaseException) -> Symptom | None:
    """What a SQLite or OS error (bare, or wrapped by SQLAlchemy) says, if it is about storage."""
    for found in _error_chain(error):
        if isinstance(found, sqlite3.Error):
            code = getattr(found, "sqlite_errorcode", None)
            if isinstance(code, int):
                return _SQLITE_SYMPTOMS.get(code & 0xFF)
        elif isinstance(found, OSError) and found.errno is not None:
            return _OS_SYMPTOMS.get(found.errno)
    return None


def diagnose(symptom: Symptom, facts: StorageFacts) -> Diagnosis:
    """The cause of ``symptom`` given ``facts``: the decision, without any I/O."""
    if symptom is Symptom.NOT_A_DATABASE:
        return Diagnosis(Cause.NOT_A_DATABASE, facts.database)
    if symptom is Symptom.DAMAGED:
        return Diagnosis(Cause.DAMAGED, facts.database)
    low_space = facts.free_bytes is not None and facts.free_bytes < LOW_SPACE_BYTES
    if symptom is Symptom.FULL or (symptom is Symptom.IO and low_space):
        return Diagnosis(Cause.DISK_FULL, facts.folder)
    found = _access_problem(facts)
    if found is not None:
        return found
    if symptom is Symptom.IO:
        return Diagnosis(Cause.IO_ERROR, facts.database)
    return Diagnosis(Cause.PERMISSION_DENIED, facts.database)


def _access_problem(facts: StorageFacts) -> Diagnosis | None:
    if facts.read_only_mount:
        return Diagnosis(Cause.READ_ONLY_FILE_SYSTEM, facts.folder)
    if not facts.folder_searchable:
        return Diagnosis(Cause.PERMISSION_DENIED, facts.folder)
    for file in facts.files:
        if not file.readable:
            return Diagnosis(Cause.PERMISSION_DENIED, file.path)
        if not file.writable:
            return Diagnosis(Cause.READ_ONLY_FILE, file.path)
    if not facts.folder_writable:
        return Diagnosis(Cause.READ_ONLY_FOLDER, facts.folder)
    return None


def inspect_storage(database: Path) -> StorageFacts:
    """Look at the database's folder and files as the daemon's user sees them."""
    folder = database.parent
    while not os.path.isdir(folder) and folder != folder.parent:
        folder = folder.parent
    try:
        stats: os.statvfs_result | None = os.statvfs(folder)
    except OSError:
        stats = None
    files = tuple(
        FileFacts(path, _can(path, os.R_OK), _can(path, os.W_OK))
        for path in _companions(database)
        if os.path.lexists(path)
    )
    return StorageFacts(
        database=database,
        folder=folder,
        folder_searchable=_can(folder, os.X_OK),
        folder_writable=_can(folder, os.W_OK | os.X_OK),
        read_only_mount=stats is not None and bool(stats.f_flag & os.ST_RDONLY),
        free_bytes=stats.f_bavail * stats.f_frsize if stats is not None else None,
        files=files,
        user=_user_name(),
    )


def describe_storage_error(error: BaseException, database: Path | str | None) -> str | None:
    """One line (path, cause, what to do) when ``error`` is about the SQLite file, else None.

    Meant for any place that catches an error from the store: at start-up, and
    for a write that fails while the daemon runs ("database or disk is full",
    "disk I/O error", "attempt to write a readonly database").
    """
    for found in _error_chain(error):
        if isinstance(found, StorageFault):
            return str(found)
    if database is None:
        return None
    symptom = symptom_of(error)
    if symptom is None:
        return None
    facts = inspect_storage(Path(database))
    return diagnose(symptom, facts).line(facts.database, facts.user)


def probe_sqlite_writable(database: Path, *, busy_timeout_s: float = 30.0) -> None:
    """Open ``database`` (creating it) as the daemon does and commit a write that changes nothing.

    Raises :class:`StorageFault` with the one-line description. The write is a
    commit, not a rollback: in WAL mode a rolled-back transaction never reaches
    the disk, so only a commit shows that the file can grow.
    """
    try:
        database.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(database, timeout=busy_timeout_s, isolation_level=None)
        try:
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=NORMAL")
            connection.execute("BEGIN IMMEDIATE")
            (version,) = connection.execute("PRAGMA user_version").fetchone()
            connection.execute(f"PRAGMA user_version={int(version)}")
            connection.execute("COMMIT")
        finally:
            connection.close()
    except (OSError, sqlite3.Error) as error:
        line = describe_storage_error(error, database)
        raise StorageFault(line or f"SQLite database {database}: {error}") from error


def _error_chain(error: BaseException) -> list[BaseException]:
    """The error, what SQLAlchemy wrapped (``orig``), and its causes, without repeats."""
    chain: list[BaseException] = []
    pending: list[BaseException | None] = [error]
    while pending and len(chain) < 16:
        current = pending.pop(0)
        if current is None or any(current is seen for seen in chain):
            continue
        chain.append(current)
        orig = getattr(current, "orig", None)
        pending += [orig if isinstance(orig, BaseException) else None]
        pending += [current.__cause__, current.__context__]
    return chain


def _companions(database: Path) -> list[Path]:
    return [database, *(Path(f"{database}{suffix}") for suffix in ("-wal", "-shm", ".lock"))]


def _can(path: Path, mode: int) -> bool:
    # The effective user decides, as for open(2); os.access alone asks for the real one.
    effective = os.access in os.supports_effective_ids
    return os.access(path, mode, effective_ids=effective)


def _user_name() -> str:
    uid = os.geteuid()
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)
