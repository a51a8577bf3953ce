"""The prompt of one turn: the issue's facts, the context file, the policy's template."""

from __future__ import annotations

import json

from orchestrator.agent import Workspace
from orchestrator.agent.result_files import CONTEXT_FILE
from orchestrator.agent.safe_files import write_file
from orchestrator.domain.selection import issue_priority
from orchestrator.logs import get_logger
from orchestrator.turns.context import replies_since, turn_context
from orchestrator.turns.job import TurnJob
from orchestrator.wiring.access import GitHubAccess
from orchestrator.workflow import PromptIssue, PromptWorkspace

log = get_logger(__name__)


def render_prompt(github: GitHubAccess, job: TurnJob, workspace: Workspace) -> str:
    """The turn's prompt; the context file is written into the workspace on the way."""
    ref = job.dispatch.issue
    tracker = github.tracker
    facts = tracker.facts(ref)
    context = turn_context(
        reads=github.gateway,
        repo=ref.repo,
        phase=job.dispatch.phase,
        record=job.record,
        pr=job.pr,
        self_login=github.login,
        policy=job.view.flow.review,
        actor=github.actor,
        tracker_comments=tracker.thread(ref, replies_since(job.record)),
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
        identifier=facts.identifier,
        title=facts.title or job.title,
        body=facts.body,
        url=facts.url,
        state=job.tracker_state,
        labels=job.labels,
        id=facts.id,
        priority=issue_priority(job.issue.labels, job.view.flow),
        branch_name=workspace.branch,
        created_at=facts.created_at,
        updated_at=facts.updated_at,
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
