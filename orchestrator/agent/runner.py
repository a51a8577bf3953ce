"""The agent runner: one turn of a coding agent in its workspace, contained and observed.

The agent runs with ``bash -lc`` in a session of its own, with a filtered
environment, the prompt on standard input (and in a file), standard output
read as JSON lines and standard error written to a per-run log. Three
watchdogs (first event, stall, whole turn) and an explicit cancellation end it
with SIGTERM to the whole session, a grace period and SIGKILL. A worker thread
blocks in :meth:`AgentTurn.run`; any other thread may call
:meth:`AgentTurn.cancel`.
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
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import Enum
from pathlib import Path
from typing import IO

from orchestrator.agent import safe_files
from orchestrator.agent.app_server import MAX_PENDING_BYTES, AppServerClient
from orchestrator.agent.environment import AgentEnvironment
from orchestrator.agent.errors import HookFailed, UnsafeWorkspacePath, WorkspaceError
from orchestrator.agent.events import AgentEvent, EventKind
from orchestrator.agent.head import HeadSnapshot, take_snapshot
from orchestrator.agent.hook_result import HookName
from orchestrator.agent.hooks import run_hook
from orchestrator.agent.paths import checked_child
from orchestrator.agent.presets import EventMapper, build_command, new_mapper
from orchestrator.agent.process import (
    PIPE_DRAIN_S,
    POLL_INTERVAL_S,
    release,
    spawn,
    terminate_session,
)
from orchestrator.agent.registry import ProcessRegistry
from orchestrator.agent.result_files import (
    CONTEXT_FILE,
    PROMPT_FILE,
    ResultFiles,
    clear_outputs,
    read_results,
)
from orchestrator.agent.settings import AgentPreset, AgentSettings, HookSettings
from orchestrator.agent.turn import TurnOutcome, TurnRequest, TurnResult
from orchestrator.agent.workspace import RESULT_DIR
from orchestrator.agent.workspace_git import WorkspaceGit
from orchestrator.domain.agent_files.errors import ResultError, ResultErrorKind
from orchestrator.logs import get_logger, redact_text

log = get_logger(__name__)

EventListener = Callable[[str, AgentEvent], None]

MALFORMED_LOGGED = 5
STDERR_TAIL_BYTES = 4_000
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


@dataclass(frozen=True)
class _TurnFiles:
    """Where one turn's prompt, results and log live, and its ORCHESTRATOR_* variables."""

    result_dir: Path
    prompt: Path
    stderr_log: Path
    variables: dict[str, str]


@dataclass
class _Progress:
    """What the runner has seen of the agent so far (one turn, one thread writes it)."""

    started: float
    events: int = 0
    malformed: int = 0
    first_event: float | None = None
    last_event: float | None = None
    last_message: str | None = None
    last_error: str | None = None
    # Events that said the agent is alive but not getting anywhere (retrying its API).
    retries: int = 0


def _utc_now() -> datetime:
    return datetime.now(UTC)


class AgentRunner:
    """Runs agent turns with one set of settings; create one per policy version.

    With ``registry``, every agent and ``before_run``/``after_run`` hook session
    is recorded there while it runs, so that a daemon's next life can end what
    a killed daemon left behind.
    """

    def __init__(
        self,
        settings: AgentSettings,
        hooks: HookSettings,
        environment: AgentEnvironment,
        *,
        log_dir: Path,
        on_event: EventListener | None = None,
        registry: ProcessRegistry | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.settings = settings
        # When a turn starts and ends (the replica's own time; tests set it off).
        self.clock = clock or _utc_now
        self.hooks = hooks
        self.environment = environment
        self.log_dir = log_dir
        self.on_event = on_event
        self.registry = registry

    @property
    def git(self) -> WorkspaceGit:
        """Git on the workspace: it is the agent's, so it runs in the agent's sandbox."""
        return WorkspaceGit(self.hooks.sandbox)

    def prepare(self, request: TurnRequest) -> AgentTurn:
        """A turn ready to run; register it where other threads can cancel it, then run it."""
        return AgentTurn(self, request)

    def run(self, request: TurnRequest) -> TurnResult:
        """Prepare and run a turn in the calling thread."""
        return self.prepare(request).run()


class AgentTurn:
    """One agent turn: :meth:`run` blocks until it ends; :meth:`cancel` ends it from anywhere."""

    def __init__(self, runner: AgentRunner, request: TurnRequest) -> None:
        self.runner = runner
        self.request = request
        self.run_id = request.run_id
        self._cancel = threading.Event()
        self._cancel_reason = ""
        self._started = threading.Lock()

    # ----------------------------------------------------------- cancellation

    def cancel(self, reason: str = "cancelled") -> None:
        """End the turn (reconciliation, kill switch, shutdown); any thread, idempotent."""
        if not self._cancel.is_set():
            self._cancel_reason = reason
            self._cancel.set()
            log.info("agent_cancel_requested", run_id=self.run_id, reason=reason)

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    # -------------------------------------------------------------------- run

    def run(self) -> TurnResult:
        """Run the turn to its end and describe it; never raises for what the agent did.

        Raises :class:`~orchestrator.agent.errors.WorkspaceError` when the
        workspace is gone or unsafe, before anything runs.
        """
        if not self._started.acquire(blocking=False):
            raise RuntimeError(f"turn {self.run_id} was already run")
        started_at = self.runner.clock()
        files = self._prepare()
        hook_env = self.runner.environment.build(files.variables).variables
        progress = _Progress(started=time.monotonic())
        mapper = self._mapper()
        command = build_command(
            self.runner.settings,
            prompt_file=files.prompt,
            resume_session_id=self.request.resume_session_id,
        )
        started = not self._cancel.is_set()
        outcome, message = (
            self._before_run(hook_env)
            if started
            else (TurnOutcome.CANCELLED, f"cancelled before start: {self._cancel_reason}")
        )
        exit_code: int | None = None
        head_before: HeadSnapshot | None = None
        if outcome is None:
            head_before = self._snapshot()
            outcome, message, exit_code = self._launch(
                command, files, head_before, mapper, progress
            )
        if started:
            self._after_run(hook_env)
        head_after = self._snapshot()
        results = self._results(files.result_dir, head_after)
        outcome, message = self._conclude(
            outcome,
            message,
            exit_code,
            results,
            progress,
            mapper=mapper,
            stderr_log=files.stderr_log,
        )
        if (
            outcome is TurnOutcome.COMPLETED
            and mapper.denied_tools
            and not _moved(head_before, head_after)
        ):
            outcome, message = (
                TurnOutcome.FAILED,
                f"{self.runner.settings.preset.value} was refused the tools "
                f"{', '.join(mapper.denied_tools)} and made no commit: allow them "
                "(agent.permissions, agent.extra_args)",
            )
        result = TurnResult(
            run_id=self.run_id,
            phase=self.request.phase,
            outcome=outcome,
            message=redact_text(message),
            exit_code=exit_code,
            started_at=started_at,
            finished_at=self.runner.clock(),
            duration_s=time.monotonic() - progress.started,
            events=progress.events,
            malformed_lines=progress.malformed,
            first_event_after_s=_since(progress.first_event, progress.started),
            last_event_after_s=_since(progress.last_event, progress.started),
            usage=mapper.usage,
            session_id=mapper.session_id or self.request.resume_session_id,
            head_before=head_before or head_after,
            head_after=head_after,
            results=results,
            stderr_log=files.stderr_log,
            stderr_tail=redact_text(_tail(files.stderr_log, STDERR_TAIL_BYTES)),
            last_message=progress.last_message,
            command=command,
            cost_usd=mapper.cost_usd,
        )
        self._log_exit(result)
        return result

    def _mapper(self) -> EventMapper:
        request = self.request
        if self.runner.settings.preset is AgentPreset.CODEX_APP_SERVER:
            return AppServerClient(
                request.usage_baseline,
                prompt=request.prompt,
                cwd=request.workspace.path,
                resume_session_id=request.resume_session_id,
            )
        return new_mapper(self.runner.settings.preset, request.usage_baseline)

    def _prepare(self) -> _TurnFiles:
        """Check the workspace, clear stale results, write the prompt, name the log."""
        workspace = self.request.workspace
        if not checked_child(workspace.path.parent, workspace.path.name).is_dir():
            raise WorkspaceError(f"workspace {workspace.path} does not exist (was it removed?)")
        result_dir = checked_child(workspace.path, RESULT_DIR, create=True)
        clear_outputs(result_dir)
        prompt = result_dir / PROMPT_FILE
        _write_new(prompt, self.request.prompt.encode("utf-8"))
        log_dir = self.runner.log_dir / workspace.key
        log_dir.mkdir(parents=True, exist_ok=True)
        variables = {
            "ORCHESTRATOR_WORKSPACE": str(workspace.path),
            "ORCHESTRATOR_ISSUE": workspace.identifier,
            "ORCHESTRATOR_BRANCH": workspace.branch,
            "ORCHESTRATOR_BASE_BRANCH": workspace.base_branch,
            "ORCHESTRATOR_PHASE": self.request.phase.value,
            "ORCHESTRATOR_ATTEMPT": str(self.request.attempt),
            "ORCHESTRATOR_RUN_ID": self.run_id,
            "ORCHESTRATOR_RESULT_DIR": str(result_dir),
            "ORCHESTRATOR_PROMPT_FILE": str(prompt),
        }
        if safe_files.is_regular_file(result_dir, CONTEXT_FILE):
            variables["ORCHESTRATOR_CONTEXT_FILE"] = str(result_dir / CONTEXT_FILE)
        return _TurnFiles(
            result_dir=result_dir,
            prompt=prompt,
            stderr_log=log_dir / f"{self.run_id}.stderr.log",
            variables=variables,
        )

    def _before_run(self, env: dict[str, str]) -> tuple[TurnOutcome | None, str]:
        try:
            run_hook(
                HookName.BEFORE_RUN,
                self.runner.hooks,
                cwd=self.request.workspace.path,
                env=env,
                cancel=self._cancel,
                registry=self.runner.registry,
            )
        except HookFailed as failure:
            if failure.result.cancelled:
                return TurnOutcome.CANCELLED, f"cancelled: {self._cancel_reason}"
            return TurnOutcome.HOOK_FAILED, str(failure)
        return None, ""

    def _launch(
        self,
        command: str,
        files: _TurnFiles,
        head: HeadSnapshot,
        mapper: EventMapper,
        progress: _Progress,
    ) -> tuple[TurnOutcome | None, str, int | None]:
        variables = dict(files.variables)
        if head.sha:
            variables["ORCHESTRATOR_HEAD_SHA"] = head.sha
        if self.request.resume_session_id:
            variables["ORCHESTRATOR_SESSION_ID"] = self.request.resume_session_id
        env = self.runner.environment.build(variables)
        log.info(
            "agent_start",
            run_id=self.run_id,
            issue=self.request.workspace.identifier,
            phase=self.request.phase.value,
            attempt=self.request.attempt,
            preset=self.runner.settings.preset.value,
            command=command,
            workspace=str(self.request.workspace.path),
            env_withheld=list(env.withheld),
        )
        progress.started = time.monotonic()
        return self._run_agent(
            command=command,
            env=env.variables,
            prompt_file=files.prompt,
            stderr_log=files.stderr_log,
            mapper=mapper,
            progress=progress,
        )

    def _log_exit(self, result: TurnResult) -> None:
        log.info(
            "agent_exit",
            run_id=self.run_id,
            issue=self.request.workspace.identifier,
            phase=self.request.phase.value,
            outcome=result.outcome.value,
            exit_code=result.exit_code,
            reason=result.message,
            events=result.events,
            malformed_lines=result.malformed_lines,
            duration_ms=round(result.duration_s * 1000),
            input_tokens=result.usage.input_tokens,
            output_tokens=result.usage.output_tokens,
            session_id=result.session_id,
            head_before=result.head_before.sha,
            head_after=result.head_after.sha,
            ahead=result.head_after.ahead,
            result_files=sorted(f.value for f in result.results.present),
            result_errors=[str(e) for e in result.results.errors],
        )

    def _results(self, result_dir: Path, head: HeadSnapshot) -> ResultFiles:
        try:
            # The agent may have swapped the folder for a link since the turn began.
            checked_child(result_dir.parent, result_dir.name)
        except UnsafeWorkspacePath as error:
            problem = ResultError(RESULT_DIR, None, None, str(error), ResultErrorKind.INVALID_VALUE)
            return ResultFiles(errors=(problem,))
        return read_results(
            result_dir,
            expected_head=head.sha,
            max_bytes=self.runner.settings.result_max_bytes,
            required=self.request.required_results,
        )

    def _snapshot(self) -> HeadSnapshot:
        workspace = self.request.workspace
        return take_snapshot(
            workspace.path,
            branch=workspace.branch,
            base_branch=workspace.base_branch,
            git=self.runner.git,
        )

    def _after_run(self, env: dict[str, str]) -> None:
        try:
            run_hook(
                HookName.AFTER_RUN,
                self.runner.hooks,
                cwd=self.request.workspace.path,
                env=env,
                registry=self.runner.registry,
            )
        except OSError as error:
            log.warning("hook_failed", hook="after_run", run_id=self.run_id, error=str(error))

    def _conclude(
        self,
        outcome: TurnOutcome | None,
        message: str,
        exit_code: int | None,
        results: ResultFiles,
        progress: _Progress,
        *,
        mapper: EventMapper,
        stderr_log: Path,
    ) -> tuple[TurnOutcome, str]:
        if outcome is not None:
            return outcome, message
        preset = self.runner.settings.preset.value
        if mapper.conversational and not mapper.turn_over:
            # The server ended (or broke the protocol) before the turn did.
            reason = mapper.failure or progress.last_error or _last_line(stderr_log)
            detail = f": {reason}" if reason else ""
            return (
                TurnOutcome.FAILED,
                f"{preset} ended before the turn did (exit code {exit_code}){detail}",
            )
        if exit_code != 0 and not mapper.conversational:
            # The agent's own last error, else the last line it wrote on stderr.
            reason = mapper.failure or progress.last_error or _last_line(stderr_log)
            detail = f": {reason}" if reason else ""
            if exit_code is not None and exit_code < 0:
                return TurnOutcome.FAILED, f"agent was killed by signal {-exit_code}{detail}"
            return TurnOutcome.FAILED, f"agent exited with code {exit_code}{detail}"
        if mapper.failure is not None:
            # Some agents (pi) exit 0 after their model API failed.
            return TurnOutcome.FAILED, f"{preset}: {mapper.failure}"
        if results.errors:
            return TurnOutcome.INVALID_RESULTS, "; ".join(str(e) for e in results.errors)
        return TurnOutcome.COMPLETED, "agent finished"

    # ------------------------------------------------------------ the process

    def _run_agent(
        self,
        *,
        command: str,
        env: dict[str, str],
        prompt_file: Path,
        stderr_log: Path,
        mapper: EventMapper,
        progress: _Progress,
    ) -> tuple[TurnOutcome | None, str, int | None]:
        if self._cancel.is_set():
            return TurnOutcome.CANCELLED, f"cancelled before start: {self._cancel_reason}", None
        settings = self.runner.settings
        splitter = LineSplitter(settings.max_line_bytes)
        try:
            # A before_run hook runs the repository's code: the prompt may be a FIFO by now.
            prompt = safe_files.open_for_reading(prompt_file.parent, prompt_file.name)
        except (OSError, safe_files.UnsafeFile) as error:
            return TurnOutcome.FAILED, f"could not open the prompt: {error}", None
        registry = self.runner.registry
        track = registry.track("agent", self.run_id) if registry is not None else None
        with prompt as stdin, open(stderr_log, "ab") as stderr:
            try:
                proc = spawn(
                    ["bash", "-lc", command],
                    cwd=self.request.workspace.path,
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
        writer = _Writer(proc.stdin) if proc.stdin is not None else None
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
                watchdog = self._watchdog(now, progress)
                if watchdog is not None:
                    outcome, message = watchdog
                    break
                if proc.poll() is not None:
                    if eof:
                        break
                    leader_exit = leader_exit or now
                    # A background child still holds stdout; do not wait for it forever.
                    if now - leader_exit > PIPE_DRAIN_S:
                        break
                wait = max(0.0, min(POLL_INTERVAL_S * 5, self._next_deadline(now, progress)))
                if eof:
                    time.sleep(min(wait, POLL_INTERVAL_S))
                    continue
                for _key, _mask in selector.select(wait):
                    eof = self._read(fd, splitter, mapper, progress) is _Read.EOF
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
                read = self._read(fd, splitter, mapper, progress)
                eof = read is _Read.EOF
                if read is _Read.NOTHING:
                    break
            last = splitter.finish()
            if last is not None:
                self._line(last, mapper, progress)
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

    def _watchdog(self, now: float, progress: _Progress) -> tuple[TurnOutcome, str] | None:
        settings = self.runner.settings
        if self._cancel.is_set():
            return TurnOutcome.CANCELLED, f"cancelled: {self._cancel_reason}"
        elapsed_ms = (now - progress.started) * 1000
        first = settings.first_event_timeout_ms
        if progress.first_event is None and first and elapsed_ms >= first:
            return (
                TurnOutcome.SESSION_START_TIMEOUT,
                f"session start timeout: no event within {first} ms of the start",
            )
        stall = settings.stall_timeout_ms
        # Without a first-event watchdog, silence from the start counts as a stall.
        quiet_since = progress.last_event if progress.last_event is not None else progress.started
        armed = progress.first_event is not None or not first
        if stall and armed and (now - quiet_since) * 1000 >= stall:
            last = f"; last error: {progress.last_error}" if progress.last_error else ""
            what = "no progress" if progress.retries else "no event"
            return (
                TurnOutcome.STALLED,
                f"stalled: {what} for {stall} ms (after {progress.events} events){last}",
            )
        turn = settings.turn_timeout_ms
        if turn and elapsed_ms >= turn:
            return TurnOutcome.TURN_TIMEOUT, f"turn timeout: still running after {turn} ms"
        return None

    def _next_deadline(self, now: float, progress: _Progress) -> float:
        settings = self.runner.settings
        deadlines = []
        if settings.turn_timeout_ms:
            deadlines.append(progress.started + settings.turn_timeout_ms / 1000)
        if progress.first_event is None and settings.first_event_timeout_ms:
            deadlines.append(progress.started + settings.first_event_timeout_ms / 1000)
        if settings.stall_timeout_ms:
            since = progress.last_event if progress.last_event is not None else progress.started
            deadlines.append(since + settings.stall_timeout_ms / 1000)
        return min(deadlines) - now if deadlines else POLL_INTERVAL_S * 5

    def _read(
        self, fd: int, splitter: LineSplitter, mapper: EventMapper, progress: _Progress
    ) -> _Read:
        """Read and handle what the pipe has ready."""
        try:
            data = os.read(fd, 65536)
        except BlockingIOError:
            return _Read.NOTHING
        if not data:
            return _Read.EOF
        for line in splitter.feed(data):
            if line is None:
                self._malformed(progress, f"line longer than {splitter.max_bytes} bytes")
            else:
                self._line(line, mapper, progress)
        return _Read.DATA

    def _line(self, line: bytes, mapper: EventMapper, progress: _Progress) -> None:
        if not line.strip():
            return
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):
            self._malformed(progress, line[:_PREVIEW].decode("utf-8", "replace"))
            return
        if not isinstance(obj, dict):
            self._malformed(progress, line[:_PREVIEW].decode("utf-8", "replace"))
            return
        try:
            event = mapper.map(obj)
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
        listener = self.runner.on_event
        if listener is not None:
            try:
                listener(self.run_id, event)
            except Exception:
                log.exception("agent_event_listener_failed", run_id=self.run_id)

    def _malformed(self, progress: _Progress, preview: str) -> None:
        progress.malformed += 1
        if progress.malformed <= MALFORMED_LOGGED:
            log.warning(
                "agent_malformed_line", run_id=self.run_id, count=progress.malformed, line=preview
            )


class _Writer:
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


def _write_new(path: Path, data: bytes) -> None:
    """Write a fresh file at ``path``: whatever stood there is removed, never followed."""
    with safe_files.open_folder(path.parent, create=True) as dir_fd:
        safe_files.remove_at(dir_fd, path.name)
        safe_files.write_at(dir_fd, path.name, data, path=path)


def _since(moment: float | None, start: float) -> float | None:
    return None if moment is None else max(0.0, moment - start)


def _moved(before: HeadSnapshot | None, after: HeadSnapshot) -> bool:
    return before is not None and after.sha is not None and after.sha != before.sha


def _last_line(path: Path) -> str | None:
    """The last non-empty line of the agent's stderr, flattened and bounded (None: nothing)."""
    for line in reversed(_tail(path, 4_096).splitlines()):
        flat = " ".join(line.split())
        if flat:
            return redact_text(flat[:300])
    return None


def _tail(path: Path, limit: int) -> str:
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
