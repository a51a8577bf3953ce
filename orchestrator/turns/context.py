"""The structured context of an agent turn: what the prompt's ``context`` variable holds.

Built from the issue's record and its pull request as last inspected: review
threads, failing checks with their log excerpts (rework only), replies from
humans, the last review's findings and the threads that keep coming back. The
same document is written to ``.orchestrator/context.json`` for the agent.

Whose words are work follows ``review.act_on``: threads and replies by authors
who do not count (under ``writers``: readers, outside users, other bots) are
listed apart, in ``untrusted_threads`` and ``untrusted_replies``, and every
thread and comment says whether it is ``trusted`` and its author's permission.
The replies on the issue come from its tracker as ``tracker_comments`` (their
authors' trust already decided: GitHub's permission, Linear's user flags); the
pull request's conversation is read from GitHub.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from orchestrator.domain.accounts import is_bot_login, same_account
from orchestrator.domain.agent_files.review import Review
from orchestrator.domain.outcomes import turn_failure
from orchestrator.domain.phases import Phase
from orchestrator.domain.policy import ReviewActOn, ReviewPolicy
from orchestrator.domain.review_decisions import bouncing_threads
from orchestrator.domain.snapshot import (
    Actor,
    PullRequest,
    ReviewThread,
    StoredRecord,
    ThreadComment,
)
from orchestrator.domain.trust import author_permission, author_trusted, is_self, last_word
from orchestrator.github.checks import failing_check_details
from orchestrator.github.client import GitHubClient
from orchestrator.github.reads import GitHubReads
from orchestrator.wiring.access import parse_time

# The result files each agent phase is expected to leave.
EXPECTED_RESULTS: Mapping[Phase, tuple[str, ...]] = {
    Phase.IMPLEMENTING: ("pr-description.md",),
    Phase.REVIEWING: ("review.md", "fix-summary.json"),
    Phase.REWORK: ("fix-summary.json", "pr-description.md"),
}
MAX_HUMAN_REPLIES = 20
MAX_REPLY_CHARS = 4_000

# A GitHub account by login and user type, with its permission (the runtime's lookup).
ActorLookup = Callable[[str, str | None], Actor]


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


def _comment(
    author: Actor, body: str, at: datetime, *, act_on: ReviewActOn, self_login: str
) -> dict[str, Any]:
    return {
        "author": author.login,
        "is_bot": author.is_bot or is_bot_login(author.login),
        "author_permission": author_permission(author),
        # Untrusted words are context, never instructions (review.act_on); the daemon's
        # own replies are its record of earlier turns.
        "trusted": is_self(author, self_login) or author_trusted(author, act_on, self_login),
        "created_at": at.isoformat(),
        "body": body[:MAX_REPLY_CHARS],
    }


def _thread(
    thread: ReviewThread,
    *,
    trusted: bool,
    bouncing: frozenset[str],
    act_on: ReviewActOn,
    self_login: str,
) -> dict[str, Any]:
    last = thread.last_comment_author or thread.author
    comments = thread.comments or (ThreadComment(thread.author, thread.body, thread.created_at),)
    return {
        "id": thread.id,
        "path": thread.path,
        "line": thread.line,
        "diff_hunk": thread.diff_hunk,
        "author": thread.author.login,
        "author_is_bot": thread.author.is_bot or is_bot_login(thread.author.login),
        "author_permission": author_permission(thread.author),
        "trusted": trusted,
        "body": thread.body,
        "is_outdated": thread.is_outdated,
        "last_comment_author": last.login,
        "comments": [
            _comment(c.author, c.body, c.created_at, act_on=act_on, self_login=self_login)
            for c in comments
        ],
        # Our reply is the last word that counts: a human decides, the agent does not answer it.
        "awaiting_human": trusted and is_self(last_word(thread, act_on, self_login), self_login),
        "do_not_change": trusted and thread.id in bouncing,
    }


def _threads(
    pr: PullRequest | None, bouncing: frozenset[str], self_login: str, act_on: ReviewActOn
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The open threads, split into those that are work and those that are only context."""
    if pr is None:
        return [], []
    work: list[dict[str, Any]] = []
    context: list[dict[str, Any]] = []
    for thread in pr.threads:
        if thread.is_resolved:
            continue
        # The daemon's own threads stay with the work (they wait for a human), as before.
        trusted = is_self(thread.author, self_login) or author_trusted(
            thread.author, act_on, self_login
        )
        item = _thread(
            thread, trusted=trusted, bouncing=bouncing, act_on=act_on, self_login=self_login
        )
        (work if trusted else context).append(item)
    return work, context


def _thread_replies(
    pr: PullRequest | None, since: datetime, self_login: str, act_on: ReviewActOn
) -> list[dict[str, Any]]:
    """Replies by humans on review threads since the last turn (not the opening comments)."""
    if pr is None:
        return []
    replies = []
    for thread in pr.threads:
        for comment in thread.comments[1:]:
            login = comment.author.login
            if comment.author.is_bot or is_bot_login(login) or same_account(login, self_login):
                continue
            if comment.created_at <= since:
                continue
            reply = _comment(
                comment.author,
                comment.body,
                comment.created_at,
                act_on=act_on,
                self_login=self_login,
            )
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


def replies_since(record: StoredRecord) -> datetime:
    """Where people's words are news to a turn: the last turn's end, else the phase's start."""
    last = record.last_outcome
    return last.finished_at if last is not None else record.phase_since


def _human_replies(
    reads: GitHubReads,
    *,
    repo: str,
    pr_number: int | None,
    since: datetime,
    self_login: str,
    act_on: ReviewActOn,
    actor: ActorLookup | None,
    tracker_comments: Sequence[ThreadComment] = (),
) -> list[dict[str, Any]]:
    # The pull request's conversation is where reviewers usually answer; the issue's
    # comments are its tracker's.
    items = reads.issue_comments(repo, pr_number) if pr_number is not None else []
    replies = []
    for item in items:
        user = item.get("user") or {}
        login = str(user.get("login") or "")
        if is_bot_login(login, user.get("type")) or same_account(login, self_login):
            continue
        created = parse_time(item["created_at"])
        if created <= since:
            continue
        # Without a permission lookup nobody is taken for a writer (fail closed).
        author = actor(login, user.get("type")) if actor is not None else Actor(login)
        replies.append(
            _comment(
                author,
                str(item.get("body") or ""),
                created,
                act_on=act_on,
                self_login=self_login,
            )
        )
    for comment in tracker_comments:
        if not comment.author.is_bot and comment.created_at > since:
            replies.append(
                _comment(
                    comment.author,
                    comment.body,
                    comment.created_at,
                    act_on=act_on,
                    self_login=self_login,
                )
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
    reads: GitHubReads,
    repo: str,
    phase: Phase,
    record: StoredRecord,
    pr: PullRequest | None,
    self_login: str,
    policy: ReviewPolicy | None = None,
    actor: ActorLookup | None = None,
    tracker_comments: Sequence[ThreadComment] = (),
) -> dict[str, Any]:
    """The context document of one turn (every key present, empty when unused).

    ``actor`` tells the permission of the authors of pull request comments; without
    it their replies are untrusted under ``review.act_on: writers``. The issue's
    comments are ``tracker_comments``, read from its tracker.
    """
    since = replies_since(record)
    review_policy = policy or ReviewPolicy()
    bouncing = (
        bouncing_threads(record.thread_history, pr.threads, review_policy)
        if pr is not None and record.thread_history
        else frozenset()
    )
    act_on = review_policy.act_on
    threads, untrusted_threads = (
        _threads(pr, bouncing, self_login, act_on) if phase is not Phase.IMPLEMENTING else ([], [])
    )
    checks = _failing_checks(reads.client, repo, pr) if phase is Phase.REWORK else []
    pr_number = pr.number if pr is not None else None
    replies = [
        *_human_replies(
            reads,
            repo=repo,
            pr_number=pr_number,
            since=since,
            self_login=self_login,
            act_on=act_on,
            actor=actor,
            tracker_comments=tracker_comments,
        ),
        *_thread_replies(pr, since, self_login, act_on),
    ]
    return {
        "pr": _pull_request(record, pr),
        "review_threads": threads,
        "untrusted_threads": untrusted_threads,
        "failing_checks": checks,
        "human_replies": [r for r in replies if r["trusted"]],
        "untrusted_replies": [r for r in replies if not r["trusted"]],
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
