"""Merges in the emulator's bare repositories, as GitHub's merge and "Update branch" buttons do.

`merge` lands a pull request's head on its base branch (a merge commit, one
squashed commit, or the head's commits replayed); `update_head` brings the base
branch into the head branch (a merge commit of the base into the head, or the
head's commits replayed onto the base). Both work without a work tree except a
rebase, which replays commits in a temporary worktree removed afterwards, and
both move the branch only if it still points where it did.
"""

from __future__ import annotations

import tempfile
from datetime import datetime
from pathlib import Path

from orchestrator_sim.gitstore import MERGE_METHODS, GitError, GitStore, Identity, MergeConflict

# How GitHub's "Update branch" may bring the base in.
UPDATE_METHODS = ("merge", "rebase")


def merge(
    store: GitStore,
    path: Path,
    *,
    base_branch: str,
    head_sha: str,
    method: str,
    message: str,
    committer: Identity,
    moment: datetime,
) -> str:
    """Merge ``head_sha`` into ``base_branch`` with ``method``; return the new base SHA.

    Raises `MergeConflict` (nothing changed) when the head does not apply cleanly.
    """
    if method not in MERGE_METHODS:
        raise GitError(f"unknown merge method {method!r}")
    with store.lock_for(path):
        base_sha = store.resolve(path, f"refs/heads/{base_branch}")
        if base_sha is None:
            raise GitError(f"no base branch {base_branch}")
        if method == "rebase":
            new = _rebase(store, path, base_sha, head_sha, committer, moment)
        else:
            parents = [base_sha] + ([head_sha] if method == "merge" else [])
            author = committer
            if method == "squash":
                author = _first_author(store, path, base_sha, head_sha) or committer
            new = _merge_commit(
                store, path, (base_sha, head_sha), parents, message, (author, committer), moment
            )
        store.run(path, "update-ref", f"refs/heads/{base_branch}", new, base_sha)
        return new


def update_head(
    store: GitStore,
    path: Path,
    *,
    head_branch: str,
    head_sha: str,
    base_sha: str,
    method: str,
    message: str,
    author: Identity,
    moment: datetime,
) -> str:
    """Bring ``base_sha`` into ``head_branch`` (at ``head_sha``); return the new head SHA.

    ``merge`` writes a merge commit whose parents are the head and the base;
    ``rebase`` replays the head's commits onto the base. Raises `MergeConflict`
    (nothing changed) when they do not combine cleanly, `GitError` when the
    branch no longer points at ``head_sha``.
    """
    if method not in UPDATE_METHODS:
        raise GitError(f"unknown update method {method!r}")
    with store.lock_for(path):
        if store.resolve(path, f"refs/heads/{head_branch}") != head_sha:
            raise GitError(f"{head_branch} moved from {head_sha}")
        if method == "rebase":
            new = _rebase(store, path, base_sha, head_sha, author, moment)
        else:
            parents = [head_sha, base_sha]
            new = _merge_commit(
                store, path, (head_sha, base_sha), parents, message, (author, author), moment
            )
        store.run(path, "update-ref", f"refs/heads/{head_branch}", new, head_sha)
        return new


def _merge_commit(
    store: GitStore,
    path: Path,
    sides: tuple[str, str],
    parents: list[str],
    message: str,
    people: tuple[Identity, Identity],
    moment: datetime,
) -> str:
    """A commit of the merged tree of ``sides`` with ``parents`` by (author, committer)
    ``people``; MergeConflict when the sides clash."""
    done = store.run(path, "merge-tree", "--write-tree", "--no-messages", *sides, check=False)
    if done.returncode != 0:
        raise MergeConflict(f"{sides[1]} does not merge into {sides[0]}")
    tree = done.stdout.split()[0]
    arguments = [part for parent in parents for part in ("-p", parent)]
    env = store.identity_env(*people, moment)
    return store.run(path, "commit-tree", tree, *arguments, "-m", message, env=env).stdout.strip()


def _first_author(store: GitStore, path: Path, base: str, head: str) -> Identity | None:
    commits = store.commits_between(path, base, head)
    info = store.commit_info(path, commits[0]) if commits else None
    return info.author if info else None


def _rebase(
    store: GitStore,
    path: Path,
    base_sha: str,
    head_sha: str,
    committer: Identity,
    moment: datetime,
) -> str:
    """The head's commits replayed onto ``base_sha`` (in a temporary worktree); their SHA."""
    env = store.identity_env(committer, committer, moment)
    with tempfile.TemporaryDirectory(prefix="sim-rebase-") as scratch:
        work = Path(scratch) / "work"
        store.run(path, "worktree", "add", "--detach", "--quiet", str(work), head_sha)
        try:
            rebase_env = {**env, "GIT_EDITOR": "true", "GIT_SEQUENCE_EDITOR": "true"}
            done = store.run(
                path,
                "-c",
                f"user.name={committer.name}",
                "-c",
                f"user.email={committer.email}",
                "rebase",
                "--quiet",
                base_sha,
                env=rebase_env,
                check=False,
                cwd=work,
            )
            if done.returncode != 0:
                store.run(path, "rebase", "--abort", check=False, cwd=work)
                raise MergeConflict(f"{head_sha} does not rebase onto {base_sha}")
            return store.run(path, "rev-parse", "HEAD", cwd=work).stdout.strip()
        finally:
            store.run(path, "worktree", "remove", "--force", str(work), check=False)
            store.run(path, "worktree", "prune", check=False)
