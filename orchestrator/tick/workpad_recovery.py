"""Rebuild an issue's record from its workpad comment when the database has no row for it.

The workpad is the bot's comment on the issue, in its tracker (a Linear issue's on
Linear); the review comment and everything else that authorizes a merge is read
from GitHub.

The workpad comment is a recovery hint, never an authority: it lives on GitHub
where people with write access can edit it. So a record is adopted only from a
comment the bot wrote as a workpad (its first line is the machine marker) and
nobody else edited since; a comment edited by someone else is kept as text under
a recovery note and the issue waits for an operator. Fields that would let a
merge happen are never taken from the comment: the self-review is re-established
from the bot's own, unedited review comment for that head, or dropped so the head
is reviewed again; approvals and checks are always read from GitHub anyway.
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import datetime

from orchestrator.domain.accounts import same_account
from orchestrator.domain.phases import Phase, WaitingReason
from orchestrator.domain.review_decisions import REVIEW_COMMENT_MARKER
from orchestrator.domain.snapshot import IssueRef, StoredRecord, TrackedIssue
from orchestrator.domain.workpad import (
    ReviewState,
    WorkpadRecord,
    WorkpadStatus,
    parse_workpad,
    recovery_record,
)
from orchestrator.github.errors import GitHubError, RateLimited
from orchestrator.github.gateway import carries_marker
from orchestrator.logs import get_logger
from orchestrator.store.records import RecordRow, RecordStore, RecoveryNote
from orchestrator.tracker.base import OwnComment, TrackerError
from orchestrator.wiring.access import GitHubAccess
from orchestrator.wiring.policy_view import PolicyView

log = get_logger(__name__)

_REVIEW_HEAD = re.compile(r"^<!--\s*orchestrator-review-head:\s*([0-9a-f]{40})\s*-->\s*$", re.M)


class _TryLater(Exception):
    """GitHub could not answer now; the recovery is tried again on a later tick."""


class WorkpadRecovery:
    """Adopts a record from the bot's own workpad comment, re-checking what authorizes merges."""

    def __init__(self, github: GitHubAccess, records: RecordStore) -> None:
        self.github = github
        self.records = records

    def recover(
        self, view: PolicyView, issue: TrackedIssue, now: datetime
    ) -> tuple[RecordRow | None, bool]:
        """(the adopted row or None, whether the issue has no workpad at all)."""
        ref = issue.ref
        try:
            found = self._own_workpads(ref)
            if not found:
                return None, True
            if len(found) > 1:
                ids = ", ".join(item.id for item in found)
                return self._untrusted(view, issue, now, found[0], f"several workpads ({ids})")
            comment = found[0]
            editor = self._editor(comment.id, comment.node_id)
            if editor is not None:
                problem = f"the comment was edited by {editor}, not by the orchestrator"
                return self._untrusted(view, issue, now, comment, problem)
            body = comment.body
            marker = view.flow.workpad_marker
            parsed = parse_workpad(
                body, marker=marker, default_phase=view.flow.default_phase, now=now
            )
            if parsed.status is WorkpadStatus.MISSING:
                return None, True
            if parsed.status is WorkpadStatus.RECOVERED:
                return self._untrusted(view, issue, now, comment, parsed.problem or "unreadable")
            workpad = parsed.record
            prefix = view.policy.pr.branch_prefix
            if workpad.branch is not None and not workpad.branch.startswith(prefix):
                problem = f"branch {workpad.branch!r} is not named with the prefix {prefix!r}"
                return self._untrusted(view, issue, now, comment, problem)
            workpad = self._with_verified_review(view.repo, workpad)
        except _TryLater as later:
            log.warning("workpad_recovery_deferred", issue=str(ref), reason=str(later))
            return None, False
        record = StoredRecord(
            phase=workpad.phase,
            phase_since=workpad.waiting.since or now,
            workpad=workpad,
            rework_cycles=workpad.rework_cycles,
            waiting_reason=workpad.waiting.reason,
            mirrored_workpad=parsed.record,
        )
        log.info(
            "workpad_recovered",
            issue=str(ref),
            phase=workpad.phase.value,
            reviewed_head=workpad.review.last_reviewed_head_sha,
        )
        row = self.records.create(
            ref,
            title=issue.title,
            record=record,
            now=now,
            reason="recovered from the workpad comment",
            labels=sorted(issue.labels),
        )
        return row, False

    # ------------------------------------------------------------ reading

    def _own_workpads(self, ref: IssueRef) -> list[OwnComment]:
        try:
            return self.github.tracker.own_workpads(ref)
        except (GitHubError, TrackerError) as error:
            raise _TryLater(str(error)) from None

    def _editor(self, comment_id: str, node_id: str | None) -> str | None:
        """Who other than the bot last edited the comment (None: unedited or edited by the bot,
        or a comment only its author can edit)."""
        if node_id is None:
            return None
        if not node_id:
            raise _TryLater(f"comment {comment_id} has no node id")
        editor = self.github.gateway.comment_editor(node_id)
        if isinstance(editor, RateLimited):
            raise editor
        if isinstance(editor, GitHubError):
            raise _TryLater(str(editor))
        if editor is None or same_account(editor, self.github.login):
            return None
        return editor

    def _with_verified_review(self, repo: str, workpad: WorkpadRecord) -> WorkpadRecord:
        """The workpad with its self-review kept only if the bot's own comment shows that head."""
        review = workpad.review
        head = review.last_reviewed_head_sha
        if head is None:
            return workpad
        if workpad.pr is not None and head in self._reviewed_heads(repo, workpad.pr.number):
            return workpad
        log.warning("workpad_review_unverified", head=head)
        return replace(workpad, review=ReviewState(last_fixed_head_sha=review.last_fixed_head_sha))

    def _reviewed_heads(self, repo: str, pr_number: int) -> set[str]:
        login = self.github.login
        heads: set[str] = set()
        try:
            items = self.github.gateway.issue_comments(repo, pr_number)
        except GitHubError as error:
            raise _TryLater(str(error)) from None
        for item in items:
            body = str(item.get("body") or "")
            if not same_account((item.get("user") or {}).get("login"), login):
                continue
            last = body.rstrip().rsplit("\n", 1)[-1]
            per_pass = (
                last.startswith("<!-- orchestrator-effect:") and ":upsert_review_comment:" in last
            )
            if not carries_marker(body, REVIEW_COMMENT_MARKER) and not per_pass:
                continue
            if self._editor(str(item.get("id")), str(item.get("node_id") or "")) is not None:
                continue
            heads.update(_REVIEW_HEAD.findall(body))
        return heads

    # ------------------------------------------------------------ untrusted

    def _untrusted(
        self,
        view: PolicyView,
        issue: TrackedIssue,
        now: datetime,
        comment: OwnComment,
        problem: str,
    ) -> tuple[RecordRow | None, bool]:
        """Keep the comment's text under a recovery note; the issue waits for an operator."""
        log.warning("workpad_untrusted", issue=str(issue.ref), problem=problem)
        record = StoredRecord(
            phase=Phase.BLOCKED,
            phase_since=now,
            workpad=recovery_record(now),
            waiting_reason=WaitingReason.METADATA_RECOVERY_REQUIRED,
        )
        row = self.records.create(
            issue.ref,
            title=issue.title,
            record=record,
            now=now,
            reason="the workpad comment cannot be trusted",
            labels=sorted(issue.labels),
            recovery=RecoveryNote(raw=comment.body, problem=problem),
        )
        return row, False
