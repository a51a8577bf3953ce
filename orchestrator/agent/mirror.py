"""Per-repository bare mirrors outside the workspaces, and the daemon's network git.

A mirror is an object cache: the first use of a repository fills it, later
uses fetch only what changed, and workspaces are cloned from it on the local
disk. A mirror is never trusted with a credential: the agent runs as the same
user and could have edited its config (a ``pushurl``, an ``insteadOf``, an
``include``) or planted hooks. Every command that talks to the remote runs in a
bare repository the daemon creates for that one operation (its objects borrowed
from the mirror through ``alternates``), names the remote by its URL, and gets
the credential through a socket; the mirror then takes the fetched objects and
refs from that repository over ``file://``, without any credential.

Pushing works the same way: the agent's branch leaves its workspace as a bundle
made in the agent's sandbox, is fetched from that file into a fresh repository,
checked (the expected commit, a fast-forward of the remote branch or of the
base, no path under a ``.git`` folder), and pushed from there. A workspace is
brought up to a pushed head the other way round: a bundle made here is
unbundled in the agent's sandbox (:meth:`MirrorStore.bundle_of`).
"""

from __future__ import annotations

import fcntl
import re
import shutil
import tempfile
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from orchestrator.agent.commit_messages import check_commit_messages
from orchestrator.agent.errors import GitError, PushRefused, WorkspaceError
from orchestrator.agent.git import (
    Credentials,
    RepoSource,
    git_ok,
    refused_credentials,
    run_git,
)
from orchestrator.agent.naming import workspace_key
from orchestrator.agent.paths import checked_child
from orchestrator.agent.workspace_git import WorkspaceBranch
from orchestrator.domain.pr_body import ClosingScope
from orchestrator.logs import get_logger

log = get_logger(__name__)

STAGING_DIR = ".staging"
_INCOMING = "refs/orchestrator/incoming"
_REMOTE = "refs/orchestrator/remote"
_OUTGOING = "refs/orchestrator/outgoing"
_COMMIT_ID = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")


def file_url(path: Path) -> str:
    """A ``file://`` URL: git then serves it through upload-pack, never by linking files."""
    return path.resolve().as_uri()


class MirrorStore:
    """The bare mirrors of every repository workspaces are made from, one per clean URL."""

    def __init__(self, root: Path, *, timeout_s: float) -> None:
        root.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.root = root.resolve()
        self.timeout_s = timeout_s
        self._locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()

    def path_for(self, source: RepoSource) -> Path:
        """Where the mirror of ``source`` lives (checked to stay under the root)."""
        return checked_child(self.root, workspace_key(source.clean_url) + ".git")

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

    def _git(
        self,
        args: list[str],
        cwd: Path,
        *,
        credentials: Credentials | None = None,
        cancel: threading.Event | None = None,
        check: bool = True,
    ) -> str:
        return run_git(
            args,
            cwd=cwd,
            timeout_s=self.timeout_s,
            credentials=credentials,
            cancel=cancel,
            check=check,
        )

    def _remote(
        self,
        args: list[str],
        cwd: Path,
        source: RepoSource,
        *,
        cancel: threading.Event | None = None,
        check: bool = True,
    ) -> str:
        """A git command that talks to ``source``, with a credential current at that moment.

        A credential the remote refuses (a token that expired or was revoked
        meanwhile) is given up and the command runs once more with a fresh one,
        when the source can have one.
        """
        credentials = source.credentials()
        try:
            return self._git(args, cwd, credentials=credentials, cancel=cancel)
        except GitError as error:
            if refused_credentials(error) and source.refused(credentials):
                log.info("git_credential_refreshed", remote=source.clean_url)
                return self._git(
                    args, cwd, credentials=source.credentials(), cancel=cancel, check=check
                )
            cancelled = cancel is not None and cancel.is_set()
            if check or cancelled or error.exit_code is None:
                raise
            return ""

    @contextmanager
    def scratch(self, mirror: Path | None = None) -> Iterator[Path]:
        """A bare repository made for one operation, borrowing the mirror's objects."""
        staging = checked_child(self.root, STAGING_DIR, create=True)
        folder = Path(tempfile.mkdtemp(prefix="op-", dir=staging))
        try:
            repo = folder / "repo.git"
            self._git(["init", "--bare", "--quiet", str(repo)], folder)
            if mirror is not None and (mirror / "objects").is_dir():
                alternates = repo / "objects" / "info" / "alternates"
                alternates.write_text(str((mirror / "objects").resolve()) + "\n")
            yield repo
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def update(
        self,
        source: RepoSource,
        *,
        cancel: threading.Event | None = None,
        branches: Sequence[str] | None = None,
    ) -> Path:
        """Create the mirror of ``source`` if it is missing, then fetch; return its path.

        With ``branches``, only those and the remote's default branch are fetched (a
        repository may have thousands of branches); one the remote no longer has is
        removed from the mirror. Without, every branch is. Call inside :meth:`locked`
        when the caller also reads the mirror.
        """
        path = self.path_for(source)
        if path.exists() and not _looks_like_a_repository(path):
            # A process killed while creating it left a folder git does not recognize.
            log.warning("mirror_damaged", remote=source.clean_url, mirror=str(path))
            shutil.rmtree(path, ignore_errors=True)
        created = not path.exists()
        if created:
            self._create(path)
        try:
            head = self._fetch_into(path, source, cancel, branches)
        except GitError:
            if created:
                # A mirror that never got anything is not left behind half made.
                shutil.rmtree(path, ignore_errors=True)
            raise
        default = _default_branch_of(head)
        if default is not None:
            self._git(["symbolic-ref", "HEAD", f"refs/heads/{default}"], path)
        log.info("mirror_created" if created else "mirror_fetched", remote=source.clean_url)
        return path

    def _create(self, path: Path) -> None:
        """An empty bare mirror at ``path``, made aside and moved into place whole."""
        staging = checked_child(self.root, STAGING_DIR, create=True)
        folder = Path(tempfile.mkdtemp(prefix="new-", dir=staging))
        try:
            self._git(["init", "--bare", "--quiet", str(folder / "repo.git")], folder)
            (folder / "repo.git").rename(path)
        except (GitError, OSError) as error:
            raise WorkspaceError(f"could not create the mirror {path}: {error}") from error
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def _fetch_into(
        self,
        path: Path,
        source: RepoSource,
        cancel: threading.Event | None,
        branches: Sequence[str] | None,
    ) -> str:
        """Fetch the remote's branches (all, or ``branches`` and the default one) into the
        mirror; return what ``ls-remote`` says of HEAD."""
        with self.scratch(path) as repo:
            if branches is None:
                self._remote(
                    [
                        "fetch",
                        "--quiet",
                        "--no-tags",
                        source.clean_url,
                        "+refs/heads/*:refs/heads/*",
                    ],
                    repo,
                    source,
                    cancel=cancel,
                )
            head = self._remote(
                [
                    "ls-remote",
                    "--symref",
                    source.clean_url,
                    "HEAD",
                    *(f"refs/heads/{name}" for name in branches or ()),
                ],
                repo,
                source,
                cancel=cancel,
            )
            if branches is None:
                specs = ["+refs/heads/*:refs/heads/*"]
                gone: list[str] = []
            else:
                default = _default_branch_of(head)
                # HEAD names the default branch, which the patterns may not list.
                present = _branches_of(head) | ({default} if default else set())
                wanted = list(dict.fromkeys([*([default] if default else []), *branches]))
                specs = [f"+refs/heads/{n}:refs/heads/{n}" for n in wanted if n in present]
                gone = [n for n in wanted if n not in present and n != default]
                if specs:
                    self._remote(
                        ["fetch", "--quiet", "--no-tags", source.clean_url, *specs],
                        repo,
                        source,
                        cancel=cancel,
                    )
            # The mirror takes objects and branches from the scratch repository over
            # file://: no credential, no remote of the mirror's own config involved.
            if specs:
                prune = ["--prune"] if branches is None else []
                self._git(
                    ["fetch", "--quiet", *prune, "--no-tags", file_url(repo), *specs],
                    path,
                    cancel=cancel,
                )
            for name in gone:
                self._git(["update-ref", "-d", f"refs/heads/{name}"], path, check=False)
        return head

    def default_branch(self, path: Path) -> str:
        """The branch the mirror's HEAD names (the repository's default branch)."""
        ref = self._git(["symbolic-ref", "HEAD"], path, check=False)
        prefix = "refs/heads/"
        if not ref.startswith(prefix):
            raise WorkspaceError(f"mirror {path} has no default branch (HEAD is {ref!r})")
        return ref[len(prefix) :]

    # ------------------------------------------------------------ publish

    def push_branch(
        self,
        source: RepoSource,
        *,
        outgoing: WorkspaceBranch,
        base_branch: str,
        expected: str,
        cancel: threading.Event | None = None,
        closing: ClosingScope | None = None,
    ) -> str:
        """Push the workspace's branch (``outgoing``) to the remote, if it is ``expected`` and safe.

        The branch leaves the workspace as a bundle made in the agent's sandbox
        (without the history the mirror already has) and is fetched from that
        file, with every object checked, into a repository made for this push.
        Checks there: the branch is the expected commit; it fast-forwards the
        remote branch (or, for a new branch, descends from the base branch); no
        changed path lies under a ``.git`` folder; with ``closing``, no commit
        message closes another issue
        (:func:`~orchestrator.agent.commit_messages.check_commit_messages`, which
        raises :class:`PushRefused`). Raises :class:`WorkspaceError` naming what
        failed.
        """
        branch = outgoing.branch
        with self.locked(source) as mirror, self.scratch(mirror) as repo:
            if git_ok(["cat-file", "-e", f"{expected}^{{commit}}"], cwd=repo, timeout_s=30):
                # The mirror has the commit already (a push that is done again).
                self._git(["update-ref", _INCOMING, expected], repo)
            else:
                known = self._branch_heads(mirror, [base_branch, branch])
                self._receive(repo, outgoing, known, cancel)
            fetched = self._git(["rev-parse", "--verify", f"{_INCOMING}^{{commit}}"], repo)
            if fetched != expected:
                raise WorkspaceError(
                    f"branch {branch} is at {fetched[:12]} in the workspace, not {expected[:12]}"
                )
            # One fetch each: a branch the remote does not have yet must not spoil the other.
            for name, target in ((base_branch, "base"), (branch, "branch")):
                self._remote(
                    [
                        "fetch",
                        "--quiet",
                        "--no-tags",
                        source.clean_url,
                        f"+refs/heads/{name}:{_REMOTE}/{target}",
                    ],
                    repo,
                    source,
                    cancel=cancel,
                    check=False,
                )
            start = self._fast_forward_start(repo, branch, base_branch, expected)
            changed = self._git(
                ["diff", "--name-only", "--no-renames", start, expected], repo
            ).splitlines()
            bad = [p for p in changed if ".git" in (part.lower() for part in p.split("/"))]
            if bad:
                raise PushRefused(expected, f"it changes {bad[0]!r} under a .git folder")
            if closing is not None:
                check_commit_messages(repo, start, expected, closing, timeout_s=self.timeout_s)
            self._remote(
                ["push", "--quiet", source.clean_url, f"{expected}:refs/heads/{branch}"],
                repo,
                source,
                cancel=cancel,
            )
        return expected

    def _receive(
        self,
        repo: Path,
        outgoing: WorkspaceBranch,
        known: list[str],
        cancel: threading.Event | None,
    ) -> None:
        """Fetch ``outgoing`` into ``repo``'s incoming ref from a bundle the sandbox made."""
        bundle = repo.parent / "outgoing.bundle"
        with bundle.open("wb") as into:
            outgoing.export(into, known=known, cancel=cancel)
        # Every object is checked as GitHub checks a push (fsck), before anything reads it.
        self._git(
            [
                "-c",
                "fetch.fsckObjects=true",
                "fetch",
                "--quiet",
                "--no-tags",
                str(bundle),
                f"+refs/heads/{outgoing.branch}:{_INCOMING}",
            ],
            repo,
            cancel=cancel,
        )

    @contextmanager
    def bundle_of(self, mirror: Path, head: str, *, known: Sequence[str]) -> Iterator[Path]:
        """A bundle file of the mirror's commit ``head``, without the history ``known`` reaches.

        ``known`` are commit ids a workspace says it has; those the mirror lacks
        are left out. Call inside :meth:`locked`. Raises :class:`GitError` when
        the mirror does not have ``head``.
        """
        with self.scratch(mirror) as repo:
            self._git(["update-ref", _OUTGOING, f"{head}^{{commit}}"], repo)
            have = [
                sha
                for sha in dict.fromkeys(known)
                if _COMMIT_ID.match(sha)
                and git_ok(["cat-file", "-e", f"{sha}^{{commit}}"], cwd=repo, timeout_s=30)
            ]
            bundle = repo.parent / "sync.bundle"
            negatives = [f"^{sha}" for sha in have]
            made = git_ok(
                ["bundle", "create", "--quiet", str(bundle), _OUTGOING, *negatives],
                cwd=repo,
                timeout_s=self.timeout_s,
            )
            if not made:
                # Everything ``head`` needs is in what the workspace says it has (a claim
                # not to rely on): the whole history instead.
                self._git(["bundle", "create", "--quiet", str(bundle), _OUTGOING], repo)
            yield bundle

    def has_commit(self, mirror: Path, sha: str) -> bool:
        """Whether the mirror holds the commit ``sha``."""
        return bool(_COMMIT_ID.match(sha)) and git_ok(
            ["cat-file", "-e", f"{sha}^{{commit}}"], cwd=mirror, timeout_s=30
        )

    def _branch_heads(self, mirror: Path, branches: Sequence[str]) -> list[str]:
        """The commits the mirror's ``branches`` point at (those it has)."""
        heads = []
        for name in branches:
            sha = self._git(
                ["rev-parse", "--verify", "--quiet", f"refs/heads/{name}^{{commit}}"],
                mirror,
                check=False,
            )
            if sha:
                heads.append(sha)
        return heads

    def _fast_forward_start(self, repo: Path, branch: str, base: str, head: str) -> str:
        """Where ``head``'s new commits start: the remote branch it must fast-forward, or,
        for a branch the remote does not have yet, where it leaves the base's history."""
        if git_ok(
            ["rev-parse", "--verify", "--quiet", f"{_REMOTE}/branch"], cwd=repo, timeout_s=30
        ):
            start = self._git(["rev-parse", f"{_REMOTE}/branch"], repo)
            if not git_ok(["merge-base", "--is-ancestor", start, head], cwd=repo, timeout_s=60):
                raise WorkspaceError(
                    f"refusing to push {head[:12]}: it does not fast-forward the remote "
                    f"{branch} ({start[:12]})"
                )
            return start
        if git_ok(["rev-parse", "--verify", "--quiet", f"{_REMOTE}/base"], cwd=repo, timeout_s=30):
            start = self._git(["merge-base", head, f"{_REMOTE}/base"], repo, check=False)
            if not start:
                raise WorkspaceError(
                    f"refusing to push {head[:12]}: it shares no history with the base {base}"
                )
            return start
        raise WorkspaceError(f"neither {branch} nor the base {base} could be read from the remote")


def _looks_like_a_repository(path: Path) -> bool:
    """What git itself requires of a bare repository: ``HEAD``, ``objects/`` and ``refs/``."""
    return (
        not path.is_symlink()
        and (path / "HEAD").is_file()
        and (path / "objects").is_dir()
        and (path / "refs").is_dir()
    )


def _branches_of(ls_remote: str) -> set[str]:
    """The branch names an ``ls-remote`` listing holds."""
    found = set()
    for line in ls_remote.splitlines():
        _, _, ref = line.partition("\t")
        if not line.startswith("ref: ") and ref.startswith("refs/heads/"):
            found.add(ref[len("refs/heads/") :])
    return found


def _default_branch_of(ls_remote: str) -> str | None:
    """The branch ``ls-remote --symref ... HEAD`` says HEAD points at."""
    for line in ls_remote.splitlines():
        if line.startswith("ref: refs/heads/") and line.endswith("\tHEAD"):
            return line[len("ref: refs/heads/") : -len("\tHEAD")]
    return None
