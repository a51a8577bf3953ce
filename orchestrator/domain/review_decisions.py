"""Review decisions: which findings need a fix pass, what a fix summary means, and bounces.

A bounce is a bot's review request that the agent marked fixed and that came
back in a later iteration: a thread by the same bot whose normalised text is at
least ``SIMILARITY_THRESHOLD`` similar (a reworded request counts), on any file
(a flip-flop across two files counts). Past ``review.bounce_threshold`` the
thread is not fixed again: it is escalated once and left for a human. A
person's new request is never a bounce: a human changing their mind is a new
instruction.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from difflib import SequenceMatcher
from types import MappingProxyType

from orchestrator.domain.accounts import same_account
from orchestrator.domain.agent_files.errors import GITHUB_BODY_LIMIT
from orchestrator.domain.agent_files.fix_summary import (
    FixEntry,
    FixStatus,
    FixSummary,
    FixTargetKind,
)
from orchestrator.domain.agent_files.review import REVIEW_FORMAT, Finding, Review
from orchestrator.domain.policy import ReviewPolicy
from orchestrator.domain.snapshot import ReviewThread, ThreadHistoryEntry, TurnCommit
from orchestrator.domain.workpad import ReviewState

REVIEW_COMMENT_MARKER = "<!-- orchestrator-review-comment -->"

_NOT_WORD = re.compile(r"[^0-9a-z]+")
_NORMALISED_LENGTH = 400

# Two requests by one bot are the same request when their normalised words are at
# least this similar (difflib's ratio over the word sequences: 2 * matching words /
# all words). "Make the name field optional." and "Please make the name field
# optional." score 0.91; "... optional." and "... required." 0.80.
SIMILARITY_THRESHOLD = 0.75
# The reply that hands a thread to a human (an uncertain entry or a bounce).
ESCALATION_PREFIX = "Needs a human decision"


def findings_needing_fix(review: Review, policy: ReviewPolicy) -> tuple[Finding, ...]:
    """Findings whose severity the policy asks the agent to consider fixing."""
    return tuple(f for f in review.findings if f.severity in policy.fix_consideration_severities)


def passes_in_lineage(state: ReviewState, head_sha: str | None) -> int:
    """Review passes already spent on the lineage ``head_sha`` belongs to.

    A head our own review fixes produced (or the head last reviewed) continues the
    lineage; any other head (new implementation, rework, someone else's push) starts
    a new one with no passes spent.
    """
    if head_sha is not None and head_sha in (
        state.last_fixed_head_sha,
        state.last_reviewed_head_sha,
    ):
        return state.passes_completed
    return 0


def unaddressed_findings(
    review: Review, summary: FixSummary | None, policy: ReviewPolicy
) -> tuple[Finding, ...]:
    """Findings that need a fix and that the fix summary does not account for."""
    needing = findings_needing_fix(review, policy)
    if summary is None:
        return needing
    return tuple(f for f in needing if summary.for_target(FixTargetKind.FINDING, f.id) is None)


def needs_fix_pass(
    review: Review,
    summary: FixSummary | None,
    state: ReviewState,
    policy: ReviewPolicy,
) -> bool:
    """Whether another review turn should fix findings on the reviewed head's lineage."""
    if not unaddressed_findings(review, summary, policy):
        return False
    return passes_in_lineage(state, review.head_sha) < policy.max_passes


@dataclass(frozen=True)
class ThreadReply:
    """What the runtime should say on one review thread, and whether to resolve it."""

    thread_id: str
    body: str
    resolve: bool


@dataclass(frozen=True)
class FixEvaluation:
    """The runtime's reading of a fix summary against the open threads."""

    replies: tuple[ThreadReply, ...]
    # Threads the summary does not mention.
    unaddressed: tuple[str, ...]
    # Threads left open for a human (uncertain, doubtful "fixed", or bouncing).
    escalated: tuple[str, ...]
    # Thread ids the summary names that were not among the threads evaluated (unknown,
    # resolved, or never given to the agent as work, such as a reader's thread): never
    # replied to, never resolved.
    ignored: tuple[str, ...] = ()


@dataclass(frozen=True)
class FixProof:
    """Whether a thread's ``fixed`` claim is backed by a commit of the turn.

    ``commit`` is the commit that proves it; ``problem`` says in one line why
    nothing does.
    """

    commit: str | None
    problem: str | None = None


def prove_fix(entry: FixEntry, path: str | None, commits: tuple[TurnCommit, ...]) -> FixProof:
    """Check a ``fixed`` claim against the commits the turn made (oldest first).

    The claim holds when the commit it names (or, when it names none, the
    turn's latest commit that does) was made in this turn and changes the file
    the thread is on. A thread on no file is proven by any commit of the turn.
    """
    touching = [c for c in commits if path is None or path in c.paths]
    if entry.commit is not None:
        named = next((c for c in commits if c.sha.startswith(entry.commit)), None)
        if named is None:
            return FixProof(None, f"{entry.commit[:12]} is not a commit of this turn")
        if named not in touching:
            return FixProof(None, f"{entry.commit[:12]} does not change {path}")
        return FixProof(named.sha)
    if touching:
        return FixProof(touching[-1].sha)
    if not commits:
        return FixProof(None, "the turn made no commit")
    return FixProof(None, f"no commit of this turn changes {path}")


def unproven_fixes(
    summary: FixSummary, threads: Iterable[ReviewThread], commits: tuple[TurnCommit, ...]
) -> tuple[str, ...]:
    """One line per thread of ``threads`` claimed fixed without a commit of the turn to show."""
    problems = []
    for thread in threads:
        entry = summary.for_target(FixTargetKind.THREAD, thread.id)
        if entry is None or entry.status is not FixStatus.FIXED:
            continue
        proof = prove_fix(entry, thread.path, commits)
        if proof.problem is not None:
            problems.append(f"thread {thread.id} marked fixed, but {proof.problem}")
    return tuple(problems)


def evaluate_fix_summary(
    summary: FixSummary,
    threads: Iterable[ReviewThread],
    *,
    committed: bool,
    bounces: Mapping[str, int] | None = None,
    bounce_threshold: int = 2,
    commits: tuple[TurnCommit, ...] | None = None,
) -> FixEvaluation:
    """Turn the agent's per-thread statuses into replies and resolutions.

    Only ``threads`` are answered: the caller passes the threads the agent was given
    as work. An entry naming any other thread id (an unknown one, or an untrusted
    thread the agent saw only as context) is listed in ``ignored`` and never gets a
    reply or a resolution.

    A thread claimed fixed without proof (no commit, or, when ``commits`` is
    known, no commit of the turn that changes the thread's file: see
    :func:`prove_fix`), and a thread that bounced ``bounce_threshold`` times, are
    treated as uncertain: replied to and left open for a human.
    """
    bounces = bounces or {}
    replies: list[ThreadReply] = []
    unaddressed: list[str] = []
    escalated: list[str] = []
    evaluated: set[str] = set()
    for thread in threads:
        if thread.is_resolved:
            continue
        evaluated.add(thread.id)
        entry = summary.for_target(FixTargetKind.THREAD, thread.id)
        if entry is None:
            unaddressed.append(thread.id)
            continue
        proof = None
        if entry.status is FixStatus.FIXED and commits is not None:
            proof = prove_fix(entry, thread.path, commits)
        reply = _reply_for(entry, committed, bounces.get(thread.id, 0), bounce_threshold, proof)
        replies.append(reply)
        if not reply.resolve:
            escalated.append(thread.id)
    ignored = tuple(
        entry.target
        for entry in summary.entries
        if entry.target_kind is FixTargetKind.THREAD and entry.target not in evaluated
    )
    return FixEvaluation(tuple(replies), tuple(unaddressed), tuple(escalated), ignored)


def _reply_for(
    entry: FixEntry, committed: bool, bounces: int, threshold: int, proof: FixProof | None
) -> ThreadReply:
    if bounces >= threshold:
        return ThreadReply(
            entry.target,
            f"Needs a human decision: this comment came back {bounces} times after being "
            f"addressed, so it is not changed again automatically.\n\nLast attempt: "
            f"{entry.message}",
            resolve=False,
        )
    if entry.status is FixStatus.FIXED:
        if proof is not None:
            if proof.commit is None:
                return ThreadReply(
                    entry.target,
                    f"Needs a human check: reported fixed, but {proof.problem}.\n\n{entry.message}",
                    resolve=False,
                )
            return ThreadReply(
                entry.target, f"Addressed in {proof.commit[:12]}: {entry.message}", resolve=True
            )
        if entry.commit is None and not committed:
            return ThreadReply(
                entry.target,
                f"Needs a human check: reported fixed, but no commit was made.\n\n{entry.message}",
                resolve=False,
            )
        where = f" in {entry.commit[:12]}" if entry.commit else ""
        return ThreadReply(entry.target, f"Addressed{where}: {entry.message}", resolve=True)
    if entry.status is FixStatus.SKIPPED:
        return ThreadReply(entry.target, f"Skipped: {entry.message}", resolve=True)
    if entry.status is FixStatus.DISMISSED:
        return ThreadReply(
            entry.target,
            f"Dismissed: {entry.message}\n\nEvidence: {entry.evidence}",
            resolve=True,
        )
    return ThreadReply(
        entry.target,
        f"Needs a human decision: {entry.message}\n\nEvidence: {entry.evidence}",
        resolve=False,
    )


def normalise_body(text: str) -> str:
    """Thread text reduced to lowercase words, for matching a thread across iterations."""
    return _NOT_WORD.sub(" ", text.lower()).strip()[:_NORMALISED_LENGTH]


def similar(first: str, second: str) -> bool:
    """Whether two normalised texts say the same thing (``SIMILARITY_THRESHOLD``)."""
    if first == second:
        return True
    words_a, words_b = first.split(), second.split()
    if not words_a or not words_b:
        return False
    return SequenceMatcher(None, words_a, words_b, autojunk=False).ratio() >= (SIMILARITY_THRESHOLD)


def _same_request(entry: ThreadHistoryEntry, thread: ReviewThread, text: str) -> bool:
    """The history entry is this bot's earlier request with the same substance."""
    if entry.author is None:
        # Recorded before authors were kept: same file and the same words only.
        return (entry.path or "") == (thread.path or "") and normalise_body(entry.body) == text
    if not entry.author_is_bot or not same_account(entry.author, thread.author.login):
        return False
    return similar(normalise_body(entry.body), text)


def bounce_counts(
    history: Iterable[ThreadHistoryEntry],
    threads: Iterable[ReviewThread],
    *,
    before_iteration: int | None = None,
) -> Mapping[str, int]:
    """For each open thread by a bot, how often the same request, marked fixed, came back.

    Every earlier iteration in which the same bot's request with the same
    substance (:func:`similar`, on any file) was marked fixed counts once: the
    open thread now is that request returning. Threads opened by people never
    bounce. When judging a turn whose own entries are already in the history,
    ``before_iteration`` (that turn's iteration) keeps the turn from counting
    its own fix.
    """
    fixed = [
        entry
        for entry in history
        if entry.status is FixStatus.FIXED
        and (before_iteration is None or entry.iteration < before_iteration)
    ]
    counts: dict[str, int] = {}
    if not fixed:
        return MappingProxyType(counts)
    for thread in threads:
        if thread.is_resolved or not thread.author.is_bot:
            continue
        text = normalise_body(thread.body)
        found = {e.iteration for e in fixed if _same_request(e, thread, text)}
        if found:
            counts[thread.id] = len(found)
    return MappingProxyType(counts)


def escalated_before(thread: ReviewThread, self_login: str | None) -> bool:
    """The daemon already handed this thread to a human (it escalates a thread once)."""
    if self_login is None:
        return False
    return any(
        same_account(comment.author.login, self_login)
        and comment.body.startswith(ESCALATION_PREFIX)
        for comment in thread.comments
    )


def bouncing_threads(
    history: Iterable[ThreadHistoryEntry],
    threads: Iterable[ReviewThread],
    policy: ReviewPolicy,
) -> frozenset[str]:
    """Open threads that reached the bounce threshold: escalate, do not fix again."""
    threads = tuple(threads)
    counts = bounce_counts(history, threads)
    return frozenset(t for t, n in counts.items() if n >= policy.bounce_threshold)


def render_review_comment(review: Review, *, pass_number: int, max_passes: int) -> str:
    """The pull request comment for one persisted review pass, under GitHub's size limit."""
    lines = [
        REVIEW_COMMENT_MARKER,
        f"<!-- orchestrator-review-head: {review.head_sha} -->",
        f"## Self-review of `{review.head_sha[:12]}` (pass {pass_number} of {max_passes})",
        "",
    ]
    if not review.findings:
        lines.append("No findings.")
    for finding in review.findings:
        lines.append(f"### {finding.id} [{finding.severity}] {finding.title}")
        if finding.location:
            lines.append(f"- location: {finding.location}")
        lines.append(f"- summary: {finding.summary}")
        lines.append(f"- why_it_matters: {finding.why_it_matters}")
        lines.append(f"- suggested_fix: {finding.suggested_fix}")
        lines.append("")
    lines.append(f"<sub>format {REVIEW_FORMAT}</sub>")
    body = "\n".join(lines)
    if len(body) > GITHUB_BODY_LIMIT:
        notice = "\n\n(truncated to fit GitHub's comment limit)"
        body = body[: GITHUB_BODY_LIMIT - len(notice)] + notice
    return body
