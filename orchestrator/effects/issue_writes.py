"""The issue's side of the writes: what differs with the tracker the issues live in.

:class:`~orchestrator.effects.writes.GitHubWrites` performs every effect; the
code's side (push, pull request, review comments, threads, merge) is GitHub's
whichever tracker holds the issues, and the issue's side goes through the
tracker port. What the tracker changes beyond the port's calls (how a pull
request names its issue, what the planner's labels mean on the issue, who may
approve) is an :class:`IssueWrites`: :class:`GitHubIssueWrites` here, and
:class:`~orchestrator.effects.linear_writes.LinearIssueWrites`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Protocol

from orchestrator.domain.pr_body import ClosingScope
from orchestrator.domain.record_updates import EffectResult
from orchestrator.domain.side_effects import MergePR, SetLabels
from orchestrator.domain.snapshot import IssueRef, StoredRecord
from orchestrator.github.errors import GitHubError, RateLimited
from orchestrator.tracker.base import IssueTracker
from orchestrator.wiring.access import GitHubAccess
from orchestrator.wiring.policy_view import PolicyView


@dataclass(frozen=True)
class WriteTarget:
    """Where an effect lands: the issue, its title, and its record (for the PR number)."""

    repo: str
    number: int
    title: str
    record: StoredRecord | None

    @property
    def ref(self) -> IssueRef:
        return IssueRef(self.repo, self.number)

    @property
    def pr_number(self) -> int | None:
        pr = self.record.workpad.pr if self.record is not None else None
        return pr.number if pr is not None else None


@dataclass(frozen=True)
class TrackerApproval:
    """A merge's approval as the tracker reads it again, right before the merge."""

    # The recorded approvers the tracker answers for (the rest are GitHub's).
    owned: frozenset[str] = frozenset()
    # Of those, the ones whose approval no longer counts, each with why.
    lost: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    # The approval labels the issue shows now.
    labels: frozenset[str] = frozenset()


class IssueWrites(Protocol):
    """What the issue's tracker changes in the writes (module docstring)."""

    tracker: IssueTracker

    def pr_body(self, body: str, target: WriteTarget, view: PolicyView) -> str:
        """The pull request's body as written, naming the issue the tracker's way."""

    def closing_scope(self, target: WriteTarget, view: PolicyView) -> ClosingScope:
        """The issue the pull request may close by keyword (none when it is not GitHub's)."""

    def pr_opened(self, target: WriteTarget, url: str, title: str) -> None:
        """The pull request was opened: the tracker may link it."""

    def comment_text(self, text: str, key: str, view: PolicyView) -> str:
        """A comment's text as the tracker shows it."""

    def set_labels(self, payload: SetLabels, target: WriteTarget, view: PolicyView) -> EffectResult:
        """Labels the planner sets on the issue (not its pull request)."""

    def recheck_approval(
        self, payload: MergePR, target: WriteTarget, view: PolicyView
    ) -> TrackerApproval:
        """The approvers and approval labels the tracker answers for, read again now."""


def problem_result(value: object) -> EffectResult | None:
    """A gateway's refusal as a failed result; a spent budget stops the caller at once."""
    if isinstance(value, RateLimited):
        raise value
    if isinstance(value, GitHubError):
        return EffectResult.failed(str(value))
    return None


class GitHubIssueWrites:
    """The issue is a GitHub issue of the repository: the pull request closes it by keyword,
    labels are labels, and its approval labels are read on GitHub."""

    def __init__(self, github: GitHubAccess) -> None:
        self.github = github
        self.tracker: IssueTracker = github.tracker

    def pr_body(self, body: str, target: WriteTarget, view: PolicyView) -> str:
        return body

    def closing_scope(self, target: WriteTarget, view: PolicyView) -> ClosingScope:
        return ClosingScope(target.repo, target.number, view.flow.pr.web_base)

    def pr_opened(self, target: WriteTarget, url: str, title: str) -> None:
        """Nothing to link: GitHub links a pull request to the issue it names."""

    def comment_text(self, text: str, key: str, view: PolicyView) -> str:
        return text

    def set_labels(self, payload: SetLabels, target: WriteTarget, view: PolicyView) -> EffectResult:
        result = self.github.gateway.set_issue_labels(
            target.repo, target.number, add=payload.add, remove=payload.remove
        )
        return problem_result(result) or EffectResult.done()

    def recheck_approval(
        self, payload: MergePR, target: WriteTarget, view: PolicyView
    ) -> TrackerApproval:
        """Every approver is GitHub's; the issue's labels are read now."""
        labels = self.tracker.labels_now(target.ref) if payload.approval_labels else frozenset()
        return TrackerApproval(labels=labels)
