"""Whose review feedback may drive rework (``review.act_on``).

Under ``writers`` (the default) a review thread is work for the agent only when
its first comment was written by a human with write permission who is not the
daemon (:func:`~orchestrator.domain.approval.qualifies_as_human`). Threads and
replies by readers, outside users and other bots are context: they never start
a rework turn, never keep an issue from merging and never wait for a human; the
agent sees them marked untrusted. Under ``anyone`` every thread not written by
the daemon itself counts, as before the key existed.
"""

from __future__ import annotations

from orchestrator.domain.accounts import same_account
from orchestrator.domain.approval import qualifies_as_human
from orchestrator.domain.policy import ReviewActOn
from orchestrator.domain.snapshot import Actor, ReviewThread


def is_self(actor: Actor, self_login: str | None) -> bool:
    """The account is the daemon's own."""
    return same_account(actor.login, self_login)


def author_trusted(actor: Actor, act_on: ReviewActOn, self_login: str | None) -> bool:
    """Whether what ``actor`` writes on a pull request may steer the agent."""
    if act_on is ReviewActOn.ANYONE:
        return not is_self(actor, self_login)
    return qualifies_as_human(actor, self_login)


def thread_trusted(thread: ReviewThread, act_on: ReviewActOn, self_login: str | None) -> bool:
    """Whether the thread is work for the agent: its first comment's author is trusted."""
    return author_trusted(thread.author, act_on, self_login)


def author_permission(actor: Actor) -> str:
    """What the agent is told about an author: ``bot``, ``write`` or ``read`` (no write)."""
    if actor.is_bot:
        return "bot"
    return "write" if actor.can_write else "read"


def last_word(thread: ReviewThread, act_on: ReviewActOn, self_login: str | None) -> Actor:
    """The author of the thread's latest comment that counts: the daemon's or a trusted one.

    A reply by someone untrusted never re-opens a thread the daemon answered (nor
    makes a thread look answered); the daemon's own comments and trusted ones do.
    """
    for comment in reversed(thread.comments):
        author = comment.author
        if is_self(author, self_login) or author_trusted(author, act_on, self_login):
            return author
    if thread.comments:
        return thread.author
    return thread.last_comment_author or thread.author


def trusted_threads(
    threads: tuple[ReviewThread, ...], act_on: ReviewActOn, self_login: str | None
) -> tuple[ReviewThread, ...]:
    """The threads whose author is trusted (resolved ones included)."""
    return tuple(t for t in threads if thread_trusted(t, act_on, self_login))
