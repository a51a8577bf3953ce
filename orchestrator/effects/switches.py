"""The freshest known state of the kill switches and of the labels that lower an issue's mode.

The tick fills this board from its snapshot; the side-effect gate reads it right
before every write and asks for a re-read of an issue's labels (and of the
repository-wide switch) when what it holds is older than a few seconds, so a
label added while an agent worked stops the writes that follow. The local
sentinel file is looked at on disk at every check.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path

from orchestrator.domain.snapshot import IssueRef

# Labels read longer ago than this are read again before a write.
LABEL_MAX_AGE_S = 2.0


@dataclass(frozen=True)
class IssueLabels:
    """An issue's labels and its pull request's, as read at ``read_at`` (monotonic seconds)."""

    issue: frozenset[str]
    pr: frozenset[str]
    read_at: float

    def fresh(self, max_age_s: float) -> bool:
        return time.monotonic() - self.read_at <= max_age_s


@dataclass(frozen=True)
class RepoSwitch:
    """Whether an open issue carries the repository-wide stop label, as read at ``read_at``."""

    stopped: bool
    read_at: float


class SwitchBoard:
    """What the daemon last read about kill switches and mode labels. Thread-safe."""

    def __init__(self, kill_switch_file: Path, *, max_age_s: float = LABEL_MAX_AGE_S) -> None:
        self.kill_switch_file = kill_switch_file
        self.max_age_s = max_age_s
        self._lock = threading.Lock()
        self._issues: dict[IssueRef, IssueLabels] = {}
        self._repos: dict[str, RepoSwitch] = {}

    def local_file_active(self) -> bool:
        """The emergency brake: the sentinel file exists right now."""
        return self.kill_switch_file.exists()

    def set_brake(self, active: bool) -> None:
        """Create or remove the sentinel file."""
        if active:
            self.kill_switch_file.parent.mkdir(parents=True, exist_ok=True)
            self.kill_switch_file.touch(exist_ok=True)
        else:
            self.kill_switch_file.unlink(missing_ok=True)

    def note_issue(
        self,
        ref: IssueRef,
        issue: frozenset[str],
        pr: frozenset[str],
        *,
        read_at: float | None = None,
    ) -> None:
        """Labels as GitHub showed them at ``read_at`` (monotonic; default: now).

        ``read_at`` is when the request that brought them was sent, not when they
        are noted: a tick that read labels and noted them seconds later must not
        make them look fresher than they are. A read older than the one held is
        dropped.
        """
        moment = time.monotonic() if read_at is None else read_at
        with self._lock:
            held = self._issues.get(ref)
            if held is None or held.read_at <= moment:
                self._issues[ref] = IssueLabels(issue, pr, moment)

    def note_repo(self, repo: str, stopped: bool, *, read_at: float | None = None) -> None:
        """Whether the repository-wide stop label was on an open issue at ``read_at``."""
        moment = time.monotonic() if read_at is None else read_at
        with self._lock:
            held = self._repos.get(repo)
            if held is None or held.read_at <= moment:
                self._repos[repo] = RepoSwitch(stopped, moment)

    def issue_labels(self, ref: IssueRef) -> IssueLabels | None:
        with self._lock:
            return self._issues.get(ref)

    def repo_switch(self, repo: str) -> RepoSwitch | None:
        with self._lock:
            return self._repos.get(repo)

    def stopped_repos(self) -> tuple[str, ...]:
        with self._lock:
            return tuple(sorted(repo for repo, state in self._repos.items() if state.stopped))
