"""The emulator's bare git repositories: creation, commits, ref updates and inspection.

Everything goes through the ``git`` command with plumbing (a temporary index
file, ``commit-tree``, ``update-ref`` with the expected old value) so the bare
repositories never need a work tree. Merges live in `orchestrator_sim.gitmerge`.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from orchestrator.logs import get_logger

log = get_logger(__name__)

MERGE_METHODS = ("merge", "squash", "rebase")
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_INFO_FORMAT = "%H%x00%T%x00%P%x00%an%x00%ae%x00%aI%x00%cn%x00%ce%x00%cI%x00%B"


class GitError(Exception):
    """A git command failed; the message carries the command's own error text."""


class MergeConflict(Exception):
    """The head does not merge cleanly into the base with the chosen method."""


@dataclass(frozen=True, slots=True)
class Identity:
    """A git author or committer."""

    name: str
    email: str


@dataclass(frozen=True, slots=True)
class CommitInfo:
    """What GitHub's commit endpoints report about one commit."""

    sha: str
    tree: str
    parents: tuple[str, ...]
    author: Identity
    author_date: str
    committer: Identity
    committer_date: str
    message: str


def _git_date(moment: datetime) -> str:
    return f"{int(moment.timestamp())} +0000"


def _parse_info(text: str) -> CommitInfo | None:
    parts = text.split("\x00")
    if len(parts) < 10:
        return None
    return CommitInfo(
        sha=parts[0],
        tree=parts[1],
        parents=tuple(parts[2].split()),
        author=Identity(parts[3], parts[4]),
        author_date=parts[5],
        committer=Identity(parts[6], parts[7]),
        committer_date=parts[8],
        message="\x00".join(parts[9:]).rstrip("\n"),
    )


class GitStore:
    """Bare repositories under ``root`` at ``<owner>/<name>.git``, one lock per repository."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._locks: dict[Path, threading.Lock] = {}
        self._locks_guard = threading.Lock()

    def path_for(self, owner: str, name: str) -> Path:
        return self.root / owner / f"{name}.git"

    def lock_for(self, path: Path) -> threading.Lock:
        """The lock serialising writes (commits, merges, ref updates) to one repository."""
        with self._locks_guard:
            return self._locks.setdefault(path, threading.Lock())

    # --------------------------------------------------------------- commands

    def run(
        self,
        path: Path,
        *args: str,
        env: Mapping[str, str] | None = None,
        check: bool = True,
        cwd: Path | None = None,
        input_text: str | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run ``git`` on the repository at ``path`` (in ``cwd`` for a work tree), UTF-8 text
        in and out; a failure raises `GitError` with git's message unless ``check`` is off."""
        full_env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
        if env:
            full_env.update(env)
        command = ["git", *(["--git-dir", str(path)] if cwd is None else []), *args]
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            encoding="utf-8",
            env=full_env,
            cwd=cwd,
            input=input_text,
            check=False,
        )
        if check and done.returncode != 0:
            raise GitError(f"git {' '.join(args[:2])} in {path}: {done.stderr.strip()}")
        return done

    @staticmethod
    def identity_env(
        author: Identity,
        committer: Identity,
        moment: datetime,
        author_moment: datetime | None = None,
    ) -> dict[str, str]:
        """The environment that makes git write ``author`` and ``committer`` at ``moment``."""
        return {
            "GIT_AUTHOR_NAME": author.name,
            "GIT_AUTHOR_EMAIL": author.email,
            "GIT_AUTHOR_DATE": _git_date(author_moment or moment),
            "GIT_COMMITTER_NAME": committer.name,
            "GIT_COMMITTER_EMAIL": committer.email,
            "GIT_COMMITTER_DATE": _git_date(moment),
        }

    # -------------------------------------------------------------- creation

    def create(
        self,
        owner: str,
        name: str,
        *,
        default_branch: str,
        files: Mapping[str, str],
        author: Identity,
        moment: datetime,
    ) -> str:
        """Create the bare repository with one commit holding ``files``; return its SHA."""
        path = self.path_for(owner, name)
        if path.exists():
            raise GitError(f"{path} already exists")
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.run(
                path, "init", "--bare", "--quiet", f"--initial-branch={default_branch}", str(path)
            )
            self.run(path, "config", "http.receivepack", "true")
            self.run(path, "config", "uploadpack.allowAnySHA1InWant", "true")
            return self.commit(
                path,
                default_branch,
                files,
                message="Initial commit",
                author=author,
                moment=moment,
            )
        except GitError:
            shutil.rmtree(path, ignore_errors=True)
            raise

    def commit(
        self,
        path: Path,
        branch: str,
        files: Mapping[str, str | None],
        *,
        message: str,
        author: Identity,
        moment: datetime,
        start: str | None = None,
        author_moment: datetime | None = None,
    ) -> str:
        """Commit file changes (None deletes a file) on ``branch`` and move it; return the SHA.

        A missing branch is created from ``start`` (a SHA or branch), or as a
        root commit when there is no start. ``moment`` is the committer date,
        ``author_moment`` the author date (``moment`` when absent).
        """
        for name in files:
            if not name or name.startswith("/") or ".." in name.split("/"):
                raise GitError(f"bad file path {name!r}")
        with self.lock_for(path):
            old = self.resolve(path, f"refs/heads/{branch}")
            parent = old or (self.resolve(path, start) if start else None)
            if start and parent is None:
                raise GitError(f"unknown start point {start!r}")
            with tempfile.TemporaryDirectory(prefix="sim-index-") as scratch:
                index_env = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
                if parent:
                    self.run(path, "read-tree", parent, env=index_env)
                for name, content in files.items():
                    if content is None:
                        # Mode 0 drops the entry; unlike --force-remove it needs no work tree.
                        self.run(
                            path,
                            "update-index",
                            "--index-info",
                            env=index_env,
                            input_text=f"0 {'0' * 40}\t{name}\n",
                        )
                        continue
                    blob = self.run(
                        path, "hash-object", "-w", "--stdin", input_text=content
                    ).stdout.strip()
                    self.run(
                        path,
                        "update-index",
                        "--add",
                        "--cacheinfo",
                        f"100644,{blob},{name}",
                        env=index_env,
                    )
                tree = self.run(path, "write-tree", env=index_env).stdout.strip()
            parents = ["-p", parent] if parent else []
            env = self.identity_env(author, author, moment, author_moment)
            sha = self.run(
                path, "commit-tree", tree, *parents, "-m", message, env=env
            ).stdout.strip()
            self.run(path, "update-ref", f"refs/heads/{branch}", sha, old or "")
            return sha

    # ------------------------------------------------------------- inspection

    def resolve(self, path: Path, ref: str) -> str | None:
        """The commit SHA a ref, branch or SHA names, or None."""
        if not ref or ref.startswith("-"):
            return None
        done = self.run(path, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
        sha = done.stdout.strip()
        return sha if done.returncode == 0 and sha else None

    def heads(self, path: Path, names: Collection[str] | None = None) -> dict[str, str]:
        """Every branch and its head SHA, or only those of the branches ``names`` that exist."""
        patterns = [f"refs/heads/{name}" for name in names] if names is not None else ["refs/heads"]
        if not patterns:
            return {}
        done = self.run(
            path, "for-each-ref", "--format=%(refname:strip=2) %(objectname)", *patterns
        )
        heads: dict[str, str] = {}
        for line in done.stdout.splitlines():
            name, _, sha = line.rpartition(" ")
            # A pattern also matches the branches below it (``a`` finds ``a/b``).
            if name and (names is None or name in names):
                heads[name] = sha
        return heads

    def commit_info(self, path: Path, sha: str) -> CommitInfo | None:
        """Author, committer, parents, tree and message of one commit, or None if unknown."""
        if not sha or sha.startswith("-"):
            return None
        done = self.run(path, "show", "-s", f"--format={_INFO_FORMAT}", sha, "--", check=False)
        if done.returncode != 0:
            return None
        return _parse_info(done.stdout)

    def commits_between(self, path: Path, base: str, head: str) -> list[str]:
        """SHAs reachable from ``head`` but not ``base``, oldest first (parents first)."""
        done = self.run(path, "rev-list", "--topo-order", "--reverse", f"{base}..{head}")
        return done.stdout.split()

    def commit_infos_between(self, path: Path, base: str, head: str) -> list[CommitInfo]:
        """`commit_info` of every commit in ``base..head``, oldest first (parents first)."""
        done = self.run(
            path,
            "log",
            "--topo-order",
            "--reverse",
            f"--format={_INFO_FORMAT}%x1e",
            f"{base}..{head}",
            "--",
        )
        infos = []
        for record in done.stdout.split("\x1e"):
            info = _parse_info(record.lstrip("\n"))
            if info is not None:
                infos.append(info)
        return infos

    def numstat(self, path: Path, base: str, head: str) -> list[tuple[int, int, str]]:
        """Lines added and removed per file between the merge base of ``base`` and ``head``."""
        done = self.run(path, "diff", "--numstat", f"{base}...{head}")
        rows: list[tuple[int, int, str]] = []
        for line in done.stdout.splitlines():
            added, removed, name = [*line.split("\t", 2), "", ""][:3]
            rows.append(
                (
                    int(added) if added.isdigit() else 0,
                    int(removed) if removed.isdigit() else 0,
                    name,
                )
            )
        return rows

    def changed_paths(self, path: Path, base: str, head: str) -> list[str]:
        """The files a pull request from ``head`` into ``base`` touches (renames as two paths)."""
        done = self.run(path, "diff", "--name-only", "--no-renames", "-z", f"{base}...{head}")
        return [name for name in done.stdout.split("\x00") if name]

    def file_at(self, path: Path, sha: str, file: str) -> str | None:
        """The text of ``file`` in commit ``sha``, or None when the commit has no such file."""
        if not sha or sha.startswith("-"):
            return None
        done = self.run(path, "cat-file", "blob", f"{sha}:{file}", check=False)
        return done.stdout if done.returncode == 0 else None

    def is_ancestor(self, path: Path, ancestor: str, descendant: str) -> bool:
        done = self.run(path, "merge-base", "--is-ancestor", ancestor, descendant, check=False)
        return done.returncode == 0

    def merges_cleanly(self, path: Path, base: str, head: str) -> bool | None:
        """Whether ``head`` merges into ``base`` without conflicts (None if git cannot tell)."""
        done = self.run(
            path, "merge-tree", "--write-tree", "--no-messages", base, head, check=False
        )
        if done.returncode == 0:
            return True
        if done.returncode == 1:
            return False
        log.warning("mergeability_unknown", path=str(path), error=done.stderr.strip())
        return None

    def diff_hunk(
        self, path: Path, base: str, head: str, file: str, line: int, *, side: str = "RIGHT"
    ) -> str | None:
        """GitHub's ``diff_hunk`` for a comment on ``line`` of ``file``: its hunk up to the line.

        ``line`` counts in the head's file (``RIGHT``) or the base's (``LEFT``);
        None when that line is not part of the diff.
        """
        done = self.run(
            path, "diff", "--no-color", "--unified=3", f"{base}...{head}", "--", file, check=False
        )
        if done.returncode != 0:
            return None
        skipped = "+" if side == "LEFT" else "-"
        group = 1 if side == "LEFT" else 3
        header: str | None = None
        collected: list[str] = []
        current = 0
        for text in done.stdout.splitlines():
            match = _HUNK.match(text)
            if match:
                header, collected, current = text, [], int(match.group(group))
                continue
            if header is None or text.startswith("\\"):
                continue
            collected.append(text)
            if text.startswith(skipped):
                continue
            if current == line:
                return "\n".join([header, *collected])
            current += 1
        return None

    def moved_line(self, path: Path, old: str, new: str, file: str, line: int) -> int | None:
        """Where ``line`` of ``file`` at commit ``old`` sits at commit ``new``.

        None when a change between them touches that line (or removes the file):
        a review thread on it is then outdated, as on GitHub.
        """
        done = self.run(
            path, "diff", "--no-color", "--unified=0", old, new, "--", file, check=False
        )
        if done.returncode != 0:
            return None
        if not done.stdout.strip():
            return line
        if any(text.startswith("+++ /dev/null") for text in done.stdout.splitlines()):
            return None
        shift = 0
        for text in done.stdout.splitlines():
            match = _HUNK.match(text)
            if not match:
                continue
            start = int(match.group(1))
            removed = int(match.group(2)) if match.group(2) is not None else 1
            added = int(match.group(4)) if match.group(4) is not None else 1
            if removed == 0:
                # Lines added after old line ``start``: they move the lines below.
                if start < line:
                    shift += added
                continue
            if start <= line <= start + removed - 1:
                return None
            if start + removed - 1 < line:
                shift += added - removed
        return line + shift

    # ---------------------------------------------------------------- writes

    def set_ref(self, path: Path, branch: str, new: str | None, old: str | None) -> None:
        """Move (or with ``new=None`` delete) a branch, only if it still points at ``old``."""
        with self.lock_for(path):
            if new is None:
                self.run(path, "update-ref", "-d", f"refs/heads/{branch}", old or "")
            else:
                self.run(path, "update-ref", f"refs/heads/{branch}", new, old or "")
