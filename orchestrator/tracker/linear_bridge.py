"""Linear issues as the runtime keys them: refs on the GitHub repository of the code.

The runtime keys every issue by ``IssueRef(repo, number)`` and reads ``repo`` as
the GitHub repository where the branch is pushed and the pull request lives
(the store's rows, the workspaces, the gateway's calls, the outbox). A Linear
issue keeps that meaning: ``ENG-12`` of a policy whose ``tracker.repo`` is
``acme/widgets`` is ``IssueRef("acme/widgets", 12)``, and the bridge keeps the
Linear identifier alongside (``identifier``). Nothing in the store, the records
or the planner changes; only the tracker side (reads, kill-switch labels, the
workpad comment, tracker state, closing, the pull request link) goes to Linear.

Every issue in the tracked scope (team or project, required labels, active
states) is the daemon's: with ``ownership_label`` it shows that label to the
gates, so a Symphony workflow, which owns every active issue of its project,
needs no extra label in Linear.

A policy tracks one Linear team's numbers: when a project spans teams and two
of its issues share a number, the first one seen keeps it and the other is left
out (logged), never mixed up with it.

A human's approval in Linear (a move to an approval state, an approval label)
is read from the issue's history (:mod:`orchestrator.tracker.linear_approval`),
and people's replies from its comments (:mod:`orchestrator.tracker.linear_replies`),
each again only once the issue changed (a move, a label or a comment moves its
``updatedAt``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime
from typing import Any

from orchestrator.domain.actions import SideEffect
from orchestrator.domain.record_updates import EffectResult
from orchestrator.domain.snapshot import (
    IssueComment,
    IssueRef,
    LabelEvent,
    ThreadComment,
    TrackedIssue,
)
from orchestrator.domain.workpad import is_workpad_comment
from orchestrator.logs import get_logger
from orchestrator.tracker import linear_queries as q
from orchestrator.tracker.base import DetailsAsk, IssueFacts, OwnComment, TrackerSettings
from orchestrator.tracker.linear import LinearIssue, LinearTracker
from orchestrator.tracker.linear_approval import (
    ApprovalEvidence,
    LinearApproval,
    linear_approval,
    read_evidence,
)
from orchestrator.tracker.linear_client import LinearError
from orchestrator.tracker.linear_replies import LinearReply, Replies, read_replies

log = get_logger(__name__)

# Issues whose last approval or replies read is remembered (the ones waiting are few).
MEMO_SIZE = 1024


def _remember(table: OrderedDict[str, Any], key: str, value: Any) -> None:
    table[key] = value
    table.move_to_end(key)
    while len(table) > MEMO_SIZE:
        table.popitem(last=False)


class LinearIssues:
    """The tracker port on Linear, seen through refs on the GitHub repository (module
    docstring)."""

    def __init__(
        self, linear: LinearTracker, repo: str, *, ownership_label: str | None = None
    ) -> None:
        if not repo:
            raise ValueError("tracker.repo: the Linear tracker needs the GitHub repository")
        self.linear = linear
        self.repo = repo
        self.settings: TrackerSettings = replace(linear.settings, repo=repo)
        # Every issue in the tracked scope is the daemon's: it shows the ownership label.
        self.ownership_label = ownership_label
        self._lock = threading.Lock()
        # GitHub-side number -> the Linear ref (team key, number) it stands for.
        self._teams: dict[int, IssueRef] = {}
        # The updatedAt of each issue as last handed out: what moved since is a change.
        self._seen: dict[int, str] = {}
        self._moved: set[int] = set()
        # Linear issue id -> what approves and the evidence its history held, last read.
        self._approvals: OrderedDict[str, tuple[LinearApproval, ApprovalEvidence]] = OrderedDict()
        # Linear issue id -> the moment asked about and the comments read then.
        self._replies: OrderedDict[str, tuple[datetime | None, Replies]] = OrderedDict()

    # ------------------------------------------------------------------ refs

    def _ours(self, issue: LinearIssue) -> IssueRef | None:
        """The GitHub-side ref of a Linear issue (None: its number belongs to another team)."""
        with self._lock:
            held = self._teams.setdefault(issue.ref.number, issue.ref)
            if held != issue.ref:
                log.warning(
                    "linear_number_taken",
                    issue=issue.identifier,
                    kept=f"{held.repo}-{held.number}",
                )
                return None
            if self._seen.get(issue.ref.number) not in (None, issue.updated_at):
                self._moved.add(issue.ref.number)
            self._seen[issue.ref.number] = issue.updated_at
        return IssueRef(self.repo, issue.ref.number)

    def linear_ref(self, ref: IssueRef) -> IssueRef:
        """The Linear ref (team key, number) of a GitHub-side ref."""
        if ref.repo != self.repo:
            raise ValueError(f"{ref.repo}#{ref.number} is not an issue of {self.repo}")
        with self._lock:
            found = self._teams.get(ref.number)
        if found is not None:
            return found
        team = self.linear.scope.team_key
        if team:
            return IssueRef(team, ref.number)
        # A project's issue not read since the start: its team is found by its number.
        for read in self.linear.read_numbers([ref.number]):
            self._ours(self.linear.issue(read))
        with self._lock:
            found = self._teams.get(ref.number)
        if found is None:
            raise ValueError(f"issue {ref.number}: not found in the Linear scope")
        return found

    def issue(self, ref: IssueRef) -> LinearIssue:
        """The Linear issue behind ``ref`` as last read (read now when unknown)."""
        return self.linear.issue(self.linear_ref(ref))

    def identifier(self, ref: IssueRef) -> str:
        """The Linear identifier (``ENG-12``)."""
        return self.issue(ref).identifier

    def url(self, ref: IssueRef) -> str:
        """The Linear issue's web address (linked from the pull request's body)."""
        return self.issue(ref).url

    def _tracked(self, issue: LinearIssue) -> TrackedIssue | None:
        ref = self._ours(issue)
        if ref is None:
            return None
        tracked = self.linear.tracked(issue)
        labels = tracked.labels | {self.ownership_label} if self.ownership_label else tracked.labels
        return replace(tracked, ref=ref, labels=labels)

    # ----------------------------------------------------------------- reads

    def fetch_candidates(self) -> list[TrackedIssue]:
        """Polls Linear; the open issues with the required labels in an active state."""
        found: list[TrackedIssue] = []
        for tracked in self.linear.fetch_candidates():
            issue = self.linear.issue(tracked.ref)
            mine = self._tracked(issue)
            if mine is not None:
                found.append(mine)
        return found

    def refresh_by_ids(self, refs: Iterable[IssueRef]) -> dict[IssueRef, TrackedIssue]:
        """These issues as last read (closed ones too); ones Linear does not have are left out."""
        wanted: dict[IssueRef, IssueRef] = {}
        for ref in refs:
            try:
                wanted[self.linear_ref(ref)] = ref
            except ValueError:
                log.warning("linear_issue_missing", issue=f"{ref.repo}#{ref.number}")
        found: dict[IssueRef, TrackedIssue] = {}
        for linear_ref in self.linear.refresh_by_ids(wanted):
            mine = self._tracked(self.linear.issue(linear_ref))
            if mine is not None:
                found[mine.ref] = mine
        return found

    def changes(self) -> set[int]:
        """The numbers of tracked issues that moved (a new updatedAt) since the last call."""
        with self._lock:
            moved, self._moved = self._moved, set()
        return moved

    def read_now(self, ref: IssueRef) -> LinearIssue:
        """The issue read from Linear now (right before a write)."""
        linear_ref = self.linear_ref(ref)
        data = self.linear.client.execute(
            "Issue", q.ISSUE, {"id": f"{linear_ref.repo}-{linear_ref.number}"}
        )
        issue = LinearIssue.of(data["issue"])
        self._ours(issue)
        return issue

    def labels_now(self, ref: IssueRef) -> frozenset[str]:
        """The issue's labels read from Linear now (for the kill switch right before a write)."""
        return self.read_now(ref).labels

    def facts(self, ref: IssueRef) -> IssueFacts:
        issue = self.issue(ref)
        return IssueFacts(
            identifier=issue.identifier,
            title=issue.title,
            body=issue.description,
            url=issue.url,
            id=issue.id,
            created_at=issue.created_at.isoformat(),
            updated_at=issue.updated_at,
        )

    def thread(self, ref: IssueRef, since: datetime) -> tuple[ThreadComment, ...]:
        """People's comments on the Linear issue since ``since`` (none when Linear cannot
        be read: the turn goes on without them)."""
        try:
            replies = self.replies(ref, since)
        except LinearError as error:
            log.warning("linear_replies_unreadable", issue=str(ref), error=str(error))
            return ()
        return tuple(ThreadComment(r.author, r.body, r.created_at) for r in replies)

    def with_details(self, issue: TrackedIssue, ask: DetailsAsk) -> TrackedIssue:
        """The issue with the approval label its state shows, who added each approval label
        it shows (from the issue's history), and, while it waits for a reply to its
        question, the comments people wrote on it."""
        comments: tuple[IssueComment, ...] = ()
        if ask.replies_since is not None:
            try:
                replies = self.replies(issue.ref, ask.replies_since)
            except LinearError as error:
                log.warning("linear_replies_unreadable", issue=str(issue.ref), error=str(error))
            else:
                comments = tuple(reply.as_issue_comment() for reply in replies)
        approval = linear_approval(ask.flow, ask.approvers)
        shown = approval.shown(issue.tracker_state, issue.labels)
        if not shown:
            return replace(issue, comments=comments) if comments else issue
        events: tuple[LabelEvent, ...] = ()
        if ask.approval:
            try:
                evidence = self.approval(issue.ref, approval)
            except LinearError as error:
                # No evidence, no approval: the gate waits, as for an unreadable GitHub event.
                log.warning("linear_approval_unreadable", issue=str(issue.ref), error=str(error))
            else:
                # The labels as this poll saw them decide; a move since is the next poll's.
                events = tuple(e for e in evidence.events if e.label in shown)
        return replace(issue, labels=issue.labels | shown, label_events=events, comments=comments)

    def forget_except(self, live: set[IssueRef]) -> None:
        """Nothing to drop: the memos are bounded (``MEMO_SIZE``)."""

    def confirm(self, effect: SideEffect) -> EffectResult | None:
        """Never: left unconfirmed, a write to the Linear issue is planned again, and the
        writes find before they create."""
        return None

    def approval(
        self, ref: IssueRef, approval: LinearApproval, *, fresh: bool = False
    ) -> ApprovalEvidence:
        """Who approved the issue in Linear, from its history; read again only when the issue
        changed since (a move or a label moves its ``updatedAt``), or when ``fresh``."""
        issue = self.issue(ref)
        with self._lock:
            known = self._approvals.get(issue.id)
        if (
            not fresh
            and known is not None
            and known[0] == approval
            and known[1].updated_at == issue.updated_at
        ):
            return known[1]
        evidence = read_evidence(self.linear.client, issue.id, self.linear.viewer_id(), approval)
        with self._lock:
            _remember(self._approvals, issue.id, (approval, evidence))
        log.info(
            "linear_approval_read",
            issue=issue.identifier,
            state=evidence.state,
            shown=sorted(evidence.labels),
            by=sorted(f"{e.label}:{e.actor.login}" for e in evidence.events),
            trusted=sorted(e.actor.login for e in evidence.events if e.actor.can_write),
            complete=evidence.complete,
        )
        if not evidence.complete:
            log.warning("linear_history_incomplete", issue=issue.identifier)
        return evidence

    def repo_stopped(self, *, fresh: bool = False) -> bool:
        """Whether an open issue in the scope carries the repo-wide stop label: as last
        polled, or polled now with ``fresh`` (right before a write)."""
        if fresh:
            self.linear.poll()
        return self.linear.repo_stopped()

    # ---------------------------------------------------------------- writes

    def set_tracker_state(self, ref: IssueRef, state: str) -> None:
        """Move the issue to the Linear workflow state named ``state``."""
        self.linear.set_tracker_state(self.linear_ref(ref), state)

    def upsert_workpad(self, ref: IssueRef, marker: str, body: str) -> EffectResult:
        """Write the workpad comment (found before one is created; Linear's workpad is found
        by its heading, so ``marker`` is not needed)."""
        comment = self.linear.upsert_workpad(self.linear_ref(ref), body)
        return EffectResult.done(linear_comment_id=comment.id, action="upserted")

    def close(
        self, ref: IssueRef, *, reason: str, state: str, keep: frozenset[str] = frozenset()
    ) -> EffectResult:
        """Move the issue to ``state`` (Linear closes an issue by its state)."""
        self.set_tracker_state(ref, state)
        return EffectResult.done(changed=1)

    def own_workpads(self, ref: IssueRef) -> list[OwnComment]:
        """Every workpad comment the API key's user wrote on the issue, oldest first (more
        than one is for a person to sort out). Linear lets only a comment's author edit it,
        so their text is the bot's own."""
        issue = self.issue(ref)
        viewer = self.linear.viewer_id()
        found: list[OwnComment] = []
        for page in self.linear.client.pages(
            "IssueComments", q.ISSUE_COMMENTS, {"id": issue.id}, ("issue", "comments")
        ):
            for node in page:
                body = str(node.get("body") or "")
                if (node.get("user") or {}).get("id") == viewer and is_workpad_comment(body):
                    found.append(OwnComment(str(node["id"]), body))
        # Pages come newest first.
        return list(reversed(found))

    def upsert_comment(self, ref: IssueRef, marker: str, body: str) -> EffectResult:
        """Write a comment of the bot's found by its hidden ``marker`` (once per marker)."""
        issue = self.issue(ref)
        viewer = self.linear.viewer_id()
        client = self.linear.client
        for page in client.pages(
            "IssueComments", q.ISSUE_COMMENTS, {"id": issue.id}, ("issue", "comments")
        ):
            for node in page:
                if (node.get("user") or {}).get("id") == viewer and marker in str(
                    node.get("body") or ""
                ):
                    if str(node.get("body") or "") != body:
                        client.execute(
                            "UpdateComment",
                            q.UPDATE_COMMENT,
                            {"id": str(node["id"]), "body": body},
                            write=True,
                        )
                    return EffectResult.done(linear_comment_id=str(node["id"]))
        data = client.execute(
            "CreateComment", q.CREATE_COMMENT, {"issueId": issue.id, "body": body}, write=True
        )
        return EffectResult.done(linear_comment_id=str(data["commentCreate"]["comment"]["id"]))

    def replies(self, ref: IssueRef, since: datetime | None = None) -> tuple[LinearReply, ...]:
        """Comments others than the API key's user wrote on the issue, newest first (back to
        ``since`` at least); read again only once the issue changed."""
        issue = self.issue(ref)
        with self._lock:
            known = self._replies.get(issue.id)
        if known is not None and known[0] == since and known[1].updated_at == issue.updated_at:
            return known[1].replies
        found = read_replies(self.linear.client, issue.id, self.linear.viewer_id(), since)
        with self._lock:
            _remember(self._replies, issue.id, (since, found))
        log.info(
            "linear_replies_read",
            issue=issue.identifier,
            replies=len(found.replies),
            trusted=sum(1 for r in found.replies if r.author.can_write),
        )
        return found.replies

    def remove_labels(self, ref: IssueRef, names: Iterable[str]) -> int:
        """Take the labels named ``names`` off the Linear issue; how many it carried."""
        linear_ref = self.linear_ref(ref)
        client = self.linear.client
        data = client.execute("Issue", q.ISSUE, {"id": f"{linear_ref.repo}-{linear_ref.number}"})
        wanted = set(names)
        nodes = ((data["issue"].get("labels") or {}).get("nodes")) or []
        ids = [str(n["id"]) for n in nodes if n.get("name") in wanted]
        if not ids:
            return 0
        client.execute(
            "ChangeLabels",
            q.CHANGE_LABELS,
            {"id": str(data["issue"]["id"]), "added": [], "removed": ids},
            write=True,
        )
        log.info("linear_labels_removed", issue=str(data["issue"]["identifier"]), count=len(ids))
        return len(ids)

    def link_pull_request(self, ref: IssueRef, url: str, title: str) -> str:
        """Link the pull request as the issue's attachment (one per URL); its id."""
        return self.linear.link_pull_request(self.linear_ref(ref), url, title)
