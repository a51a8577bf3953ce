"""The structured context of an agent turn: what the prompt's ``context`` variable holds.

Built from the issue's record and its pull request as last inspected: review
threads, failing checks with their log excerpts (rework only), replies from
humans, the last review's findings and the threads that keep coming back. The
same document is written to ``.orchestrator/context.json`` for the agent.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from orchestrator.domain.phases import Phase
from orchestrator.domain.results import Review
from orchestrator.domain.snapshot import PullRequest, StoredRecord
from orchestrator.github.checks import failing_check_details
from orchestrator.github.client import GitHubClient
from orchestrator.github.gateway import is_bot_login
from orchestrator.runtime.wiring import parse_time

# The result files each agent phase is expected to leave.
EXPECTED_RESULTS: Mapping[Phase, tuple[str, ...]] = {
    Phase.IMPLEMENTING: ("pr-description.md",),
    Phase.REVIEWING: ("review.md", "fix-summary.json"),
    Phase.REWORK: ("fix-summary.json", "pr-description.md"),
}
MAX_HUMAN_REPLIES = 20
MAX_REPLY_CHARS = 4_000


def _pull_request(record: StoredRecord, pr: PullRequest | None) -> dict[str, Any] | None:
    recorded = record.workpad.pr
    if pr is None and recorded is None:
        return None
    number = pr.number if pr is not None else recorded.number if recorded is not None else None
    data: dict[str, Any] = {
        "number": number,
        "url": recorded.url if recorded is not None else (pr.url if pr is not None else ""),
        "head_sha": pr.head_sha if pr is not None else (recorded.head_sha if recorded else None),
        "branch": record.workpad.branch,
    }
    if pr is not None:
        data["mergeable"] = pr.mergeable
        if pr.checks is not None:
            data["checks"] = {
                "passed": sorted(pr.checks.passed),
                "failing": sorted(pr.checks.failing),
                "pending": sorted(pr.checks.pending),
            }
    return data


def _threads(pr: PullRequest | None) -> list[dict[str, Any]]:
    if pr is None:
        return []
    threads = []
    for thread in pr.threads:
        if thread.is_resolved:
            continue
        last = thread.last_comment_author or thread.author
        threads.append(
            {
                "id": thread.id,
                "path": thread.path,
                "author": thread.author.login,
                "body": thread.body,
                "is_outdated": thread.is_outdated,
                "last_comment_author": last.login,
            }
        )
    return threads


def _failing_checks(
    client: GitHubClient, repo: str, pr: PullRequest | None
) -> list[dict[str, Any]]:
    if pr is None or pr.checks is None or not pr.checks.failing:
        return []
    return [
        {
            "name": check.name,
            "conclusion": check.conclusion,
            "summary": check.summary,
            "annotations": [
                {"path": a.path, "line": a.line, "level": a.level, "message": a.message}
                for a in check.annotations
            ],
            "log_tail": check.log_tail,
        }
        for check in failing_check_details(client, repo, pr.head_sha)
    ]


def _human_replies(
    client: GitHubClient, repo: str, number: int, since: datetime, self_login: str
) -> list[dict[str, Any]]:
    items = client.paginate(f"/repos/{repo}/issues/{number}/comments", conditional=True)
    replies = []
    for item in items:
        user = item.get("user") or {}
        login = str(user.get("login") or "")
        if is_bot_login(login, user.get("type")) or login.lower() == self_login.lower():
            continue
        created = parse_time(item["created_at"])
        if created <= since:
            continue
        replies.append(
            {
                "author": login,
                "created_at": created.isoformat(),
                "body": str(item.get("body") or "")[:MAX_REPLY_CHARS],
            }
        )
    return replies[-MAX_HUMAN_REPLIES:]


def _previous_findings(record: StoredRecord) -> list[dict[str, Any]]:
    outcome = record.last_outcome
    if outcome is None or not isinstance(outcome.review, Review):
        return []
    return [
        {
            "id": finding.id,
            "severity": finding.severity.value,
            "title": finding.title,
            "summary": finding.summary,
            "why_it_matters": finding.why_it_matters,
            "suggested_fix": finding.suggested_fix,
            "location": finding.location,
        }
        for finding in outcome.review.findings
    ]


def turn_context(
    *,
    client: GitHubClient,
    repo: str,
    number: int,
    phase: Phase,
    record: StoredRecord,
    pr: PullRequest | None,
    self_login: str,
) -> dict[str, Any]:
    """The context document of one turn (every key present, empty when unused)."""
    since = (
        record.last_outcome.finished_at if record.last_outcome is not None else record.phase_since
    )
    return {
        "pr": _pull_request(record, pr),
        "review_threads": _threads(pr) if phase is not Phase.IMPLEMENTING else [],
        "failing_checks": _failing_checks(client, repo, pr) if phase is Phase.REWORK else [],
        "human_replies": _human_replies(client, repo, number, since, self_login),
        "previous_findings": _previous_findings(record) if phase is Phase.REVIEWING else [],
        "bounce_history": [
            {
                "iteration": entry.iteration,
                "thread_id": entry.thread_id,
                "path": entry.path,
                "body": entry.body,
                "status": entry.status.value if entry.status is not None else None,
            }
            for entry in record.thread_history
        ],
        "expected": list(EXPECTED_RESULTS.get(phase, ())),
    }
