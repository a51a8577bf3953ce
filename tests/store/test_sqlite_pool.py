"""SQLite connections are pooled: opened once with their PRAGMAs, dropped when the file changes."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, exc

from orchestrator.domain.phases import Phase
from orchestrator.store import migrate
from orchestrator.store.database import Database
from orchestrator.store.engine import SQLITE_BUSY_TIMEOUT_MS, make_engine

NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def driver_connection(engine: Engine) -> Any:
    with engine.connect() as conn:
        return conn.connection.dbapi_connection


def pragmas(engine: Engine) -> tuple[Any, ...]:
    with engine.connect() as conn:
        return tuple(
            conn.exec_driver_sql(f"PRAGMA {name}").scalar()
            for name in ("journal_mode", "busy_timeout", "foreign_keys", "synchronous")
        )


def opened(url: str) -> Database:
    migrate.upgrade(url)
    return Database.open(url)


def test_a_connection_is_reused_with_its_pragmas(sqlite_url: str) -> None:
    db = opened(sqlite_url)
    try:
        first = driver_connection(db.engine)
        db.issues.ensure("acme/app", 1, title="t", phase=Phase.IMPLEMENTING, now=NOW)
        assert db.issues.get("acme/app", 1) is not None
        assert driver_connection(db.engine) is first
        # WAL, the busy timeout, foreign keys, synchronous=NORMAL (1).
        assert pragmas(db.engine) == ("wal", SQLITE_BUSY_TIMEOUT_MS, 1, 1)
    finally:
        db.close()


def test_threads_get_their_own_connections_without_waiting(sqlite_url: str) -> None:
    """More threads than pooled connections: each gets one at once, none waits for another."""
    engine = make_engine(sqlite_url)
    inside = threading.Barrier(20, timeout=30)
    failures: list[BaseException] = []
    held: set[int] = set()

    def hold() -> None:
        try:
            # Each holds a connection (no transaction: BEGIN IMMEDIATE would serialize them).
            with engine.connect() as conn:
                held.add(id(conn.connection.dbapi_connection))
                inside.wait()
        except BaseException as error:  # reported below
            failures.append(error)

    threads = [threading.Thread(target=hold) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    engine.dispose()
    assert failures == []
    assert len(held) == 20


def test_a_replaced_file_is_opened_afresh(tmp_path: Path) -> None:
    database = tmp_path / "orchestrator.db"
    db = opened(f"sqlite:///{database}")
    try:
        db.issues.ensure("acme/app", 1, title="old", phase=Phase.IMPLEMENTING, now=NOW)
        kept = driver_connection(db.engine)
        # Another file moved over the path, as a restore from a backup does.
        replacement = tmp_path / "restored.db"
        restored = opened(f"sqlite:///{replacement}")
        restored.issues.ensure("acme/app", 2, title="new", phase=Phase.BLOCKED, now=NOW)
        restored.close()
        for suffix in ("-wal", "-shm"):
            Path(f"{database}{suffix}").unlink(missing_ok=True)
        os.replace(replacement, database)
        assert [row.number for row in db.issues.all("acme/app")] == [2]
        assert driver_connection(db.engine) is not kept
    finally:
        db.close()


def test_a_removed_file_is_not_written_through_an_old_connection(tmp_path: Path) -> None:
    database = tmp_path / "orchestrator.db"
    engine = make_engine(f"sqlite:///{database}")
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql("CREATE TABLE t (x)")
        for path in tmp_path.glob("orchestrator.db*"):
            path.unlink()
        # As without a pool: the path is opened again, and the table is not there.
        with pytest.raises(exc.OperationalError, match="no such table"), engine.begin() as conn:
            conn.exec_driver_sql("INSERT INTO t VALUES (1)")
    finally:
        engine.dispose()
    assert database.exists()


def test_a_locked_database_waits_then_writes_on_a_pooled_connection(sqlite_url: str) -> None:
    """Another process holds the write lock for a while: the pooled connection's busy
    timeout (set once, when it was opened) makes the write wait instead of failing."""
    engine = make_engine(sqlite_url)
    database = sqlite_url.removeprefix("sqlite:///")
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql("CREATE TABLE t (x)")
        holder = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import sqlite3, sys, time\n"
                "conn = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
                "conn.execute('BEGIN IMMEDIATE')\n"
                "conn.execute('INSERT INTO t VALUES (1)')\n"
                "print('locked', flush=True)\n"
                "time.sleep(1)\n"
                "conn.execute('COMMIT')\n",
                database,
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with engine.begin() as conn:
            conn.exec_driver_sql("INSERT INTO t VALUES (2)")
        assert holder.wait(30) == 0
    finally:
        engine.dispose()
    with sqlite3.connect(database) as conn:
        assert conn.execute("SELECT x FROM t ORDER BY x").fetchall() == [(1,), (2,)]
