"""Running a program to its end within a time limit, with its output kept to a bound.

Git and the hooks run this way: in a session of their own
(:func:`orchestrator.agent.process.spawn`), ended as a whole on timeout or
cancellation, with the first and last bytes of their output kept for messages
and logs (:class:`OutputCapture`) or their standard output written to a file
up to a limit (:class:`FileSink`).
"""

from __future__ import annotations

import contextlib
import os
import selectors
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from orchestrator.agent.process import (
    PIPE_DRAIN_S,
    POLL_INTERVAL_S,
    release,
    spawn,
    terminate_session,
)
from orchestrator.agent.registry import TrackedGroup
from orchestrator.agent.sandbox import SandboxSettings


class FileSink:
    """Writes a stream into an open file, up to ``limit`` bytes; ``overflowed`` once it is past."""

    def __init__(self, target: IO[bytes], limit: int) -> None:
        self.target = target
        self.limit = limit
        self.total = 0
        self.overflowed = False

    def add(self, data: bytes) -> None:
        self.total += len(data)
        if self.total > self.limit:
            self.overflowed = True
            return
        self.target.write(data)


class OutputCapture:
    """Keeps the first and last bytes of a stream, and counts what was dropped between."""

    def __init__(self, limit: int) -> None:
        self.limit = max(limit, 2)
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0

    def add(self, data: bytes) -> None:
        self.total += len(data)
        half = self.limit // 2
        room = half - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if data:
            self._tail += data
            if len(self._tail) > self.limit - half:
                del self._tail[: len(self._tail) - (self.limit - half)]

    @property
    def truncated(self) -> bool:
        return self.total > len(self._head) + len(self._tail)

    def value(self) -> bytes:
        """The kept bytes, with a marker where the middle was dropped."""
        if not self.truncated:
            return bytes(self._head + self._tail)
        dropped = self.total - len(self._head) - len(self._tail)
        return bytes(self._head) + f"\n[... {dropped} bytes omitted ...]\n".encode() + self._tail

    def text(self) -> str:
        return self.value().decode("utf-8", "replace")


@dataclass(frozen=True)
class BoundedRun:
    """How a bounded program ended and what it printed (truncated to the capture limit)."""

    exit_code: int | None
    timed_out: bool
    cancelled: bool
    stdout: str
    stderr: str
    output_bytes: int
    truncated: bool
    duration_s: float
    # The standard output went past the sink's limit: the program was ended there.
    overflowed: bool = False

    @property
    def ok(self) -> bool:
        ended_well = self.exit_code == 0 and not self.overflowed
        return ended_well and not self.timed_out and not self.cancelled


def run_bounded(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout_s: float,
    grace_s: float,
    capture_bytes: int,
    merge_stderr: bool = True,
    cancel: threading.Event | None = None,
    pass_fds: tuple[int, ...] = (),
    sandbox: SandboxSettings | None = None,
    track: TrackedGroup | None = None,
    stdin: IO[bytes] | None = None,
    stdout_sink: FileSink | None = None,
) -> BoundedRun:
    """Run ``argv`` in its own session, at most ``timeout_s``, capturing its output.

    On timeout or cancellation the whole session is terminated (SIGTERM, grace,
    SIGKILL) and ``exit_code`` is None. Background processes the program leaves
    behind are terminated too, so nothing outlives the call. ``sandbox`` and
    ``track`` are passed to :func:`spawn`. ``stdin`` is an open file the program
    reads (default: nothing); with ``stdout_sink`` the standard output goes
    into that sink instead of the capture, and the program is ended once it
    wrote more than the sink's limit (``overflowed``).
    """
    started = time.monotonic()
    proc = spawn(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL if stdin is None else stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
        pass_fds=pass_fds,
        sandbox=sandbox,
        track=track,
    )
    out: OutputCapture | FileSink = stdout_sink or OutputCapture(capture_bytes)
    err = OutputCapture(capture_bytes)
    selector = selectors.DefaultSelector()
    pipes = [(proc.stdout, out), (proc.stderr, err)]
    for stream, capture in pipes:
        if stream is not None:
            os.set_blocking(stream.fileno(), False)
            selector.register(stream.fileno(), selectors.EVENT_READ, capture)
    timed_out = cancelled = False
    leader_exit: float | None = None
    deadline = started + timeout_s
    try:
        while selector.get_map():
            now = time.monotonic()
            if cancel is not None and cancel.is_set():
                cancelled = True
                break
            if now >= deadline:
                timed_out = True
                break
            if stdout_sink is not None and stdout_sink.overflowed:
                break
            if leader_exit is None and proc.poll() is not None:
                leader_exit = now
            if leader_exit is not None and now - leader_exit > PIPE_DRAIN_S:
                break
            for key, _ in selector.select(min(POLL_INTERVAL_S * 5, deadline - now)):
                _read_into(key, selector)
        overflowed = stdout_sink is not None and stdout_sink.overflowed
        while not (timed_out or cancelled or overflowed) and proc.poll() is None:
            remaining = deadline - time.monotonic()
            if cancel is not None and cancel.is_set():
                cancelled = True
            elif remaining <= 0:
                timed_out = True
            else:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=min(POLL_INTERVAL_S * 5, remaining))
        terminate_session(proc, grace_s)
        for key in list(selector.get_map().values()):
            _drain(key, selector)
    finally:
        selector.close()
        for stream, _ in pipes:
            if stream is not None:
                stream.close()
        if proc.returncode is None:
            proc.kill()
            proc.wait()
        release(proc, track)
    overflowed = stdout_sink is not None and stdout_sink.overflowed
    return BoundedRun(
        exit_code=None if (timed_out or cancelled or overflowed) else proc.returncode,
        timed_out=timed_out,
        cancelled=cancelled,
        stdout=out.text() if isinstance(out, OutputCapture) else "",
        stderr=err.text(),
        output_bytes=out.total + err.total,
        truncated=err.truncated or (isinstance(out, OutputCapture) and out.truncated),
        duration_s=time.monotonic() - started,
        overflowed=overflowed,
    )


def _read_into(key: selectors.SelectorKey, selector: selectors.BaseSelector) -> None:
    try:
        data = os.read(key.fd, 65536)
    except BlockingIOError:
        return
    if data:
        key.data.add(data)
    else:
        selector.unregister(key.fd)


def _drain(key: selectors.SelectorKey, selector: selectors.BaseSelector) -> None:
    while key.fd in selector.get_map():
        try:
            data = os.read(key.fd, 65536)
        except BlockingIOError:
            return
        if not data:
            selector.unregister(key.fd)
            return
        key.data.add(data)
