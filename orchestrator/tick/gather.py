"""The tick's first step: read the world into the planner's Snapshot.

Candidates, tracked issues that left the candidates, and the carriers of the
control labels (on issues and pull requests, and the repository-wide stop label)
come from the repository's issue feed: one conditional page of what changed per
tick once it is warm; the store's rows become StoredRecords; pull requests are
polled in batches (fresh, uncached reads for issues about to merge); label
events and comments are read only where a gate or a blocked issue needs them.
An issue the store does not know yet is looked up in its workpad comment first.

With Linear, an issue in an approval state shows that state's label, and the
approval evidence comes from the Linear issue's history
(:mod:`orchestrator.tracker.linear_approval`), read only for an issue that
shows an approval label while the policy wants a human's approval by label;
the replies to a blocked issue's question are the Linear issue's comments
(:mod:`orchestrator.tracker.linear_replies`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime

from orchestrator.domain.phases import Phase
from orchestrator.domain.snapshot import (
    IssueRef,
    IssueSnapshot,
    KillSwitches,
    RunningAgent,
    Snapshot,
    TrackedIssue,
)
from orchestrator.effects.switches import SwitchBoard
from orchestrator.github.allowance import CatchUp
from orchestrator.logs import get_logger
from orchestrator.store.records import RecordRow, RecordStore
from orchestrator.tick.catch_up import WorkpadCatchUp
from orchestrator.tick.issue_details import IssueDetails
from orchestrator.tick.pull_requests import PullRequestReader
from orchestrator.wiring.access import GitHubAccess
from orchestrator.wiring.policy_view import PolicyView

log = get_logger(__name__)

# The share of the poll interval a tick may spend on the passive sweep (and as much on
# catching up), counted from when each starts.
SWEEP_SHARE = 0.5


@dataclass
class Gathered:
    """One tick's snapshot, with the store rows it was built from."""

    snapshot: Snapshot
    rows: dict[IssueRef, RecordRow]


class SnapshotBuilder:
    """Builds the planner's input from GitHub, the store and the running workers."""

    def __init__(self, github: GitHubAccess, records: RecordStore, switches: SwitchBoard) -> None:
        self.github = github
        self.records = records
        self.switches = switches
        # What is still to be read once after a start with an empty database, by kind.
        self.catching_up: dict[str, CatchUp] = {}
        self._workpads = WorkpadCatchUp(github, records, self.catching_up)
        self._pulls = PullRequestReader(github, self.catching_up)
        self.sweep = self._pulls.sweep
        self._details = IssueDetails(github)
        # What the issue feed saw move, taken before a whole tick's own build (see urgent).
        self._moved: set[int] = set()

    def urgent(self, view: PolicyView) -> frozenset[IssueRef]:
        """The issues a whole tick looks at first: candidates and tracked issues the issue
        feed saw move since the last tick (a new label, an approval, a review, a reply, a
        push), so that acting on them does not wait for a pass over every issue."""
        github = self.github
        repo = view.repo
        github.feed.watch(self._watched_labels(view))
        candidates = {issue.ref for issue in self._candidates()}
        moved = github.feed.changes() | github.tracker.changes()
        self._moved |= moved
        if not moved:
            return frozenset()
        rows = self.records.load(repo)
        live = {ref for ref, row in rows.items() if row.record.phase is not Phase.DONE}
        by_pr = {
            row.record.workpad.pr.number: ref
            for ref, row in rows.items()
            if ref in live and row.record.workpad.pr is not None
        }
        found: set[IssueRef] = set()
        for number in moved:
            ref = IssueRef(repo, number)
            if ref in candidates or ref in live:
                found.add(ref)
            if number in by_pr:
                found.add(by_pr[number])
        return frozenset(found)

    def build(
        self,
        view: PolicyView,
        now: datetime,
        running: tuple[RunningAgent, ...],
        only: frozenset[IssueRef] | None = None,
    ) -> Gathered:
        """Read everything one plan needs; raises RateLimited when the budget is spent.

        With ``only``, the snapshot holds those issues alone (a follow-up of what a tick
        just changed): their pull requests are read now, and the passive sweep, catching
        up and workpad recovery wait for the next whole tick.
        """
        github = self.github
        repo = view.repo
        # Labels are as fresh as the first read that brought them, not as the moment noted.
        read_at = time.monotonic()
        github.feed.watch(self._watched_labels(view))
        candidates = {issue.ref: issue for issue in self._candidates()}
        rows = self.records.load(repo)
        # Catching up and the sweep each get their share of the interval from when they start:
        # the rest of a large tick must not leave the sweep one batch per tick.
        budget_s = view.interval_s * SWEEP_SHARE
        # Issues whose record or pull request is still to be read once: left out of this plan.
        pending = (
            self._workpads.recover_due(view, candidates, rows, now, time.monotonic() + budget_s)
            if only is None
            else self._workpads.recover_few(view, candidates, rows, now, only)
        )
        live = {ref: row for ref, row in rows.items() if row.record.phase is not Phase.DONE}
        if only is None:
            github.tracker.forget_except(set(live))
        missing = [ref for ref in live if ref not in candidates]
        refreshed = github.tracker.refresh_by_ids(missing)
        issues: dict[IssueRef, TrackedIssue] = {**candidates, **refreshed}

        carriers = {label: github.feed.carriers(label) for label in self._watched_labels(view)}
        repo_stop = view.flow.repo_kill_switch_label
        # A tracker beyond the repository's issues may hold the repo-wide stop label too.
        stopped = bool(carriers.get(repo_stop)) or github.tracker.repo_stopped()
        self.switches.note_repo(repo, stopped, read_at=read_at)
        if only is None:
            moved = self._moved | github.feed.changes() | github.tracker.changes()
            self._moved = set()
            prs, unread = self._pulls.read(
                view, issues, live, carriers, moved=moved, budget_s=budget_s, now=now
            )
            pending |= unread
        else:
            issues = {ref: issue for ref, issue in issues.items() if ref in only}
            prs = self._pulls.focused(view, issues, live, carriers)

        items: list[IssueSnapshot] = []
        for ref, tracked in issues.items():
            row = rows.get(ref)
            if ref in pending or (row is not None and row.record.phase is Phase.DONE):
                continue
            pr = prs.get(ref)
            issue = self._details.with_details(view, tracked, pr, row)
            pr = self._details.pr_with_events(view, pr) if pr is not None else None
            self.switches.note_issue(
                ref, issue.labels, pr.labels if pr is not None else frozenset(), read_at=read_at
            )
            items.append(IssueSnapshot(issue, row.record if row is not None else None, pr))
        switches = KillSwitches(
            local_file_active=self.switches.local_file_active(),
            stopped_repos=frozenset({repo}) if stopped else frozenset(),
        )
        snapshot = Snapshot(
            now=now,
            issues=tuple(items),
            running=running,
            kill_switches=switches,
            self_login=github.login,
        )
        return Gathered(snapshot=snapshot, rows=rows)

    # ---------------------------------------------------------------- issues

    def _candidates(self) -> list[TrackedIssue]:
        """The tracker's candidates; the repository's feed is brought up to date too (it
        holds the pull requests' labels and the repository's stop label)."""
        self.github.refresh_feed()
        return self.github.tracker.fetch_candidates()

    # ---------------------------------------------------------------- labels

    @staticmethod
    def _watched_labels(view: PolicyView) -> frozenset[str]:
        flow = view.flow
        return frozenset(
            {flow.kill_switch_label, flow.repo_kill_switch_label, *flow.mode_labels}
            | flow.approval_labels
        )
