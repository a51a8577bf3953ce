"""The daemon as a process: systemd notifications, SIGHUP, SIGTERM, --once, one daemon per file."""

from __future__ import annotations

import json
import os
import queue
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.daemon.daemon import Daemon
from orchestrator.daemon.descriptors import current_limit
from orchestrator.daemon.hardening import is_dumpable
from orchestrator.daemon.instance_lock import AlreadyRunning
from orchestrator_sim.testing import SimWorld, running_world
from tests.e2e.harness import Flow, default_scenario, flow_for

ORCHESTRATOR = str(Path(sys.executable).parent / "orchestrator")


@pytest.fixture
def world(tmp_path: Path) -> Iterator[SimWorld]:
    with running_world(tmp_path / "sim") as running:
        yield running


def process_env(flow: Flow, **extra: str) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(flow.tmp),
        **flow.env,
        **extra,
    }


def query(db: Path, sql: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
        return list(conn.execute(sql).fetchall())


def wait_until(predicate, timeout_s: float = 30.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def log_events(path: Path) -> list[dict[str, object]]:
    events = []
    for line in path.read_text().splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            continue
    return events


def exit_status(proc: subprocess.Popen[bytes], log: Path, timeout_s: float = 30) -> int:
    """The daemon's exit status; if it does not exit in time, fail with its stacks and log."""
    try:
        return proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGUSR1)
        time.sleep(1)
        tail = log.read_text(errors="replace")[-12000:]
        raise AssertionError(
            f"the daemon did not exit in {timeout_s} s; its log ends:\n{tail}"
        ) from None


def slow_scenario() -> dict[str, object]:
    scenario = default_scenario()
    scenario["steps"] = [{"session": "auto"}, {"events": {"count": 1000, "interval_ms": 20}}]
    return scenario


def _read_datagrams(receiver: socket.socket, heard: queue.Queue[str]) -> None:
    while True:
        try:
            data = receiver.recv(4096)
        except OSError:
            return
        if not data:
            return
        heard.put(data.decode())


@pytest.mark.slow
def test_notify_reload_and_graceful_sigterm(tmp_path: Path, world: SimWorld) -> None:
    sock_path = tmp_path / "notify.sock"
    receiver = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    receiver.bind(str(sock_path))
    # As systemd does, every datagram is read as it comes: a socket left full would make
    # the daemon drop its later notifications (it never waits on a full socket).
    heard: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=_read_datagrams, args=(receiver, heard), daemon=True)
    reader.start()
    log = tmp_path / "daemon.log"
    with flow_for(tmp_path, world, scenario=slow_scenario(), start=False) as flow:
        env = process_env(flow, NOTIFY_SOCKET=str(sock_path), WATCHDOG_USEC="300000")
        with log.open("wb") as output:
            proc = subprocess.Popen(
                [
                    ORCHESTRATOR,
                    "--log-format",
                    "json",
                    "run",
                    str(flow.policy_path),
                    "--port",
                    "0",
                    "--grace-seconds",
                    "0.5",
                ],
                env=env,
                stdout=output,
                stderr=output,
                start_new_session=True,
            )
            try:
                messages = [heard.get(timeout=20)]
                assert messages[0].startswith("READY=1")
                assert "polling acme/widgets" in messages[0]
                messages.append(heard.get(timeout=20))
                assert "WATCHDOG=1" in messages

                text = flow.policy_path.read_text().replace(
                    '"mode": "merge"', '"mode": "mutate"', 1
                )
                flow.policy_path.write_text(text)
                proc.send_signal(signal.SIGHUP)
                wait_until(
                    lambda: any(e.get("event") == "policy_reloaded" for e in log_events(log))
                )

                flow.open_issue()
                db = tmp_path / "orchestrator.db"
                wait_until(lambda: query(db, "SELECT count(*) FROM agent_runs")[0][0] == 1)
                proc.send_signal(signal.SIGTERM)
                assert exit_status(proc, log) == 0
            finally:
                if proc.poll() is None:
                    proc.kill()
        receiver.shutdown(socket.SHUT_RDWR)
        reader.join(timeout=5)
        receiver.close()
        rest = []
        while not heard.empty():
            rest.append(heard.get())
        assert "STOPPING=1" in rest
        assert query(db, "SELECT outcome FROM agent_runs") == [("cancelled",)]
        # The poll lease is given up (its row and epoch stay, with no holder).
        assert query(db, "SELECT owner FROM leases") == [("",)]
        events = [e.get("event") for e in log_events(log)]
        assert "daemon_stopped" in events
        reloaded = next(e for e in log_events(log) if e.get("event") == "policy_reload")
        assert reloaded["rollout_mode"] == "mutate"


def test_a_sigterm_another_thread_receives_still_stops_the_daemon(
    tmp_path: Path, world: SimWorld
) -> None:
    """The kernel may hand a process's SIGTERM to any of its threads; Python then runs
    the handler only when the main thread runs again, so the main thread never waits
    unboundedly (a daemon that ignored a SIGTERM was seen under load)."""
    log = tmp_path / "daemon.log"
    with flow_for(tmp_path, world, start=False) as flow, log.open("wb") as output:
        proc = subprocess.Popen(
            [ORCHESTRATOR, "--log-format", "json", "run", str(flow.policy_path), "--port", "0"],
            env=process_env(flow),
            stdout=output,
            stderr=output,
            start_new_session=True,
        )
        try:
            wait_until(lambda: any(e.get("event") == "tick" for e in log_events(log)))
            threads = [int(t) for t in os.listdir(f"/proc/{proc.pid}/task")]
            others = [t for t in threads if t != proc.pid]
            assert others, "the daemon runs more than one thread"
            # kill() with a thread's id delivers the signal to that thread first.
            os.kill(others[-1], signal.SIGTERM)
            assert exit_status(proc, log) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
    assert "daemon_stopped" in [e.get("event") for e in log_events(log)]


def test_a_sigterm_while_the_daemon_starts_stops_it_gracefully(
    tmp_path: Path, world: SimWorld
) -> None:
    log = tmp_path / "daemon.log"
    with flow_for(tmp_path, world, start=False) as flow, log.open("wb") as output:
        proc = subprocess.Popen(
            [ORCHESTRATOR, "--log-format", "json", "run", str(flow.policy_path), "--port", "0"],
            env=process_env(flow),
            stdout=output,
            stderr=output,
            start_new_session=True,
        )
        try:
            # The policy is read first thing in start-up; the rest (sandbox probe,
            # preflight against GitHub, recovery) is still to come.
            wait_until(lambda: any(e.get("event") == "policy_loaded" for e in log_events(log)))
            proc.send_signal(signal.SIGTERM)
            assert exit_status(proc, log) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
    events = [e.get("event") for e in log_events(log)]
    assert "daemon_stopped" in events


def run_once(flow: Flow) -> subprocess.CompletedProcess[bytes]:
    """``orchestrator run --once`` on the flow's policy, its log in JSON lines."""
    return subprocess.run(
        [ORCHESTRATOR, "--log-format", "json", "run", str(flow.policy_path), "--once"],
        env=process_env(flow),
        capture_output=True,
        timeout=120,
        check=False,
    )


def test_once_runs_one_tick_and_waits_for_its_turn(tmp_path: Path, world: SimWorld) -> None:
    with flow_for(tmp_path, world, start=False) as flow:
        flow.open_issue()
        done = run_once(flow)
        assert done.returncode == 0, done.stderr.decode()[-2000:]
        db = tmp_path / "orchestrator.db"
        assert query(db, "SELECT phase, outcome FROM agent_runs") == [("implementing", "completed")]
        assert query(db, "SELECT phase FROM tracked_issues") == [("implementing",)]
        assert flow.pulls() == [], "the push is planned by the next tick, not this one"


def test_a_second_daemon_on_the_same_sqlite_file_refuses_to_start(
    tmp_path: Path, world: SimWorld
) -> None:
    with flow_for(tmp_path, world) as flow:
        second = Daemon(flow.policy_path, env=flow.env)
        with pytest.raises(AlreadyRunning) as excinfo:
            second.start()
        message = str(excinfo.value)
        assert f"pid {os.getpid()}" in message
        assert "orchestrator.db.lock" in message
        done = subprocess.run(
            [ORCHESTRATOR, "run", str(flow.policy_path)],
            env=process_env(flow),
            capture_output=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 1
        assert b"already uses this database" in done.stderr


def test_the_run_command_owns_its_process_and_an_embedded_daemon_leaves_it_alone(
    tmp_path: Path, world: SimWorld
) -> None:
    dumpable, limit = is_dumpable(), current_limit()
    with flow_for(tmp_path, world) as flow:
        # Started in this process (flow_for): nothing of the process was changed.
        assert flow.d.process.hardened is False and flow.d.process.freeze_heap is False
        assert (is_dumpable(), current_limit()) == (dumpable, limit)
        flow.stop()
        done = run_once(flow)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    log = tmp_path / "once.log"
    log.write_bytes(done.stdout + done.stderr)
    events = log_events(log)
    started = next(e for e in events if e.get("event") == "daemon_started")
    assert started["hardened"] is True
    descriptors = next(e for e in events if e.get("event") == "descriptor_limit")
    assert descriptors["soft"] == descriptors["hard"]


def test_inspection_is_forbidden_in_the_process() -> None:
    code = (
        "from orchestrator.daemon.hardening import forbid_inspection, is_dumpable\n"
        "assert is_dumpable() is True\n"
        "assert forbid_inspection() is True\n"
        "assert is_dumpable() is False\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr.decode()
