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
from dataclasses import dataclass, replace
from datetime import datetime

from orchestrator.domain.flow_blocked import REPLY_RESUMES
from orchestrator.domain.phases import Phase
from orchestrator.domain.policy import ApprovalSource
from orchestrator.domain.snapshot import (
    Actor,
    IssueComment,
    IssueRef,
    IssueSnapshot,
    KillSwitches,
    LabelAction,
    LabelEvent,
    PullRequest,
    RunningAgent,
    Snapshot,
    TrackedIssue,
)
from orchestrator.github.allowance import CatchUp, Pacer, items_per_tick
from orchestrator.github.errors import GitHubError, RateLimited
from orchestrator.github.outcomes import ApprovalActor
from orchestrator.github.prstate import StateMemo, inspect_pr_state
from orchestrator.github.queries import MAX_FINGERPRINT_BATCH
from orchestrator.logs import get_logger, issue_key
from orchestrator.repos.wiring import GitHubAccess, PolicyView, parse_time
from orchestrator.store.records import RecordRow, RecordStore
from orchestrator.tick.sweep import DEFAULT_SWEEP_SPREAD, PassiveSweep
from orchestrator.tick.switches import SwitchBoard
from orchestrator.tick.workpad_recovery import WorkpadRecovery
from orchestrator.tracker.linear_approval import linear_approval
from orchestrator.tracker.linear_client import LinearError

log = get_logger(__name__)

# Phases in which the pull request is read fresh (uncached) before every decision.
FRESH_PR_PHASES = frozenset({Phase.READY_TO_MERGE, Phase.MERGING})
# Phases in which the pull request waits for a person: read when the issue feed sees it
# move, and otherwise a slice per tick (see orchestrator.tick.sweep).
PASSIVE_PR_PHASES = frozenset({Phase.WAITING_FOR_HUMAN, Phase.BLOCKED})
# Pull requests per fingerprint query of the sweep (GitHub's batch limit).
SWEEP_BATCH = MAX_FINGERPRINT_BATCH
# The share of the poll interval a tick may spend on the passive sweep (and as much on
# catching up), counted from when each starts.
SWEEP_SHARE = 0.5
# GraphQL points of a pull request's first read: its share of a fingerprint batch and
# of a state batch (see orchestrator.github.queries).
FIRST_READ_POINTS = 0.52
# Units of each budget (REST, GraphQL) one workpad recovery costs, about.
RECOVERY_UNITS = 2.0
# So few things to read once are read at once, as ordinary polling: new issues, a restart
# over a small repository. Only more than this is a catch-up paced to the budget.
SMALL_CATCH_UP = 20


def _paced(pacer: Pacer, count: int, per_interval: int, interval_s: float) -> int:
    """How many of ``count`` things to read once this tick may read."""
    if count <= SMALL_CATCH_UP and per_interval > 0:
        return count
    return pacer.allow(per_interval, interval_s)


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
        # Candidates whose comments were searched for a workpad and had none (this process).
        self._no_workpad: set[IssueRef] = set()
        self._recovery = WorkpadRecovery(github, records)
        # The last state read of each polled pull request, by number.
        self._pr_memo: StateMemo = {}
        # The comments of blocked issues, by number, with the issue's updated_at they are of.
        self._comment_memo: dict[int, tuple[str, tuple[IssueComment, ...]]] = {}
        self.sweep = PassiveSweep(DEFAULT_SWEEP_SPREAD)
        # What is still to be read once after a start with an empty database, by kind.
        self.catching_up: dict[str, CatchUp] = {}
        self._pacers = {"workpads": Pacer(), "pulls": Pacer()}
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
        moved = github.feed.changes() | self._linear_changes()
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
            self._recover(view, candidates, rows, now, time.monotonic() + budget_s)
            if only is None
            else self._recover_few(view, candidates, rows, now, only)
        )
        live = {ref: row for ref, row in rows.items() if row.record.phase is not Phase.DONE}
        if only is None:
            for number in [n for n in self._comment_memo if IssueRef(repo, n) not in live]:
                del self._comment_memo[number]
        missing = [ref for ref in live if ref not in candidates]
        refreshed = github.tracker.refresh_by_ids(missing)
        issues: dict[IssueRef, TrackedIssue] = {**candidates, **refreshed}

        carriers = {label: github.feed.carriers(label) for label in self._watched_labels(view)}
        repo_stop = view.flow.repo_kill_switch_label
        # With Linear, an open Linear issue with the repo-wide stop label stops it too.
        stopped = bool(carriers.get(repo_stop)) or (
            github.linear is not None and github.linear.repo_stopped()
        )
        self.switches.note_repo(repo, stopped, read_at=read_at)
        if only is None:
            moved = self._moved | github.feed.changes() | self._linear_changes()
            self._moved = set()
            prs, unread = self._pull_requests(
                view, issues, live, carriers, moved=moved, budget_s=budget_s, now=now
            )
            pending |= unread
        else:
            issues = {ref: issue for ref, issue in issues.items() if ref in only}
            prs = self._focused_pull_requests(view, issues, live, carriers)

        items: list[IssueSnapshot] = []
        for ref, tracked in issues.items():
            row = rows.get(ref)
            if ref in pending or (row is not None and row.record.phase is Phase.DONE):
                continue
            pr = prs.get(ref)
            issue = self._with_details(view, tracked, pr, row)
            pr = self._pr_with_events(view, pr) if pr is not None else None
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
        """The tracker's candidates; with Linear, the repository's feed is brought up to date
        too (it holds the pull requests' labels and the repository's stop label)."""
        self.github.refresh_feed()
        return self.github.tracker.fetch_candidates()

    def _linear_changes(self) -> set[int]:
        """The Linear issues that moved since the last call (none without Linear)."""
        linear = self.github.linear
        return linear.changes() if linear is not None else set()

    # ---------------------------------------------------------------- labels

    @staticmethod
    def _watched_labels(view: PolicyView) -> frozenset[str]:
        flow = view.flow
        return frozenset(
            {flow.kill_switch_label, flow.repo_kill_switch_label, *flow.mode_labels}
            | flow.approval_labels
        )

    # --------------------------------------------------------- pull requests

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

    def _focused_pull_requests(
        self,
        view: PolicyView,
        issues: dict[IssueRef, TrackedIssue],
        rows: dict[IssueRef, RecordRow],
        carriers: dict[str, frozenset[int]],
    ) -> dict[IssueRef, PullRequest]:
        """The pull requests of a few issues, each read now (a passive one too)."""
        polled, fresh, passive = self._by_phase(issues, rows)
        states = self.github.poller().poll(view.repo, sorted({**polled, **passive}), self._pr_memo)
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

    def _pull_requests(
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
        memo = self._pr_memo
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
        first = unread[: _paced(self._pacers["pulls"], len(unread), per_interval, view.interval_s)]
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
            self._pacers["pulls"].read()
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

    # ------------------------------------------------------ events, comments

    def _approval_matters(self, view: PolicyView) -> bool:
        merge = view.flow.merge
        return merge.require_human_approval and merge.approval_source in (
            ApprovalSource.LABEL,
            ApprovalSource.LABEL_OR_REVIEW,
        )

    def _label_events(
        self, view: PolicyView, number: int, labels: frozenset[str]
    ) -> tuple[LabelEvent, ...]:
        if not self._approval_matters(view):
            return ()
        events: list[LabelEvent] = []
        gateway = self.github.gateway
        for label in sorted(labels & view.flow.approval_labels):
            found = gateway.approval_actor(view.repo, number, label)
            if isinstance(found, RateLimited):
                raise found
            if isinstance(found, GitHubError):
                log.warning(
                    "approval_actor_unreadable",
                    issue=issue_key(view.repo, number),
                    label=label,
                    error=str(found),
                )
                continue
            if isinstance(found, ApprovalActor):
                actor = Actor(login=found.login, is_bot=found.is_bot, can_write=found.can_write)
                events.append(LabelEvent(label, LabelAction.ADDED, actor, found.at))
        return tuple(events)

    def _with_details(
        self,
        view: PolicyView,
        issue: TrackedIssue,
        pr: PullRequest | None,
        row: RecordRow | None,
    ) -> TrackedIssue:
        record = row.record if row is not None else None
        awaits_reply = (
            record is not None
            and record.phase is Phase.BLOCKED
            and record.waiting_reason in REPLY_RESUMES
        )
        if self.github.linear is not None:
            since = record.phase_since if record is not None and awaits_reply else None
            return self._linear_details(view, issue, since)
        events = self._label_events(view, issue.ref.number, issue.labels)
        comments: tuple[IssueComment, ...] = ()
        if awaits_reply:
            comments = self._comments(view.repo, issue.ref.number)
        if not events and not comments:
            return issue
        return replace(issue, label_events=events, comments=comments)

    def _linear_details(
        self, view: PolicyView, issue: TrackedIssue, awaits_reply_since: datetime | None
    ) -> TrackedIssue:
        """A Linear issue with the approval label its state shows, who added each approval
        label it shows (from the issue's history), and, while it waits for a reply to its
        question since ``awaits_reply_since``, the comments people wrote on it."""
        linear = self.github.linear
        assert linear is not None
        comments: tuple[IssueComment, ...] = ()
        if awaits_reply_since is not None:
            try:
                replies = linear.replies(issue.ref, awaits_reply_since)
            except LinearError as error:
                log.warning(
                    "linear_replies_unreadable",
                    issue=issue_key(view.repo, issue.ref.number),
                    error=str(error),
                )
            else:
                comments = tuple(reply.as_issue_comment() for reply in replies)
        approval = linear_approval(view.flow, view.policy.tracker.approvers)
        shown = approval.shown(issue.tracker_state, issue.labels)
        if not shown:
            return replace(issue, comments=comments) if comments else issue
        events: tuple[LabelEvent, ...] = ()
        if self._approval_matters(view):
            try:
                evidence = linear.approval(issue.ref, approval)
            except LinearError as error:
                # No evidence, no approval: the gate waits, as for an unreadable GitHub event.
                log.warning(
                    "linear_approval_unreadable",
                    issue=issue_key(view.repo, issue.ref.number),
                    error=str(error),
                )
            else:
                # The labels as this tick's poll saw them decide; a move since is next tick's.
                events = tuple(e for e in evidence.events if e.label in shown)
        return replace(issue, labels=issue.labels | shown, label_events=events, comments=comments)

    def _pr_with_events(self, view: PolicyView, pr: PullRequest) -> PullRequest:
        events = self._label_events(view, pr.number, pr.labels)
        return replace(pr, label_events=events) if events else pr

    def _comments(self, repo: str, number: int) -> tuple[IssueComment, ...]:
        # A new comment moves the issue's updated_at: while it stays, so do the comments.
        updated_at = self.github.feed.updated_at(number)
        remembered = self._comment_memo.get(number)
        if updated_at is not None and remembered is not None and remembered[0] == updated_at:
            return remembered[1]
        comments = self._read_comments(repo, number)
        if updated_at is not None:
            self._comment_memo[number] = (updated_at, comments)
        return comments

    def _read_comments(self, repo: str, number: int) -> tuple[IssueComment, ...]:
        items = self.github.client.paginate(
            f"/repos/{repo}/issues/{number}/comments", conditional=True
        )
        comments = []
        for item in items:
            user = item.get("user") or {}
            comments.append(
                IssueComment(
                    id=int(item["id"]),
                    author=self.github.actor(str(user.get("login", "ghost")), user.get("type")),
                    created_at=parse_time(item["created_at"]),
                )
            )
        return tuple(comments)

    # ---------------------------------------------------------- workpad recovery

    def _recover(
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
        allowed = _paced(self._pacers["workpads"], len(unknown), per_interval, view.interval_s)
        done = 0
        for ref in unknown:
            if done >= allowed or (done and time.monotonic() > deadline):
                break
            recovered = self._recover_from_workpad(view, candidates[ref], now)
            if recovered is not None:
                rows[ref] = recovered
            done += 1
        left = unknown[done:]
        if done:
            self._pacers["workpads"].read()
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

    def _recover_few(
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
            recovered = self._recover_from_workpad(view, candidates[ref], now)
            if recovered is not None:
                rows[ref] = recovered
        return set()

    def _recover_from_workpad(
        self, view: PolicyView, issue: TrackedIssue, now: datetime
    ) -> RecordRow | None:
        """An issue the store does not know: rebuild its record from its workpad comment."""
        if issue.ref in self._no_workpad:
            return None
        row, absent = self._recovery.recover(view, issue, now)
        if absent:
            self._no_workpad.add(issue.ref)
        return row
