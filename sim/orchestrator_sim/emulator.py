"""The emulated GitHub as one object: state, billing, faults and bare repositories.

`Emulator` also holds the operations that touch both the state and git (create
a repository with files, push a commit as someone, merge a pull request), so
the REST routes and the control API share one implementation of each.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from orchestrator.logs import get_logger
from orchestrator_sim import gitmerge
from orchestrator_sim.apps import AppRegistry
from orchestrator_sim.billing import Billing
from orchestrator_sim.clock import Clock, system_clock
from orchestrator_sim.closing import closing_references
from orchestrator_sim.errors import Conflict, NotAllowed, Unprocessable
from orchestrator_sim.faults import FaultInjector
from orchestrator_sim.gitsign import commit_signed
from orchestrator_sim.gitstore import (
    MERGE_METHODS,
    CommitInfo,
    GitError,
    GitStore,
    Identity,
    MergeConflict,
)
from orchestrator_sim.linear.world import LinearWorld
from orchestrator_sim.merge_queue import MergeQueue
from orchestrator_sim.state import PullRequest, Repo, SimState, User
from orchestrator_sim.state_protection import PROTECTION_DOCS

log = get_logger(__name__)

SNAPSHOT_NAME = "state.json"

# What GitHub answers (405) to a merge while it is still working out mergeability.
UNKNOWN_MERGEABILITY = "Base branch was modified. Review and try the merge again."


@dataclass(frozen=True, slots=True)
class DiffStats:
    """Size of a pull request's change, as GitHub reports it on a single pull request."""

    commits: int
    additions: int
    deletions: int
    changed_files: int


class Emulator:
    """Everything one emulated GitHub needs, rooted at ``state_dir``.

    Bare repositories live under ``state_dir/git``; with ``persist`` the state
    is loaded from ``state_dir/state.json`` at start and saved by `save`.
    """

    def __init__(
        self,
        state_dir: Path,
        *,
        clock: Clock | None = None,
        seed: int = 0,
        persist: bool = False,
    ) -> None:
        self.state_dir = state_dir
        self.clock: Clock = clock or system_clock
        self.state = SimState(self.clock)
        self.billing = Billing(self.clock, login_for=self._login_for_token)
        self.faults = FaultInjector(seed)
        self.apps = AppRegistry(self.state, self.billing, self.clock)
        self.git = GitStore(state_dir / "git")
        self.persist = persist
        # Signs job-log download links, which (as on GitHub) need no token.
        self.blob_secret = secrets.token_hex(16)
        self._stats: dict[str, DiffStats] = {}
        self._stats_lock = threading.Lock()
        # One branch sync at a time: a sync that read the heads earlier must not apply
        # them after one that read them later (a concurrent push's branch would vanish).
        self._sync_lock = threading.Lock()
        self._commits: dict[str, list[CommitInfo]] = {}
        self.state.git = _RepoGit(self)
        self.queue = MergeQueue(self)
        state_dir.mkdir(parents=True, exist_ok=True)
        if persist and self.snapshot_path.exists():
            self.state.load(self.snapshot_path)
        # The emulated Linear workspace beside GitHub (`orchestrator_sim.linear`).
        self.linear = LinearWorld(self.clock, seed=seed, state_dir=state_dir if persist else None)

    @property
    def snapshot_path(self) -> Path:
        return self.state_dir / SNAPSHOT_NAME

    def save(self) -> None:
        """Write the state snapshot (only when persisting)."""
        if self.persist:
            self.state.save(self.snapshot_path)
            self.linear.save()

    def _login_for_token(self, token: str) -> str | None:
        user = self.state.user_for_token(token)
        return user.login if user else self.apps.login_for_key(token)

    # -------------------------------------------------------------- git glue

    def repo_path(self, repo: Repo) -> Path:
        return self.git.path_for(repo.owner, repo.name)

    def identity(self, user: User) -> Identity:
        """The git identity commits made as ``user`` carry (GitHub's noreply address)."""
        email = user.email or f"{user.id}+{user.login}@users.noreply.github.com"
        return Identity(user.name or user.login, email)

    def commits_between(self, repo: Repo, base: str, head: str) -> list[CommitInfo]:
        """The commits of ``base..head`` oldest first, cached per pair of SHAs."""
        key = f"{repo.id}:{base}:{head}"
        with self._stats_lock:
            cached = self._commits.get(key)
        if cached is not None:
            return list(cached)
        try:
            infos = self.git.commit_infos_between(self.repo_path(repo), base, head)
        except GitError:
            return []
        with self._stats_lock:
            self._commits[key] = infos
        return list(infos)

    def sync_branches(
        self, repo: Repo, pusher: str | None = None, branches: Collection[str] | None = None
    ) -> None:
        """Copy branch heads from the bare repository into the state (after a push).

        With ``branches``, only those (the ones a push named): a repository of
        10,000 branches is not listed again for each push. Syncs run one at a time,
        so one that read the heads earlier never applies them after a later one.
        """
        with self._sync_lock:
            heads = self.git.heads(self.repo_path(repo), branches)
            self._apply_heads(repo, heads, pusher, branches)

    def _apply_heads(
        self,
        repo: Repo,
        heads: Mapping[str, str],
        pusher: str | None,
        branches: Collection[str] | None,
    ) -> None:
        with self.state.lock:
            for branch in list(repo.branches if branches is None else branches):
                if branch in repo.branches and branch not in heads:
                    self.state.set_branch(repo, branch, None, pusher)
            for branch, sha in heads.items():
                old = repo.branches.get(branch)
                if old != sha:
                    self.state.set_branch(repo, branch, sha, pusher)
                    if branch == repo.default_branch and pusher is not None:
                        self.close_by_commits(repo, old, sha, pusher)

    def close_by_commits(self, repo: Repo, before: str | None, after: str, actor: str) -> None:
        """Close what the commits of ``before..after`` close by keyword, as GitHub does when
        they reach the default branch: issues of any repository ``actor`` can write
        (:mod:`orchestrator_sim.closing`)."""
        if before is None:
            return
        with self.state.lock:
            for info in self.commits_between(repo, before, after):
                for ref in closing_references(info.message):
                    target: Repo | None = repo
                    if ref.repo is not None:
                        owner, _, name = ref.repo.partition("/")
                        target = self.state.find_repo(owner, name)
                    if target is None or not self.state.has_permission(target, actor, "write"):
                        continue
                    if self.state.close_by_commit(target, ref.number, actor, info.sha):
                        log.info(
                            "sim_issue_closed_by_commit",
                            repo=target.full_name,
                            issue=ref.number,
                            commit=info.sha,
                        )

    def diff_stats(self, repo: Repo, pr: PullRequest) -> DiffStats:
        """Commits, additions, deletions and changed files between base and head (cached)."""
        base = repo.branches.get(pr.base_ref, pr.head_sha)
        key = f"{repo.id}:{base}:{pr.head_sha}"
        with self._stats_lock:
            cached = self._stats.get(key)
        if cached is not None:
            return cached
        stats = self.git_diff_stats(repo, base, pr.head_sha)
        with self._stats_lock:
            self._stats[key] = stats
        return stats

    def git_diff_stats(self, repo: Repo, base: str, head: str) -> DiffStats:
        path = self.repo_path(repo)
        try:
            commits = len(self.git.commits_between(path, base, head))
            rows = self.git.numstat(path, base, head)
        except GitError:
            return DiffStats(0, 0, 0, 0)
        additions = sum(row[0] for row in rows)
        deletions = sum(row[1] for row in rows)
        files = len(rows)
        return DiffStats(commits, additions, deletions, files)

    # ------------------------------------------------------------- scenarios

    def create_repo(
        self,
        owner: str,
        name: str,
        *,
        files: Mapping[str, str] | None = None,
        default_branch: str = "main",
        private: bool = False,
        description: str | None = None,
        require_review: bool = True,
    ) -> Repo:
        """Create a repository with an initial commit of ``files`` on the default branch."""
        with self.state.lock:
            repo = self.state.add_repo(
                owner,
                name,
                private=private,
                default_branch=default_branch,
                description=description,
                require_review=require_review,
            )
            account = self.state.user(repo.owner)
            content = dict(files) if files else {"README.md": f"# {name}\n"}
            try:
                sha = self.git.create(
                    repo.owner,
                    repo.name,
                    default_branch=default_branch,
                    files=content,
                    author=self.identity(account),
                    moment=self.clock(),
                )
            except GitError:
                del self.state.repos[repo.full_name.lower()]
                raise
            self.state.set_branch(repo, default_branch, sha)
            log.info("sim_repo_created", repo=repo.full_name, branch=default_branch)
            return repo

    def push_commit(
        self,
        repo: Repo,
        author: str,
        branch: str,
        files: Mapping[str, str | None],
        *,
        message: str,
        start: str | None = None,
        author_date: datetime | None = None,
        committer_date: datetime | None = None,
    ) -> str:
        """Commit ``files`` on ``branch`` as ``author`` (as if they pushed); return the SHA.

        The commit is dated now unless ``author_date`` / ``committer_date`` say
        otherwise (a commit made earlier and pushed late).
        """
        user = self.state.user(author)
        if not files:
            raise Unprocessable.field("Commit", "files", "missing_field", "nothing to commit")
        try:
            sha = self.git.commit(
                self.repo_path(repo),
                branch,
                files,
                message=message,
                author=self.identity(user),
                moment=committer_date or self.clock(),
                start=start or repo.default_branch,
                author_moment=author_date,
            )
        except GitError as exc:
            raise Unprocessable.field("Commit", "files", message=str(exc)) from exc
        self.sync_branches(repo, user.login, [branch])
        return sha

    def merge_pull(
        self,
        repo: Repo,
        number: int,
        actor: str,
        *,
        sha: str | None = None,
        method: str = "merge",
        title: str | None = None,
        message: str | None = None,
    ) -> str:
        """Merge a pull request in the bare repository like GitHub's merge button.

        409 when ``sha`` is not the head; 405 when the pull request cannot be
        merged: closed, a draft, mergeability not worked out yet, conflicting
        (or forced unmergeable), in the merge queue, a method the repository
        (or a linear history) does not allow, short of its base branch's
        protection (which an administrator passes unless it enforces admins),
        or of the rulesets on its base (which bypass actors pass; a
        ``merge_queue`` rule refuses every direct merge). Returns the new SHA.
        """
        if method not in MERGE_METHODS:
            raise Unprocessable.field(
                "PullRequest", "merge_method", message=f"must be one of {MERGE_METHODS}"
            )
        with self.state.lock:
            pr = self.state.pull(repo, number)
            issue = self.state.issue(repo, number)
            user = self.state.user(actor)
            if pr.merged or issue.state != "open":
                raise NotAllowed("Pull Request is not mergeable")
            if sha is not None and sha != pr.head_sha:
                raise Conflict("Head branch was modified. Review and try the merge again.")
            if pr.draft:
                raise NotAllowed("Pull Request is still a draft")
            mergeable = self.state.mergeable(repo, pr)
            if mergeable is None:
                raise NotAllowed(UNKNOWN_MERGEABILITY)
            if mergeable is False:
                raise NotAllowed("Pull Request is not mergeable")
            # A queued pull request is the queue's to merge, whatever else holds.
            if self.state.queue_entry(repo, number) is not None:
                raise NotAllowed("Pull Request is in the merge queue")
            refusal = self.state.method_refusal(repo, pr, method)
            if refusal is not None:
                raise NotAllowed(refusal)
            problem = self.state.protection_problem(
                repo, pr, user.login
            ) or self.state.ruleset_problem(repo, pr, user.login, method)
            if problem is not None:
                raise NotAllowed(problem, documentation_url=PROTECTION_DOCS)
            head_sha = pr.head_sha
            base_before = repo.branches.get(pr.base_ref)
            try:
                new_sha = gitmerge.merge(
                    self.git,
                    self.repo_path(repo),
                    base_branch=pr.base_ref,
                    head_sha=head_sha,
                    method=method,
                    message=self.merge_message(repo, pr, method, title, message),
                    committer=self.identity(user),
                    moment=self.clock(),
                )
            except MergeConflict as exc:
                raise NotAllowed("Pull Request is not mergeable") from exc
            self.state.set_branch(repo, pr.base_ref, new_sha, user.login)
            self.state.record_merge(repo, number, user.login, new_sha, base_before)
            if pr.base_ref == repo.default_branch:
                self.close_by_commits(repo, base_before, new_sha, user.login)
            log.info("sim_pull_merged", repo=repo.full_name, pull=number, method=method)
            return new_sha

    def merge_message(
        self,
        repo: Repo,
        pr: PullRequest,
        method: str,
        title: str | None = None,
        message: str | None = None,
    ) -> str:
        """GitHub's commit message for merging ``pr`` onto its base as it is now.

        ``title`` and ``message`` replace the defaults (rebase keeps each
        commit's own message); a squash lists the branch's commit messages.
        """
        issue = repo.issues[pr.number]
        if method == "merge":
            headline = title or f"Merge pull request #{pr.number} from {repo.owner}/{pr.head_ref}"
            return f"{headline}\n\n{message or issue.title}"
        headline = title or f"{issue.title} (#{pr.number})"
        base = repo.branches.get(pr.base_ref)
        if message is None and base is not None:
            listed = self.commits_between(repo, base, pr.head_sha)
            message = "\n\n".join(f"* {info.message}" for info in listed)
        return f"{headline}\n\n{message}" if message else headline

    def settle(self) -> None:
        """Let the merge queues and auto-merges act on what changed (see `MergeQueue`)."""
        self.queue.settle()

    def settle_needed(self) -> bool:
        """Whether `settle` has anything to look at (checked without a thread or the lock)."""
        return self.queue.busy()


class _RepoGit:
    """The state's view of the bare repositories (`orchestrator_sim.state.GitView`)."""

    def __init__(self, emulator: Emulator) -> None:
        self._emulator = emulator

    def _path(self, repo: Repo) -> Path:
        return self._emulator.repo_path(repo)

    def merges_cleanly(self, repo: Repo, base_sha: str, head_sha: str) -> bool | None:
        return self._emulator.git.merges_cleanly(self._path(repo), base_sha, head_sha)

    def diff_hunk(
        self, repo: Repo, base_sha: str, head_sha: str, path: str, line: int, *, side: str
    ) -> str | None:
        return self._emulator.git.diff_hunk(
            self._path(repo), base_sha, head_sha, path, line, side=side
        )

    def commits(self, repo: Repo, base_sha: str, head_sha: str) -> list[CommitInfo]:
        return self._emulator.commits_between(repo, base_sha, head_sha)

    def commit_info(self, repo: Repo, sha: str) -> CommitInfo | None:
        return self._emulator.git.commit_info(self._path(repo), sha)

    def moved_line(self, repo: Repo, old: str, new: str, path: str, line: int) -> int | None:
        return self._emulator.git.moved_line(self._path(repo), old, new, path, line)

    def is_ancestor(self, repo: Repo, ancestor: str, descendant: str) -> bool:
        return self._emulator.git.is_ancestor(self._path(repo), ancestor, descendant)

    def changed_paths(self, repo: Repo, base_sha: str, head_sha: str) -> list[str]:
        try:
            return self._emulator.git.changed_paths(self._path(repo), base_sha, head_sha)
        except GitError:
            return []

    def file_at(self, repo: Repo, sha: str, path: str) -> str | None:
        return self._emulator.git.file_at(self._path(repo), sha, path)

    def is_signed(self, repo: Repo, sha: str) -> bool:
        return commit_signed(self._emulator.git, self._path(repo), sha)
