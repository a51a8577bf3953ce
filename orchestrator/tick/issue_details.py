"""What the gates and a blocked issue need beyond the issue feed: label events, replies.

Who added an approval label is read only while the policy wants a human's
approval by label; the comments of a blocked issue only while it waits for a
reply to its question (kept while the issue's ``updated_at`` stays). With
Linear, an issue in an approval state shows that state's label, the approval
evidence comes from the Linear issue's history
(:mod:`orchestrator.tracker.linear_approval`), and the replies are the Linear
issue's comments (:mod:`orchestrator.tracker.linear_replies`).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from orchestrator.domain.flow_blocked import REPLY_RESUMES
from orchestrator.domain.phases import Phase
from orchestrator.domain.policy import ApprovalSource
from orchestrator.domain.snapshot import (
    Actor,
    IssueComment,
    IssueRef,
    LabelAction,
    LabelEvent,
    PullRequest,
    TrackedIssue,
)
from orchestrator.github.errors import GitHubError, RateLimited
from orchestrator.github.outcomes import ApprovalActor
from orchestrator.logs import get_logger, issue_key
from orchestrator.store.records import RecordRow
from orchestrator.tracker.linear_approval import linear_approval
from orchestrator.tracker.linear_client import LinearError
from orchestrator.wiring.access import GitHubAccess, parse_time
from orchestrator.wiring.policy_view import PolicyView

log = get_logger(__name__)


class IssueDetails:
    """Adds label events and replies to the issues and pull requests of one repository."""

    def __init__(self, github: GitHubAccess) -> None:
        self.github = github
        # The comments of blocked issues, by number, with the issue's updated_at they are of.
        self.comment_memo: dict[int, tuple[str, tuple[IssueComment, ...]]] = {}

    def forget_except(self, repo: str, live: set[IssueRef]) -> None:
        """Drop the remembered comments of issues no longer tracked."""
        for number in [n for n in self.comment_memo if IssueRef(repo, n) not in live]:
            del self.comment_memo[number]

    def approval_matters(self, view: PolicyView) -> bool:
        merge = view.flow.merge
        return merge.require_human_approval and merge.approval_source in (
            ApprovalSource.LABEL,
            ApprovalSource.LABEL_OR_REVIEW,
        )

    def label_events(
        self, view: PolicyView, number: int, labels: frozenset[str]
    ) -> tuple[LabelEvent, ...]:
        if not self.approval_matters(view):
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

    def with_details(
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
        events = self.label_events(view, issue.ref.number, issue.labels)
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
        if self.approval_matters(view):
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

    def pr_with_events(self, view: PolicyView, pr: PullRequest) -> PullRequest:
        events = self.label_events(view, pr.number, pr.labels)
        return replace(pr, label_events=events) if events else pr

    def _comments(self, repo: str, number: int) -> tuple[IssueComment, ...]:
        # A new comment moves the issue's updated_at: while it stays, so do the comments.
        updated_at = self.github.feed.updated_at(number)
        remembered = self.comment_memo.get(number)
        if updated_at is not None and remembered is not None and remembered[0] == updated_at:
            return remembered[1]
        comments = self._read_comments(repo, number)
        if updated_at is not None:
            self.comment_memo[number] = (updated_at, comments)
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
