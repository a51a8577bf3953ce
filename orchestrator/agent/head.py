"""HEAD snapshots of a workspace, taken when a turn starts and when it ends.

Comparing the two, plus the number of commits beyond what the remote has,
lets the runtime tell "the agent says it is done but committed nothing" from
"the agent committed".
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from orchestrator.agent.workspace_git import WorkspaceGit


@dataclass(frozen=True)
class HeadSnapshot:
    """The workspace's HEAD commit and branch, and how far it is ahead of the remote.

    ``ahead`` counts commits on HEAD that are not on the remote branch (or, if
    the branch was never pushed, not on the base branch); ``compared_to`` is
    the ref it was counted against. Both are None when nothing could be
    compared (no commit yet, or no remote-tracking ref).
    """

    sha: str | None
    branch: str | None
    ahead: int | None
    compared_to: str | None


def take_snapshot(path: Path, *, branch: str, base_branch: str, git: WorkspaceGit) -> HeadSnapshot:
    """Read HEAD, the current branch and the ahead count of the workspace at ``path``.

    The workspace is the agent's, so git runs there only through ``git``
    (inside the agent's sandbox, see :mod:`orchestrator.agent.workspace_git`).
    """
    sha = git.line(path, "rev-parse", "--verify", "--quiet", "HEAD")
    current = git.line(path, "symbolic-ref", "--quiet", "--short", "HEAD")
    if not sha:
        return HeadSnapshot(sha=None, branch=current or None, ahead=None, compared_to=None)
    compared_to = None
    for candidate in (f"refs/remotes/origin/{branch}", f"refs/remotes/origin/{base_branch}"):
        if git.ok(path, "rev-parse", "--verify", "--quiet", candidate):
            compared_to = candidate
            break
    ahead = None
    if compared_to is not None:
        count = git.line(path, "rev-list", "--count", f"{compared_to}..HEAD")
        ahead = int(count) if count.isdigit() else None
    return HeadSnapshot(sha=sha, branch=current or None, ahead=ahead, compared_to=compared_to)
