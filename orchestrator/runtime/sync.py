"""Bring an issue's workspace up to the pull request's head before a turn.

Someone may have pushed to the pull request branch since the agent last worked
(a human's fix, a rebase button). The agent must start from that head, or it
would review or fix code that is no longer the pull request. The remote head
is fetched through the repository's mirror (the only place the credential is
used) and the local branch is fast-forwarded to it.

A local branch that went its own way holds commits no pull request has: work
of an earlier turn that was never pushed and was done again elsewhere (its
replica died and the turn ran again on another one), or that a push by
someone else replaced. The pull request is what the turn is about, so the
branch is reset to its head (``workspace_reset`` names the commit left
behind). Local commits that only add to the head (a turn's commit not pushed
yet) are kept. A head that cannot be fetched fails the turn: an agent never
reviews or fixes code that is not the pull request's.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from orchestrator.agent import RepoSource, Workspace, WorkspaceManager
from orchestrator.agent.errors import WorkspaceError
from orchestrator.agent.git import UNTRUSTED_REPO_FLAGS, git_ok, run_git
from orchestrator.agent.mirror import file_url
from orchestrator.logs import get_logger

log = get_logger(__name__)

_TIMEOUT_S = 120.0
_FILTER_KEY = re.compile(r"^filter\.(.+)\.(clean|smudge|process|required)$")


def _no_filters(git: Callable[..., str]) -> list[str]:
    """Command-line settings that blank every filter driver the workspace's config defines."""
    listing = git("config", "--null", "--name-only", "--get-regexp", r"^filter\.", check=False)
    flags: list[str] = []
    for key in sorted(set(listing.split("\0"))):
        found = _FILTER_KEY.match(key.strip())
        if found is not None:
            name = found.group(1)
            for part in ("clean", "smudge", "process"):
                flags += ["-c", f"filter.{name}.{part}="]
            flags += ["-c", f"filter.{name}.required=false"]
    return flags


def sync_to_head(
    workspaces: WorkspaceManager,
    workspace: Workspace,
    source: RepoSource,
    head_sha: str,
    discard: str | None = None,
) -> None:
    """Bring the workspace's branch to ``head_sha``, or past it with commits of its own.

    Commits up to ``discard`` (a discarded turn's head) are never kept: a
    branch holding it is reset to ``head_sha``. Raises :class:`WorkspaceError`
    when ``head_sha`` cannot be fetched.
    """
    env = workspaces.agent_git_env()
    path = workspace.path

    def git(*args: str, check: bool = True) -> str:
        return run_git(
            [*UNTRUSTED_REPO_FLAGS, *args], cwd=path, timeout_s=_TIMEOUT_S, env=env, check=check
        )

    def ok(*args: str) -> bool:
        return git_ok([*UNTRUSTED_REPO_FLAGS, *args], cwd=path, timeout_s=_TIMEOUT_S, env=env)

    local = git("rev-parse", "--verify", "HEAD")
    if local == head_sha:
        return
    if not ok("cat-file", "-e", f"{head_sha}^{{commit}}"):
        with workspaces.mirrors.locked(source) as mirror:
            workspaces.mirrors.update(source, branches=[workspace.branch])
            git(
                "fetch",
                "--quiet",
                "--no-tags",
                file_url(mirror),
                f"+refs/heads/{workspace.branch}:refs/remotes/origin/{workspace.branch}",
            )
    if not ok("cat-file", "-e", f"{head_sha}^{{commit}}"):
        log.warning("workspace_sync_missing", head=head_sha)
        raise WorkspaceError(
            f"the pull request's head {head_sha[:12]} is not on its branch {workspace.branch} "
            "(pushed over since the turn was planned?); the turn runs again from the new head"
        )
    keeps_discarded = discard is not None and ok("merge-base", "--is-ancestor", discard, local)
    if ok("merge-base", "--is-ancestor", head_sha, local) and not keeps_discarded:
        # The workspace already holds the head and more (commits not pushed yet).
        return
    # Updating the work tree would run the clean/smudge filters the workspace's config
    # names (the agent's commands, outside any sandbox): each one is switched off.
    if ok("merge-base", "--is-ancestor", local, head_sha):
        git(*_no_filters(git), "merge", "--ff-only", "--quiet", head_sha)
        log.info("workspace_synced", previous=local, head=head_sha)
    else:
        git(*_no_filters(git), "reset", "--hard", "--quiet", head_sha)
        log.warning("workspace_reset", left_behind=local, head=head_sha)
    git("update-ref", f"refs/remotes/origin/{workspace.branch}", head_sha)
