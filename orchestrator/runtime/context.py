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

from orchestrator.domain.outcomes import turn_failure
from orchestrator.domain.phases import Phase
from orchestrator.domain.policy import ReviewPolicy
from orchestrator.domain.results import Review
from orchestrator.domain.review import bouncing_threads
from orchestrator.domain.snapshot import Actor, PullRequest, StoredRecord, ThreadComment
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


def _comment(author: Actor, body: str, at: datetime) -> dict[str, Any]:
    return {
        "author": author.login,
        "is_bot": author.is_bot or is_bot_login(author.login),
        "created_at": at.isoformat(),
        "body": body[:MAX_REPLY_CHARS],
    }


def _threads(
    pr: PullRequest | None, bouncing: frozenset[str], self_login: str
) -> list[dict[str, Any]]:
    if pr is None:
        return []
    threads = []
    for thread in pr.threads:
        if thread.is_resolved:
            continue
        last = thread.last_comment_author or thread.author
        comments = thread.comments or (
            ThreadComment(thread.author, thread.body, thread.created_at),
        )
        threads.append(
            {
                "id": thread.id,
                "path": thread.path,
                "line": thread.line,
                "diff_hunk": thread.diff_hunk,
                "author": thread.author.login,
                "author_is_bot": thread.author.is_bot or is_bot_login(thread.author.login),
                "body": thread.body,
                "is_outdated": thread.is_outdated,
                "last_comment_author": last.login,
                "comments": [_comment(c.author, c.body, c.created_at) for c in comments],
                # Our reply is the last word: a human decides, the agent does not answer it.
                "awaiting_human": last.login.lower() == self_login.lower(),
                "do_not_change": thread.id in bouncing,
            }
        )
    return threads


def _thread_replies(
    pr: PullRequest | None, since: datetime, self_login: str
) -> list[dict[str, Any]]:
    """Replies by humans on review threads since the last turn (not the opening comments)."""
    if pr is None:
        return []
    replies = []
    for thread in pr.threads:
        for comment in thread.comments[1:]:
            login = comment.author.login
            if comment.author.is_bot or is_bot_login(login) or login.lower() == self_login.lower():
                continue
            if comment.created_at <= since:
                continue
            reply = _comment(comment.author, comment.body, comment.created_at)
            reply["thread_id"] = thread.id
            reply["path"] = thread.path
            replies.append(reply)
    return replies


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
    client: GitHubClient,
    *,
    repo: str,
    number: int,
    pr_number: int | None,
    since: datetime,
    self_login: str,
) -> list[dict[str, Any]]:
    items = list(client.paginate(f"/repos/{repo}/issues/{number}/comments", conditional=True))
    if pr_number is not None and pr_number != number:
        # The pull request's conversation is where reviewers usually answer.
        items += client.paginate(f"/repos/{repo}/issues/{pr_number}/comments", conditional=True)
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
    replies.sort(key=lambda r: str(r["created_at"]))
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


def _previous_turn(record: StoredRecord, phase: Phase) -> dict[str, Any] | None:
    """What went wrong with the last turn of this phase, for the continuation to fix."""
    outcome = record.last_outcome
    if outcome is None or outcome.phase is not phase or record.attempt == 0:
        return None
    return {
        "run_id": outcome.run_id,
        "outcome": outcome.kind.value,
        "head_before": outcome.head_before,
        "head_after": outcome.head_after,
        "committed": outcome.committed,
        "problem": outcome.contract_error or turn_failure(outcome, record.workpad),
    }


def _expected_fix_summary(
    threads: list[dict[str, Any]], checks: list[dict[str, Any]]
) -> dict[str, Any]:
    """The entries a rework turn's ``fix-summary.json`` must hold."""
    return {
        "threads": [t["id"] for t in threads if not t["awaiting_human"] and not t["do_not_change"]],
        "checks": [c["name"] for c in checks],
        "statuses": ["fixed", "dismissed", "uncertain", "skipped"],
    }


def turn_context(
    *,
    client: GitHubClient,
    repo: str,
    number: int,
    phase: Phase,
    record: StoredRecord,
    pr: PullRequest | None,
    self_login: str,
    policy: ReviewPolicy | None = None,
) -> dict[str, Any]:
    """The context document of one turn (every key present, empty when unused)."""
    since = (
        record.last_outcome.finished_at if record.last_outcome is not None else record.phase_since
    )
    review_policy = policy or ReviewPolicy()
    bouncing = (
        bouncing_threads(record.thread_history, pr.threads, review_policy)
        if pr is not None and record.thread_history
        else frozenset()
    )
    threads = _threads(pr, bouncing, self_login) if phase is not Phase.IMPLEMENTING else []
    checks = _failing_checks(client, repo, pr) if phase is Phase.REWORK else []
    pr_number = pr.number if pr is not None else None
    return {
        "pr": _pull_request(record, pr),
        "review_threads": threads,
        "failing_checks": checks,
        "human_replies": [
            *_human_replies(
                client,
                repo=repo,
                number=number,
                pr_number=pr_number,
                since=since,
                self_login=self_login,
            ),
            *_thread_replies(pr, since, self_login),
        ],
        "previous_findings": (
            _previous_findings(record) if phase in (Phase.REVIEWING, Phase.REWORK) else []
        ),
        "do_not_change": [t for t in threads if t["do_not_change"]],
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
        "previous_turn": _previous_turn(record, phase),
        "rework_cycles": record.rework_cycles,
        "expected": list(EXPECTED_RESULTS.get(phase, ())),
        "expected_fix_summary": (
            _expected_fix_summary(threads, checks) if phase is Phase.REWORK else None
        ),
    }
