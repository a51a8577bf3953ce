"""How each kind of side effect is performed: the code's side with the gateway's
idempotent helpers, the issue's side through the tracker port (and what the tracker
changes, :mod:`orchestrator.effects.issue_writes`).

Only the side-effect gate calls this. Every write is safe to repeat after a
crash or a lost answer: pull requests are found by branch before one is
created, comments and thread replies by a hidden marker, merges carry the
expected head SHA, and pushes are fast-forward only from the issue's workspace.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from orchestrator.agent import IssueRef as WorkspaceIssue
from orchestrator.agent import RepoSource
from orchestrator.agent.errors import AgentLayerError, PushRefused
from orchestrator.domain.actions import SideEffect
from orchestrator.domain.agent_files.errors import GITHUB_BODY_LIMIT
from orchestrator.domain.approval import ApprovalRecheck, approval_lapsed
from orchestrator.domain.policy import MergeMethod
from orchestrator.domain.pr_body import (
    closes_tracked,
    merge_commit_text,
    merge_human_edits,
)
from orchestrator.domain.record_updates import EffectResult
from orchestrator.domain.review_decisions import REVIEW_COMMENT_MARKER
from orchestrator.domain.side_effects import (
    CloseIssue,
    CreatePR,
    MarkPRReady,
    MergePR,
    PostComment,
    PushBranch,
    ReplyThread,
    RequestReview,
    ResolveThread,
    SetLabels,
    UpdatePRBody,
    UpsertReviewComment,
    UpsertWorkpad,
    effect_marker,
)
from orchestrator.effects.issue_writes import IssueWrites, WriteTarget, problem_result
from orchestrator.github.errors import GitHubError
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
from orchestrator.tracker.base import TrackerError
from orchestrator.wiring.access import GitHubAccess
from orchestrator.wiring.agents import AgentWiring
from orchestrator.wiring.policy_view import PolicyView
from orchestrator.workflow.schema import ReviewCommentMode

log = get_logger(__name__)


_ok = EffectResult.done
_failed = EffectResult.failed
_problem = problem_result


def _refused(identifier: str, head: str, error: PushRefused) -> EffectResult:
    """A push the daemon refused for what the agent's commits say: the turn counts as failed
    and the next one is told why (the commits stay in the workspace, to be put right)."""
    log.warning("turn_push_refused", issue=identifier, head=head, reason=error.problem)
    return _failed(str(error), push_refused=head)


def _lost(identifier: str, head: str, why: str) -> EffectResult:
    """A push whose commit exists nowhere any more: the turn that made it is re-run."""
    message = f"the commit {head[:12]} of {identifier} was never pushed and is lost: {why}"
    log.warning("turn_commits_lost", issue=identifier, head=head, reason=why)
    return _failed(message, commits_lost=head)


class GitHubWrites:
    """Performs side effects; raises :class:`RateLimited` when the budget is spent."""

    def __init__(
        self,
        github: GitHubAccess,
        issue: IssueWrites,
        agents: Callable[[], AgentWiring],
        source: Callable[[], RepoSource],
    ) -> None:
        self.github = github
        self.issue = issue
        self.tracker = issue.tracker
        self._agents = agents
        self._source = source

    def perform(self, effect: SideEffect, target: WriteTarget, view: PolicyView) -> EffectResult:
        try:
            return self._perform(effect, target, view)
        except TrackerError as error:
            return _failed(error.summary)
        except (GitHubError, AgentLayerError, ValueError, OSError) as error:
            return _failed(f"{type(error).__name__}: {error}")

    def _perform(self, effect: SideEffect, target: WriteTarget, view: PolicyView) -> EffectResult:
        key = effect.idempotency_key
        match effect.payload:
            case PushBranch() as push:
                return self._push(push, target, view)
            case CreatePR() as create:
                return self._create_pr(create, target, view)
            case UpdatePRBody() as update:
                return self._update_pr_body(update, target, view)
            case UpsertWorkpad() as workpad:
                return self.tracker.upsert_workpad(target.ref, workpad.marker, workpad.body)
            case UpsertReviewComment() as review:
                return self._upsert_review_comment(review, key, target, view)
            case SetLabels() as labels:
                return self._set_labels(labels, target, view)
            case ReplyThread() as reply:
                return self._reply_thread(reply, key, target)
            case ResolveThread() as resolve:
                result = self.github.gateway.resolve_thread(resolve.thread_id)
                return _problem(result) or _ok(resolved=int(bool(result)))
            case RequestReview() as request:
                result = self.github.gateway.request_review(
                    target.repo, request.pr_number, request.reviewers
                )
                return _problem(result) or _ok(changed=int(bool(result)))
            case PostComment() as comment:
                return self._post_comment(comment, key, target, view)
            case MarkPRReady() as ready:
                result = self.github.gateway.mark_ready_for_review(ready.node_id)
                return _problem(result) or _ok(ready=int(bool(result)))
            case MergePR() as merge:
                return self._merge(merge, target, view)
            case CloseIssue() as close:
                return self._close_issue(close, target, view)

    # ------------------------------------------------------------------- git

    def _push(self, payload: PushBranch, target: WriteTarget, view: PolicyView) -> EffectResult:
        branch, head = payload.branch, payload.head_sha
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
        # A plain push (no force) is refused by the remote unless it fast-forwards. Commits
        # that may land on the base branch as they are must close no other issue.
        closing = self.issue.closing_scope(target, view) if view.flow.merge.lands_commits else None
        try:
            pushed = wiring.workspaces.publish(workspace, self._source(), closing=closing)
        except PushRefused as error:
            return _refused(identifier, head, error)
        return _ok(branch=branch, head_sha=pushed)

    # --------------------------------------------------------- pull requests

    def _create_pr(self, payload: CreatePR, target: WriteTarget, view: PolicyView) -> EffectResult:
        payload = replace(payload, body=self.issue.pr_body(payload.body, target, view))
        result = self._open_pr(payload, target, view)
        url = result.data.get("url")
        if result.ok and isinstance(url, str):
            self.issue.pr_opened(target, url, payload.title)
        return result

    def _open_pr(self, payload: CreatePR, target: WriteTarget, view: PolicyView) -> EffectResult:
        gateway = self.github.gateway
        settings = view.policy.pr
        branch = payload.branch
        if not settings.auto_create:
            found = [pr for pr in gateway.find_pr(target.repo, branch) if pr.is_open]
            if not found:
                return _failed(f"pr.auto_create is off: open a pull request for {branch} by hand")
            return self._pr_opened(target, found[0], view, payload)
        result = gateway.find_or_create_pr(
            target.repo,
            branch=branch,
            base=payload.base or "",
            title=payload.title,
            body=payload.body,
            draft=payload.draft,
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
        self, target: WriteTarget, pr: PRInfo, view: PolicyView, payload: CreatePR
    ) -> EffectResult:
        """The opened pull request's facts; its body when it is the one the effect wrote."""
        required = view.policy.pr.required_labels
        if required:
            problem = _problem(
                self.github.gateway.set_issue_labels(target.repo, pr.number, add=required)
            )
            if problem is not None:
                return problem
        ours = pr.body.strip() == payload.body.strip()
        notes = "; ".join(payload.notes) or None
        return _ok(
            number=pr.number,
            url=pr.url,
            head_sha=pr.head_sha,
            body=pr.body if ours else None,
            notes=notes if ours else None,
        )

    def _update_pr_body(
        self, payload: UpdatePRBody, target: WriteTarget, view: PolicyView
    ) -> EffectResult:
        """Rewrite the description, keeping what people changed since the runtime last wrote it."""
        number, previous = payload.pr_number, payload.previous
        body = self.issue.pr_body(payload.body, target, view)
        scope = self.issue.closing_scope(target, view)
        notes = list(payload.notes)
        written = [body]

        def compose(current: str) -> str:
            if isinstance(previous, str):
                merged = merge_human_edits(previous, current, body)
                notes.extend(merged.notes)
                text = merged.text
                # A pull request closes its issue by keyword only where it is GitHub's.
                closes = view.policy.pr.closes_issue and scope.number is not None
                if closes and not closes_tracked(
                    text, target.repo, target.number, web_base=view.flow.pr.web_base
                ):
                    text = f"{text}\n\nCloses #{target.number}"
                written[0] = text[:GITHUB_BODY_LIMIT]
            return written[0]

        result = self.github.gateway.update_pr_body(target.repo, number, compose)
        return _problem(result) or _ok(
            changed=int(bool(result)), body=written[0], notes="; ".join(notes) or None
        )

    def _recheck_approval(
        self, payload: MergePR, target: WriteTarget, view: PolicyView
    ) -> ApprovalRecheck:
        """The merge's approval read again, uncached: a writer demoted a minute ago no longer
        approves, and a label approval needs one of its labels still on the issue or PR.
        The tracker answers for its own approvers and the issue's labels."""
        tracked = self.issue.recheck_approval(payload, target, view)
        gateway = self.github.gateway
        lost = dict(tracked.lost)
        for login in payload.approvers:
            if login not in tracked.owned and not gateway.can_write(target.repo, login, fresh=True):
                lost[login] = f"the approver {login} no longer has write permission"
        labels = tracked.labels
        if payload.approval_labels:
            labels |= gateway.issue_labels(target.repo, payload.pr_number)
        return ApprovalRecheck(lost, labels)

    def _merge(self, payload: MergePR, target: WriteTarget, view: PolicyView) -> EffectResult:
        head = payload.head_sha
        lapsed = approval_lapsed(
            payload.approvers,
            payload.approval_labels,
            required=payload.approval_required,
            recheck=self._recheck_approval(payload, target, view),
        )
        if lapsed is not None:
            return _failed(f"not merged: {lapsed}")
        number = payload.pr_number
        method = MergeMethod(payload.method)
        commit = None
        if method is not MergeMethod.REBASE:
            pr = self.github.gateway.get_pr(target.repo, number)
            if not isinstance(pr, PRInfo):
                return _problem(pr) or _failed("the pull request could not be read")
            commit = merge_commit_text(
                method,
                pr_number=number,
                pr_title=pr.title,
                pr_body=pr.body,
                head_label=f"{target.repo.split('/')[0]}/{pr.head_branch}",
                scope=self.issue.closing_scope(target, view),
            )
        result = self.github.gateway.merge_if_head_matches(
            target.repo, number, head, method.value, commit=commit
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

    def _upsert_review_comment(
        self, payload: UpsertReviewComment, key: str, target: WriteTarget, view: PolicyView
    ) -> EffectResult:
        repo, number, body = target.repo, payload.pr_number, payload.body
        mode = view.policy.pr.review_comment_mode
        if mode is ReviewCommentMode.OFF:
            # The pass is kept in the workpad only; nothing is written on the pull request.
            return _ok()
        if mode is ReviewCommentMode.CREATE:
            marker = effect_marker(key)
            return self._upsert(repo, number, marker, f"{body}\n\n{marker}")
        return self._upsert(repo, number, REVIEW_COMMENT_MARKER, body)

    # --------------------------------------------------------------- threads

    def _reply_thread(self, payload: ReplyThread, key: str, target: WriteTarget) -> EffectResult:
        number = target.pr_number
        if number is None:
            return _failed("no pull request is recorded for this issue")
        marker = effect_marker(key)
        body = f"{payload.body}\n\n{marker}"
        result = self.github.gateway.reply_to_thread(
            target.repo, number, payload.thread_id, body, marker
        )
        return _problem(result) or _ok(reply_id=str(result))

    # ---------------------------------------------------------------- issues

    def _set_labels(
        self, payload: SetLabels, target: WriteTarget, view: PolicyView
    ) -> EffectResult:
        # A label on the pull request (``on_number``) or, by default, on the issue.
        number = payload.on_number
        if number is None or number <= 0 or number == target.number:
            return self.issue.set_labels(payload, target, view)
        result = self.github.gateway.set_issue_labels(
            target.repo, number, add=payload.add, remove=payload.remove
        )
        return _problem(result) or _ok()

    def _post_comment(
        self, payload: PostComment, key: str, target: WriteTarget, view: PolicyView
    ) -> EffectResult:
        marker = effect_marker(key)
        text = self.issue.comment_text(payload.body, key, view)
        return self.tracker.upsert_comment(target.ref, marker, f"{text}\n\n{marker}")

    def _close_issue(
        self, payload: CloseIssue, target: WriteTarget, view: PolicyView
    ) -> EffectResult:
        # A completion state with a label of its own (merge.completion_state) is shown first.
        return self.tracker.close(
            target.ref,
            reason=payload.reason,
            state=view.policy.merge.completion_state,
            keep=frozenset(view.flow.approval_labels),
        )
