"""An in-memory tracker for unit tests of the runtime."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import replace

from orchestrator.domain.snapshot import IssueRef, TrackedIssue
from orchestrator.tracker.base import TrackerSettings


class MemoryTracker:
    """Issues held in a dict; set_tracker_state swaps labels like the GitHub adapter."""

    def __init__(self, settings: TrackerSettings, issues: Iterable[TrackedIssue] = ()) -> None:
        self.settings = settings
        self._issues = {issue.ref: issue for issue in issues}
        self._lock = threading.Lock()
        self.state_changes: list[tuple[IssueRef, str]] = []

    def put(self, issue: TrackedIssue) -> None:
        with self._lock:
            self._issues[issue.ref] = self._with_state(issue)

    def fetch_candidates(self) -> list[TrackedIssue]:
        with self._lock:
            issues = [self._with_state(issue) for issue in self._issues.values()]
        return sorted((i for i in issues if self.settings.is_candidate(i)), key=lambda i: i.ref)

    def refresh_by_ids(self, refs: Iterable[IssueRef]) -> dict[IssueRef, TrackedIssue]:
        with self._lock:
            return {ref: self._with_state(self._issues[ref]) for ref in refs if ref in self._issues}

    def set_tracker_state(self, ref: IssueRef, state: str) -> None:
        state_labels = set(self.settings.state_labels.values())
        with self._lock:
            issue = self._issues[ref]
            labels = set(issue.labels) - state_labels
            if state in self.settings.state_labels:
                labels.add(self.settings.state_labels[state])
            self._issues[ref] = replace(issue, labels=frozenset(labels), tracker_state=state)
            self.state_changes.append((ref, state))

    def _with_state(self, issue: TrackedIssue) -> TrackedIssue:
        return replace(issue, tracker_state=self.settings.state_of(issue.labels))
