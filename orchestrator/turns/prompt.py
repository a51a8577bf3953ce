"""The prompt of one turn: the issue's facts, the context file, the policy's template."""

from __future__ import annotations

import json
from typing import Any

from orchestrator.agent import Workspace
from orchestrator.agent.result_files import CONTEXT_FILE
from orchestrator.agent.safe_files import write_file
from orchestrator.domain.selection import issue_priority
from orchestrator.domain.snapshot import IssueRef, StoredRecord, ThreadComment
from orchestrator.logs import get_logger
from orchestrator.tracker.linear_client import LinearError
from orchestrator.turns.context import turn_context
from orchestrator.turns.job import TurnJob
from orchestrator.wiring.access import GitHubAccess
from orchestrator.workflow import PromptIssue, PromptWorkspace

log = get_logger(__name__)


def _issue_data(github: GitHubAccess, ref: IssueRef) -> tuple[dict[str, Any], str]:
    """The issue's facts for the prompt, as GitHub names them, and its identifier:
    GitHub's issue, or the Linear issue behind the ref (kind linear)."""
    linear = github.linear
    if linear is None:
        data = github.client.request(
            "GET", f"/repos/{ref.repo}/issues/{ref.number}", conditional=True
        ).data
        return dict(data or {}), f"{ref.repo}#{ref.number}"
    issue = linear.issue(ref)
    return {
        "title": issue.title,
        "body": issue.description,
        "html_url": issue.url,
        "node_id": issue.id,
        "created_at": issue.created_at.isoformat(),
        "updated_at": issue.updated_at,
    }, issue.identifier


def _tracker_comments(
    github: GitHubAccess, ref: IssueRef, record: StoredRecord
) -> tuple[ThreadComment, ...]:
    """People's comments on the Linear issue since the last turn (none without Linear,
    or when Linear cannot be read: the turn goes on without them)."""
    linear = github.linear
    if linear is None:
        return ()
    last = record.last_outcome
    since = last.finished_at if last is not None else record.phase_since
    try:
        replies = linear.replies(ref, since)
    except LinearError as error:
        log.warning("linear_replies_unreadable", issue=str(ref), error=str(error))
        return ()
    return tuple(ThreadComment(r.author, r.body, r.created_at) for r in replies)


def render_prompt(github: GitHubAccess, job: TurnJob, workspace: Workspace) -> str:
    """The turn's prompt; the context file is written into the workspace on the way."""
    ref = job.dispatch.issue
    client = github.client
    data, identifier = _issue_data(github, ref)
    context = turn_context(
        client=client,
        repo=ref.repo,
        number=ref.number if github.linear is None else None,
        phase=job.dispatch.phase,
        record=job.record,
        pr=job.pr,
        self_login=github.login,
        policy=job.view.flow.review,
        actor=github.actor,
        tracker_comments=_tracker_comments(github, ref, job.record),
    )
    # Not followed, never blocking: a link, FIFO or directory the agent left there
    # fails the turn with UnsafeFile naming the file (a failed attempt, with backoff).
    write_file(
        workspace.result_dir,
        CONTEXT_FILE,
        json.dumps(context, indent=2, ensure_ascii=False).encode("utf-8"),
    )
    head = job.agents.workspaces.git.line(
        workspace.path, "rev-parse", "--verify", "--quiet", "HEAD"
    )
    issue = PromptIssue(
        number=ref.number,
        identifier=identifier,
        title=str((data or {}).get("title") or job.title),
        body=str((data or {}).get("body") or ""),
        url=str((data or {}).get("html_url") or ""),
        state=job.tracker_state,
        labels=job.labels,
        id=str((data or {}).get("node_id") or ref.number),
        priority=issue_priority(job.issue.labels, job.view.flow),
        branch_name=workspace.branch,
        created_at=_text_or_none((data or {}).get("created_at")),
        updated_at=_text_or_none((data or {}).get("updated_at")),
    )
    return job.view.workflow.prompt.render(
        phase=job.dispatch.phase,
        issue=issue,
        attempt=job.dispatch.attempt,
        policy=job.view.policy,
        workspace=PromptWorkspace(
            path=str(workspace.path), branch=workspace.branch, head_sha=head or None
        ),
        context=context,
    )


def _text_or_none(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
