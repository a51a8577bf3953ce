"""The daemon's signal handlers: they only set flags, and the main thread acts on them."""

from __future__ import annotations

import faulthandler
import signal
import threading
from types import FrameType


class Signals:
    """SIGTERM/SIGINT ask to stop, SIGHUP to reload; SIGUSR1 dumps every thread's stack."""

    def __init__(self, stop: threading.Event) -> None:
        self.stop = stop
        # Set by a handler; the main thread wakes and acts on what it says.
        self.signalled = threading.Event()
        self.reload_requested = False

    def install(self) -> None:
        """Install the handlers (main thread only)."""

        def terminate(_signum: int, _frame: FrameType | None) -> None:
            self.stop.set()
            self.signalled.set()

        def reload(_signum: int, _frame: FrameType | None) -> None:
            self.reload_requested = True
            self.signalled.set()

        signal.signal(signal.SIGTERM, terminate)
        signal.signal(signal.SIGINT, terminate)
        signal.signal(signal.SIGHUP, reload)
        # SIGUSR1 writes every thread's stack to stderr (a daemon that seems stuck).
        faulthandler.register(signal.SIGUSR1, all_threads=True)

    def take_reload(self) -> bool:
        """Whether a reload was asked for since the last call."""
        asked, self.reload_requested = self.reload_requested, False
        return asked
