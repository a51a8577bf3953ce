"""Issues the store does not know, rebuilt from their workpad comments at a paced rate.

After a start with an empty database every candidate is unknown: their
workpads are looked up as the REST and GraphQL budgets allow, the rest left
for later ticks (and out of those ticks' plans). A few new ones (a new label)
are looked up at once.
"""

from __future__ import annotations

import time
from datetime import datetime

from orchestrator.domain.snapshot import IssueRef, TrackedIssue
from orchestrator.github.allowance import CatchUp, Pacer, items_per_tick
from orchestrator.logs import get_logger
from orchestrator.store.records import RecordRow, RecordStore
from orchestrator.tick.pacing import SMALL_CATCH_UP, paced
from orchestrator.tick.workpad_recovery import WorkpadRecovery
from orchestrator.wiring.access import GitHubAccess
from orchestrator.wiring.policy_view import PolicyView

log = get_logger(__name__)

# Units of each budget (REST, GraphQL) one workpad recovery costs, about.
RECOVERY_UNITS = 2.0


class WorkpadCatchUp:
    """Looks up the workpads of unknown candidates, paced to the budget."""

    def __init__(
        self, github: GitHubAccess, records: RecordStore, catching_up: dict[str, CatchUp]
    ) -> None:
        self.github = github
        # Candidates whose comments were searched for a workpad and had none (this process).
        self._no_workpad: set[IssueRef] = set()
        self._recovery = WorkpadRecovery(github, records)
        # Shared with the snapshot builder: what is still to be read once, by kind.
        self.catching_up = catching_up
        self._pacer = Pacer()

    def recover_due(
        self,
        view: PolicyView,
        candidates: dict[IssueRef, TrackedIssue],
        rows: dict[IssueRef, RecordRow],
        now: datetime,
        deadline: float,
    ) -> set[IssueRef]:
        """Look up the workpad of candidates the store does not know, as the budget allows;
        the ones left for later ticks are returned."""
        unknown = [
            ref for ref in sorted(candidates) if ref not in rows and ref not in self._no_workpad
        ]
        # A recovery reads the issue's comments and its pull request's (REST) and asks who
        # last edited the workpad and the review comment (GraphQL): about 2 of each.
        per_interval = min(
            items_per_tick(
                self.github.accounting,
                resource,
                cost_per_item=RECOVERY_UNITS,
                interval_s=view.interval_s,
                now=now,
            )
            for resource in ("core", "graphql")
        )
        allowed = paced(self._pacer, len(unknown), per_interval, view.interval_s)
        done = 0
        for ref in unknown:
            if done >= allowed or (done and time.monotonic() > deadline):
                break
            recovered = self._from_workpad(view, candidates[ref], now)
            if recovered is not None:
                rows[ref] = recovered
            done += 1
        left = unknown[done:]
        if done:
            self._pacer.read()
        self.catching_up["workpads"] = CatchUp(
            "workpad comments to recover",
            left=len(left),
            read=done,
            allowed=per_interval,
            interval_s=view.interval_s,
        )
        if left and not per_interval:
            log.warning(
                "catch_up_paused",
                left=len(left),
                budgets={
                    name: (budget.remaining, budget.limit)
                    for name, budget in self.github.accounting.budgets.items()
                },
            )
        return set(left)

    def recover_few(
        self,
        view: PolicyView,
        candidates: dict[IssueRef, TrackedIssue],
        rows: dict[IssueRef, RecordRow],
        now: datetime,
        only: frozenset[IssueRef],
    ) -> set[IssueRef]:
        """Look up the workpad of the few candidates among ``only`` the store does not
        know (a new label); more than a handful is a catch-up, left to whole ticks."""
        unknown = [
            ref
            for ref in sorted(only)
            if ref in candidates and ref not in rows and ref not in self._no_workpad
        ]
        if len(unknown) > SMALL_CATCH_UP:
            return set(unknown)
        for ref in unknown:
            recovered = self._from_workpad(view, candidates[ref], now)
            if recovered is not None:
                rows[ref] = recovered
        return set()

    def _from_workpad(
        self, view: PolicyView, issue: TrackedIssue, now: datetime
    ) -> RecordRow | None:
        """An issue the store does not know: rebuild its record from its workpad comment."""
        if issue.ref in self._no_workpad:
            return None
        row, absent = self._recovery.recover(view, issue, now)
        if absent:
            self._no_workpad.add(issue.ref)
        return row
