"""Per-issue git workspaces: made from a local mirror, reused on continuation, removed at the end.

Each issue gets one directory directly under the workspace root, named by
:func:`~orchestrator.agent.naming.workspace_key`. A workspace appears only when
it is complete (it is prepared in a staging folder and renamed into place),
its git config never holds a credential, and ``.orchestrator/`` (the folder the
runtime and the agent exchange files through) is excluded from commits.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from orchestrator.agent.environment import AgentEnvironment
from orchestrator.agent.errors import HookFailed, WorkspaceError
from orchestrator.agent.git import RepoSource, git_ok, run_git
from orchestrator.agent.hook_result import HookName
from orchestrator.agent.hooks import run_hook
from orchestrator.agent.mirror import STAGING_DIR, MirrorStore, file_url
from orchestrator.agent.naming import branch_name, is_valid_branch_name, workspace_key
from orchestrator.agent.paths import checked_child
from orchestrator.agent.settings import HookSettings, WorkspaceSettings
from orchestrator.agent.workspace_git import WorkspaceBranch, WorkspaceGit
from orchestrator.domain.pr_body import ClosingScope
from orchestrator.logs import get_logger

log = get_logger(__name__)

RESULT_DIR = ".orchestrator"


@dataclass(frozen=True)
class IssueRef:
    """What a workspace is for: the issue's stable identifier, number and title.

    ``branch`` is the branch already recorded for the issue (in its workpad);
    when given it wins over the name derived from the title, so a renamed
    issue keeps its branch.
    """

    identifier: str
    number: int
    title: str = ""
    branch: str | None = None


@dataclass(frozen=True)
class Workspace:
    """One issue's checkout: where it is, which branch the agent works on, and on top of what."""

    identifier: str
    key: str
    path: Path
    branch: str
    base_branch: str
    repo_url: str
    created: bool

    @property
    def result_dir(self) -> Path:
        """The folder the agent leaves its result files in."""
        return self.path / RESULT_DIR


class WorkspaceManager:
    """Creates, finds and removes issue workspaces under one root, running the hooks around them."""

    def __init__(
        self,
        settings: WorkspaceSettings,
        hooks: HookSettings,
        environment: AgentEnvironment,
    ) -> None:
        self.settings = settings
        self.hooks = hooks
        self.environment = environment
        settings.root.mkdir(parents=True, exist_ok=True)
        self.root = settings.root.resolve()
        self._timeout_s = settings.git_timeout_ms / 1000
        mirror_root = settings.mirror_root or self.root.parent / f"{self.root.name}.mirrors"
        self.mirrors = MirrorStore(mirror_root, timeout_s=self._timeout_s)
        self._locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()

    @property
    def git(self) -> WorkspaceGit:
        """The only way the daemon runs git on a workspace: in the sandbox the hooks run in
        (the agents' one), read at each call like the hook settings."""
        return WorkspaceGit(self.hooks.sandbox, timeout_s=self._timeout_s)

    # ------------------------------------------------------------------ paths

    def path_for(self, identifier: str) -> Path:
        """The checked workspace path of ``identifier`` (it may not exist yet).

        Raises :class:`~orchestrator.agent.errors.UnsafeWorkspacePath` when a
        link or a file in the root would redirect it.
        """
        return checked_child(self.root, workspace_key(identifier))

    def exists(self, identifier: str) -> bool:
        """Whether the workspace of ``identifier`` is present."""
        return self.path_for(identifier).is_dir()

    @contextmanager
    def _locked(self, key: str) -> Iterator[None]:
        with self._locks_guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            yield

    # ---------------------------------------------------------------- create

    def ensure(
        self, issue: IssueRef, source: RepoSource, *, cancel: threading.Event | None = None
    ) -> Workspace:
        """The workspace of ``issue``: reused when present, else created from the mirror.

        Creation runs the ``after_create`` hook; if it fails the new workspace
        is removed again and :class:`~orchestrator.agent.errors.HookFailed` is
        raised.
        """
        key = workspace_key(issue.identifier)
        branch = issue.branch or branch_name(self.settings.branch_prefix, issue.number, issue.title)
        if not is_valid_branch_name(branch):
            raise WorkspaceError(f"branch {branch!r} of {issue.identifier} is not a valid name")
        with self._locked(key):
            path = checked_child(self.root, key)
            if path.exists():
                return self._reuse(issue, key, path, branch, source)
            with self.mirrors.locked(source) as mirror:
                wanted = [self.settings.base_branch] if self.settings.base_branch else []
                self.mirrors.update(source, cancel=cancel, branches=[*wanted, branch])
                base = self.settings.base_branch or self.mirrors.default_branch(mirror)
                if not git_ok(
                    ["rev-parse", "--verify", "--quiet", f"refs/heads/{base}"],
                    cwd=mirror,
                    timeout_s=self._timeout_s,
                ):
                    raise WorkspaceError(f"base branch {base!r} not found in {source.clean_url}")
                workspace = Workspace(
                    identifier=issue.identifier,
                    key=key,
                    path=path,
                    branch=branch,
                    base_branch=base,
                    repo_url=source.clean_url,
                    created=True,
                )
                first = self.hooks.after_create_in_empty_dir and bool(self.hooks.after_create)
                try:
                    self._create(
                        workspace, mirror=mirror, source=source, cancel=cancel, hook_first=first
                    )
                except HookFailed:
                    log.warning("workspace_discarded", issue=issue.identifier, workspace=str(path))
                    raise
            try:
                if not first:
                    self._after_create(workspace, path, cancel)
            except HookFailed:
                shutil.rmtree(path, ignore_errors=True)
                log.warning("workspace_discarded", issue=issue.identifier, workspace=str(path))
                raise
            log.info(
                "workspace_created",
                issue=issue.identifier,
                workspace=str(path),
                branch=branch,
                base_branch=base,
            )
            return workspace

    def _reuse(
        self, issue: IssueRef, key: str, path: Path, branch: str, source: RepoSource
    ) -> Workspace:
        if not (path / ".git").is_dir() or (path / ".git").is_symlink():
            raise WorkspaceError(
                f"{path} exists but is not a workspace made by the orchestrator (no .git folder); "
                "move it away or remove it"
            )
        # Branch and base come from the issue and the mirror, never from the
        # workspace's git config: the agent can edit that, and the branch is
        # where the runtime pushes.
        base = self.settings.base_branch
        if base is None:
            mirror = self.mirrors.path_for(source)
            base = self.mirrors.default_branch(mirror) if mirror.is_dir() else "main"
        log.info("workspace_reused", issue=issue.identifier, workspace=str(path), branch=branch)
        return Workspace(
            identifier=issue.identifier,
            key=key,
            path=path,
            branch=branch,
            base_branch=base,
            repo_url=source.clean_url,
            created=False,
        )

    def _after_create(
        self, workspace: Workspace, cwd: Path, cancel: threading.Event | None
    ) -> None:
        run_hook(
            HookName.AFTER_CREATE,
            self.hooks,
            cwd=cwd,
            env=self._hook_env(workspace),
            cancel=cancel,
        )

    def _create(
        self,
        workspace: Workspace,
        *,
        mirror: Path,
        source: RepoSource,
        cancel: threading.Event | None,
        hook_first: bool,
    ) -> None:
        """Prepare the workspace in a staging folder and rename it into place.

        With ``hook_first``, ``after_create`` runs first, in the empty folder (it
        may clone the repository there); the runtime's own checkout then goes
        around what it made, with a ``.git`` of the runtime's making.
        """
        key, path, branch, base = (
            workspace.key,
            workspace.path,
            workspace.branch,
            workspace.base_branch,
        )
        staging = checked_child(self.root, STAGING_DIR, create=True)
        scratch = Path(tempfile.mkdtemp(prefix=f"{key}-", dir=staging))
        target = scratch / key
        try:
            # Through file:// (upload-pack): nothing of the mirror is linked or copied as is.
            if hook_first:
                target.mkdir()
                self._after_create(workspace, target, cancel)
                fresh = scratch / ".runtime-clone"
                self._git(
                    ["clone", "--no-checkout", "--quiet", file_url(mirror), str(fresh)], scratch
                )
                _replace_git_dir(target, fresh / ".git")
            else:
                self._git(
                    ["clone", "--no-checkout", "--quiet", file_url(mirror), str(target)], scratch
                )
            # The mirror path is an implementation detail; the agent sees the real,
            # credential-free URL as origin.
            self._git(["remote", "set-url", "origin", source.clean_url], target)
            self._git(["config", "user.name", self.settings.git_user_name], target)
            self._git(["config", "user.email", self.settings.git_user_email], target)
            remote_branch = f"refs/remotes/origin/{branch}"
            tracked = git_ok(
                ["rev-parse", "--verify", "--quiet", remote_branch], cwd=target, timeout_s=30
            )
            if hook_first:
                # The hook's files stay; tracked paths take the branch's content (a
                # plain checkout would refuse to overwrite what the hook left there).
                self.git.run(target, "symbolic-ref", "HEAD", f"refs/heads/{branch}")
                start = f"origin/{branch}" if tracked else f"origin/{base}"
                self.git.run(target, "reset", "--hard", "--quiet", start, work_tree=True)
                if tracked:
                    self.git.run(
                        target, "branch", "--quiet", f"--set-upstream-to=origin/{branch}", branch
                    )
            elif tracked:
                self._git(
                    ["checkout", "--quiet", "-B", branch, "--track", f"origin/{branch}"], target
                )
            else:
                self._git(
                    ["checkout", "--quiet", "--no-track", "-b", branch, f"origin/{base}"], target
                )
            exclude = target / ".git" / "info" / "exclude"
            exclude.parent.mkdir(parents=True, exist_ok=True)
            with exclude.open("a", encoding="utf-8") as handle:
                handle.write(f"\n/{RESULT_DIR}/\n")
            (target / RESULT_DIR).mkdir(exist_ok=True)
            if cancel is not None and cancel.is_set():
                raise WorkspaceError(
                    f"creation of the workspace of {workspace.identifier} cancelled"
                )
            target.rename(path)
        except OSError as error:
            raise WorkspaceError(f"could not create the workspace {path}: {error}") from error
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def _git(self, args: list[str], cwd: Path) -> str:
        return run_git(args, cwd=cwd, timeout_s=self._timeout_s)

    def agent_git_env(self) -> dict[str, str]:
        """The environment the agent's own git runs with (no daemon secrets)."""
        return self.environment.build().variables

    def _hook_env(self, workspace: Workspace) -> dict[str, str]:
        return self.environment.build(
            {
                "ORCHESTRATOR_WORKSPACE": str(workspace.path),
                "ORCHESTRATOR_ISSUE": workspace.identifier,
                "ORCHESTRATOR_BRANCH": workspace.branch,
            }
        ).variables

    # ---------------------------------------------------------------- remove

    def remove(self, issue: IssueRef) -> bool:
        """Run ``before_remove`` (failure ignored) and delete the workspace; False if absent."""
        key = workspace_key(issue.identifier)
        with self._locked(key):
            path = checked_child(self.root, key)
            if not path.exists():
                return False
            workspace = Workspace(
                identifier=issue.identifier,
                key=key,
                path=path,
                branch=issue.branch or "",
                base_branch="",
                repo_url="",
                created=False,
            )
            run_hook(HookName.BEFORE_REMOVE, self.hooks, cwd=path, env=self._hook_env(workspace))
            # rmtree never follows links inside the tree; the path itself was checked above.
            shutil.rmtree(path)
            self._remove_home(path)
            log.info("workspace_removed", issue=issue.identifier, workspace=str(path))
            return True

    def _remove_home(self, workspace: Path) -> None:
        """Delete the per-issue agent home of ``workspace`` (a shared ``agent.home`` stays)."""
        sandbox = self.hooks.sandbox
        if sandbox is None or sandbox.home is not None or sandbox.home_root is None:
            return
        home = sandbox.home_for(workspace)
        if home is None or home.is_symlink() or not home.is_dir():
            return
        shutil.rmtree(home, ignore_errors=True)
        log.info("agent_home_removed", home=str(home))

    # --------------------------------------------------------------- publish

    def publish(
        self,
        workspace: Workspace,
        source: RepoSource,
        *,
        cancel: threading.Event | None = None,
        closing: ClosingScope | None = None,
    ) -> str:
        """Push the workspace's branch to the repository and return the pushed commit SHA.

        The push never runs in the workspace, whose config and hooks are the
        agent's: the branch leaves the workspace as a bundle made in the agent's
        sandbox, is fetched from that bundle into a repository the daemon makes
        for the push, checked there, and pushed with the credential handed over
        a socket (:meth:`MirrorStore.push_branch`). With ``closing``, a commit
        whose message would close another issue than the tracked one refuses the
        push (:class:`~orchestrator.agent.errors.PushRefused`).
        """
        path = checked_child(self.root, workspace.key)
        if workspace.branch == workspace.base_branch:
            raise WorkspaceError(
                f"refusing to publish {workspace.identifier} onto its base branch "
                f"{workspace.branch}"
            )
        head = self.git.run(
            path, "rev-parse", "--verify", f"refs/heads/{workspace.branch}^{{commit}}"
        )
        with self.mirrors.locked(source) as mirror:
            if not mirror.exists():
                self.mirrors.update(
                    source, cancel=cancel, branches=[workspace.base_branch, workspace.branch]
                )
        self.mirrors.push_branch(
            source,
            outgoing=WorkspaceBranch(self.git, path, workspace.branch),
            base_branch=workspace.base_branch,
            expected=head,
            cancel=cancel,
            closing=closing,
        )
        # Let the workspace see what the remote now has, for the ahead count.
        self.git.run(path, "update-ref", f"refs/remotes/origin/{workspace.branch}", head)
        log.info("branch_published", issue=workspace.identifier, branch=workspace.branch, sha=head)
        return head


def _replace_git_dir(target: Path, runtime_git: Path) -> None:
    """Put the runtime's ``.git`` in ``target``, in place of anything the hook left there.

    A repository the hook cloned is replaced, never trusted: its config, hooks
    and refs are the hook's; the runtime's comes from the mirror.
    """
    made = target / ".git"
    if made.is_symlink() or made.is_file():
        made.unlink()
    elif made.exists():
        shutil.rmtree(made)
    runtime_git.rename(made)
