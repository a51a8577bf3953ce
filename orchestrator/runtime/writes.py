"""How each kind of side effect is performed, with the gateway's idempotent helpers.

Only the side-effect gate calls this. Every write is safe to repeat after a
crash or a lost answer: pull requests are found by branch before one is
created, comments and thread replies by a hidden marker, merges carry the
expected head SHA, and pushes are fast-forward only from the issue's workspace.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from orchestrator.agent import IssueRef as WorkspaceIssue
from orchestrator.agent import RepoSource
from orchestrator.agent.errors import AgentLayerError
from orchestrator.domain.actions import PayloadValue, SideEffect, SideEffectKind
from orchestrator.domain.approval import ApprovalRecheck, approval_lapsed
from orchestrator.domain.pr_body import closes_tracked, merge_human_edits
from orchestrator.domain.record_updates import EffectResult
from orchestrator.domain.results import GITHUB_BODY_LIMIT
from orchestrator.domain.review import REVIEW_COMMENT_MARKER
from orchestrator.domain.snapshot import StoredRecord
from orchestrator.github.errors import GitHubError, RateLimited
from orchestrator.github.outcomes import (
    CommentUpserted,
    HeadMoved,
    Merged,
    NotMergeable,
    PRClosed,
    PRInfo,
    PROpen,
)
from orchestrator.logs import get_logger
from orchestrator.runtime.wiring import AgentWiring, GitHubAccess, PolicyView
from orchestrator.workflow.schema import ReviewCommentMode


def effect_marker(key: str) -> str:
    """The hidden marker that finds the comment or reply written for one idempotency key."""
    return f"<!-- orchestrator-effect: {key} -->"


log = get_logger(__name__)


def _ok(**data: str | int | None) -> EffectResult:
    return EffectResult(ok=True, data=MappingProxyType(dict(data)))


def _failed(error: str, **data: str | int | None) -> EffectResult:
    return EffectResult(ok=False, error=error, data=MappingProxyType(dict(data)))


def _lost(identifier: str, head: str, why: str) -> EffectResult:
    """A push whose commit exists nowhere any more: the turn that made it is re-run."""
    message = f"the commit {head[:12]} of {identifier} was never pushed and is lost: {why}"
    log.warning("turn_commits_lost", issue=identifier, head=head, reason=why)
    return _failed(message, commits_lost=head)


def _text(payload: Mapping[str, PayloadValue], key: str) -> str:
    value = payload.get(key)
    if not isinstance(value, str):
        raise ValueError(f"side effect payload has no text {key!r}")
    return value


def _number(payload: Mapping[str, PayloadValue], key: str) -> int:
    value = payload.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"side effect payload has no number {key!r}")
    return value


def _names(payload: Mapping[str, PayloadValue], key: str) -> tuple[str, ...]:
    value = payload.get(key)
    return tuple(value) if isinstance(value, tuple) else ()


def _problem(value: object) -> EffectResult | None:
    """A helper's refusal as a failed result; a spent budget stops the caller at once."""
    if isinstance(value, RateLimited):
        raise value
    if isinstance(value, GitHubError):
        return _failed(str(value))
    return None


@dataclass(frozen=True)
class WriteTarget:
    """Where an effect lands: the issue, its title, and its record (for the PR number)."""

    repo: str
    number: int
    title: str
    record: StoredRecord | None

    @property
    def pr_number(self) -> int | None:
        pr = self.record.workpad.pr if self.record is not None else None
        return pr.number if pr is not None else None


class GitHubWrites:
    """Performs side effects; raises :class:`RateLimited` when the budget is spent."""

    def __init__(
        self,
        github: GitHubAccess,
        agents: Callable[[], AgentWiring],
        source: Callable[[], RepoSource],
    ) -> None:
        self.github = github
        self._agents = agents
        self._source = source

    def perform(self, effect: SideEffect, target: WriteTarget, view: PolicyView) -> EffectResult:
        handlers: dict[
            SideEffectKind, Callable[[SideEffect, WriteTarget, PolicyView], EffectResult]
        ]
        handlers = {
            SideEffectKind.PUSH_BRANCH: self._push,
            SideEffectKind.CREATE_PR: self._create_pr,
            SideEffectKind.UPDATE_PR_BODY: self._update_pr_body,
            SideEffectKind.UPSERT_WORKPAD: self._upsert_workpad,
            SideEffectKind.UPSERT_REVIEW_COMMENT: self._upsert_review_comment,
            SideEffectKind.SET_LABELS: self._set_labels,
            SideEffectKind.REPLY_THREAD: self._reply_thread,
            SideEffectKind.RESOLVE_THREAD: self._resolve_thread,
            SideEffectKind.REQUEST_REVIEW: self._request_review,
            SideEffectKind.POST_COMMENT: self._post_comment,
            SideEffectKind.MARK_PR_READY: self._mark_ready,
            SideEffectKind.MERGE_PR: self._merge,
            SideEffectKind.CLOSE_ISSUE: self._close_issue,
        }
        try:
            return handlers[effect.kind](effect, target, view)
        except (GitHubError, AgentLayerError, ValueError, OSError) as error:
            return _failed(f"{type(error).__name__}: {error}")

    # ------------------------------------------------------------------- git

    def _push(self, effect: SideEffect, target: WriteTarget, view: PolicyView) -> EffectResult:
        payload = effect.payload
        branch = _text(payload, "branch")
        head = _text(payload, "head_sha")
        wiring = self._agents()
        identifier = f"{target.repo}#{target.number}"
        if not wiring.workspaces.exists(identifier):
            # Another replica may have pushed it and died before the push was recorded:
            # the commit is lost only when GitHub's branch does not have it either.
            if self.github.gateway.branch_head(target.repo, branch) == head:
                log.info("turn_push_found", issue=identifier, head=head, branch=branch)
                return _ok(branch=branch, head_sha=head)
            return _lost(identifier, head, "its workspace is gone")
        workspace = wiring.workspaces.ensure(
            WorkspaceIssue(identifier, target.number, target.title, branch=branch), self._source()
        )
        current = wiring.workspaces.git.run(
            workspace.path, "rev-parse", "--verify", f"refs/heads/{branch}^{{commit}}"
        )
        if current != head:
            return _lost(identifier, head, f"branch {branch} is at {current[:12]} in the workspace")
        # A plain push (no force) is refused by the remote unless it fast-forwards.
        pushed = wiring.workspaces.publish(workspace, self._source())
        return _ok(branch=branch, head_sha=pushed)

    # --------------------------------------------------------- pull requests

    def _create_pr(self, effect: SideEffect, target: WriteTarget, view: PolicyView) -> EffectResult:
        payload = effect.payload
        gateway = self.github.gateway
        settings = view.policy.pr
        branch = _text(payload, "branch")
        if not settings.auto_create:
            found = [pr for pr in gateway.find_pr(target.repo, branch) if pr.is_open]
            if not found:
                return _failed(f"pr.auto_create is off: open a pull request for {branch} by hand")
            return self._pr_opened(target, found[0], view, payload)
        result = gateway.find_or_create_pr(
            target.repo,
            branch=branch,
            base=_text(payload, "base"),
            title=_text(payload, "title"),
            body=_text(payload, "body"),
            draft=bool(payload.get("draft")),
            closed_pr_policy=settings.closed_pr_policy.value,
        )
        problem = _problem(result)
        if problem is not None:
            return problem
        if isinstance(result, PRClosed):
            return _failed(
                f"the pull request #{result.pr.number} of {branch} was closed "
                f"(pr.closed_pr_policy {result.action}); a human decides"
            )
        assert isinstance(result, PROpen)
        return self._pr_opened(target, result.pr, view, payload)

    def _pr_opened(
        self, target: WriteTarget, pr: PRInfo, view: PolicyView, payload: Mapping[str, PayloadValue]
    ) -> EffectResult:
        """The opened pull request's facts; its body when it is the one the effect wrote."""
        required = view.policy.pr.required_labels
        if required:
            problem = _problem(
                self.github.gateway.set_issue_labels(target.repo, pr.number, add=required)
            )
            if problem is not None:
                return problem
        body = payload.get("body")
        ours = isinstance(body, str) and pr.body.strip() == body.strip()
        notes = "; ".join(_names(payload, "notes")) or None
        return _ok(
            number=pr.number,
            url=pr.url,
            head_sha=pr.head_sha,
            body=pr.body if ours else None,
            notes=notes if ours else None,
        )

    def _update_pr_body(
        self, effect: SideEffect, target: WriteTarget, view: PolicyView
    ) -> EffectResult:
        """Rewrite the description, keeping what people changed since the runtime last wrote it."""
        number = _number(effect.payload, "pr_number")
        body = _text(effect.payload, "body")
        previous = effect.payload.get("previous")
        notes = list(_names(effect.payload, "notes"))
        written = [body]

        def compose(current: str) -> str:
            if isinstance(previous, str):
                merged = merge_human_edits(previous, current, body)
                notes.extend(merged.notes)
                text = merged.text
                closing = f"Closes #{target.number}"
                if view.policy.pr.closes_issue and not closes_tracked(
                    text, target.repo, target.number
                ):
                    text = f"{text}\n\n{closing}"
                written[0] = text[:GITHUB_BODY_LIMIT]
            return written[0]

        result = self.github.gateway.update_pr_body(target.repo, number, compose)
        return _problem(result) or _ok(
            changed=int(bool(result)), body=written[0], notes="; ".join(notes) or None
        )

    def _request_review(
        self, effect: SideEffect, target: WriteTarget, view: PolicyView
    ) -> EffectResult:
        number = _number(effect.payload, "pr_number")
        result = self.github.gateway.request_review(
            target.repo, number, _names(effect.payload, "reviewers")
        )
        return _problem(result) or _ok(changed=int(bool(result)))

    def _mark_ready(
        self, effect: SideEffect, target: WriteTarget, view: PolicyView
    ) -> EffectResult:
        result = self.github.gateway.mark_ready_for_review(_text(effect.payload, "node_id"))
        return _problem(result) or _ok(ready=int(bool(result)))

    def _recheck_approval(
        self, effect: SideEffect, target: WriteTarget, view: PolicyView
    ) -> ApprovalRecheck:
        """The merge's approval read again, uncached: a writer demoted a minute ago no longer
        approves, and a label approval needs one of its labels still on the issue or PR."""
        payload = effect.payload
        gateway = self.github.gateway
        lost = {
            login: f"the approver {login} no longer has write permission"
            for login in _names(payload, "approvers")
            if not gateway.can_write(target.repo, login, fresh=True)
        }
        labelled = bool(_names(payload, "approval_labels"))
        return ApprovalRecheck(lost, self._labels_now(target, payload) if labelled else frozenset())

    def _labels_now(
        self, target: WriteTarget, payload: Mapping[str, PayloadValue]
    ) -> frozenset[str]:
        present: set[str] = set()
        for number in self._labelled(target, _number(payload, "pr_number")):
            present |= self.github.gateway.issue_labels(target.repo, number)
        return frozenset(present)

    def _labelled(self, target: WriteTarget, pr_number: int) -> set[int]:
        """The GitHub issue and pull request whose labels may carry an approval."""
        return {target.number, pr_number}

    def _merge(self, effect: SideEffect, target: WriteTarget, view: PolicyView) -> EffectResult:
        payload = effect.payload
        head = _text(payload, "head_sha")
        lapsed = approval_lapsed(
            _names(payload, "approvers"),
            _names(payload, "approval_labels"),
            required=bool(payload.get("approval_required")),
            recheck=self._recheck_approval(effect, target, view),
        )
        if lapsed is not None:
            return _failed(f"not merged: {lapsed}")
        result = self.github.gateway.merge_if_head_matches(
            target.repo,
            _number(payload, "pr_number"),
            head,
            _text(payload, "method"),
        )
        if isinstance(result, Merged):
            return _ok(merge_commit_sha=result.commit_sha, already=int(result.already))
        if isinstance(result, HeadMoved):
            actual = result.actual[:12] if result.actual else "unknown"
            return _failed(f"head moved from {head[:12]} to {actual}: nothing merged")
        if isinstance(result, NotMergeable):
            return _failed(f"not mergeable: {result.reason}")
        problem = _problem(result)
        assert problem is not None
        return problem

    # -------------------------------------------------------------- comments

    def _upsert(self, repo: str, number: int, marker: str, body: str) -> EffectResult:
        result = self.github.gateway.upsert_comment(repo, number, marker, body)
        problem = _problem(result)
        if problem is not None:
            return problem
        assert isinstance(result, CommentUpserted)
        return _ok(comment_id=result.comment_id, action=result.action.value)

    def _upsert_workpad(
        self, effect: SideEffect, target: WriteTarget, view: PolicyView
    ) -> EffectResult:
        payload = effect.payload
        return self._upsert(
            target.repo, target.number, _text(payload, "marker"), _text(payload, "body")
        )

    def _upsert_review_comment(
        self, effect: SideEffect, target: WriteTarget, view: PolicyView
    ) -> EffectResult:
        payload = effect.payload
        number = _number(payload, "pr_number")
        body = _text(payload, "body")
        mode = view.policy.pr.review_comment_mode
        if mode is ReviewCommentMode.OFF:
            # The pass is kept in the workpad only; nothing is written on the pull request.
            return _ok()
        if mode is ReviewCommentMode.CREATE:
            marker = effect_marker(effect.idempotency_key)
            return self._upsert(target.repo, number, marker, f"{body}\n\n{marker}")
        return self._upsert(target.repo, number, REVIEW_COMMENT_MARKER, body)

    def _post_comment(
        self, effect: SideEffect, target: WriteTarget, view: PolicyView
    ) -> EffectResult:
        marker = effect_marker(effect.idempotency_key)
        body = f"{_text(effect.payload, 'body')}\n\n{marker}"
        return self._upsert(target.repo, target.number, marker, body)

    # --------------------------------------------------------------- threads

    def _reply_thread(
        self, effect: SideEffect, target: WriteTarget, view: PolicyView
    ) -> EffectResult:
        number = target.pr_number
        if number is None:
            return _failed("no pull request is recorded for this issue")
        marker = effect_marker(effect.idempotency_key)
        body = f"{_text(effect.payload, 'body')}\n\n{marker}"
        result = self.github.gateway.reply_to_thread(
            target.repo, number, _text(effect.payload, "thread_id"), body, marker
        )
        return _problem(result) or _ok(reply_id=str(result))

    def _resolve_thread(
        self, effect: SideEffect, target: WriteTarget, view: PolicyView
    ) -> EffectResult:
        result = self.github.gateway.resolve_thread(_text(effect.payload, "thread_id"))
        return _problem(result) or _ok(resolved=int(bool(result)))

    # ---------------------------------------------------------------- issues

    def _set_labels(
        self, effect: SideEffect, target: WriteTarget, view: PolicyView
    ) -> EffectResult:
        # A label on the pull request (``on_number``) or, by default, on the issue.
        number = effect.payload.get("on_number")
        result = self.github.gateway.set_issue_labels(
            target.repo,
            number if isinstance(number, int) and number > 0 else target.number,
            add=_names(effect.payload, "add"),
            remove=_names(effect.payload, "remove"),
        )
        return _problem(result) or _ok()

    def _close_issue(
        self, effect: SideEffect, target: WriteTarget, view: PolicyView
    ) -> EffectResult:
        reason = effect.payload.get("reason")
        gateway = self.github.gateway
        # A completion state with a label of its own (merge.completion_state) is shown first.
        labels = view.policy.tracker.state_labels
        wanted = labels.get(view.policy.merge.completion_state)
        if wanted:
            others = set(labels.values()) - {wanted} - set(view.flow.approval_labels)
            problem = _problem(
                gateway.set_issue_labels(target.repo, target.number, add=[wanted], remove=others)
            )
            if problem is not None:
                return problem
        result = gateway.close_issue(
            target.repo, target.number, reason if isinstance(reason, str) else "completed"
        )
        return _problem(result) or _ok(changed=int(bool(result)))


def payload_json(payload: Mapping[str, PayloadValue]) -> dict[str, Any]:
    """A side effect's payload as JSON for the outbox (tuples become lists)."""
    return {
        key: list(value) if isinstance(value, tuple) else value for key, value in payload.items()
    }


def payload_from_json(document: Mapping[str, Any]) -> dict[str, PayloadValue]:
    """The payload stored in the outbox as the domain's values again (lists become tuples)."""
    payload: dict[str, PayloadValue] = {}
    for key, value in document.items():
        if isinstance(value, list):
            payload[key] = tuple(str(item) for item in value)
        elif value is None or isinstance(value, str | int | bool):
            payload[key] = value
    return payload
