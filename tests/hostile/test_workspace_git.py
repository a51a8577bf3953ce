"""The daemon's git on a workspace whose repository the agent rewrote: nothing it planted runs.

The agent owns its workspace's ``.git``: the config, its includes, hooks,
``objects/info/alternates``, ``.gitattributes``, even whether ``.git`` is a
folder. Git runs programs that a repository's config names, so a daemon that
runs git there with its own rights runs the agent's code outside the sandbox
(``core.alternateRefsCommand`` with alternates and ``remote.<url>.uploadpack``
during a fetch were the way out). Each test here plants such settings, then
drives what the daemon does to a workspace: take HEAD snapshots, publish the
branch, bring the workspace up to a head someone else pushed, read the turn's
commits. Every planted program appends its name to a file in the workspace
(writable in the sandbox and outside it), so "nothing ran" is checked in both
sandbox modes.

The list of settings comes from git's documentation (git-config(1),
gitattributes(5), githooks(5)): every key that names a program git may run
during fetch, checkout, merge, reset, status, log or ref updates.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from orchestrator.agent import (
    AgentSettings,
    HookSettings,
    IssueRef,
    RepoSource,
    SandboxMode,
    SandboxSettings,
    Workspace,
    WorkspaceManager,
    probe_bwrap,
)
from orchestrator.agent.errors import WorkspaceError
from orchestrator.agent.head import take_snapshot
from orchestrator.agent.mirror import file_url
from orchestrator.agent.workspace_git import RefusedGitCommand, check_command
from orchestrator.domain.phases import Phase
from orchestrator.domain.snapshot import Actor, AgentOutcome, OutcomeKind, ReviewThread
from orchestrator.turns.turn_commits import with_turn_commits
from orchestrator.turns.workspace_sync import sync_to_head
from tests.agent.conftest import Harness, git, make_origin
from tests.hostile.agent import plant_workspace, set_config


def _evil(kit: Path, tag: str) -> str:
    """A program that records that it ran (its tag) in the workspace, where any mode can write."""
    script = kit / f"evil-{tag.replace('/', '_')}.sh"
    script.write_text(f'#!/bin/sh\necho "{tag} $*" >> {kit / "ran.log"}\nexit 0\n')
    script.chmod(0o755)
    return str(script)


def _ran(workspace: Path) -> list[str]:
    log = workspace / ".git" / "hostile" / "ran.log"
    return log.read_text().splitlines() if log.exists() else []


def plant_everything(workspace: Path, mirror: Path, outside: Path) -> None:
    kit = workspace / ".git" / "hostile"
    kit.mkdir(exist_ok=True)
    plant_workspace(workspace, mirror, outside, lambda tag: _evil(kit, tag))


def _commit(repo: Path, name: str, text: str, message: str) -> str:
    (repo / name).write_text(text)
    git(repo, "add", name)
    git(repo, "commit", "--quiet", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def _human_push(tmp: Path, origin: Path, branch: str) -> str:
    """Someone else pushes a commit onto the pull request's branch."""
    human = tmp / "human"
    git(tmp, "clone", "--quiet", "-b", branch, str(origin), str(human))
    head = _commit(human, "human.py", "HUMAN = 1\n", "a maintainer's fix")
    git(human, "push", "--quiet", "origin", branch)
    return head


@pytest.fixture(params=["bwrap", "none"])
def sandbox_mode(request: pytest.FixtureRequest) -> str:
    mode = str(request.param)
    if mode == "bwrap" and not probe_bwrap().usable:
        if os.environ.get("ORCHESTRATOR_REQUIRE_SANDBOX"):
            pytest.fail(f"bubblewrap does not work here: {probe_bwrap().reason}")
        pytest.skip(f"bubblewrap does not work here: {probe_bwrap().reason}")
    return mode


class Setup:
    """A workspace made by the daemon, its source, and a folder the daemon's git must not write."""

    def __init__(self, tmp: Path, mode: str) -> None:
        self.tmp = tmp
        self.origin = make_origin(tmp / "remotes" / "widgets.git")
        self.state = tmp / "state"
        self.state.mkdir()
        self.outside = self.state / "worktree-target"
        self.outside.mkdir()
        root = tmp / "workspaces"
        sandbox = SandboxSettings(
            mode=SandboxMode(mode),
            home_root=self.state / "agent-homes",
            workspace_root=root,
            hidden=(self.state, Path(f"{root}.mirrors")),
        )
        harness = Harness(tmp=tmp, origin=self.origin, hooks=HookSettings(sandbox=sandbox))
        self.manager: WorkspaceManager = harness.manager(AgentSettings(command="true"))
        self.source = RepoSource(str(self.origin))
        self.workspace: Workspace = self.manager.ensure(
            IssueRef("acme/widgets#7", 7, "Add a widget"), self.source
        )

    @property
    def mirror(self) -> Path:
        return self.manager.mirrors.path_for(self.source)


@pytest.fixture
def setup(tmp_path: Path, sandbox_mode: str) -> Iterator[Setup]:
    yield Setup(tmp_path, sandbox_mode)


def test_nothing_the_agent_planted_in_its_repository_runs_when_the_daemon_uses_it(
    setup: Setup,
) -> None:
    manager, workspace, source = setup.manager, setup.workspace, setup.source
    path = workspace.path
    first = _commit(path, "widget.py", "WIDGET = 1\n", "add the widget")
    manager.publish(workspace, source)
    started = first
    second = _commit(path, "widget.py", "WIDGET = 2\n", "the turn's fix")
    plant_everything(path, setup.mirror, setup.outside)

    # Everything the daemon does to a workspace between and after turns.
    snapshot = take_snapshot(
        path, branch=workspace.branch, base_branch=workspace.base_branch, git=manager.git
    )
    assert snapshot.sha == second and snapshot.ahead == 1
    now = datetime.now(UTC)
    outcome = AgentOutcome(
        run_id="run-1",
        phase=Phase.REWORK,
        kind=OutcomeKind.SUCCEEDED,
        started_at=now,
        finished_at=now,
        head_before=started,
        head_after=second,
    )
    thread = ReviewThread(
        id="t1",
        author=Actor("alice", can_write=True),
        body="rename it",
        created_at=now,
        path="widget.py",
        line=1,
    )
    commits = with_turn_commits(outcome, (thread,), workspace, manager.git).commits
    assert [(c.sha, c.paths) for c in commits] == [(second, ("widget.py",))]
    assert manager.publish(workspace, source) == second
    human = _human_push(setup.tmp, setup.origin, workspace.branch)
    sync_to_head(manager, workspace, source, human)

    assert git(path, "-c", "core.worktree=" + str(path), "rev-parse", "HEAD") == human
    assert (path / "human.py").read_text() == "HUMAN = 1\n"
    assert _ran(path) == []
    assert list(setup.outside.iterdir()) == [], "a planted core.worktree was written"


def test_alternate_refs_command_with_alternates_never_runs_on_a_sync(setup: Setup) -> None:
    """The hidden suite's escape: alternates plus ``core.alternateRefsCommand``, then a push."""
    path, workspace = setup.workspace.path, setup.workspace
    _commit(path, "widget.py", "WIDGET = 1\n", "add the widget")
    setup.manager.publish(workspace, setup.source)
    kit = path / ".git" / "hostile"
    kit.mkdir()
    subprocess.run(["git", "init", "--quiet", "--bare", str(kit / "other.git")], check=True)
    (path / ".git" / "objects" / "info" / "alternates").write_text(
        f"{kit / 'other.git' / 'objects'}\n"
    )
    set_config(
        path / ".git" / "config", "core.alternateRefsCommand", _evil(kit, "alternateRefsCommand")
    )
    head = _human_push(setup.tmp, setup.origin, workspace.branch)
    sync_to_head(setup.manager, workspace, setup.source, head)
    assert git(path, "rev-parse", "HEAD") == head
    assert _ran(path) == []


def test_an_upload_pack_named_for_the_mirrors_url_never_runs_on_a_sync(setup: Setup) -> None:
    """The other way out: ``remote.<mirror URL>.uploadpack``, predictable from the origin URL."""
    path, workspace = setup.workspace.path, setup.workspace
    _commit(path, "widget.py", "WIDGET = 1\n", "add the widget")
    setup.manager.publish(workspace, setup.source)
    kit = path / ".git" / "hostile"
    kit.mkdir()
    for url in (file_url(setup.mirror), str(setup.mirror)):
        set_config(path / ".git" / "config", f"remote.{url}.uploadpack", _evil(kit, "uploadpack"))
    head = _human_push(setup.tmp, setup.origin, workspace.branch)
    sync_to_head(setup.manager, workspace, setup.source, head)
    assert git(path, "rev-parse", "HEAD") == head
    assert _ran(path) == []


def test_a_git_file_or_a_borrowed_common_dir_is_refused(setup: Setup) -> None:
    path = setup.workspace.path
    (path / ".git" / "commondir").write_text(f"{setup.mirror}\n")
    with pytest.raises(WorkspaceError, match="commondir"):
        setup.manager.git.run(path, "rev-parse", "HEAD")
    (path / ".git" / "commondir").unlink()
    (path / ".git").rename(path / "real-git")
    (path / ".git").write_text(f"gitdir: {setup.mirror}\n")
    with pytest.raises(WorkspaceError, match="is not a folder"):
        setup.manager.git.run(path, "rev-parse", "HEAD")


@pytest.mark.parametrize(
    "args",
    [
        ["fetch", "file:///elsewhere", "main"],
        ["pull"],
        ["push", "origin", "main"],
        ["clone", "/elsewhere", "x"],
        ["ls-remote", "origin"],
        ["remote", "add", "x", "/elsewhere"],
        ["submodule", "update"],
        ["fetch-pack", "/elsewhere"],
        ["upload-pack", "."],
        ["archive", "--remote=/elsewhere", "HEAD"],
        ["merge", "main"],
        ["reset", "--soft", "HEAD~1"],
        ["config", "core.fsmonitor", "x"],
        ["config", "--get", "x", "--add", "y"],
        ["log", "--output=/etc/passwd"],
        ["log", "--ext-diff", "-p"],
        ["log", "--textconv", "-p"],
        ["bundle", "create", "-", "HEAD", "--upload-pack=x"],
        ["rev-parse", "-c", "core.fsmonitor=x", "HEAD"],
        ["gc"],
        ["maintenance", "run"],
        ["status"],
        ["diff", "HEAD"],
        ["commit", "-m", "x"],
        [],
    ],
)
def test_transports_and_commands_that_run_or_write_more_are_refused(args: list[str]) -> None:
    with pytest.raises(RefusedGitCommand):
        check_command(args)


@pytest.mark.parametrize(
    "args",
    [
        ["rev-parse", "--verify", "HEAD"],
        ["log", "--name-only", "--format=%H", "a..b", "--", "--output=evil"],
        ["merge", "--ff-only", "--quiet", "abc"],
        ["reset", "--hard", "--quiet", "abc"],
        ["bundle", "unbundle", "/dev/stdin"],
        ["config", "--null", "--name-only", "--get-regexp", "^filter\\."],
        ["branch", "--quiet", "--set-upstream-to=origin/x", "x"],
    ],
)
def test_the_daemons_own_local_commands_are_allowed(args: list[str]) -> None:
    check_command(args)
