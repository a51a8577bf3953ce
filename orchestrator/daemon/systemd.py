"""systemd's notification protocol (``sd_notify``) in plain socket code.

With ``NOTIFY_SOCKET`` set (a ``Type=notify`` unit), the daemon reports
READY=1 after start-up, WATCHDOG=1 from its heartbeat and STOPPING=1 on
shutdown. Without it every call is a no-op.
"""

from __future__ import annotations

import os
import socket

from orchestrator.logs import get_logger

log = get_logger(__name__)


class SystemdNotifier:
    """Sends state lines to the socket named by ``NOTIFY_SOCKET``, if any."""

    def __init__(self, address: str | None = None) -> None:
        address = address if address is not None else os.environ.get("NOTIFY_SOCKET")
        self._address: str | bytes | None = None
        # Whether the last message was dropped because the socket was full (said once).
        self._dropping = False
        if address:
            # A leading '@' names a socket in the abstract namespace.
            self._address = b"\0" + address[1:].encode() if address.startswith("@") else address

    @property
    def enabled(self) -> bool:
        return self._address is not None

    def notify(self, *lines: str) -> bool:
        """Send ``KEY=VALUE`` lines in one datagram; False if it could not be sent."""
        if self._address is None:
            return False
        message = "\n".join(lines).encode()
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
                # Never wait: a receiver that stopped reading fills the socket, and a
                # blocked send would stall the heartbeat (and with it the turn claims'
                # renewal) and the shutdown. A message that does not fit is dropped.
                sock.setblocking(False)
                sock.connect(self._address)
                sock.send(message)
        except BlockingIOError:
            if not self._dropping:
                log.warning("sd_notify_dropped", reason="the notification socket is full")
            self._dropping = True
            return False
        except OSError as error:
            log.warning("sd_notify_failed", error=str(error))
            return False
        if self._dropping:
            log.info("sd_notify_resumed")
            self._dropping = False
        return True

    def ready(self, status: str = "") -> bool:
        return self.notify("READY=1", *([f"STATUS={status}"] if status else []))

    def watchdog(self) -> bool:
        return self.notify("WATCHDOG=1")

    def stopping(self) -> bool:
        return self.notify("STOPPING=1")

    def status(self, text: str) -> bool:
        return self.notify(f"STATUS={text}")


def watchdog_interval_s() -> float | None:
    """Half the watchdog period systemd asked for (``WATCHDOG_USEC``), or None."""
    raw = os.environ.get("WATCHDOG_USEC")
    pid = os.environ.get("WATCHDOG_PID")
    if not raw or (pid and pid != str(os.getpid())):
        return None
    try:
        return int(raw) / 1_000_000 / 2
    except ValueError:
        return None
