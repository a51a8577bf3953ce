"""The base of the emulator's state: the lock, the clock, the id sequence and lookups.

`SimState` (`orchestrator_sim.state`) is built in layers, one module per kind
of resource, each a subclass of the one below: this core, accounts and
repositories, issues with labels and comments, checks and statuses, reviews and
threads, deployments, branch protection and what a merge still lacks, pull
requests, rulesets, and the merge queue with auto-merge on top. Each public
method takes the lock itself; a caller that reads several records and wants
them consistent holds ``state.lock`` around the whole read.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any, Protocol, TypeVar, cast

from orchestrator_sim.clock import Clock, format_time, system_clock
from orchestrator_sim.errors import NotFound
from orchestrator_sim.gitstore import CommitInfo
from orchestrator_sim.records import Repo, User
from orchestrator_sim.state_index import RepoIndex

# (repo, base sha, head sha) -> True when the head merges cleanly, None when unknown.
MergeabilityProbe = Callable[[Repo, str, str], bool | None]

# How long GitHub takes, by default, to work out whether a new head merges (seconds).
DEFAULT_MERGEABILITY_DELAY = 0.3

# How many answers `StateCore.memo` keeps for one version of the state.
MEMO_ENTRIES = 64


class GitView(Protocol):
    """What the state asks of the bare repositories (the emulator answers with git)."""

    def merges_cleanly(self, repo: Repo, base_sha: str, head_sha: str) -> bool | None:
        """Whether ``head_sha`` merges into ``base_sha`` without conflicts (None: unknown)."""

    def diff_hunk(
        self, repo: Repo, base_sha: str, head_sha: str, path: str, line: int, *, side: str
    ) -> str | None:
        """The diff hunk up to ``line`` of ``path``, None when the line is not in the diff."""

    def commits(self, repo: Repo, base_sha: str, head_sha: str) -> list[CommitInfo]:
        """The commits of ``base..head``, oldest first (parents before children)."""

    def commit_info(self, repo: Repo, sha: str) -> CommitInfo | None:
        """One commit, or None when the repository has no such commit."""

    def moved_line(self, repo: Repo, old: str, new: str, path: str, line: int) -> int | None:
        """Where ``line`` of ``path`` at ``old`` is at ``new``; None when a change touched it."""

    def is_ancestor(self, repo: Repo, ancestor: str, descendant: str) -> bool:
        """Whether commit ``descendant`` contains commit ``ancestor``."""

    def changed_paths(self, repo: Repo, base_sha: str, head_sha: str) -> list[str]:
        """The files a pull request from ``head_sha`` into ``base_sha`` touches."""

    def file_at(self, repo: Repo, sha: str, path: str) -> str | None:
        """The text of ``path`` in commit ``sha``, None when it has no such file."""

    def is_signed(self, repo: Repo, sha: str) -> bool:
        """Whether the commit carries a signature (a ``gpgsig`` header)."""


K = TypeVar("K")
V = TypeVar("V")
T = TypeVar("T")


class StateCore:
    """Every account and repository of the emulated GitHub, one lock, one id sequence.

    Ids come from one monotonic counter; node ids are derived from them.
    ``version`` increases on every change, so readers can cache renderings.
    ``git`` is set by the emulator to read the bare repositories (mergeability,
    diff hunks, commit lists); without it the state assumes clean merges and
    only knows branch heads. ``mergeability_delay`` is how many seconds of the
    clock a pull request's mergeability stays unknown after it opens or its
    head or base moves (0: known at once).
    """

    def __init__(self, clock: Clock | None = None) -> None:
        self.clock: Clock = clock or system_clock
        self.lock = threading.RLock()
        self.users: dict[str, User] = {}
        self.repos: dict[str, Repo] = {}
        self.version = 0
        self.git: GitView | None = None
        self.mergeability_delay = DEFAULT_MERGEABILITY_DELAY
        self._tokens: dict[str, str] = {}
        self._indexes: dict[int, RepoIndex] = {}
        self._memo: dict[Hashable, Any] = {}
        self._memo_version = -1
        self._ids = itertools.count(1)
        self._last_id = 0

    # ----------------------------------------------------------------- basics

    def now(self) -> str:
        """The current time from the injected clock, in GitHub's format."""
        return format_time(self.clock())

    def precise_now(self) -> str:
        """The current time with microseconds (for delays shorter than a second)."""
        return self.clock().isoformat()

    def new_id(self) -> int:
        """The next id of the single monotonic sequence every record draws from."""
        with self.lock:
            self._last_id = next(self._ids)
            return self._last_id

    def _lookup(self, table: Mapping[K, V], key: K, what: str) -> V:
        """``table[key]`` read under the lock, or NotFound naming ``what``."""
        with self.lock:
            found = table.get(key)
        if found is None:
            raise NotFound(what)
        return found

    def _touch(self) -> None:
        self.version += 1

    def memo(self, key: Hashable, compute: Callable[[], T]) -> T:
        """``compute()``, worked out once per version of the state for ``key``.

        For derived lists every page of a listing asks for (the filtered,
        sorted issues of a repository); the answer is shared, so callers must
        not change it. Callers hold the lock.
        """
        if self._memo_version != self.version:
            self._memo.clear()
            self._memo_version = self.version
        if key in self._memo:
            return cast("T", self._memo[key])
        if len(self._memo) >= MEMO_ENTRIES:
            self._memo.clear()
        value = compute()
        self._memo[key] = value
        return value

    def index(self, repo: Repo) -> RepoIndex:
        """The lookups of ``repo`` (see `RepoIndex`), built from its records on first use.

        Callers hold the lock; a repository object that replaced another of the
        same id (a loaded snapshot) gets an index of its own.
        """
        found = self._indexes.get(repo.id)
        if found is None or found.repo is not repo:
            found = RepoIndex.of(repo)
            self._indexes[repo.id] = found
        return found


def unique_names(names: Iterable[str]) -> list[str]:
    """Names without case-insensitive repeats, first spelling kept, in order."""
    seen: set[str] = set()
    result: list[str] = []
    for name in names:
        if name.lower() not in seen:
            seen.add(name.lower())
            result.append(name)
    return result
