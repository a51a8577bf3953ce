"""Run the GitHub emulator in a process of its own, on a clock the test moves.

``python emulator_main.py STATE_DIR CLOCK_FILE`` starts the emulator, prints its
URL on one line, and serves until SIGTERM. Its clock is the wall clock plus the
offset in seconds stored as one double in ``CLOCK_FILE`` (shared memory: the test
steps it forward, this process reads it at every timestamp).
"""

from __future__ import annotations

import logging
import mmap
import signal
import struct
import sys
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import structlog

from orchestrator_sim.server import SimServer


def main() -> None:
    state_dir, clock_file = Path(sys.argv[1]), Path(sys.argv[2])
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    with clock_file.open("r+b") as handle:
        shared = mmap.mmap(handle.fileno(), 8)

    def clock() -> datetime:
        (offset,) = struct.unpack("d", shared[:8])
        return datetime.now(UTC) + timedelta(seconds=offset)

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    server = SimServer(state_dir, clock=clock, seed=0).start()
    print(server.url, flush=True)
    try:
        stop.wait()
    finally:
        server.stop()


if __name__ == "__main__":
    main()
