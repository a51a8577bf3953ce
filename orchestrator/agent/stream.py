"""The agent's process during one turn: started, its output read as JSON lines, watched, ended.

The agent runs with ``bash -lc`` in a session of its own, the prompt on
standard input (a conversational agent gets a pipe instead, written without
ever blocking), standard output read as JSON lines of bounded length and
standard error appended to the turn's log. The watchdogs
(:mod:`orchestrator.agent.watchdog`) and a cancellation end it with SIGTERM to
the whole session, a grace period and SIGKILL.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from enum import Enum
from pathlib import Path
from typing import IO

from orchestrator.agent import safe_files
from orchestrator.agent.app_server import MAX_PENDING_BYTES
from orchestrator.agent.events import AgentEvent, EventKind
from orchestrator.agent.presets import EventMapper
from orchestrator.agent.process import (
    PIPE_DRAIN_S,
    POLL_INTERVAL_S,
    release,
    spawn,
    terminate_session,
)
from orchestrator.agent.registry import ProcessRegistry
from orchestrator.agent.settings import AgentSettings
from orchestrator.agent.turn import TurnOutcome
from orchestrator.agent.watchdog import Progress, Watchdogs
from orchestrator.logs import get_logger, redact_text

log = get_logger(__name__)

EventListener = Callable[[str, AgentEvent], None]

MALFORMED_LOGGED = 5
_PREVIEW = 200


class LineSplitter:
    """Splits a byte stream into lines of at most ``max_bytes``; longer lines become None.

    Memory stays bounded by the limit: an over-long line is dropped as it
    arrives, not collected first.
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._buffer = bytearray()
        self._skipping = False

    def feed(self, data: bytes) -> Iterator[bytes | None]:
        start = 0
        while True:
            end = data.find(b"\n", start)
            if end < 0:
                break
            piece = data[start:end]
            start = end + 1
            if self._skipping:
                self._skipping = False
                continue
            if len(self._buffer) + len(piece) > self.max_bytes:
                self._buffer.clear()
                yield None
                continue
            line = bytes(self._buffer) + piece
            self._buffer.clear()
            yield line
        rest = data[start:]
        if self._skipping or not rest:
            return
        if len(self._buffer) + len(rest) > self.max_bytes:
            self._buffer.clear()
            self._skipping = True
            yield None
        else:
            self._buffer += rest

    def finish(self) -> bytes | None:
        """The last line if the stream ended without a newline."""
        if self._skipping or not self._buffer:
            return None
        line = bytes(self._buffer)
        self._buffer.clear()
        return line


class _Read(Enum):
    DATA = "data"
    NOTHING = "nothing"
    EOF = "eof"


class Cancellation:
    """A turn's cancellation: requested once, from any thread, with the reason it was asked for."""

    def __init__(self) -> None:
        # Hooks wait on the event itself.
        self.event = threading.Event()
        self.reason = ""

    def request(self, reason: str) -> bool:
        """Ask for it; False when it already was (the first reason stays)."""
        if self.event.is_set():
            return False
        self.reason = reason
        self.event.set()
        return True

    @property
    def requested(self) -> bool:
        return self.event.is_set()


class AgentStream:
    """One agent process of a turn: :meth:`run` starts it, reads its events and ends it."""

    def __init__(
        self,
        *,
        run_id: str,
        settings: AgentSettings,
        mapper: EventMapper,
        progress: Progress,
        cancellation: Cancellation,
        on_event: EventListener | None,
    ) -> None:
        self.run_id = run_id
        self.settings = settings
        self.watchdogs = Watchdogs.of(settings)
        self.mapper = mapper
        self.progress = progress
        self.cancellation = cancellation
        self.on_event = on_event

    def run(
        self,
        *,
        command: str,
        env: dict[str, str],
        cwd: Path,
        prompt_file: Path,
        stderr_log: Path,
        registry: ProcessRegistry | None,
    ) -> tuple[TurnOutcome | None, str, int | None]:
        """Run ``command`` in ``cwd`` until it ends: ``(outcome, message, exit code)``.

        The outcome is the one a watchdog or the cancellation gave the turn; None
        when the agent ended by itself.
        """
        if self.cancellation.requested:
            return (
                TurnOutcome.CANCELLED,
                f"cancelled before start: {self.cancellation.reason}",
                None,
            )
        settings = self.settings
        mapper = self.mapper
        progress = self.progress
        splitter = LineSplitter(settings.max_line_bytes)
        try:
            # A before_run hook runs the repository's code: the prompt may be a FIFO by now.
            prompt = safe_files.open_for_reading(prompt_file.parent, prompt_file.name)
        except (OSError, safe_files.UnsafeFile) as error:
            return TurnOutcome.FAILED, f"could not open the prompt: {error}", None
        track = registry.track("agent", self.run_id) if registry is not None else None
        with prompt as stdin, open(stderr_log, "ab") as stderr:
            try:
                proc = spawn(
                    ["bash", "-lc", command],
                    cwd=cwd,
                    env=env,
                    # A conversational agent gets its prompt in a request, on a pipe.
                    stdin=subprocess.PIPE if mapper.conversational else stdin,
                    stdout=subprocess.PIPE,
                    stderr=stderr,
                    sandbox=settings.sandbox,
                    track=track,
                )
            except OSError as error:
                return TurnOutcome.FAILED, f"could not start the agent: {error}", None
        assert proc.stdout is not None
        progress.started = time.monotonic()
        writer = StdinWriter(proc.stdin) if proc.stdin is not None else None
        fd = proc.stdout.fileno()
        os.set_blocking(fd, False)
        selector = selectors.DefaultSelector()
        selector.register(fd, selectors.EVENT_READ)
        outcome: TurnOutcome | None = None
        message = ""
        eof = False
        leader_exit: float | None = None
        try:
            while True:
                if writer is not None:
                    writer.send(mapper)
                    if mapper.turn_over:
                        # The turn ended; the server would wait for the next one.
                        break
                now = time.monotonic()
                verdict = self._verdict(now)
                if verdict is not None:
                    outcome, message = verdict
                    break
                if proc.poll() is not None:
                    if eof:
                        break
                    leader_exit = leader_exit or now
                    # A background child still holds stdout; do not wait for it forever.
                    if now - leader_exit > PIPE_DRAIN_S:
                        break
                deadline = self.watchdogs.next_deadline(progress, now)
                idle = POLL_INTERVAL_S * 5
                wait = idle if deadline is None else max(0.0, min(idle, deadline))
                if eof:
                    time.sleep(min(wait, POLL_INTERVAL_S))
                    continue
                for _key, _mask in selector.select(wait):
                    eof = self._read(fd, splitter) is _Read.EOF
                    if eof:
                        selector.unregister(fd)
            if outcome is not None:
                log.warning(
                    "agent_watchdog" if outcome.is_watchdog else "agent_cancelled",
                    run_id=self.run_id,
                    outcome=outcome.value,
                    reason=message,
                    events=progress.events,
                )
            if writer is not None:
                # End of input: the server's cue to save its thread and exit on its own.
                writer.close()
                if mapper.turn_over and outcome is None:
                    _wait_exit(proc, settings.grace_period_ms / 1000)
            if not terminate_session(proc, settings.grace_period_ms / 1000):
                log.error("agent_survivors", run_id=self.run_id, session=proc.pid)
            # Whatever is still buffered in the pipe; a writer that escaped the
            # session may keep it open, so stop as soon as nothing is ready.
            while not eof:
                read = self._read(fd, splitter)
                eof = read is _Read.EOF
                if read is _Read.NOTHING:
                    break
            last = splitter.finish()
            if last is not None:
                self._line(last)
        finally:
            selector.close()
            proc.stdout.close()
            if writer is not None:
                writer.close()
            if proc.returncode is None:
                proc.kill()
                proc.wait()
            release(proc, track)
        if progress.malformed > MALFORMED_LOGGED:
            log.warning("agent_malformed_lines", run_id=self.run_id, count=progress.malformed)
        return outcome, message, proc.returncode

    def _verdict(self, now: float) -> tuple[TurnOutcome, str] | None:
        if self.cancellation.requested:
            return TurnOutcome.CANCELLED, f"cancelled: {self.cancellation.reason}"
        return self.watchdogs.verdict(self.progress, now)

    def _read(self, fd: int, splitter: LineSplitter) -> _Read:
        """Read and handle what the pipe has ready."""
        try:
            data = os.read(fd, 65536)
        except BlockingIOError:
            return _Read.NOTHING
        if not data:
            return _Read.EOF
        for line in splitter.feed(data):
            if line is None:
                self._malformed(f"line longer than {splitter.max_bytes} bytes")
            else:
                self._line(line)
        return _Read.DATA

    def _line(self, line: bytes) -> None:
        progress = self.progress
        if not line.strip():
            return
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):
            self._malformed(line[:_PREVIEW].decode("utf-8", "replace"))
            return
        if not isinstance(obj, dict):
            self._malformed(line[:_PREVIEW].decode("utf-8", "replace"))
            return
        try:
            event = self.mapper.map(obj)
        except (TypeError, ValueError, AttributeError):
            event = AgentEvent(EventKind.OTHER, str(obj.get("type") or ""))
        now = time.monotonic()
        progress.events += 1
        if progress.first_event is None:
            progress.first_event = now
            log.info(
                "agent_first_event",
                run_id=self.run_id,
                after_ms=round((now - progress.started) * 1000),
                event_type=event.raw_type,
            )
        if event.no_progress:
            progress.retries += 1
        else:
            progress.last_event = now
        if event.kind is EventKind.ERROR and event.text:
            progress.last_error = event.text
        elif event.text and event.kind in (EventKind.MESSAGE, EventKind.TURN_COMPLETED):
            progress.last_message = event.text
        listener = self.on_event
        if listener is not None:
            try:
                listener(self.run_id, event)
            except Exception:
                log.exception("agent_event_listener_failed", run_id=self.run_id)

    def _malformed(self, preview: str) -> None:
        progress = self.progress
        progress.malformed += 1
        if progress.malformed <= MALFORMED_LOGGED:
            log.warning(
                "agent_malformed_line", run_id=self.run_id, count=progress.malformed, line=preview
            )


class StdinWriter:
    """Writes a conversational mapper's lines to the agent's stdin without ever blocking.

    What the pipe does not take now is kept and offered again on the next
    pass; an agent that stops reading (more than ``MAX_PENDING_BYTES`` waiting)
    or closes its input ends the turn as failed.
    """

    def __init__(self, stdin: IO[bytes]) -> None:
        self._stdin: IO[bytes] | None = stdin
        self._fd = stdin.fileno()
        os.set_blocking(self._fd, False)
        self._pending = bytearray()

    def send(self, mapper: EventMapper) -> None:
        for line in mapper.outgoing():
            self._pending += line
        if self._stdin is None:
            self._pending.clear()
            return
        while self._pending:
            try:
                written = os.write(self._fd, self._pending)
            except BlockingIOError:
                break
            except OSError as error:
                self.close()
                if not mapper.turn_over:
                    mapper.turn_over = True
                    mapper.failure = mapper.failure or f"the agent closed its input ({error})"
                return
            del self._pending[:written]
        if len(self._pending) > MAX_PENDING_BYTES and not mapper.turn_over:
            self._pending.clear()
            mapper.turn_over = True
            mapper.failure = mapper.failure or "the agent stopped reading its input"

    def close(self) -> None:
        if self._stdin is not None:
            with contextlib.suppress(OSError):
                self._stdin.close()
            self._stdin = None


def _wait_exit(proc: subprocess.Popen[bytes], limit_s: float) -> None:
    """Give a process up to ``limit_s`` to exit by itself."""
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=limit_s)


def last_stderr_line(path: Path) -> str | None:
    """The last non-empty line of the agent's stderr, flattened and bounded (None: nothing)."""
    for line in reversed(stderr_tail(path, 4_096).splitlines()):
        flat = " ".join(line.split())
        if flat:
            return redact_text(flat[:300])
    return None


def stderr_tail(path: Path, limit: int) -> str:
    """The last ``limit`` bytes of the agent's stderr log as text ("" when unreadable)."""
    try:
        # The agent runs as the daemon's user and may have swapped its log for a FIFO.
        with safe_files.open_folder(path.parent) as dir_fd:
            fd = safe_files.open_regular(dir_fd, path.name, path=path)
        with os.fdopen(fd, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - limit))
            return handle.read().decode("utf-8", "replace")
    except (OSError, safe_files.UnsafeFile):
        return ""
