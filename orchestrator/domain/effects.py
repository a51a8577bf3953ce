"""Builders of the side effects the rules ask for, each with its stable idempotency key."""

from __future__ import annotations

from datetime import datetime

from orchestrator.domain.accounts import same_account
from orchestrator.domain.actions import SideEffect, side_effect
from orchestrator.domain.agent_files.errors import GITHUB_BODY_LIMIT
from orchestrator.domain.agent_files.questions import BlockedQuestion, PRDescription
from orchestrator.domain.agent_files.review import Review
from orchestrator.domain.flow import IssueContext
from orchestrator.domain.phases import Phase
from orchestrator.domain.policy import TrackerState
from orchestrator.domain.pr_body import (
    Body,
    closes_tracked,
    drop_foreign_closing,
    restore_template_headings,
)
from orchestrator.domain.review_decisions import ThreadReply, render_review_comment
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
)
from orchestrator.domain.snapshot import AgentOutcome, PRStatus, PullRequest, StoredRecord

BLOCKED_COMMENT_MARKER = "<!-- orchestrator-blocked-question -->"

# The tracker state each phase shows; merging and done are left to humans and to closing.
PHASE_STATE: dict[Phase, TrackerState | None] = {
    Phase.IMPLEMENTING: TrackerState.IN_PROGRESS,
    Phase.REVIEWING: TrackerState.IN_PROGRESS,
    Phase.WAITING_FOR_CHECKS: TrackerState.IN_REVIEW,
    Phase.WAITING_FOR_HUMAN: TrackerState.IN_REVIEW,
    Phase.READY_TO_MERGE: TrackerState.IN_REVIEW,
    Phase.REWORK: TrackerState.REWORK,
    Phase.BLOCKED: TrackerState.BLOCKED,
    Phase.MERGING: None,
    Phase.DONE: None,
}


def recorded_branch(record: StoredRecord, prefix: str, number: int) -> str:
    """The issue's branch: the one named at the claim and recorded in the workpad.

    A record from a release that named no branch at the claim has its work on
    ``prefix`` + ``issue-N``.
    """
    return record.workpad.branch or f"{prefix}issue-{number}"


def branch_for(ctx: IssueContext) -> str:
    """The issue's branch (see :func:`recorded_branch`)."""
    return recorded_branch(ctx.record, ctx.policy.pr.branch_prefix, ctx.ref.number)


def push_branch(ctx: IssueContext, head_sha: str, purpose: str) -> SideEffect:
    """Push the workspace's ``head_sha`` to the issue branch."""
    expected = ctx.pr.head_sha if ctx.pr is not None else None
    return side_effect(
        ctx.ref,
        head_sha,
        PushBranch(
            branch=branch_for(ctx), head_sha=head_sha, expected_remote_sha=expected, purpose=purpose
        ),
    )


def pr_body(ctx: IssueContext, outcome: AgentOutcome | None) -> Body:
    """The pull request body: the agent's description (else a short default), kept honest.

    Closing keywords naming other issues are dropped, the template's missing
    headings restored and ``Closes #N`` added (see :mod:`orchestrator.domain.pr_body`).
    """
    if outcome is not None and isinstance(outcome.pr_description, PRDescription):
        text = outcome.pr_description.body
    else:
        text = f"Work on #{ctx.ref.number}: {ctx.item.issue.title}"
    web_base = ctx.policy.pr.web_base
    honest = drop_foreign_closing(text, ctx.ref.repo, ctx.ref.number, web_base=web_base)
    text, notes = honest.text, list(honest.notes)
    if outcome is not None and outcome.pr_template:
        restored = restore_template_headings(text, outcome.pr_template)
        text, notes = restored.text, notes + list(restored.notes)
    if ctx.policy.pr.closes_issue and not closes_tracked(
        text, ctx.ref.repo, ctx.ref.number, web_base=web_base
    ):
        text = f"{text}\n\nCloses #{ctx.ref.number}"
    if len(text) > GITHUB_BODY_LIMIT:
        notice = "\n\n(description truncated)"
        text = text[: GITHUB_BODY_LIMIT - len(notice)] + notice
    return Body(text, tuple(notes))


def create_pr(ctx: IssueContext, outcome: AgentOutcome) -> SideEffect:
    """Find or create the pull request for the issue branch."""
    branch = branch_for(ctx)
    body = pr_body(ctx, outcome)
    return side_effect(
        ctx.ref,
        branch,
        CreatePR(
            branch=branch,
            base=ctx.policy.pr.base_branch,
            title=ctx.item.issue.title,
            body=body.text,
            notes=body.notes,
            draft=ctx.policy.pr.draft,
        ),
    )


def update_pr_body(ctx: IssueContext, pr: PullRequest, outcome: AgentOutcome) -> SideEffect | None:
    """Rewrite the PR description from the agent's new ``pr-description.md``, if it left one.

    ``previous`` is the body as the runtime last wrote it: the writer keeps what
    people changed since (:func:`~orchestrator.domain.pr_body.merge_human_edits`).
    """
    if not ctx.policy.pr.update_description or not isinstance(
        outcome.pr_description, PRDescription
    ):
        return None
    body = pr_body(ctx, outcome)
    return side_effect(
        ctx.ref,
        f"{pr.number}:{outcome.run_id}",
        UpdatePRBody(
            pr_number=pr.number, body=body.text, notes=body.notes, previous=ctx.record.pr_body
        ),
    )


def review_comment_key_target(review: Review, outcome: AgentOutcome) -> str:
    """The key target of one review pass: the reviewed head and the turn that wrote it."""
    return f"{review.head_sha}:{outcome.run_id}"


def upsert_review_comment(
    ctx: IssueContext, pr: PullRequest, review: Review, outcome: AgentOutcome, pass_number: int
) -> SideEffect:
    """Create or update the PR's single review comment with this pass."""
    return side_effect(
        ctx.ref,
        review_comment_key_target(review, outcome),
        UpsertReviewComment(
            pr_number=pr.number,
            head_sha=review.head_sha,
            pass_number=pass_number,
            body=render_review_comment(
                review, pass_number=pass_number, max_passes=ctx.policy.review.max_passes
            ),
        ),
    )


def thread_effects(ctx: IssueContext, reply: ThreadReply, run_id: str) -> list[SideEffect]:
    """Reply on a review thread, then resolve it when the reply settles it."""
    target = f"{reply.thread_id}:{run_id}"
    effects = [
        side_effect(ctx.ref, target, ReplyThread(thread_id=reply.thread_id, body=reply.body))
    ]
    if reply.resolve:
        effects.append(side_effect(ctx.ref, target, ResolveThread(thread_id=reply.thread_id)))
    return effects


def request_review(
    ctx: IssueContext,
    pr: PullRequest,
    head_sha: str,
    run_id: str,
    extra_reviewers: tuple[str, ...] = (),
) -> SideEffect | None:
    """Ask the configured reviewers, and those whose threads were addressed, to look again.

    The daemon itself is never asked; the key names the head and the turn, so a
    turn that only answered threads (no new head) still asks once.
    """
    reviewers: list[str] = []
    for login in (*ctx.policy.pr.reviewers, *extra_reviewers):
        if not same_account(login, ctx.self_login) and not any(
            same_account(login, r) for r in reviewers
        ):
            reviewers.append(login)
    if not reviewers:
        return None
    return side_effect(
        ctx.ref,
        f"{head_sha}:{run_id}",
        RequestReview(pr_number=pr.number, reviewers=tuple(reviewers)),
    )


def post_comment(ctx: IssueContext, target: str, body: str) -> SideEffect:
    """A comment on the issue (a question for a human, or a notice)."""
    if len(body) > GITHUB_BODY_LIMIT:
        body = body[: GITHUB_BODY_LIMIT - 20] + "\n\n(truncated)"
    return side_effect(ctx.ref, target, PostComment(body=body))


def blocked_question_comment(
    ctx: IssueContext, run_id: str, question: BlockedQuestion
) -> SideEffect:
    """Ask a human the agent's question on the issue."""
    body = (
        f"{BLOCKED_COMMENT_MARKER}\n**The agent needs a human ({question.reason}).**\n\n"
        f"{question.text}\n\nReply here to continue."
    )
    return post_comment(ctx, f"blocked:{run_id}", body)


def merge_pr(ctx: IssueContext, pr: PullRequest) -> SideEffect:
    """Merge the PR only if its head is still exactly ``pr.head_sha``.

    The approvers and approval labels go along so the write re-checks, right before
    the call, that each approver still has write permission and a label is still there.
    """
    approval = ctx.approval
    return side_effect(
        ctx.ref,
        pr.head_sha,
        MergePR(
            pr_number=pr.number,
            head_sha=pr.head_sha,
            method=ctx.policy.merge.method.value,
            approvers=approval.approvers,
            approval_labels=approval.labels,
            approval_required=ctx.policy.merge.require_human_approval,
        ),
    )


def mark_pr_ready(ctx: IssueContext, pr: PullRequest) -> SideEffect:
    """Take the draft pull request out of draft, so GitHub lets it be merged."""
    return side_effect(
        ctx.ref, pr.head_sha, MarkPRReady(pr_number=pr.number, node_id=pr.node_id or "")
    )


def close_issue(ctx: IssueContext, pr: PullRequest) -> SideEffect:
    """Close the issue after its PR's merge was confirmed (tracker Done)."""
    return side_effect(
        ctx.ref,
        f"merged:{pr.merge_commit_sha or pr.head_sha}",
        CloseIssue(reason="completed", pr_number=pr.number),
    )


def state_labels(ctx: IssueContext) -> SideEffect | None:
    """Show the current phase's tracker state as a label; keep humans' approval labels."""
    state = PHASE_STATE[ctx.phase]
    wanted = ctx.policy.state_labels.get(state) if state is not None else None
    if wanted is None:
        return None
    labels = ctx.item.issue.labels
    others = ctx.policy.other_state_labels(wanted)
    if wanted in labels and labels.isdisjoint(others):
        return None
    keep = ctx.policy.approval_labels
    remove = tuple(sorted(label for label in labels & others if label not in keep))
    if wanted in labels and not remove:
        return None
    return side_effect(
        ctx.ref,
        f"{wanted}@{_stamp(ctx.record.phase_since)}",
        SetLabels(add=(wanted,), remove=remove),
    )


def withdraw_stale_approvals(ctx: IssueContext) -> list[SideEffect]:
    """Remove approval labels given before the current head appeared, and ask for a new one.

    An approval covers only the head it was given on: once the head moved (a
    rework push, a human's push, a rebase), the label no longer authorizes a
    merge, so it is taken off where it is (issue or pull request) and the humans
    are asked to approve the new head.
    """
    pr = ctx.pr
    if pr is None or pr.status is not PRStatus.OPEN:
        return []
    stale = ctx.approval.stale
    if not stale:
        return []
    found: list[SideEffect] = []
    for entry in stale:
        number = pr.number if entry.place == "pr" else ctx.ref.number
        found.append(
            side_effect(
                ctx.ref,
                f"stale-approval:{entry.place}:{entry.label}:{_stamp(entry.added.at)}:{pr.head_sha}",
                SetLabels(remove=(entry.label,), on_number=number),
            )
        )
    labels = ", ".join(f"`{entry.label}`" for entry in stale)
    found.append(
        post_comment(
            ctx,
            f"approval-withdrawn:{pr.head_sha}",
            f"The approval ({labels}) was given before the pull request's head became "
            f"{pr.head_sha[:12]}, so it does not cover that commit and was removed. "
            "Please review the new head and approve it again.",
        )
    )
    return found


def _stamp(moment: datetime) -> str:
    return moment.isoformat()
