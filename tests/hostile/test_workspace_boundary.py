"""Proof that the daemon runs git on an agent's workspace only inside the agent's sandbox.

Every ``git`` the daemon (and the agent) starts goes through a wrapper on
``PATH`` that records its arguments, its working folder and its PID
namespace: calls outside any sandbox go to a log of the test's, calls inside
one to the agents' home (the only place they can write besides the
workspace). A whole issue then runs to its merge through every step that
touches a workspace: its creation, HEAD snapshots around each turn, the push
of each turn's commits, a maintainer's push brought into the workspace before
the next turn, and the reading of a rework turn's commits.

It passes when no git started outside the sandbox names a workspace as its
folder or repository (only the daemon's mirrors, the repositories it makes
for one operation, and new workspaces still being made in ``.staging``),
and when every call the daemon made on a workspace went through
:class:`~orchestrator.agent.workspace_git.WorkspaceGit`: in the sandbox, with
its repository named on the command line, and never a transport.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from orchestrator.agent import probe_bwrap
from orchestrator_sim.testing import SimWorld
from tests.e2e.harness import agent_home, flow_for

TRANSPORTS = {"fetch", "push", "pull", "clone", "ls-remote", "remote", "submodule", "fetch-pack"}


@dataclass(frozen=True)
class GitCall:
    """One git started by anyone during the test, as the wrapper saw it."""

    sandboxed: bool
    cwd: str
    args: tuple[str, ...]

    @property
    def git_dir(self) -> str | None:
        for arg in self.args:
            if arg.startswith("--git-dir="):
                return arg.removeprefix("--git-dir=")
        return None

    @property
    def subcommand(self) -> str | None:
        """The first argument that is neither an option nor an option's value."""
        skip = False
        for arg in self.args:
            if skip:
                skip = False
                continue
            if arg in ("-c", "-C"):
                skip = True
                continue
            if not arg.startswith("-"):
                return arg
        return None


class GitRecorder:
    """A ``git`` wrapper in a folder the sandbox can read (not under the private ``/tmp``)."""

    def __init__(self, sandbox_log: Path) -> None:
        base = Path.home() / ".cache" / "orchestrator-tests"
        base.mkdir(parents=True, exist_ok=True)
        self.folder = Path(tempfile.mkdtemp(prefix="git-recorder-", dir=base))
        self.folder.chmod(0o755)
        self.bin = self.folder / "bin"
        self.bin.mkdir()
        self.host_log = self.folder / "host.log"
        self.sandbox_log = sandbox_log
        real = shutil.which("git")
        assert real is not None
        host_ns = os.readlink("/proc/self/ns/pid")
        wrapper = self.bin / "git"
        wrapper.write_text(
            "#!/bin/sh\n"
            "ns=$(readlink /proc/self/ns/pid)\n"
            f'if [ "$ns" = "{host_ns}" ]; then log={self.host_log}; where=host;\n'
            f'else log="$HOME/{sandbox_log.name}"; where=sandbox; fi\n'
            '{ printf "CALL %s %s\\n" "$where" "$PWD"; '
            'for a in "$@"; do printf "ARG %s\\n" "$a"; done; printf "END\\n"; } >> "$log"\n'
            f'exec {os.path.realpath(real)} "$@"\n'
        )
        wrapper.chmod(0o755)

    def calls(self) -> list[GitCall]:
        found = []
        for log in (self.host_log, self.sandbox_log):
            text = log.read_text(errors="replace") if log.exists() else ""
            for block in text.split("END\n"):
                lines = block.splitlines()
                if not lines or not lines[0].startswith("CALL "):
                    continue
                _, where, cwd = lines[0].split(" ", 2)
                args = tuple(line.removeprefix("ARG ") for line in lines[1:])
                found.append(GitCall(where == "sandbox", cwd, args))
        return found

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


@pytest.fixture
def recorder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[GitRecorder]:
    made = GitRecorder(agent_home(tmp_path) / "git-calls.log")
    monkeypatch.setenv("PATH", f"{made.bin}{os.pathsep}{os.environ['PATH']}")
    try:
        yield made
    finally:
        made.remove()


def _in_a_workspace(path: str, root: Path) -> bool:
    """Whether ``path`` lies in a workspace (under the root, but not a new one in .staging)."""
    resolved = Path(os.path.realpath(path))
    if not resolved.is_relative_to(root):
        return False
    parts = resolved.relative_to(root).parts
    return bool(parts) and parts[0] != ".staging"


def test_the_daemon_runs_git_on_a_workspace_only_in_the_agents_sandbox(
    tmp_path: Path, world: SimWorld, recorder: GitRecorder
) -> None:
    if not probe_bwrap().usable:
        pytest.fail(f"bubblewrap does not work here: {probe_bwrap().reason}")
    with flow_for(tmp_path, world, mode="merge") as flow:
        number = flow.open_issue()
        pr, maintainers = flow.rework_after_a_human_push(number)
        flow.run_to_phase(number, "waiting_for_checks")
        assert flow.head(pr) != maintainers
        flow.check(pr, "success")
        flow.run_to_phase(number, "waiting_for_human")
        flow.approve(number)
        flow.run_to_phase(number, "done")
        assert flow.pull(pr)["merged"]
    root = Path(os.path.realpath(tmp_path / "workspaces"))
    calls = recorder.calls()

    outside = [c for c in calls if not c.sandboxed]
    assert outside, "the wrapper saw the daemon's own git"
    on_workspaces = [
        c
        for c in outside
        if _in_a_workspace(c.cwd, root) or (c.git_dir and _in_a_workspace(c.git_dir, root))
    ]
    assert on_workspaces == []

    daemons = [c for c in calls if c.sandboxed and c.git_dir and _in_a_workspace(c.git_dir, root)]
    commands = {(c.subcommand, c.args[c.args.index(c.subcommand or "") + 1]) for c in daemons}
    # The maintainer's commit came in as a bundle; each turn's commits left as one.
    assert ("bundle", "unbundle") in commands and ("bundle", "create") in commands
    assert any(c.subcommand == "merge" and "--ff-only" in c.args for c in daemons)
    spans = [c for c in daemons if c.subcommand == "rev-list" and "--reverse" in c.args]
    assert spans, "the rework turn's commits were read"
    assert not [c for c in daemons if c.subcommand in TRANSPORTS]
    for call in daemons:
        assert "gc.auto=0" in call.args and f"--work-tree={Path(call.git_dir or '').parent}" in (
            call.args
        )
