"""The base of the emulator's state: the lock, the clock, the id sequence and lookups.

`SimState` (`orchestrator.sim.state`) is built in layers, one module per kind
of resource, each a subclass of the one below: this core, accounts and
repositories, issues with labels and comments, checks and statuses, reviews and
threads, branch protection, and pull requests on top. Each public method takes
the lock itself; a caller that reads several records and wants them consistent
holds ``state.lock`` around the whole read.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import TypeVar

from orchestrator.sim.clock import Clock, format_time, system_clock
from orchestrator.sim.errors import NotFound
from orchestrator.sim.records import PullRequest, Repo, User

# (repo, base sha, head sha) -> True when the head merges cleanly, None when unknown.
MergeabilityProbe = Callable[[Repo, str, str], bool | None]

K = TypeVar("K")
V = TypeVar("V")


class StateCore:
    """Every account and repository of the emulated GitHub, one lock, one id sequence.

    Ids come from one monotonic counter; node ids are derived from them.
    ``version`` increases on every change, so readers can cache renderings.
    ``mergeability_probe`` is set by the git layer to compute whether a head
    merges cleanly into its base; ``diff_hunk_probe`` to cut a diff hunk for an
    inline comment.
    """

    def __init__(self, clock: Clock | None = None) -> None:
        self.clock: Clock = clock or system_clock
        self.lock = threading.RLock()
        self.users: dict[str, User] = {}
        self.repos: dict[str, Repo] = {}
        self.version = 0
        self.mergeability_probe: MergeabilityProbe | None = None
        self.diff_hunk_probe: Callable[[Repo, PullRequest, str, int], str | None] | None = None
        self._tokens: dict[str, str] = {}
        self._ids = itertools.count(1)
        self._last_id = 0

    # ----------------------------------------------------------------- basics

    def now(self) -> str:
        """The current time from the injected clock, in GitHub's format."""
        return format_time(self.clock())

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


def unique_names(names: Iterable[str]) -> list[str]:
    """Names without case-insensitive repeats, first spelling kept, in order."""
    seen: set[str] = set()
    result: list[str] = []
    for name in names:
        if name.lower() not in seen:
            seen.add(name.lower())
            result.append(name)
    return result
