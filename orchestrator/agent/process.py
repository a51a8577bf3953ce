"""Child processes in a session of their own, killed as a whole.

Every program the agent layer starts (git, hooks, the agent) gets a new
session, so one signal reaches its whole process tree: SIGTERM, a grace
period, then SIGKILL, until no live process of that session is left. Programs
run to their end within a time limit go through
:func:`orchestrator.agent.bounded_run.run_bounded`.

Agents and hooks may run in a sandbox (:mod:`orchestrator.agent.sandbox`):
then the session's leader is bubblewrap, which would die at once on SIGTERM
and take the sandbox down with SIGKILL. It is spared the SIGTERM, so the
agent inside gets its grace period like an unsandboxed one.

Every program is started with a parent death signal (SIGKILL), so its
session's leader dies with the daemon; agents and hooks are also recorded in
a :class:`~orchestrator.agent.registry.ProcessRegistry`, through which the
daemon's next life ends what the leader left behind.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from orchestrator.agent.reaper import process_table
from orchestrator.agent.registry import TrackedGroup
from orchestrator.agent.sandbox import SandboxSettings
from orchestrator.logs import get_logger

log = get_logger(__name__)

# How often loops wake up to look at deadlines, cancellation and exits.
POLL_INTERVAL_S = 0.02
# After SIGKILL the kernel needs a moment to tear processes down; never wait forever.
KILL_SETTLE_S = 5.0
# A leader that exited while a straggler still holds its pipes is given this long.
PIPE_DRAIN_S = 0.5

_PROC = Path("/proc")
# Names the setpriv program (default: ``setpriv`` on PATH); tests point it at a missing file.
SETPRIV_ENV = "ORCHESTRATOR_SETPRIV"
DEFAULT_SETPRIV = "setpriv"
_PROBE_TIMEOUT_S = 5.0

_death_prefixes: dict[str, tuple[str, ...]] = {}
_death_lock = threading.Lock()


def parent_death_prefix() -> tuple[str, ...]:
    """What to run a program through so that it gets SIGKILL when its parent thread dies.

    ``setpriv --pdeathsig KILL`` (util-linux) sets ``PR_SET_PDEATHSIG`` and
    runs the program in the same process, so the signal is tied to the thread
    that forked it. Setting it from Python between fork and exec would need
    ``preexec_fn``, which may deadlock in a threaded program such as the daemon.
    Checked once per program; where setpriv is missing or lacks the option, the
    prefix is empty and a warning says that agents outside the sandbox then
    outlive the daemon until its next start ends them.
    """
    program = os.environ.get(SETPRIV_ENV) or DEFAULT_SETPRIV
    with _death_lock:
        found = _death_prefixes.get(program)
        if found is None:
            found = _death_prefixes[program] = _probe_setpriv(program)
    return found


def _probe_setpriv(program: str) -> tuple[str, ...]:
    path = shutil.which(program)
    reason = f"{program} not found (install util-linux)"
    if path is not None:
        prefix = (path, "--pdeathsig", "KILL", "--")
        try:
            done = subprocess.run(
                [*prefix, shutil.which("true") or "/bin/true"],
                capture_output=True,
                timeout=_PROBE_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.SubprocessError) as error:
            reason = f"{path} cannot run: {error}"
        else:
            if done.returncode == 0:
                log.info("agent_pdeathsig", program=path)
                return prefix
            detail = done.stderr.decode("utf-8", "replace").strip().splitlines()
            reason = f"{path} --pdeathsig fails: {detail[-1] if detail else done.returncode}"
    log.warning(
        "agent_pdeathsig_unavailable",
        program=program,
        reason=reason,
        consequence="agents and hooks outside the sandbox outlive a killed daemon until "
        "its next start ends them",
    )
    return ()


class SandboxedProcess(subprocess.Popen[bytes]):
    """A child whose leader is bubblewrap: :func:`terminate_session` spares it the SIGTERM."""


def spawn(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    stdin: IO[Any] | int | None,
    stdout: IO[Any] | int | None,
    stderr: IO[Any] | int | None,
    pass_fds: tuple[int, ...] = (),
    sandbox: SandboxSettings | None = None,
    track: TrackedGroup | None = None,
) -> subprocess.Popen[bytes]:
    """Start ``argv`` as the leader of a new session (its pid is the session and group id).

    Only ``pass_fds`` (besides the standard streams) are inherited by the child.
    With ``sandbox``, ``argv`` runs in it (``cwd`` is the writable workspace)
    with the agent's home as ``$HOME``; raises
    :class:`~orchestrator.agent.sandbox.SandboxError` (an ``OSError``) when the
    home cannot be prepared. With ``track``, the session is recorded in its
    registry (call :func:`release` once it is over).

    The child gets SIGKILL when the thread calling this dies (see
    :func:`parent_death_prefix`). A parent death signal follows the thread, not
    the process: it is sound here because every caller waits for its child in
    the same thread (:func:`run_bounded`; the runner, where a worker thread of
    the pool blocks in the turn until the session is reaped, so an idle or
    retired pool thread never has a child). In the sandbox, bubblewrap's
    ``--die-with-parent`` does the same for the sandbox, and the kernel empties
    its PID namespace when the sandbox's first process dies.
    """
    factory: type[subprocess.Popen[bytes]] = subprocess.Popen
    if track is not None:
        env = track.environment(env)
        # Recorded before the start: a daemon killed in between leaves the tag to find it by.
        track.starting()
    try:
        if sandbox is not None:
            launch = sandbox.launch(argv, cwd=cwd, env=env)
            argv, env = launch.argv, launch.env
            if launch.sandboxed:
                factory = SandboxedProcess
        prefix = parent_death_prefix()
        if prefix:
            argv = [_program(argv[0], env), *argv[1:]]
        proc = factory(
            [*prefix, *argv],
            cwd=cwd,
            env=dict(env),
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
            close_fds=True,
            pass_fds=pass_fds,
        )
    except BaseException:
        if track is not None:
            track.ended()
        raise
    if track is not None:
        track.started(proc.pid)
    return proc


def _program(name: str, env: Mapping[str, str]) -> str:
    """``name`` found on the child's PATH, as Popen would: a missing program stays an OSError."""
    if "/" in name:
        return name
    found = shutil.which(name, path=env.get("PATH", os.defpath))
    if found is None:
        raise FileNotFoundError(errno.ENOENT, f"No such file or directory: {name!r}")
    return found


def release(proc: subprocess.Popen[bytes], track: TrackedGroup | None) -> None:
    """Forget ``proc``'s session in its registry once the leader is reaped and no member is left.

    A session with survivors keeps its entry: the daemon's next life ends them.
    """
    if track is not None and proc.returncode is not None and not session_members(proc.pid):
        track.ended()


def session_members(session_id: int) -> list[int]:
    """The live (not zombie) processes of a session, found through /proc.

    Children that moved to another process group of the same session are
    included; only a process that started a session of its own escapes.
    """
    if not _PROC.is_dir():
        try:
            os.killpg(session_id, 0)
        except (ProcessLookupError, PermissionError):
            return []
        return [session_id]
    return [proc.pid for proc in process_table().values() if proc.sid == session_id and proc.alive]


def signal_session(session_id: int, sig: signal.Signals, *, spare_leader: bool = False) -> None:
    """Send ``sig`` to the session's process group and to every other live member.

    With ``spare_leader`` the leader itself is left out (and the members are
    signalled one by one, since a signal to the group would reach it).
    """
    if not spare_leader:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(session_id, sig)
    for pid in session_members(session_id):
        if spare_leader and pid == session_id:
            continue
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def _all_gone(proc: subprocess.Popen[bytes]) -> bool:
    proc.poll()
    return proc.returncode is not None and not session_members(proc.pid)


def terminate_session(proc: subprocess.Popen[bytes], grace_s: float) -> bool:
    """SIGTERM the whole session, wait up to ``grace_s``, then SIGKILL what is left.

    Returns True when no live process of the session remains; the leader is
    always reaped. A sandbox's leader (bubblewrap) gets only the SIGKILL: the
    agent inside has the grace period, and when it exits the sandbox ends.
    """
    if _all_gone(proc):
        return True
    spare = isinstance(proc, SandboxedProcess)
    signal_session(proc.pid, signal.SIGTERM, spare_leader=spare)
    # A stopped process keeps a pending SIGTERM until it runs again.
    signal_session(proc.pid, signal.SIGCONT, spare_leader=spare)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if _all_gone(proc):
            return True
        time.sleep(POLL_INTERVAL_S)
    signal_session(proc.pid, signal.SIGKILL)
    deadline = time.monotonic() + KILL_SETTLE_S
    while time.monotonic() < deadline:
        if _all_gone(proc):
            return True
        time.sleep(POLL_INTERVAL_S)
    return _all_gone(proc)
