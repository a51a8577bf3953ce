"""What the gates and a blocked issue need beyond the issue feed: label events, replies.

Who added an approval label is read only while the policy wants a human's
approval by label; the comments of a blocked issue only while it waits for a
reply to its question. The issue's side comes from its tracker
(:meth:`~orchestrator.tracker.base.IssueTracker.with_details`); the pull
request's label events from GitHub.
"""

from __future__ import annotations

from dataclasses import replace

from orchestrator.domain.flow_blocked import REPLY_RESUMES
from orchestrator.domain.phases import Phase
from orchestrator.domain.policy import ApprovalSource
from orchestrator.domain.snapshot import PullRequest, TrackedIssue
from orchestrator.store.records import RecordRow
from orchestrator.tracker.base import DetailsAsk
from orchestrator.tracker.github_issues import approval_events
from orchestrator.wiring.access import GitHubAccess
from orchestrator.wiring.policy_view import PolicyView


def approval_matters(view: PolicyView) -> bool:
    """Whether the policy wants a human's approval that a label can give."""
    merge = view.flow.merge
    return merge.require_human_approval and merge.approval_source in (
        ApprovalSource.LABEL,
        ApprovalSource.LABEL_OR_REVIEW,
    )


class IssueDetails:
    """Adds label events and replies to the issues and pull requests of one repository."""

    def __init__(self, github: GitHubAccess) -> None:
        self.github = github

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
        ask = DetailsAsk(
            flow=view.flow,
            approvers=tuple(view.policy.tracker.approvers),
            approval=approval_matters(view),
            replies_since=record.phase_since if record is not None and awaits_reply else None,
        )
        return self.github.tracker.with_details(issue, ask)

    def pr_with_events(self, view: PolicyView, pr: PullRequest) -> PullRequest:
        if not approval_matters(view):
            return pr
        labels = pr.labels & view.flow.approval_labels
        events = approval_events(self.github.gateway, view.repo, pr.number, labels)
        return replace(pr, label_events=events) if events else pr
