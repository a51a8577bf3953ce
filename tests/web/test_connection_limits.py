"""The web server's connection cap, request-head deadline and throttled error lines.

The gate's decisions are tables over stand-in connections (the gate only asks
them three questions); the rest runs the real server over real sockets: a
slow-loris client is closed, a client that asks gets in beyond the cap, and a
server out of descriptors logs its failed accepts once, not once per attempt.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from orchestrator.web.connections import ConnectionGate
from orchestrator.web.throttle import Throttle, throttled_exception_handler
from tests.web.conftest import Site

UNFINISHED = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Waiting: "
REQUEST = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


# ---------------------------------------------------------------- the gate


@dataclass(eq=False)
class Client:
    """A stand-in connection: the request it is on, whether it is being answered."""

    current: object | None = None
    busy: bool = False
    dropped: bool = False

    def request(self) -> object | None:
        return self.current

    def answering(self) -> bool:
        return self.busy

    def drop(self) -> None:
        self.dropped = True


def gate_holding(*clients: Client, cap: int = 3, timeout_s: float = 10.0) -> ConnectionGate:
    gate = ConnectionGate(cap, timeout_s)
    for client in clients:
        assert gate.make_room()
        gate.opened(client, now=0.0)
    return gate


def test_below_the_cap_every_connection_is_held() -> None:
    first, second = Client(), Client()
    gate = gate_holding(first, second)
    assert gate.count == 2
    assert not first.dropped and not second.dropped
    assert gate.shed.total == 0


def test_beyond_the_cap_the_oldest_connection_not_in_a_request_is_closed() -> None:
    answered, oldest_idle, newer_idle = Client(busy=True), Client(), Client()
    gate = gate_holding(answered, oldest_idle, newer_idle)
    assert gate.make_room()
    assert (answered.dropped, oldest_idle.dropped, newer_idle.dropped) == (False, True, False)
    assert gate.count == 2
    assert gate.shed.evicted == 1


def test_beyond_the_cap_with_every_connection_in_a_request_the_new_one_is_closed() -> None:
    clients = [Client(busy=True) for _ in range(3)]
    gate = gate_holding(*clients)
    assert not gate.make_room()
    assert not any(client.dropped for client in clients)
    assert gate.shed.refused == 1


def test_a_closed_connection_frees_its_place() -> None:
    first, second, third = Client(busy=True), Client(busy=True), Client(busy=True)
    gate = gate_holding(first, second, third)
    gate.closed(second)
    gate.closed(second)
    assert gate.count == 2
    assert gate.make_room()
    assert gate.shed.total == 0


def test_a_connection_without_a_request_head_past_the_deadline_is_closed() -> None:
    slow, fresh = Client(), Client()
    gate = ConnectionGate(8, 10.0)
    gate.opened(slow, now=0.0)
    gate.opened(fresh, now=5.0)
    gate.sweep(now=9.9)
    assert not slow.dropped
    gate.sweep(now=10.0)
    assert slow.dropped and not fresh.dropped
    assert gate.count == 1
    assert gate.shed.timed_out == 1


def test_a_new_request_or_an_answer_in_progress_restarts_the_wait() -> None:
    asking, answered, idle_after_answer = Client(), Client(), Client()
    gate = ConnectionGate(8, 10.0)
    for client in (asking, answered, idle_after_answer):
        gate.opened(client, now=0.0)
    # At 8 s: one sent a request, one is being answered, one finished an answer.
    asking.current = object()
    answered.current, answered.busy = object(), True
    idle_after_answer.current = object()
    gate.sweep(now=8.0)
    gate.sweep(now=12.0)
    assert not any(c.dropped for c in (asking, answered, idle_after_answer))
    # The answer ends after 12 s; the others have waited for a next head since 8 s.
    answered.busy = False
    gate.sweep(now=18.0)
    assert (asking.dropped, answered.dropped, idle_after_answer.dropped) == (True, False, True)
    gate.sweep(now=22.0)
    assert answered.dropped


# ---------------------------------------------------------------- the throttle


def test_the_throttle_lets_one_line_of_a_kind_through_per_interval_and_counts_the_rest() -> None:
    throttle = Throttle(interval_s=10.0)
    assert throttle.admit("accept:EMFILE", now=0.0) == 0
    assert [throttle.admit("accept:EMFILE", now=t) for t in (1.0, 5.0, 9.9)] == [None] * 3
    # Another kind has its own interval.
    assert throttle.admit("accept:ENFILE", now=2.0) == 0
    assert throttle.admit("accept:EMFILE", now=10.0) == 3
    assert throttle.admit("accept:EMFILE", now=25.0) == 0


def test_the_event_loop_logs_a_flood_of_errors_once() -> None:
    now = [0.0]
    loop = asyncio.new_event_loop()
    try:
        loop.set_exception_handler(throttled_exception_handler(Throttle(10.0), lambda: now[0]))
        error = OSError(24, "Too many open files")
        with capture_logs() as logs:
            for _ in range(5000):
                loop.call_exception_handler({"message": "accept failed", "exception": error})
            now[0] = 11.0
            loop.call_exception_handler({"message": "accept failed", "exception": error})
    finally:
        loop.close()
    assert [(e["event"], e["suppressed"]) for e in logs] == [
        ("web_loop_error", 0),
        ("web_loop_error", 4999),
    ]


# ---------------------------------------------------------------- the real server


def closed_by_server(sock: socket.socket, within_s: float = 30.0) -> bool:
    """Whether the server closes ``sock`` (end of file or reset) within ``within_s``."""
    sock.settimeout(within_s)
    try:
        while True:
            if not sock.recv(65536):
                return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def still_open(sock: socket.socket) -> bool:
    sock.settimeout(0.3)
    try:
        return sock.recv(1) != b""
    except TimeoutError:
        return True
    except ConnectionResetError:
        return False


def connect(site: Site) -> socket.socket:
    port = int(site.url.rsplit(":", 1)[1])
    return socket.create_connection(("127.0.0.1", port), timeout=10)


def read_answer(sock: socket.socket) -> bytes:
    """One whole answer to a ``/healthz`` request (a JSON body with a Content-Length)."""
    sock.settimeout(10)
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        body += sock.recv(65536)
    return head


def test_a_client_that_never_finishes_its_request_head_is_closed(site_factory) -> None:  # type: ignore[no-untyped-def]
    site: Site = site_factory(header_timeout_s=0.3)
    silent, slow = connect(site), connect(site)
    slow.sendall(UNFINISHED)
    with capture_logs() as logs:
        assert closed_by_server(slow)
        assert closed_by_server(silent)
        deadline = time.monotonic() + 10
        while not [e for e in logs if e["event"] == "web_connections_shed"]:
            assert time.monotonic() < deadline, logs
            time.sleep(0.05)
    shed = next(e for e in logs if e["event"] == "web_connections_shed")
    assert shed["timed_out"] >= 1 and shed["cap"] == 256
    # The server itself still answers.
    fresh = connect(site)
    fresh.sendall(REQUEST)
    assert read_answer(fresh).startswith(b"HTTP/1.1 200")


def test_after_an_answer_the_next_request_head_is_due_within_the_deadline(site_factory) -> None:  # type: ignore[no-untyped-def]
    """A client cannot reset the deadline by asking once and then dribbling its next request."""
    site: Site = site_factory(header_timeout_s=0.3)
    sock = connect(site)
    sock.sendall(REQUEST)
    assert read_answer(sock).startswith(b"HTTP/1.1 200")
    sock.sendall(UNFINISHED)
    assert closed_by_server(sock)


def test_a_client_asking_again_and_again_on_one_connection_keeps_it(site_factory) -> None:  # type: ignore[no-untyped-def]
    site: Site = site_factory(header_timeout_s=1.0)
    sock = connect(site)
    for _ in range(30):
        sock.sendall(REQUEST)
        assert read_answer(sock).startswith(b"HTTP/1.1 200")
        time.sleep(0.1)
    assert still_open(sock)


def test_beyond_the_cap_a_client_that_asks_closes_the_oldest_idle_one(site_factory) -> None:  # type: ignore[no-untyped-def]
    site: Site = site_factory(max_connections=4, header_timeout_s=60.0)
    holders = [connect(site) for _ in range(4)]
    for holder in holders:
        holder.sendall(UNFINISHED)
    probe = connect(site)
    probe.sendall(REQUEST)
    assert read_answer(probe).startswith(b"HTTP/1.1 200")
    assert closed_by_server(holders[0])
    assert [still_open(holder) for holder in holders[1:]] == [True, True, True]


SERVER_OUT_OF_DESCRIPTORS = """
import resource, sys, time
from orchestrator.logs import configure_logging
from orchestrator.store.database import Database
from orchestrator.web.server import start_web

configure_logging("json", stream=sys.stdout)
db = Database.open(sys.argv[1])
handle = start_web(
    "127.0.0.1", 0, db=db, status=lambda: None, control=None, token=None,
    max_connections=256, header_timeout_s=1.0,
)
# Far fewer descriptors than the cap: every accept beyond them fails.
resource.setrlimit(resource.RLIMIT_NOFILE, (48, 48))
print("URL " + handle.url, flush=True)
time.sleep(600)
"""


def test_a_server_out_of_descriptors_logs_its_failed_accepts_once_and_recovers(
    tmp_path: Path,
) -> None:
    script = tmp_path / "server.py"
    script.write_text(SERVER_OUT_OF_DESCRIPTORS)
    log = tmp_path / "server.log"
    with log.open("wb") as out:
        server = subprocess.Popen(
            [sys.executable, str(script), f"sqlite:///{tmp_path / 'db.sqlite'}"],
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=Path(__file__).resolve().parents[2],
            start_new_session=True,
        )
    holders: list[socket.socket] = []
    try:
        deadline = time.monotonic() + 30
        while "URL " not in log.read_text():
            assert server.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        url = log.read_text().split("URL ", 1)[1].split()[0]
        port = int(url.rsplit(":", 1)[1])
        for _ in range(200):
            holder = socket.create_connection(("127.0.0.1", port), timeout=10)
            holder.sendall(UNFINISHED)
            holders.append(holder)
        # The holders time out, the descriptors come back, and a client that asks is answered.
        probe = socket.create_connection(("127.0.0.1", port), timeout=30)
        probe.sendall(REQUEST)
        head = read_answer_within(probe, 30)
        assert head.startswith(b"HTTP/1.1 200"), head
    finally:
        for holder in holders:
            holder.close()
        os.killpg(server.pid, signal.SIGKILL)
        server.wait(10)
    lines = log.read_text().splitlines()
    failed = [line for line in lines if '"web_accept_failed"' in line]
    assert failed, lines[-20:]
    assert '"errno": "EMFILE"' in failed[0]
    # Once per interval (10 s), not once per attempt: the whole run fits in one or two lines.
    assert len(failed) <= 2, failed
    assert len(lines) < 50, lines[-20:]


def read_answer_within(sock: socket.socket, timeout_s: float) -> bytes:
    sock.settimeout(timeout_s)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_the_server_listens_on_every_address_of_its_host(site_factory, host: str) -> None:  # type: ignore[no-untyped-def]
    site: Site = site_factory(host=host)
    port = int(site.url.rsplit(":", 1)[1])
    for family, _, _, _, address in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM):
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            sock.settimeout(10)
            sock.connect(address)
            sock.sendall(REQUEST)
            assert read_answer(sock).startswith(b"HTTP/1.1 200")
