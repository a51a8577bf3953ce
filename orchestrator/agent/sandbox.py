"""The agent's OS sandbox: bubblewrap around every agent and hook command, when the host allows.

With :attr:`SandboxMode.BWRAP` a command runs as::

    bwrap --die-with-parent --unshare-pid --cap-drop ALL
          --ro-bind / / --dev /dev --proc /proc
          --tmpfs /tmp [--tmpfs /var/tmp]
          --tmpfs HIDDEN ... --tmpfs WORKSPACE_ROOT
          --bind WORKSPACE WORKSPACE --bind HOME HOME
          --chdir WORKSPACE -- bash -lc COMMAND

(the ``--tmpfs`` and ``--bind`` operations are sorted by path depth, so the most
specific one wins: a hidden folder inside the home stays hidden, the workspace
inside the hidden workspace root stays visible). The whole file system is
read-only; the workspace and the agent's home are writable; ``/tmp`` is a
private, empty tmpfs; the daemon's own folders (state, database, mirrors,
kill switch, the other workspaces, the other agents' homes) are empty tmpfs
mounts. The command gets its own PID namespace: it sees only its own processes
in ``/proc``, and when its first process exits the kernel kills everything
left in the namespace, including processes that started a session of their
own. ``--die-with-parent`` ends the sandbox if the daemon dies. The network is
shared (agents call their model APIs).

:func:`probe_bwrap` checks once per program whether bubblewrap works here, with
the same mounts, and keeps the verdict with its reason.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from orchestrator.agent.errors import AgentLayerError, SettingsError
from orchestrator.logs import get_logger

log = get_logger(__name__)

# Names the bubblewrap program (default: ``bwrap`` on PATH); tests point it at a missing file.
BWRAP_ENV = "ORCHESTRATOR_BWRAP"
DEFAULT_BWRAP = "bwrap"
PROBE_TIMEOUT_S = 5.0
# Private, empty and writable inside the sandbox: build tools and test suites need them.
PRIVATE_TMP = (Path("/tmp"), Path("/var/tmp"))
HOME_MODE = 0o700


class SandboxMode(StrEnum):
    """How agent and hook commands are contained."""

    BWRAP = "bwrap"
    NONE = "none"


class SandboxError(AgentLayerError, OSError):
    """The sandbox of one command could not be prepared (its home is unusable)."""


def bwrap_program(env: Mapping[str, str] | None = None) -> str:
    """The bubblewrap program to use: ``$ORCHESTRATOR_BWRAP``, else ``bwrap``."""
    source = os.environ if env is None else env
    return source.get(BWRAP_ENV) or DEFAULT_BWRAP


def _absolute(name: str, value: Path | str | None) -> Path | None:
    if value is None:
        return None
    path = Path(value)
    if not path.is_absolute():
        raise SettingsError(name, f"must be an absolute path, got {path}")
    return Path(os.path.normpath(path))


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _inside(path: Path, other: Path) -> bool:
    """Whether ``path`` is ``other`` or lies inside it."""
    return path == other or path.is_relative_to(other)


@dataclass(frozen=True)
class Launch:
    """What to start for one command: its argv, its environment, and whether it is sandboxed."""

    argv: list[str]
    env: dict[str, str]
    sandboxed: bool


@dataclass(frozen=True)
class SandboxSettings:
    """The sandbox of agent and hook commands, and the agents' home.

    ``home`` is one home for every agent (``agent.home``); without it each
    workspace gets ``home_root/<workspace folder name>``, created with mode
    0700. The home is ``$HOME`` in both modes. ``hidden`` lists the daemon's
    private folders; with ``workspace_root`` the other workspaces are hidden
    too. Folders that do not exist when a command starts are skipped.
    """

    mode: SandboxMode = SandboxMode.NONE
    program: str = DEFAULT_BWRAP
    home: Path | None = None
    home_root: Path | None = None
    workspace_root: Path | None = None
    hidden: tuple[Path, ...] = ()

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "mode", SandboxMode(self.mode))
        except ValueError:
            raise SettingsError("agent.sandbox", f"{self.mode!r} is not bwrap or none") from None
        if not self.program:
            raise SettingsError("agent.sandbox", "the bubblewrap program is empty")
        object.__setattr__(self, "home", _absolute("agent.home", self.home))
        object.__setattr__(self, "home_root", _absolute("agent.home", self.home_root))
        root = _absolute("workspace.root", self.workspace_root)
        object.__setattr__(self, "workspace_root", root)
        hidden = tuple(p for p in (_absolute("sandbox.hidden", h) for h in self.hidden) if p)
        object.__setattr__(self, "hidden", hidden)
        if self.home is not None:
            home = _real(self.home)
            for private in hidden:
                if home == _real(private):
                    raise SettingsError(
                        "agent.home",
                        f"{self.home} is one of the daemon's private folders, which agents "
                        "must not see; use a folder of its own inside it, such as "
                        f"{self.home / 'agent-home'}",
                    )
            if root is not None and (_inside(_real(root), home) or _inside(home, _real(root))):
                raise SettingsError(
                    "agent.home",
                    f"{self.home} overlaps workspace.root ({root}): one agent would see "
                    "every workspace",
                )

    @property
    def sandboxed(self) -> bool:
        return self.mode is SandboxMode.BWRAP

    def home_for(self, workspace: Path) -> Path | None:
        """The home of the agent working in ``workspace`` (None: the environment's own)."""
        if self.home is not None:
            return self.home
        if self.home_root is not None:
            return self.home_root / workspace.name
        return None

    def launch(self, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str]) -> Launch:
        """How to start ``argv`` in ``cwd``: wrapped in bubblewrap or not, with ``$HOME`` set.

        Raises :class:`SandboxError` when the home cannot be prepared.
        """
        variables = dict(env)
        home = self.home_for(cwd)
        if home is not None:
            home = _prepare_home(home, per_workspace=self.home is None)
            variables["HOME"] = str(home)
        if not self.sandboxed:
            return Launch(list(argv), variables, sandboxed=False)
        variables["TMPDIR"] = str(PRIVATE_TMP[0])
        wrapped = bwrap_argv(
            self.program,
            argv,
            cwd=_real(cwd),
            writable=[_real(cwd)] + ([home] if home is not None else []),
            hidden=self._hidden_now(),
        )
        return Launch(wrapped, variables, sandboxed=True)

    def _hidden_now(self) -> list[Path]:
        candidates = [*self.hidden]
        if self.home is None and self.home_root is not None:
            candidates.append(self.home_root)
        if self.workspace_root is not None:
            candidates.append(self.workspace_root)
        return existing_folders(candidates)


def existing_folders(paths: Iterable[Path]) -> list[Path]:
    """The real paths of the folders among ``paths`` (never ``/``), without duplicates."""
    found: list[Path] = []
    for path in paths:
        real = _real(path)
        if real == Path("/") or not real.is_dir() or real in found:
            continue
        found.append(real)
    return found


def _prepare_home(home: Path, *, per_workspace: bool) -> Path:
    """Create the home (0700) when missing; refuse a per-workspace home that is a link."""
    try:
        if per_workspace:
            home.parent.mkdir(mode=HOME_MODE, parents=True, exist_ok=True)
            if home.is_symlink():
                raise SandboxError(f"the agent home {home} is a symbolic link; refusing it")
        home.mkdir(mode=HOME_MODE, parents=True, exist_ok=True)
    except SandboxError:
        raise
    except OSError as error:
        raise SandboxError(f"cannot create the agent home {home}: {error}") from error
    if not home.is_dir():
        raise SandboxError(f"the agent home {home} is not a directory")
    return _real(home)


def bwrap_argv(
    program: str,
    command: Sequence[str],
    *,
    cwd: Path,
    writable: Sequence[Path],
    hidden: Sequence[Path],
) -> list[str]:
    """The bubblewrap command line that runs ``command`` in ``cwd`` (see the module doc).

    Every path must be absolute and real (links resolved): bubblewrap mounts
    at the path as written.
    """
    argv = [
        program,
        "--die-with-parent",
        "--unshare-pid",
        "--cap-drop",
        "ALL",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
    ]
    # (depth, order, operation, path): shallower first, so deeper mounts land on top;
    # at the same path the bind comes last and wins.
    operations: list[tuple[int, int, str, Path]] = []
    for path in [*(p for p in PRIVATE_TMP if p.is_dir()), *hidden]:
        operations.append((len(path.parts), 0, "--tmpfs", path))
    for path in writable:
        operations.append((len(path.parts), 1, "--bind", path))
    seen: set[tuple[str, Path]] = set()
    for _depth, _order, operation, path in sorted(operations):
        if (operation, path) in seen:
            continue
        seen.add((operation, path))
        # --tmpfs DEST; --bind SOURCE DEST (the same path: the host's folder, in place).
        if operation == "--tmpfs":
            argv += [operation, str(path)]
        else:
            argv += [operation, str(path), str(path)]
    argv += ["--chdir", str(cwd), "--", *command]
    return argv


@dataclass(frozen=True)
class SandboxVerdict:
    """Whether bubblewrap works on this machine, and why (or why not)."""

    program: str
    usable: bool
    reason: str


_verdicts: dict[str, SandboxVerdict] = {}
_verdicts_lock = threading.Lock()


def probe_bwrap(program: str = DEFAULT_BWRAP, *, refresh: bool = False) -> SandboxVerdict:
    """Run ``true`` in a sandbox like the agents' once; the verdict is kept per program."""
    with _verdicts_lock:
        if not refresh and program in _verdicts:
            return _verdicts[program]
    verdict = _probe(program)
    with _verdicts_lock:
        _verdicts[program] = verdict
    log.info("sandbox_probe", program=program, usable=verdict.usable, reason=verdict.reason)
    return verdict


def _probe(program: str) -> SandboxVerdict:
    found = shutil.which(program)
    if found is None:
        return SandboxVerdict(program, False, f"{program} not found (install Debian's bubblewrap)")
    true = shutil.which("true") or "/bin/true"
    argv = bwrap_argv(found, [true], cwd=Path("/"), writable=[], hidden=[])
    try:
        result = subprocess.run(
            argv,
            capture_output=True,
            timeout=PROBE_TIMEOUT_S,
            check=False,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
            start_new_session=True,
        )
    except subprocess.TimeoutExpired:
        return SandboxVerdict(program, False, f"{found} did not finish in {PROBE_TIMEOUT_S:g} s")
    except OSError as error:
        return SandboxVerdict(program, False, f"{found} cannot run: {error}")
    if result.returncode != 0:
        detail = result.stderr.decode("utf-8", "replace").strip().splitlines()
        why = detail[-1] if detail else f"exit code {result.returncode}"
        return SandboxVerdict(program, False, f"{found} fails here: {why}")
    return SandboxVerdict(program, True, f"{_version(found)} works here")


def _version(program: str) -> str:
    try:
        result = subprocess.run(
            [program, "--version"], capture_output=True, timeout=PROBE_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return program
    text = result.stdout.decode("utf-8", "replace").strip()
    return text or program
