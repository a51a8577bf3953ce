"""Which pull requests a tick reads, and how: polled, fresh, or swept while they wait.

Pull requests of issues about to merge are read fresh (uncached) before every
decision; those waiting for a person are read when the issue feed sees them
move, and otherwise a slice per tick (:mod:`orchestrator.tick.sweep`); the rest
are polled in batches. After a start with an empty database, the waiting ones
never read are read first, at the pace the GraphQL budget allows.
"""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import datetime

from orchestrator.domain.phases import Phase
from orchestrator.domain.snapshot import IssueRef, PullRequest, TrackedIssue
from orchestrator.github.allowance import CatchUp, Pacer, items_per_tick
from orchestrator.github.prstate import StateMemo, inspect_pr_state
from orchestrator.github.queries import MAX_FINGERPRINT_BATCH
from orchestrator.store.records import RecordRow
from orchestrator.tick.pacing import paced
from orchestrator.tick.sweep import DEFAULT_SWEEP_SPREAD, PassiveSweep
from orchestrator.wiring.access import GitHubAccess
from orchestrator.wiring.policy_view import PolicyView

# Phases in which the pull request is read fresh (uncached) before every decision.
FRESH_PR_PHASES = frozenset({Phase.READY_TO_MERGE, Phase.MERGING})
# Phases in which the pull request waits for a person: read when the issue feed sees it
# move, and otherwise a slice per tick (see orchestrator.tick.sweep).
PASSIVE_PR_PHASES = frozenset({Phase.WAITING_FOR_HUMAN, Phase.BLOCKED})
# Pull requests per fingerprint query of the sweep (GitHub's batch limit).
SWEEP_BATCH = MAX_FINGERPRINT_BATCH
# GraphQL points of a pull request's first read: its share of a fingerprint batch and
# of a state batch (see orchestrator.github.queries).
FIRST_READ_POINTS = 0.52


class PullRequestReader:
    """Reads the pull requests of one repository's tracked issues, tick after tick."""

    def __init__(self, github: GitHubAccess, catching_up: dict[str, CatchUp]) -> None:
        self.github = github
        # The last state read of each polled pull request, by number.
        self.memo: StateMemo = {}
        self.sweep = PassiveSweep(DEFAULT_SWEEP_SPREAD)
        # Shared with the snapshot builder: what is still to be read once, by kind.
        self.catching_up = catching_up
        self._pacer = Pacer()

    @staticmethod
    def _by_phase(
        issues: dict[IssueRef, TrackedIssue], rows: dict[IssueRef, RecordRow]
    ) -> tuple[dict[int, IssueRef], dict[int, IssueRef], dict[int, IssueRef]]:
        """The pull requests to read, by number: (polled, fresh, passive)."""
        polled: dict[int, IssueRef] = {}
        fresh: dict[int, IssueRef] = {}
        passive: dict[int, IssueRef] = {}
        for ref in issues:
            row = rows.get(ref)
            if row is None or row.record.workpad.pr is None:
                continue
            phase = row.record.phase
            target = (
                fresh
                if phase in FRESH_PR_PHASES
                else passive
                if phase in PASSIVE_PR_PHASES
                else polled
            )
            target[row.record.workpad.pr.number] = ref
        return polled, fresh, passive

    def focused(
        self,
        view: PolicyView,
        issues: dict[IssueRef, TrackedIssue],
        rows: dict[IssueRef, RecordRow],
        carriers: dict[str, frozenset[int]],
    ) -> dict[IssueRef, PullRequest]:
        """The pull requests of a few issues, each read now (a passive one too)."""
        polled, fresh, passive = self._by_phase(issues, rows)
        states = self.github.poller().poll(view.repo, sorted({**polled, **passive}), self.memo)
        states.update(self._fresh_states(view, fresh))
        return self._found(states, {**fresh, **passive, **polled}, rows, carriers)

    def _fresh_states(self, view: PolicyView, fresh: dict[int, IssueRef]) -> dict[int, PullRequest]:
        """Pull requests about to merge, read uncached."""
        github = self.github
        states: dict[int, PullRequest] = {}
        for number in sorted(fresh):
            state = inspect_pr_state(github.client, view.repo, number, github.actor)
            if state is not None:
                states[number] = state
        return states

    @staticmethod
    def _found(
        states: dict[int, PullRequest],
        refs: dict[int, IssueRef],
        rows: dict[IssueRef, RecordRow],
        carriers: dict[str, frozenset[int]],
    ) -> dict[IssueRef, PullRequest]:
        """Each state read, as its issue's pull request with the labels the feed holds."""
        found: dict[IssueRef, PullRequest] = {}
        for number, state in states.items():
            ref = refs[number]
            recorded = rows[ref].record.workpad.pr
            labels = frozenset(label for label, numbers in carriers.items() if number in numbers)
            found[ref] = replace(
                state,
                url=recorded.url if recorded is not None else state.url,
                labels=labels,
                head_branch=rows[ref].record.workpad.branch,
            )
        return found

    def read(
        self,
        view: PolicyView,
        issues: dict[IssueRef, TrackedIssue],
        rows: dict[IssueRef, RecordRow],
        carriers: dict[str, frozenset[int]],
        *,
        moved: set[int],
        budget_s: float,
        now: datetime,
    ) -> tuple[dict[IssueRef, PullRequest], set[IssueRef]]:
        polled, fresh, passive = self._by_phase(issues, rows)
        github = self.github
        poller = github.poller()
        memo = self.memo
        for number in [n for n in memo if n not in polled and n not in passive]:
            del memo[number]
        states: dict[int, PullRequest] = {}
        # Passive ones are read when the feed saw them move; the rest keep their last state
        # until their slice of the sweep comes. Ones never read (after a start with an empty
        # database) are read first, at the pace the GraphQL budget allows.
        known = poller.last_known(view.repo, (n for n in passive if n not in moved), memo)
        signaled = sorted(n for n in passive if n in moved)
        unread = sorted(n for n in passive if n not in moved and n not in known)
        resting = sorted(known)
        states.update(poller.poll(view.repo, sorted(polled) + signaled, memo))
        per_interval = items_per_tick(
            github.accounting,
            "graphql",
            cost_per_item=FIRST_READ_POINTS,
            interval_s=view.interval_s,
            now=now,
        )
        first = unread[: paced(self._pacer, len(unread), per_interval, view.interval_s)]
        due = first + (self.sweep.slice(resting) if not unread else [])
        swept: list[int] = []
        behind = False
        deadline = time.monotonic() + budget_s
        for start in range(0, len(due), SWEEP_BATCH):
            if swept and time.monotonic() > deadline:
                behind = True
                break
            batch = due[start : start + SWEEP_BATCH]
            states.update(poller.poll(view.repo, batch, memo))
            swept.extend(batch)
        if not unread:
            self.sweep.done(resting, swept, behind=behind)
        for number in resting:
            if number not in states and number in known:
                states[number] = known[number]
        still_unread = [n for n in unread if n not in states]
        if len(still_unread) < len(unread):
            self._pacer.read()
        self.catching_up["pulls"] = CatchUp(
            "waiting pull requests to read once",
            left=len(still_unread),
            read=len(unread) - len(still_unread),
            allowed=per_interval,
            interval_s=view.interval_s,
        )
        states.update(self._fresh_states(view, fresh))
        for number in still_unread:
            states.pop(number, None)
        found = self._found(states, {**fresh, **passive, **polled}, rows, carriers)
        return found, {passive[n] for n in still_unread}
