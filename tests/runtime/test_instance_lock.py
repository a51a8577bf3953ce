"""One daemon per SQLite file, whatever name reaches it: hard link, symlink, `..`, relative."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from orchestrator.daemon.instance_lock import AlreadyRunning, InstanceLock, flock_holder
from orchestrator.store.engine import make_engine
from orchestrator_sim.testing import SimWorld, running_world
from tests.store.faults_harness import daemon_setup, give, shared_folder

HOLD = (
    "import sys, time\n"
    "from pathlib import Path\n"
    "from orchestrator.daemon.instance_lock import InstanceLock\n"
    "lock = InstanceLock(Path(sys.argv[1]))\n"
    "lock.acquire()\n"
    "print('held', flush=True)\n"
    "time.sleep(600)\n"
)


@contextmanager
def held_elsewhere(database: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holding the lock on ``database``."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(database)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "held"
        yield holder
    finally:
        holder.kill()
        holder.wait(10)


def other_name_message(pid: int, name: Path) -> str:
    return (
        f"another orchestrator daemon (pid {pid}) already uses this database; "
        f"database file {name}, reached by another name (a hard link, a symlink "
        "or another path). Stop it first, or give this one another --db."
    )


def lock_file_message(pid: int, lock_file: Path) -> str:
    return (
        f"another orchestrator daemon (pid {pid}) already uses this database; "
        f"lock file {lock_file}. Stop it first, or give this one another --db."
    )


def posix_locks_of(pid: int, database: Path) -> list[str]:
    """The POSIX locks ``pid`` holds on the file, without the table's ordinal numbers
    (which shift whenever any other process on the machine takes or drops a lock)."""
    stat = database.stat()
    identity = f"{os.major(stat.st_dev):02x}:{os.minor(stat.st_dev):02x}:{stat.st_ino}"
    return [
        line.split(":", 1)[1].strip()
        for line in Path("/proc/locks").read_text().splitlines()
        if " POSIX " in line and f" {pid} {identity} " in line
    ]


@pytest.fixture
def database(tmp_path: Path) -> Path:
    state = tmp_path / "state"
    state.mkdir()
    path = state / "orchestrator.db"
    make_engine(f"sqlite:///{path}").dispose()
    return path


def test_another_name_for_the_same_file_is_refused_with_the_holder(
    tmp_path: Path, database: Path
) -> None:
    hard_link = tmp_path / "elsewhere" / "link.db"
    hard_link.parent.mkdir()
    os.link(database, hard_link)
    symlink = tmp_path / "symlink.db"
    symlink.symlink_to(database)
    with held_elsewhere(database) as holder:
        for name in (hard_link, symlink):
            with pytest.raises(AlreadyRunning) as refused:
                InstanceLock(name).acquire()
            assert str(refused.value) == other_name_message(holder.pid, name)
        dotted = tmp_path / "state" / ".." / "state" / "orchestrator.db"
        with pytest.raises(AlreadyRunning) as refused:
            InstanceLock(dotted).acquire()
        assert str(refused.value) == lock_file_message(holder.pid, Path(f"{dotted}.lock"))


def test_the_lock_vanishes_with_a_killed_holder(tmp_path: Path, database: Path) -> None:
    hard_link = tmp_path / "link.db"
    os.link(database, hard_link)
    with held_elsewhere(database) as holder:
        holder.send_signal(signal.SIGKILL)
        holder.wait(10)
        lock = InstanceLock(hard_link)
        lock.acquire()
        try:
            assert lock.held
            assert lock.path.read_text() == f"{os.getpid()}\n"
        finally:
            lock.release()
    assert not lock.held


def test_a_first_start_creates_the_database_file(tmp_path: Path) -> None:
    database = tmp_path / "new" / "state" / "orchestrator.db"
    lock = InstanceLock(database)
    lock.acquire()
    try:
        assert database.stat().st_size == 0
        engine = make_engine(f"sqlite:///{database}")
        with engine.begin() as conn:
            conn.exec_driver_sql("CREATE TABLE t (x)")
            conn.exec_driver_sql("INSERT INTO t VALUES (1)")
        engine.dispose()
    finally:
        lock.release()
    with sqlite3.connect(database) as conn:
        assert conn.execute("SELECT x FROM t").fetchall() == [(1,)]


def test_sqlite_reads_and_writes_from_other_processes_while_the_lock_is_held(
    database: Path,
) -> None:
    """``flock`` and SQLite's POSIX locks are independent: the lock blocks daemons, not SQLite."""
    lock = InstanceLock(database)
    lock.acquire()
    try:
        write = (
            "import sqlite3, sys\n"
            "conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=5)\n"
            "conn.execute('BEGIN IMMEDIATE')\n"
            "conn.execute('CREATE TABLE t (x)')\n"
            "conn.execute('INSERT INTO t VALUES (42)')\n"
            "conn.execute('COMMIT')\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", write, str(database)],
            capture_output=True,
            timeout=30,
            check=False,
        )
        assert done.returncode == 0, done.stderr.decode()
        engine = make_engine(f"sqlite:///{database}")
        with engine.begin() as conn:
            conn.exec_driver_sql("INSERT INTO t VALUES (43)")
            rows = conn.exec_driver_sql("SELECT x FROM t ORDER BY x").fetchall()
        engine.dispose()
        assert [tuple(row) for row in rows] == [(42,), (43,)]
    finally:
        lock.release()


def test_a_refused_lock_in_the_same_process_keeps_sqlites_own_locks(
    tmp_path: Path, database: Path
) -> None:
    """Closing any descriptor of the file would drop the POSIX locks this process holds on it."""
    hard_link = tmp_path / "link.db"
    os.link(database, hard_link)
    lock = InstanceLock(database)
    lock.acquire()
    conn = sqlite3.connect(database, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("SELECT count(*) FROM sqlite_master").fetchall()
        before = posix_locks_of(os.getpid(), database)
        assert before, "a WAL connection holds a shared lock on the database file"
        with pytest.raises(AlreadyRunning) as refused:
            InstanceLock(hard_link).acquire()
        assert str(refused.value) == other_name_message(os.getpid(), hard_link)
        assert posix_locks_of(os.getpid(), database) == before
    finally:
        conn.close()
        lock.release()


def test_the_holder_is_read_from_the_kernels_lock_table(tmp_path: Path) -> None:
    locks = tmp_path / "locks"
    device = os.makedev(0xFE, 0x01)
    rows = {
        "held": ("1: FLOCK  ADVISORY  WRITE 4242 fe:01:77 0 EOF\n", "4242"),
        "a waiter is not the holder": (
            "1: -> FLOCK  ADVISORY  WRITE 5151 fe:01:77 0 EOF\n",
            "unknown",
        ),
        "another file": ("1: FLOCK  ADVISORY  WRITE 4242 fe:01:78 0 EOF\n", "unknown"),
        "a POSIX lock": ("1: POSIX  ADVISORY  WRITE 4242 fe:01:77 0 EOF\n", "unknown"),
        "a pid from another namespace": ("1: FLOCK  ADVISORY  WRITE 0 fe:01:77 0 EOF\n", "unknown"),
    }
    for rule, (table, holder) in rows.items():
        locks.write_text(table)
        assert flock_holder((device, 77), locks) == holder, rule
    assert flock_holder((device, 77), tmp_path / "absent") == "unknown"


# ------------------------------------------------------------ the real daemon


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimWorld]:
    with running_world(tmp_path_factory.mktemp("sim")) as running:
        yield running


def wait_for_lock(lock_file: Path, daemon: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 60
    while not (lock_file.exists() and lock_file.read_text().strip() == str(daemon.pid)):
        assert daemon.poll() is None, log.read_text()
        assert time.monotonic() < deadline, "the daemon did not take its lock"
        time.sleep(0.05)


def test_a_second_daemon_reaching_the_file_by_any_name_refuses(world: SimWorld) -> None:
    with shared_folder() as base:
        setup = daemon_setup(base, world)
        state = base / "state"
        elsewhere = base / "elsewhere"
        for folder in (state, elsewhere, state / "sub"):
            folder.mkdir()
            give(folder, setup.user)
        database = state / "orchestrator.db"
        log = base / "first.log"
        first = setup.start(str(database), log)
        try:
            wait_for_lock(state / "orchestrator.db.lock", first, log)
            hard_link = elsewhere / "orchestrator.db"
            os.link(database, hard_link)
            symlink = elsewhere / "symlink.db"
            symlink.symlink_to(database)
            dotted = state / "sub" / ".." / "orchestrator.db"
            other_name = other_name_message(first.pid, hard_link)
            cases = [
                (f"sqlite:///{hard_link}", None, other_name),
                (f"sqlite:///{symlink}", None, other_name_message(first.pid, symlink)),
                (
                    f"sqlite:///{dotted}",
                    None,
                    lock_file_message(first.pid, Path(f"{dotted}.lock")),
                ),
                (
                    "sqlite:///orchestrator.db",
                    state,
                    lock_file_message(first.pid, Path("orchestrator.db.lock")),
                ),
            ]
            for db, cwd, message in cases:
                done = setup.run(db, cwd=cwd)
                assert done.returncode == 1, (db, done.stderr)
                assert "Traceback" not in done.stderr
                assert error_lines(done.stderr) == [f"Error: {message}"], db
            assert first.poll() is None, "the first daemon keeps running"
        finally:
            first.send_signal(signal.SIGKILL)
            first.wait(30)
        # The kernel dropped the locks with the process: the hard link is free now.
        done = setup.run(f"sqlite:///{hard_link}", "--once")
        assert done.returncode == 0, done.stderr[-3000:]


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("Error")]
