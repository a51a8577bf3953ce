"""The daemon's only way to run git on a repository the agent can write: its workspace.

The rule (docs/agent.md, "Threat model"): the daemon never runs git, or any
other program, on a repository or file the agent can write, with the daemon's
rights. Git reads a repository's own config and files (``.git/config``,
includes, ``objects/info/alternates``, ``.gitattributes``), and many of their
settings name programs git runs: ``core.alternateRefsCommand`` and
``remote.<url>.uploadpack`` during a fetch, filters during a checkout,
``core.fsmonitor`` on any index refresh, and more. So every command on a
workspace

- runs inside the agent's sandbox (:class:`~orchestrator.agent.sandbox.SandboxSettings`),
  with the agent's rights: only the workspace and the agent's home are
  writable there and the daemon's files and processes are hidden, so whatever
  git runs can do no more than the agent itself;
- is one of a short list of local commands (:func:`check_command`): reads,
  ref updates, bundles, a fast-forward and a hard reset. Transports (fetch,
  push, clone, pull, ls-remote, remote, submodule) are refused, and so are
  the options that run or write something (``--upload-pack``, ``--exec``,
  ``--output``, ``--ext-diff``, ``--textconv``, ``-c``). Objects cross the
  boundary only as bundles, streamed through standard input and output;
- names its repository and work tree on the command line (``--git-dir``,
  ``--work-tree``), so neither ``core.worktree`` nor a ``.git`` file can
  redirect it, and refuses a ``.git`` that is not a folder or that borrows
  another repository's (``commondir``);
- carries the pinned settings of :mod:`orchestrator.agent.git` plus those that
  matter in a work tree (no automatic gc or maintenance, which would run
  hooks), with no transport allowed at all, replacement objects and grafts
  off, and filters blanked where the work tree is updated.

Without a sandbox (``agent.sandbox: none``) the commands run as they are:
the agent then runs with the daemon's rights anyway, and the pinned settings
still keep every program it planted from running.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from orchestrator.agent.bounded_run import FileSink, run_bounded
from orchestrator.agent.errors import GitError, WorkspaceError
from orchestrator.agent.git import GIT_OUTPUT_LIMIT, PINNED_FLAGS, git_environment
from orchestrator.agent.sandbox import SandboxSettings
from orchestrator.logs import redact_text

# GitHub refuses pushes over 2 GiB; a bundle of the agent's branch never needs more.
MAX_BUNDLE_BYTES = 2 * 1024 * 1024 * 1024
# No transport at all: an unknown name, so ``GIT_ALLOW_PROTOCOL`` allows none.
NO_PROTOCOL = "none"
WORKSPACE_SETTINGS: tuple[tuple[str, str], ...] = (
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
    ("core.bare", "false"),
)
WORKSPACE_FLAGS: tuple[str, ...] = tuple(
    part for key, value in WORKSPACE_SETTINGS for part in ("-c", f"{key}={value}")
)


class RefusedGitCommand(WorkspaceError):
    """A git command the daemon must never run on the agent's repository."""


# Commands that only read the repository or update its refs, with no program to run.
_LOCAL = frozenset(
    {
        "rev-parse",
        "rev-list",
        "cat-file",
        "merge-base",
        "symbolic-ref",
        "update-ref",
        "for-each-ref",
        "show-ref",
        "log",
    }
)
_BUNDLE = frozenset({"create", "unbundle", "verify", "list-heads"})
_CONFIG_READS = frozenset({"--get", "--get-all", "--get-regexp", "--list", "-l"})
_CONFIG_WRITES = frozenset(
    {
        "--add",
        "--unset",
        "--unset-all",
        "--replace-all",
        "--rename-section",
        "--remove-section",
        "--edit",
        "-e",
        "--file",
        "-f",
        "--blob",
        "--global",
        "--system",
    }
)
# Options that run a program, write a file of their choosing, or pick another repository.
_REFUSED_OPTIONS = frozenset(
    {
        "--upload-pack",
        "-u",
        "--receive-pack",
        "--exec",
        "--output",
        "--ext-diff",
        "--textconv",
        "--show-signature",
        "--open-files-in-pager",
        "-O",
        "--git-dir",
        "--work-tree",
        "--namespace",
        "--exec-path",
        "--config-env",
        "-c",
        "-C",
    }
)
_FILTER_KEY = re.compile(r"^filter\.(.+)\.(clean|smudge|process|required)$")
_TRACKING = re.compile(r"^(--set-upstream-to=\S+|--quiet|-q)$")
_CHECKOUT = frozenset({"-B", "-b", "--track", "--no-track", "--quiet", "-q"})


def _options(args: Sequence[str]) -> list[str]:
    """The options of ``args``: everything before ``--`` that starts with a dash."""
    found = []
    for arg in args:
        if arg == "--":
            break
        if arg.startswith("-"):
            found.append(arg)
    return found


def check_command(args: Sequence[str]) -> None:
    """Raise :class:`RefusedGitCommand` unless ``git args`` is one the daemon may run on a
    workspace (see the module doc)."""
    if not args:
        raise RefusedGitCommand("no git command given")
    name, rest = args[0], list(args[1:])
    options = _options(rest)
    for option in options:
        if option.split("=", 1)[0] in _REFUSED_OPTIONS:
            raise RefusedGitCommand(f"git {name} {option}: refused in the agent's repository")
    allowed = (
        name in _LOCAL
        or (name == "bundle" and bool(rest) and rest[0] in _BUNDLE)
        or (name == "merge" and "--ff-only" in options)
        or (name == "reset" and "--hard" in options)
        or (
            name == "config"
            and bool(_CONFIG_READS.intersection(options))
            and not _CONFIG_WRITES.intersection(o.split("=", 1)[0] for o in options)
        )
        or (name == "branch" and bool(options) and all(_TRACKING.match(o) for o in options))
        or (name == "checkout" and all(o in _CHECKOUT for o in options))
    )
    if not allowed:
        raise RefusedGitCommand(
            f"git {' '.join(args[:2])}: not a local command the daemon runs in the agent's "
            "repository (transports and commands that run or write anything else are refused)"
        )


def checked_git_dir(workspace: Path) -> Path:
    """The workspace's ``.git`` folder, refused when it is a link, a file or borrows another's."""
    git_dir = workspace / ".git"
    try:
        mode = os.lstat(git_dir).st_mode
    except OSError as error:
        raise WorkspaceError(f"{workspace} has no .git folder: {error.strerror}") from error
    if not stat.S_ISDIR(mode):
        raise WorkspaceError(
            f"{git_dir} is not a folder (a link or a 'gitdir:' file would point the daemon's "
            "git at another repository); refusing it"
        )
    if os.path.lexists(git_dir / "commondir"):
        raise WorkspaceError(
            f"{git_dir}/commondir exists: the repository would borrow another one's config "
            "and objects; refusing it"
        )
    return git_dir


def _git_program() -> str:
    found = shutil.which("git", path=os.environ.get("PATH") or os.defpath)
    if found is None:
        raise WorkspaceError("git is not installed (not found on the daemon's PATH)")
    return os.path.realpath(found)


class WorkspaceGit:
    """Runs the daemon's git commands on agent workspaces, inside the agent's sandbox.

    ``sandbox`` is the agents' (None or mode ``none``: commands run as they
    are, see the module doc). ``timeout_s`` bounds each command.
    """

    def __init__(
        self,
        sandbox: SandboxSettings | None,
        *,
        timeout_s: float = 120.0,
        bundle_limit: int = MAX_BUNDLE_BYTES,
    ) -> None:
        self.sandbox = sandbox
        self.timeout_s = timeout_s
        self.bundle_limit = bundle_limit

    def run(
        self,
        workspace: Path,
        *args: str,
        check: bool = True,
        stdin: IO[bytes] | None = None,
        stdout_into: IO[bytes] | None = None,
        cancel: threading.Event | None = None,
        work_tree: bool = False,
    ) -> str:
        """Run ``git args`` on ``workspace`` and return its standard output, stripped.

        ``stdin`` is a file git reads; with ``stdout_into`` the output goes into
        that file (bounded by the bundle limit) and "" is returned. With
        ``work_tree`` (a command that writes files of the work tree) every
        clean/smudge filter the repository's config defines is switched off
        first. Raises :class:`RefusedGitCommand` for a command outside the
        list, and :class:`GitError` when it fails and ``check`` is set, times
        out or writes past the limit.
        """
        check_command(args)
        git_dir = checked_git_dir(workspace)
        command = list(args)
        if command[0] == "log":
            command[1:1] = ["--no-ext-diff", "--no-textconv"]
        filters = self._filters_off(workspace) if work_tree else []
        argv = [
            _git_program(),
            "--no-pager",
            "--literal-pathspecs",
            f"--git-dir={git_dir}",
            f"--work-tree={workspace}",
            *PINNED_FLAGS,
            *WORKSPACE_FLAGS,
            *filters,
            *command,
        ]
        sink = FileSink(stdout_into, self.bundle_limit) if stdout_into is not None else None
        result = run_bounded(
            argv,
            cwd=workspace,
            env=git_environment(NO_PROTOCOL),
            timeout_s=self.timeout_s,
            grace_s=2.0,
            capture_bytes=GIT_OUTPUT_LIMIT,
            merge_stderr=False,
            cancel=cancel,
            sandbox=self.sandbox,
            stdin=stdin,
            stdout_sink=sink,
        )
        if result.overflowed:
            raise GitError(
                redact_text(" ".join(args)),
                None,
                f"wrote more than {self.bundle_limit} bytes; stopped",
            )
        if result.timed_out or result.cancelled or (check and result.exit_code != 0):
            output = redact_text((result.stderr or result.stdout)[-2000:])
            raise GitError(redact_text(" ".join(args)), result.exit_code, output)
        return result.stdout.strip()

    def _filters_off(self, workspace: Path) -> list[str]:
        """Command-line settings that blank every filter driver the repository's config names."""
        listing = self.run(
            workspace, "config", "--null", "--name-only", "--get-regexp", r"^filter\.", check=False
        )
        flags: list[str] = []
        for key in sorted(set(listing.split("\0"))):
            found = _FILTER_KEY.match(key.strip())
            if found is not None:
                name = found.group(1)
                for part in ("clean", "smudge", "process"):
                    flags += ["-c", f"filter.{name}.{part}="]
                flags += ["-c", f"filter.{name}.required=false"]
        return flags

    def ok(self, workspace: Path, *args: str) -> bool:
        """Whether ``git args`` succeeds on ``workspace`` (existence and ancestry checks)."""
        try:
            self.run(workspace, *args)
        except GitError:
            return False
        return True

    def line(self, workspace: Path, *args: str) -> str:
        """The output of ``git args``, or "" when it fails (a ref that may be missing)."""
        return self.run(workspace, *args, check=False)

    def existing_commits(self, workspace: Path, candidates: Sequence[str]) -> list[str]:
        """Those of ``candidates`` (commit ids) the workspace has, by its own account."""
        return [
            sha
            for sha in dict.fromkeys(candidates)
            if self.ok(workspace, "cat-file", "-e", f"{sha}^{{commit}}")
        ]

    def export_bundle(
        self,
        workspace: Path,
        ref: str,
        *,
        exclude: Sequence[str],
        into: IO[bytes],
        cancel: threading.Event | None = None,
    ) -> None:
        """Write a bundle of ``ref``, less what ``exclude`` reaches, into the open file ``into``."""
        negatives = [f"^{sha}" for sha in exclude]
        self.run(
            workspace, "bundle", "create", "-", ref, *negatives, stdout_into=into, cancel=cancel
        )

    def import_bundle(
        self, workspace: Path, bundle: IO[bytes], *, cancel: threading.Event | None = None
    ) -> None:
        """Store the objects of the bundle read from the open file ``bundle`` (no ref changes)."""
        self.run(workspace, "bundle", "unbundle", "/dev/stdin", stdin=bundle, cancel=cancel)


@dataclass(frozen=True)
class WorkspaceBranch:
    """A branch of a workspace, read out of it only as a bundle made in the agent's sandbox."""

    git: WorkspaceGit
    path: Path
    branch: str

    def export(
        self, into: IO[bytes], *, known: Sequence[str], cancel: threading.Event | None = None
    ) -> None:
        """Write the branch into ``into`` as a bundle, without the history ``known`` reaches
        (commit ids the receiving repository has; those the workspace lacks are ignored)."""
        have = self.git.existing_commits(self.path, known)
        self.git.export_bundle(
            self.path, f"refs/heads/{self.branch}", exclude=have, into=into, cancel=cancel
        )
