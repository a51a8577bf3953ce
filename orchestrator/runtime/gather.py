"""The tick's first step: read the world into the planner's Snapshot.

Candidates, tracked issues that left the candidates, and the carriers of the
control labels (on issues and pull requests, and the repository-wide stop label)
come from the repository's issue feed: one conditional page of what changed per
tick once it is warm; the store's rows become StoredRecords; pull requests are
polled in batches (fresh, uncached reads for issues about to merge); label
events and comments are read only where a gate or a blocked issue needs them.
An issue the store does not know yet is looked up in its workpad comment first.
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
from orchestrator.github.errors import GitHubError, RateLimited
from orchestrator.github.outcomes import ApprovalActor
from orchestrator.github.prstate import inspect_pr_state
from orchestrator.logs import get_logger
from orchestrator.runtime.records import RecordRow, RecordStore
from orchestrator.runtime.switches import SwitchBoard
from orchestrator.runtime.wiring import GitHubAccess, PolicyView, parse_time
from orchestrator.runtime.workpad_recovery import WorkpadRecovery

log = get_logger(__name__)

# Phases in which the pull request is read fresh (uncached) before every decision.
FRESH_PR_PHASES = frozenset({Phase.READY_TO_MERGE, Phase.MERGING})


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

    def build(self, view: PolicyView, now: datetime, running: tuple[RunningAgent, ...]) -> Gathered:
        """Read everything one plan needs; raises RateLimited when the budget is spent."""
        github = self.github
        repo = view.repo
        # Labels are as fresh as the first read that brought them, not as the moment noted.
        read_at = time.monotonic()
        github.feed.watch(self._watched_labels(view))
        candidates = {issue.ref: issue for issue in github.tracker.fetch_candidates()}
        rows = self.records.load(repo)
        for ref, issue in candidates.items():
            if ref not in rows:
                recovered = self._recover_from_workpad(view, issue, now)
                if recovered is not None:
                    rows[ref] = recovered
        live = {ref: row for ref, row in rows.items() if row.record.phase is not Phase.DONE}
        missing = [ref for ref in live if ref not in candidates]
        refreshed = github.tracker.refresh_by_ids(missing)
        issues: dict[IssueRef, TrackedIssue] = {**candidates, **refreshed}

        carriers = {label: github.feed.carriers(label) for label in self._watched_labels(view)}
        repo_stop = view.flow.repo_kill_switch_label
        stopped = bool(carriers.get(repo_stop))
        self.switches.note_repo(repo, stopped, read_at=read_at)
        prs = self._pull_requests(view, issues, live, carriers)

        items: list[IssueSnapshot] = []
        for ref, tracked in issues.items():
            row = rows.get(ref)
            if row is not None and row.record.phase is Phase.DONE:
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

    # ---------------------------------------------------------------- labels

    @staticmethod
    def _watched_labels(view: PolicyView) -> frozenset[str]:
        flow = view.flow
        return frozenset(
            {flow.kill_switch_label, flow.repo_kill_switch_label, *flow.mode_labels}
            | flow.approval_labels
        )

    # --------------------------------------------------------- pull requests

    def _pull_requests(
        self,
        view: PolicyView,
        issues: dict[IssueRef, TrackedIssue],
        rows: dict[IssueRef, RecordRow],
        carriers: dict[str, frozenset[int]],
    ) -> dict[IssueRef, PullRequest]:
        polled: dict[int, IssueRef] = {}
        fresh: dict[int, IssueRef] = {}
        for ref, row in rows.items():
            pr_ref = row.record.workpad.pr
            if ref not in issues or pr_ref is None:
                continue
            target = fresh if row.record.phase in FRESH_PR_PHASES else polled
            target[pr_ref.number] = ref
        github = self.github
        states: dict[int, PullRequest] = {}
        if polled:
            states.update(github.poller().poll(view.repo, sorted(polled)))
        for number in sorted(fresh):
            state = inspect_pr_state(github.client, view.repo, number, github.actor)
            if state is not None:
                states[number] = state
        found: dict[IssueRef, PullRequest] = {}
        for number, state in states.items():
            ref = polled.get(number) or fresh[number]
            recorded = rows[ref].record.workpad.pr
            labels = frozenset(label for label, numbers in carriers.items() if number in numbers)
            found[ref] = replace(
                state,
                url=recorded.url if recorded is not None else state.url,
                labels=labels,
                head_branch=rows[ref].record.workpad.branch,
            )
        return found

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
                    "approval_actor_unreadable", number=number, label=label, error=str(found)
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
        events = self._label_events(view, issue.ref.number, issue.labels)
        comments: tuple[IssueComment, ...] = ()
        record = row.record if row is not None else None
        if (
            record is not None
            and record.phase is Phase.BLOCKED
            and record.waiting_reason in REPLY_RESUMES
        ):
            comments = self._comments(view.repo, issue.ref.number)
        if not events and not comments:
            return issue
        return replace(issue, label_events=events, comments=comments)

    def _pr_with_events(self, view: PolicyView, pr: PullRequest) -> PullRequest:
        events = self._label_events(view, pr.number, pr.labels)
        return replace(pr, label_events=events) if events else pr

    def _comments(self, repo: str, number: int) -> tuple[IssueComment, ...]:
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
