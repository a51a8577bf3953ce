"""The agent runner: one turn of a coding agent in its workspace, contained and observed.

A turn checks its workspace, writes the prompt (on standard input, and in a
file), runs the ``before_run`` hook, snapshots HEAD, runs the agent with a
filtered environment (:mod:`orchestrator.agent.stream`: JSON lines on
standard output, standard error to a per-run log, three watchdogs), runs the
``after_run`` hook, snapshots HEAD again, reads the result files and describes
it all in one :class:`TurnResult`. A worker thread blocks in
:meth:`AgentTurn.run`; any other thread may call :meth:`AgentTurn.cancel`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from orchestrator.agent import safe_files
from orchestrator.agent.app_server import AppServerClient
from orchestrator.agent.environment import AgentEnvironment
from orchestrator.agent.errors import HookFailed, UnsafeWorkspacePath, WorkspaceError
from orchestrator.agent.head import HeadSnapshot, take_snapshot
from orchestrator.agent.hook_result import HookName
from orchestrator.agent.hooks import run_hook
from orchestrator.agent.paths import checked_child
from orchestrator.agent.presets import EventMapper, build_command, new_mapper
from orchestrator.agent.registry import ProcessRegistry
from orchestrator.agent.result_files import (
    CONTEXT_FILE,
    PROMPT_FILE,
    ResultFiles,
    clear_outputs,
    read_results,
)
from orchestrator.agent.settings import AgentPreset, AgentSettings, HookSettings
from orchestrator.agent.stream import (
    AgentStream,
    Cancellation,
    EventListener,
    last_stderr_line,
    stderr_tail,
)
from orchestrator.agent.turn import TurnOutcome, TurnRequest, TurnResult
from orchestrator.agent.watchdog import Progress
from orchestrator.agent.workspace import RESULT_DIR
from orchestrator.agent.workspace_git import WorkspaceGit
from orchestrator.domain.agent_files.errors import ResultError, ResultErrorKind
from orchestrator.logs import get_logger, redact_text

log = get_logger(__name__)

STDERR_TAIL_BYTES = 4_000


@dataclass(frozen=True)
class _TurnFiles:
    """Where one turn's prompt, results and log live, and its ORCHESTRATOR_* variables."""

    result_dir: Path
    prompt: Path
    stderr_log: Path
    variables: dict[str, str]


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
        self._cancellation = Cancellation()
        self._started = threading.Lock()

    # ----------------------------------------------------------- cancellation

    def cancel(self, reason: str = "cancelled") -> None:
        """End the turn (reconciliation, kill switch, shutdown); any thread, idempotent."""
        if self._cancellation.request(reason):
            log.info("agent_cancel_requested", run_id=self.run_id, reason=reason)

    @property
    def cancelled(self) -> bool:
        return self._cancellation.requested

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
        progress = Progress(started=time.monotonic())
        mapper = self._mapper()
        command = build_command(
            self.runner.settings,
            prompt_file=files.prompt,
            resume_session_id=self.request.resume_session_id,
        )
        started = not self._cancellation.requested
        outcome, message = (
            self._before_run(hook_env)
            if started
            else (TurnOutcome.CANCELLED, f"cancelled before start: {self._cancellation.reason}")
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
            stderr_tail=redact_text(stderr_tail(files.stderr_log, STDERR_TAIL_BYTES)),
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
                cancel=self._cancellation.event,
                registry=self.runner.registry,
            )
        except HookFailed as failure:
            if failure.result.cancelled:
                return TurnOutcome.CANCELLED, f"cancelled: {self._cancellation.reason}"
            return TurnOutcome.HOOK_FAILED, str(failure)
        return None, ""

    def _launch(
        self,
        command: str,
        files: _TurnFiles,
        head: HeadSnapshot,
        mapper: EventMapper,
        progress: Progress,
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
        stream = AgentStream(
            run_id=self.run_id,
            settings=self.runner.settings,
            mapper=mapper,
            progress=progress,
            cancellation=self._cancellation,
            on_event=self.runner.on_event,
        )
        return stream.run(
            command=command,
            env=env.variables,
            cwd=self.request.workspace.path,
            prompt_file=files.prompt,
            stderr_log=files.stderr_log,
            registry=self.runner.registry,
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
        progress: Progress,
        *,
        mapper: EventMapper,
        stderr_log: Path,
    ) -> tuple[TurnOutcome, str]:
        if outcome is not None:
            return outcome, message
        preset = self.runner.settings.preset.value
        if mapper.conversational and not mapper.turn_over:
            # The server ended (or broke the protocol) before the turn did.
            reason = mapper.failure or progress.last_error or last_stderr_line(stderr_log)
            detail = f": {reason}" if reason else ""
            return (
                TurnOutcome.FAILED,
                f"{preset} ended before the turn did (exit code {exit_code}){detail}",
            )
        if exit_code != 0 and not mapper.conversational:
            # The agent's own last error, else the last line it wrote on stderr.
            reason = mapper.failure or progress.last_error or last_stderr_line(stderr_log)
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


def _write_new(path: Path, data: bytes) -> None:
    """Write a fresh file at ``path``: whatever stood there is removed, never followed."""
    with safe_files.open_folder(path.parent, create=True) as dir_fd:
        safe_files.remove_at(dir_fd, path.name)
        safe_files.write_at(dir_fd, path.name, data, path=path)


def _since(moment: float | None, start: float) -> float | None:
    return None if moment is None else max(0.0, moment - start)


def _moved(before: HeadSnapshot | None, after: HeadSnapshot) -> bool:
    return before is not None and after.sha is not None and after.sha != before.sha
