"""Per-repository bare mirrors under the workspace root, so a new workspace never re-downloads.

The first use of a repository clones it once (bare); later uses fetch only what
changed. Workspaces are then cloned from the mirror on the local disk (objects
are hard-linked, so each workspace is an independent repository). A mirror's
config holds the credential-free URL only.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from orchestrator.agent.errors import WorkspaceError
from orchestrator.agent.git import RepoSource, run_git
from orchestrator.agent.naming import workspace_key
from orchestrator.agent.paths import checked_child
from orchestrator.logs import get_logger

log = get_logger(__name__)

MIRRORS_DIR = ".mirrors"
STAGING_DIR = ".staging"


class MirrorStore:
    """The bare mirrors of every repository workspaces are made from, one per clean URL."""

    def __init__(self, root: Path, *, timeout_s: float) -> None:
        self.root = root
        self.timeout_s = timeout_s
        self._locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()

    def path_for(self, source: RepoSource) -> Path:
        """Where the mirror of ``source`` lives (checked to stay under the root)."""
        folder = checked_child(self.root, MIRRORS_DIR, create=True)
        return checked_child(folder, workspace_key(source.clean_url) + ".git")

    @contextmanager
    def locked(self, source: RepoSource) -> Iterator[Path]:
        """Hold the mirror of ``source`` exclusively (threads and processes) while in the block."""
        path = self.path_for(source)
        with self._locks_guard:
            lock = self._locks.setdefault(str(path), threading.Lock())
        with lock, open(str(path) + ".lock", "a") as lock_file:
            fcntl.flock(lock_file.fileno(), fcntl.LOCK_EX)
            try:
                yield path
            finally:
                fcntl.flock(lock_file.fileno(), fcntl.LOCK_UN)

    def update(self, source: RepoSource, *, cancel: threading.Event | None = None) -> Path:
        """Clone the mirror of ``source`` if it is missing, else fetch; return its path.

        Call inside :meth:`locked` when the caller also reads the mirror.
        """
        path = self.path_for(source)
        auth = source.auth_header()
        if path.exists():
            run_git(
                ["fetch", "--prune", "--quiet", "origin"],
                cwd=path,
                timeout_s=self.timeout_s,
                auth_header=auth,
                cancel=cancel,
            )
            log.info("mirror_fetched", repo=source.clean_url, mirror=str(path))
            return path
        staging = checked_child(self.root, STAGING_DIR, create=True)
        scratch = Path(tempfile.mkdtemp(prefix="mirror-", dir=staging))
        try:
            target = scratch / "repo.git"
            run_git(
                ["clone", "--bare", "--quiet", source.clean_url, str(target)],
                cwd=scratch,
                timeout_s=self.timeout_s,
                auth_header=auth,
                cancel=cancel,
            )
            # A bare clone has no fetch refspec; mirror branches onto branches so
            # workspaces cloned from here see them as origin/<branch>.
            run_git(
                ["config", "remote.origin.fetch", "+refs/heads/*:refs/heads/*"],
                cwd=target,
                timeout_s=self.timeout_s,
            )
            os.rename(target, path)
        except OSError as error:
            raise WorkspaceError(f"could not create the mirror {path}: {error}") from error
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        log.info("mirror_created", repo=source.clean_url, mirror=str(path))
        return path

    def default_branch(self, path: Path) -> str:
        """The branch the mirror's HEAD names (the repository's default branch)."""
        ref = run_git(["symbolic-ref", "HEAD"], cwd=path, timeout_s=self.timeout_s, check=False)
        prefix = "refs/heads/"
        if not ref.startswith(prefix):
            raise WorkspaceError(f"mirror {path} has no default branch (HEAD is {ref!r})")
        return ref[len(prefix) :]
