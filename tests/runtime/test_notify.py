"""sd_notify messages reach a real datagram socket."""

from __future__ import annotations

import contextlib
import socket
import threading
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from orchestrator.daemon.systemd import SystemdNotifier, watchdog_interval_s


@pytest.fixture
def receiver(tmp_path: Path):
    path = tmp_path / "notify.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))
    sock.settimeout(5)
    yield path, sock
    sock.close()


def test_ready_watchdog_stopping(receiver: tuple[Path, socket.socket]) -> None:
    path, sock = receiver
    notifier = SystemdNotifier(str(path))
    assert notifier.enabled
    assert notifier.ready("polling acme/app")
    assert sock.recv(4096) == b"READY=1\nSTATUS=polling acme/app"
    assert notifier.watchdog()
    assert sock.recv(4096) == b"WATCHDOG=1"
    assert notifier.stopping()
    assert sock.recv(4096) == b"STOPPING=1"


def test_from_environment_and_absent(
    monkeypatch: pytest.MonkeyPatch, receiver: tuple[Path, socket.socket]
) -> None:
    path, sock = receiver
    monkeypatch.setenv("NOTIFY_SOCKET", str(path))
    assert SystemdNotifier().status("x")
    assert sock.recv(4096) == b"STATUS=x"
    monkeypatch.delenv("NOTIFY_SOCKET")
    assert not SystemdNotifier().enabled
    assert not SystemdNotifier().ready()


def test_unreachable_socket_is_not_fatal(tmp_path: Path) -> None:
    assert not SystemdNotifier(str(tmp_path / "missing.sock")).ready()


def test_watchdog_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WATCHDOG_USEC", raising=False)
    assert watchdog_interval_s() is None
    monkeypatch.setenv("WATCHDOG_USEC", "30000000")
    monkeypatch.delenv("WATCHDOG_PID", raising=False)
    assert watchdog_interval_s() == 15.0
    monkeypatch.setenv("WATCHDOG_PID", "1")
    assert watchdog_interval_s() is None


def test_a_receiver_that_stopped_reading_never_blocks_the_daemon(
    receiver: tuple[Path, socket.socket],
) -> None:
    """A full notification socket drops messages instead of blocking: a blocked send
    stalled the heartbeat (claims expired under their own turn) and the shutdown."""
    path, sock = receiver
    notifier = SystemdNotifier(str(path))
    sent: list[bool] = []

    def flood() -> None:
        with capture_logs() as logs:
            sent.extend(notifier.watchdog() for _ in range(5000))
        sent_logs.extend(logs)

    sent_logs: list[dict[str, object]] = []
    worker = threading.Thread(target=flood, daemon=True)
    worker.start()
    worker.join(30)
    assert not worker.is_alive(), "sd_notify blocked on a full socket"
    assert sent[0] and not sent[-1]
    # Said once, not once per dropped message.
    assert [e["event"] for e in sent_logs] == ["sd_notify_dropped"]
    # Once the receiver reads again, messages get through (and that is said).
    sock.settimeout(0.2)
    with contextlib.suppress(TimeoutError):
        while sock.recv(4096):
            pass
    with capture_logs() as logs:
        assert notifier.stopping()
    assert [e["event"] for e in logs] == ["sd_notify_resumed"]
