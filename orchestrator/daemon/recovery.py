"""Restart recovery: runs a crash left open, and side effects recorded without a result.

Runs still open are marked interrupted; their issues have no fresh outcome, so
the planner runs the phase's turn again. Each outbox intent without a result is
looked up on GitHub (the pull request by branch, the comment by its marker, the
merge and the close by the pull request's and issue's state, the push by the
branch head): what happened is recorded as done and folded into the issue's
record; what cannot be confirmed is marked failed, and the planner asks for it
again if it is still needed, through the same find-before-create helpers. No
intent is ever blindly repeated.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from orchestrator.domain.accounts import same_account
from orchestrator.domain.actions import SideEffect, SideEffectKind
from orchestrator.domain.record_updates import EffectResult, apply_effect_result
from orchestrator.domain.review_decisions import REVIEW_COMMENT_MARKER
from orchestrator.domain.side_effects import (
    CloseIssue,
    CreatePR,
    MergePR,
    PostComment,
    PushBranch,
    SetLabels,
    UpdatePRBody,
    UpsertReviewComment,
    UpsertWorkpad,
    effect_marker,
    payload_from_json,
)
from orchestrator.domain.snapshot import IssueRef
from orchestrator.github.errors import GitHubError, RateLimited
from orchestrator.github.gateway import carries_marker
from orchestrator.github.outcomes import PRInfo
from orchestrator.logs import get_logger
from orchestrator.store.database import Database
from orchestrator.store.models import SideEffect as OutboxRow
from orchestrator.store.records import RecordStore
from orchestrator.wiring.access import GitHubAccess

log = get_logger(__name__)


@dataclass(frozen=True)
class RecoveryReport:
    """What start-up recovery found."""

    interrupted_runs: int = 0
    confirmed: int = 0
    unconfirmed: int = 0
    unchecked: int = 0


def ref_of_key(key: str) -> IssueRef:
    """The issue an idempotency key (``owner/repo#12:kind:target``) belongs to."""
    issue = key.split(":", 1)[0]
    repo, _, number = issue.rpartition("#")
    if not repo or not number.isdigit():
        raise ValueError(f"not an idempotency key: {key!r}")
    return IssueRef(repo, int(number))


_ok = EffectResult.done


def _on_the_issue(effect: SideEffect) -> bool:
    """Whether the effect writes to the issue itself (not its branch or pull request)."""
    payload = effect.payload
    if isinstance(payload, SetLabels):
        on = payload.on_number
        return not (on is not None and on > 0 and on != effect.issue.number)
    return isinstance(payload, UpsertWorkpad | PostComment | CloseIssue)


class IntentChecker:
    """Finds out whether one recorded intent took effect: on GitHub, or in the tracker
    for the issue's side."""

    def __init__(self, github: GitHubAccess) -> None:
        self.github = github

    def confirm(self, effect: SideEffect, pr_number: int | None) -> EffectResult | None:
        """The effect's result if GitHub shows it happened; None when it cannot be confirmed."""
        if _on_the_issue(effect):
            # The issue's side (workpad, comment, labels or state, closed) is its tracker's.
            return self.github.tracker.confirm(effect)
        repo, key = effect.issue.repo, effect.idempotency_key
        match effect.payload:
            case CreatePR() as create:
                return self._pull_request(repo, create)
            case PushBranch() as push:
                return self._branch(repo, push)
            case UpsertReviewComment() as review:
                return self._review_comment(repo, review, key)
            case MergePR() as merge:
                return self._merge(repo, merge)
            case SetLabels() as labels:
                return self._pr_labels(repo, labels)
            case UpdatePRBody() as update:
                return self._pr_body(repo, update)
            case _:
                return None

    def _pull_request(self, repo: str, payload: CreatePR) -> EffectResult | None:
        for pr in self.github.gateway.find_pr(repo, payload.branch):
            if pr.is_open:
                return _ok(number=pr.number, url=pr.url, head_sha=pr.head_sha)
        return None

    def _branch(self, repo: str, payload: PushBranch) -> EffectResult | None:
        sha = self.github.gateway.ref_head(repo, payload.branch)
        if sha is not None and sha == payload.head_sha:
            return _ok(branch=payload.branch, head_sha=sha)
        return None

    def _comment(
        self, repo: str, number: int, marker: str, body: str | None
    ) -> EffectResult | None:
        login = self.github.login
        for item in self.github.gateway.issue_comments(repo, number):
            text = str(item.get("body") or "")
            author = (item.get("user") or {}).get("login")
            if not same_account(author, login) or not carries_marker(text, marker):
                continue
            if body is None or text == body:
                return _ok(comment_id=int(item["id"]))
        return None

    def _review_comment(
        self, repo: str, payload: UpsertReviewComment, key: str
    ) -> EffectResult | None:
        found = self._comment(repo, payload.pr_number, REVIEW_COMMENT_MARKER, payload.body)
        if found is None:
            found = self._comment(repo, payload.pr_number, effect_marker(key), None)
        return found

    def _merge(self, repo: str, payload: MergePR) -> EffectResult | None:
        pr = self.github.gateway.get_pr(repo, payload.pr_number)
        if isinstance(pr, RateLimited):
            raise pr
        if isinstance(pr, PRInfo) and pr.merged and pr.head_sha == payload.head_sha:
            return _ok(merge_commit_sha=pr.merge_commit_sha, already=1)
        return None

    def _pr_labels(self, repo: str, payload: SetLabels) -> EffectResult | None:
        """Labels on the pull request (``on_number``)."""
        assert payload.on_number is not None
        labels = self.github.gateway.issue_labels(repo, payload.on_number)
        return _ok() if payload.held_by(labels) else None

    def _pr_body(self, repo: str, payload: UpdatePRBody) -> EffectResult | None:
        pr = self.github.gateway.get_pr(repo, payload.pr_number)
        if isinstance(pr, RateLimited):
            raise pr
        if isinstance(pr, PRInfo) and pr.body == payload.body:
            return _ok(changed=0, body=pr.body)
        return None


def _effect_of(row: OutboxRow) -> SideEffect:
    """The side effect an outbox entry recorded (raises PayloadError when it does not fit)."""
    kind = SideEffectKind(row.kind)
    return SideEffect(
        issue=ref_of_key(row.idempotency_key),
        payload=payload_from_json(kind, row.payload or {}),
        idempotency_key=row.idempotency_key,
    )


def _fold(
    records: RecordStore, issue_id: int, effect: SideEffect, result: EffectResult, at: datetime
) -> None:
    records.update(issue_id, lambda record: apply_effect_result(record, effect, result, at), now=at)


def recover_after_restart(
    *,
    db: Database,
    records: RecordStore,
    github: GitHubAccess,
    now: Callable[[], datetime],
    replica_id: str | None,
) -> RecoveryReport:
    """Close what a crash left open; see the module documentation."""
    interrupted = db.runs.interrupt_unfinished(now=now(), replica_id=replica_id)
    if interrupted:
        log.warning("runs_interrupted", count=interrupted)
    checker = IntentChecker(github)
    confirmed = unconfirmed = unchecked = 0
    pending = db.outbox.unfinished()
    for position, row in enumerate(pending):
        try:
            effect = _effect_of(row)
        except ValueError as error:
            log.error("intent_unreadable", key=row.idempotency_key, error=str(error))
            unchecked += 1
            continue
        issue = records.get_by_id(row.issue_id) if row.issue_id is not None else None
        pr = issue.record.workpad.pr if issue is not None else None
        try:
            result = checker.confirm(effect, pr.number if pr is not None else None)
        except RateLimited:
            unchecked += len(pending) - position
            log.warning("intent_recheck_deferred", remaining=len(pending) - position)
            break
        except GitHubError as error:
            log.warning("intent_recheck_failed", key=row.idempotency_key, error=str(error))
            unchecked += 1
            continue
        if result is None:
            db.outbox.fail(
                row.idempotency_key,
                error={"error": "not confirmed after a restart; planned again if still needed"},
                now=now(),
            )
            unconfirmed += 1
            log.info("intent_unconfirmed", key=row.idempotency_key, kind=row.kind)
            continue
        db.outbox.complete(row.idempotency_key, result=dict(result.data), now=now())
        confirmed += 1
        log.info("intent_confirmed", key=row.idempotency_key, kind=row.kind)
        if issue is not None:
            _fold(records, issue.issue_id, effect, result, now())
    return RecoveryReport(interrupted, confirmed, unconfirmed, unchecked)
