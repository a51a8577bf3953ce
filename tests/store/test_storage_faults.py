"""SQLite storage faults: one line with the path, the cause and what to do, never a traceback."""

from __future__ import annotations

import dataclasses
import errno
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, exc, text

from orchestrator.store.engine import make_engine
from orchestrator.store.migrate import ensure_schema
from orchestrator.store.sqlite_faults import (
    Cause,
    Diagnosis,
    FileFacts,
    StorageFacts,
    StorageFault,
    Symptom,
    describe_storage_error,
    diagnose,
    probe_sqlite_writable,
    symptom_of,
)
from orchestrator_sim.testing import SimWorld, running_world
from tests.store.faults_harness import (
    DaemonSetup,
    daemon_setup,
    give,
    mount,
    shared_folder,
    umount,
)

DB = Path("/srv/state/orchestrator.db")
FOLDER = DB.parent
WAL = Path(f"{DB}-wal")


def make_facts(**overrides: Any) -> StorageFacts:
    """A healthy database file; each row changes what its rule is about."""
    facts = StorageFacts(
        database=DB,
        folder=FOLDER,
        folder_searchable=True,
        folder_writable=True,
        read_only_mount=False,
        free_bytes=10 << 30,
        files=(FileFacts(DB, readable=True, writable=True),),
        user="orchestrator",
    )
    return dataclasses.replace(facts, **overrides)


DIAGNOSES = {
    "the header says it is no database": (
        Symptom.NOT_A_DATABASE,
        make_facts(),
        Diagnosis(Cause.NOT_A_DATABASE, DB),
    ),
    "a malformed database is damaged": (
        Symptom.DAMAGED,
        make_facts(),
        Diagnosis(Cause.DAMAGED, DB),
    ),
    "SQLITE_FULL or ENOSPC is a full disk": (
        Symptom.FULL,
        make_facts(),
        Diagnosis(Cause.DISK_FULL, FOLDER),
    ),
    "an I/O error with no room left is a full disk": (
        Symptom.IO,
        make_facts(free_bytes=4096),
        Diagnosis(Cause.DISK_FULL, FOLDER),
    ),
    "an I/O error with room and access is the disk's": (
        Symptom.IO,
        make_facts(),
        Diagnosis(Cause.IO_ERROR, DB),
    ),
    "a read-only mount comes first": (
        Symptom.ACCESS,
        make_facts(
            read_only_mount=True,
            folder_writable=False,
            files=(FileFacts(DB, readable=True, writable=False),),
        ),
        Diagnosis(Cause.READ_ONLY_FILE_SYSTEM, FOLDER),
    ),
    "a folder that cannot be entered": (
        Symptom.ACCESS,
        make_facts(folder_searchable=False, folder_writable=False, files=()),
        Diagnosis(Cause.PERMISSION_DENIED, FOLDER),
    ),
    "a file that cannot be read": (
        Symptom.ACCESS,
        make_facts(files=(FileFacts(DB, readable=False, writable=False),)),
        Diagnosis(Cause.PERMISSION_DENIED, DB),
    ),
    "a file that cannot be written": (
        Symptom.ACCESS,
        make_facts(files=(FileFacts(DB, readable=True, writable=False),)),
        Diagnosis(Cause.READ_ONLY_FILE, DB),
    ),
    "a companion file that cannot be written": (
        Symptom.ACCESS,
        make_facts(
            files=(FileFacts(DB, readable=True, writable=True), FileFacts(WAL, True, False))
        ),
        Diagnosis(Cause.READ_ONLY_FILE, WAL),
    ),
    "the files are fine but the folder is read-only": (
        Symptom.ACCESS,
        make_facts(folder_writable=False),
        Diagnosis(Cause.READ_ONLY_FOLDER, FOLDER),
    ),
    "a first start in a read-only folder": (
        Symptom.ACCESS,
        make_facts(folder_writable=False, files=()),
        Diagnosis(Cause.READ_ONLY_FOLDER, FOLDER),
    ),
    "an access error nothing explains is a denied permission": (
        Symptom.ACCESS,
        make_facts(),
        Diagnosis(Cause.PERMISSION_DENIED, DB),
    ),
}


@pytest.mark.parametrize("rule", DIAGNOSES)
def test_diagnosis(rule: str) -> None:
    symptom, facts, expected = DIAGNOSES[rule]
    assert diagnose(symptom, facts) == expected


LINES = {
    Diagnosis(Cause.READ_ONLY_FILE, DB): (
        f"SQLite database {DB}: read-only file; "
        "make it writable for user orchestrator, or give --db another file"
    ),
    Diagnosis(Cause.READ_ONLY_FILE, WAL): (
        f"SQLite database {DB}: read-only file {WAL}; "
        "make it writable for user orchestrator, or give --db another file"
    ),
    Diagnosis(Cause.READ_ONLY_FOLDER, FOLDER): (
        f"SQLite database {DB}: read-only folder {FOLDER}; SQLite creates its -wal and -shm "
        "files beside the database: make the folder writable for user orchestrator, "
        "or give --db a file in another folder"
    ),
    Diagnosis(Cause.READ_ONLY_FILE_SYSTEM, FOLDER): (
        f"SQLite database {DB}: read-only file system at {FOLDER}; "
        "mount it read-write, or give --db a file on a writable file system"
    ),
    Diagnosis(Cause.DISK_FULL, FOLDER): (
        f"SQLite database {DB}: disk full at {FOLDER}; free space on that file system "
        "(or raise the quota), or give --db a file on another file system"
    ),
    Diagnosis(Cause.NOT_A_DATABASE, DB): (
        f"SQLite database {DB}: not a SQLite database; give --db the orchestrator's "
        "database, or move this file away to start with an empty database"
    ),
    Diagnosis(Cause.DAMAGED, DB): (
        f"SQLite database {DB}: damaged SQLite database; "
        "restore it from a backup, or move it away to start with an empty database"
    ),
    Diagnosis(Cause.PERMISSION_DENIED, FOLDER): (
        f"SQLite database {DB}: permission denied on {FOLDER}; give user orchestrator read "
        "and write access to the database file and write and search access to its folder"
    ),
    Diagnosis(Cause.IO_ERROR, DB): (
        f"SQLite database {DB}: disk I/O error; check the disk and the kernel log (dmesg)"
    ),
}


def test_every_cause_reads_as_one_line() -> None:
    assert {diagnosis.cause for diagnosis in LINES} == set(Cause)
    for diagnosis, line in LINES.items():
        assert diagnosis.line(DB, "orchestrator") == line
        assert "\n" not in line


def sqlite_error(database: Path, sql: str) -> sqlite3.Error:
    conn = sqlite3.connect(database)
    try:
        conn.execute(sql)
    except sqlite3.Error as error:
        return error
    finally:
        conn.close()
    raise AssertionError(f"{sql} did not fail")


def test_symptoms_of_errors_from_sqlite_sqlalchemy_and_the_kernel(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"not a database, really not" * 200)
    not_a_database = sqlite_error(garbage, "SELECT * FROM sqlite_master")
    engine = create_engine(f"sqlite:///{garbage}")
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT * FROM sqlite_master"))
    except exc.DatabaseError as error:
        wrapped: BaseException = error
    engine.dispose()
    rows: dict[str, tuple[BaseException, Symptom | None]] = {
        "SQLITE_NOTADB": (not_a_database, Symptom.NOT_A_DATABASE),
        "wrapped by SQLAlchemy": (wrapped, Symptom.NOT_A_DATABASE),
        "ENOSPC": (OSError(errno.ENOSPC, "No space left on device"), Symptom.FULL),
        "EROFS": (OSError(errno.EROFS, "Read-only file system"), Symptom.ACCESS),
        "EACCES": (PermissionError(errno.EACCES, "Permission denied"), Symptom.ACCESS),
        "an error that is not about storage": (
            sqlite_error(tmp_path / "ok.db", "SELECT * FROM nowhere"),
            None,
        ),
        "a missing file is not a storage fault": (FileNotFoundError(errno.ENOENT, "gone"), None),
        "nor is a bug": (ValueError("no"), None),
    }
    for rule, (error, symptom) in rows.items():
        assert symptom_of(error) == symptom, rule


def test_the_probe_creates_a_wal_database_and_changes_nothing(tmp_path: Path) -> None:
    database = tmp_path / "new" / "orchestrator.db"
    probe_sqlite_writable(database)
    with sqlite3.connect(database) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        conn.execute("PRAGMA user_version=7")
    probe_sqlite_writable(database)
    with sqlite3.connect(database) as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (7,)


def test_an_engine_on_a_file_that_is_no_database_says_so(tmp_path: Path) -> None:
    database = tmp_path / "orchestrator.db"
    database.write_bytes(os.urandom(8192))
    with pytest.raises(StorageFault) as refused:
        make_engine(f"sqlite:///{database}")
    assert str(refused.value) == LINES[Diagnosis(Cause.NOT_A_DATABASE, DB)].replace(
        str(DB), str(database)
    )


def test_storage_errors_are_described_and_others_are_not(tmp_path: Path) -> None:
    database = tmp_path / "orchestrator.db"
    fault = StorageFault("SQLite database x: disk full at y; free space")
    wrapped = RuntimeError("while opening")
    wrapped.__cause__ = fault
    assert describe_storage_error(wrapped, None) == str(fault)
    assert describe_storage_error(ValueError("no"), database) is None
    assert describe_storage_error(OSError(errno.ENOSPC, "full"), None) is None
    full = describe_storage_error(OSError(errno.ENOSPC, "full"), database)
    assert full is not None
    assert full.startswith(f"SQLite database {database}: disk full at {tmp_path}; ")


# --------------------------------------------------- file systems that fail


@contextmanager
def tiny_tmpfs(folder: Path, size: str) -> Iterator[Path]:
    folder.mkdir()
    mount("-t", "tmpfs", "-o", f"size={size},mode=0777", "tmpfs", str(folder))
    try:
        yield folder
    finally:
        umount(folder)


@contextmanager
def read_only_bind(folder: Path) -> Iterator[Path]:
    mount("--bind", str(folder), str(folder))
    try:
        mount("-o", "remount,ro,bind", str(folder))
        yield folder
    finally:
        umount(folder)


def fill(folder: Path) -> None:
    """Write until the file system is full."""
    fd = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError as error:
        assert error.errno == errno.ENOSPC
    finally:
        os.close(fd)


def migrated(database: Path) -> None:
    engine = make_engine(f"sqlite:///{database}")
    ensure_schema(f"sqlite:///{database}", engine)
    engine.dispose()


def disk_full_line(database: Path, folder: Path) -> str:
    return (
        f"SQLite database {database}: disk full at {folder}; free space on that file system "
        "(or raise the quota), or give --db a file on another file system"
    )


def test_a_write_failing_at_run_time_on_a_full_disk_is_described(tmp_path: Path) -> None:
    with tiny_tmpfs(tmp_path / "small", "1m") as folder:
        database = folder / "orchestrator.db"
        engine = make_engine(f"sqlite:///{database}")
        try:
            with engine.begin() as conn:
                conn.exec_driver_sql("CREATE TABLE blobs (data BLOB)")
            fill(folder)
            with pytest.raises(exc.OperationalError) as failed, engine.begin() as conn:
                conn.exec_driver_sql("INSERT INTO blobs VALUES (zeroblob(200000))")
            assert describe_storage_error(failed.value, database) == disk_full_line(
                database, folder
            )
            # Once there is room again, the same engine writes (the pool dropped the
            # connection that failed and opens a fresh one).
            (folder / "filler").unlink()
            with engine.begin() as conn:
                conn.exec_driver_sql("INSERT INTO blobs VALUES (zeroblob(1000))")
            with engine.connect() as conn:
                assert conn.exec_driver_sql("SELECT count(*) FROM blobs").scalar() == 1
        finally:
            engine.dispose()


def test_the_probe_names_a_read_only_file_system(tmp_path: Path) -> None:
    folder = tmp_path / "state"
    folder.mkdir()
    database = folder / "orchestrator.db"
    migrated(database)
    with read_only_bind(folder), pytest.raises(StorageFault) as refused:
        probe_sqlite_writable(database)
    assert str(refused.value) == (
        f"SQLite database {database}: read-only file system at {folder}; "
        "mount it read-write, or give --db a file on a writable file system"
    )


# ------------------------------------------------- through `orchestrator run`


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimWorld]:
    with running_world(tmp_path_factory.mktemp("sim")) as running:
        yield running


@pytest.fixture
def setup(world: SimWorld) -> Iterator[DaemonSetup]:
    with shared_folder() as base:
        yield daemon_setup(base, world)


def state_folder(setup: DaemonSetup) -> Path:
    state = setup.policy.parent / "state"
    state.mkdir()
    give(state, setup.user)
    return state


def refused_with(setup: DaemonSetup, database: Path, line: str) -> None:
    """``orchestrator run`` exits 1 printing exactly ``Error: <line>``, and no traceback."""
    done = setup.run(str(database))
    assert done.returncode == 1, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    errors = [row for row in done.stderr.splitlines() if row.startswith("Error")]
    assert errors == [f"Error: {line}"]


def test_run_refuses_a_read_only_file(setup: DaemonSetup) -> None:
    database = state_folder(setup) / "orchestrator.db"
    migrated(database)
    give(database, setup.user)
    database.chmod(0o444)
    refused_with(
        setup,
        database,
        f"SQLite database {database}: read-only file; "
        f"make it writable for user {setup.user.name}, or give --db another file",
    )


@pytest.mark.parametrize("first_start", [True, False], ids=["first start", "existing database"])
def test_run_refuses_a_read_only_folder(setup: DaemonSetup, first_start: bool) -> None:
    state = state_folder(setup)
    database = state / "orchestrator.db"
    if not first_start:
        migrated(database)
        give(database, setup.user)
        lock_file = Path(f"{database}.lock")
        lock_file.write_text("")
        give(lock_file, setup.user)
    state.chmod(0o555)
    refused_with(
        setup,
        database,
        f"SQLite database {database}: read-only folder {state}; SQLite creates its -wal and "
        f"-shm files beside the database: make the folder writable for user {setup.user.name}, "
        "or give --db a file in another folder",
    )


def test_run_refuses_a_file_it_may_not_read(setup: DaemonSetup) -> None:
    database = state_folder(setup) / "orchestrator.db"
    migrated(database)
    give(database, setup.user)
    database.chmod(0o000)
    refused_with(
        setup,
        database,
        f"SQLite database {database}: permission denied; give user {setup.user.name} read "
        "and write access to the database file and write and search access to its folder",
    )


def test_run_refuses_a_file_that_is_no_database(setup: DaemonSetup) -> None:
    database = state_folder(setup) / "orchestrator.db"
    database.write_bytes(os.urandom(16384))
    give(database, setup.user)
    refused_with(
        setup,
        database,
        f"SQLite database {database}: not a SQLite database; give --db the orchestrator's "
        "database, or move this file away to start with an empty database",
    )


@pytest.mark.parametrize("first_start", [True, False], ids=["first start", "existing database"])
def test_run_refuses_a_full_disk(setup: DaemonSetup, first_start: bool) -> None:
    with tiny_tmpfs(setup.policy.parent / "small", "1m") as folder:
        database = folder / "orchestrator.db"
        if not first_start:
            migrated(database)
            lock_file = Path(f"{database}.lock")
            lock_file.write_text("1\n")
            for path in (database, lock_file):
                give(path, setup.user)
        fill(folder)
        refused_with(setup, database, disk_full_line(database, folder))


def test_run_refuses_a_read_only_file_system(setup: DaemonSetup) -> None:
    state = state_folder(setup)
    database = state / "orchestrator.db"
    migrated(database)
    give(database, setup.user)
    with read_only_bind(state):
        refused_with(
            setup,
            database,
            f"SQLite database {database}: read-only file system at {state}; "
            "mount it read-write, or give --db a file on a writable file system",
        )


def test_a_daemon_that_started_leaves_no_fault(setup: DaemonSetup) -> None:
    """The probe passes on a healthy file: ``--once`` runs and exits 0."""
    database = state_folder(setup) / "orchestrator.db"
    done = setup.run(str(database), "--once")
    assert done.returncode == 0, done.stderr[-3000:]
    assert database.stat().st_size > 0
