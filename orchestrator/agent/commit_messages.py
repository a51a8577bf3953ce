"""The messages of the commits a push brings, checked before the push.

A commit whose message says ``Closes other/repo#1`` closes that issue when it
reaches the default branch (a merge or a rebase of the pull request puts the
agent's commits there as they are), in any repository the merger can write.
The agent may only close the issue it works on, so a push bringing any other
closing keyword is refused with the commit and the phrase, for the agent's next
turn to reword: rewording here would change commits the runtime tracks by SHA.

The messages are read in the daemon's own scratch repository, raw (``git
cat-file``), so that a NUL byte or an ``encoding`` header cannot hide text from
the check that GitHub may still read.
"""

from __future__ import annotations

import re
from pathlib import Path

from orchestrator.agent.errors import PushRefused
from orchestrator.agent.git import GIT_OUTPUT_LIMIT, run_git
from orchestrator.domain.pr_body import ClosingScope

# More commits than this in one push are not read one by one: the push is refused.
MAX_COMMITS = 200
_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_UTF8 = frozenset({"utf-8", "utf8"})


def message_of(raw: str) -> tuple[str, str | None]:
    """The message of a raw commit object, and the encoding its header declares (if any)."""
    header, _, message = raw.partition("\n\n")
    encoding = None
    for line in header.split("\n"):
        if line.startswith("encoding "):
            encoding = line[len("encoding ") :].strip()
    return message, encoding


def check_commit_messages(
    repo: Path, start: str, head: str, scope: ClosingScope, *, timeout_s: float
) -> None:
    """Raise :class:`PushRefused` when a commit of ``start..head`` in ``repo`` says a closing
    keyword for another issue than ``scope``'s, or cannot be read whole."""
    listing = run_git(
        ["rev-list", f"--max-count={MAX_COMMITS + 1}", f"{start}..{head}"],
        cwd=repo,
        timeout_s=timeout_s,
    ).split()
    if len(listing) > MAX_COMMITS:
        raise PushRefused(
            head,
            f"it brings more than {MAX_COMMITS} commits, whose messages are not all read; "
            "squash them into fewer commits",
        )
    for sha in listing:
        if not _SHA.fullmatch(sha):
            raise PushRefused(head, f"git listed {sha[:40]!r} among its commits")
        raw = run_git(["cat-file", "commit", sha], cwd=repo, timeout_s=timeout_s)
        if len(raw.encode("utf-8", "replace")) > GIT_OUTPUT_LIMIT:
            raise PushRefused(
                head, f"the commit {sha[:12]} has a message too long to check; shorten it"
            )
        message, encoding = message_of(raw)
        if encoding is not None and encoding.lower() not in _UTF8:
            raise PushRefused(
                head,
                f"the commit {sha[:12]} declares its message in {encoding[:40]!r}; "
                "write it in UTF-8",
            )
        # A NUL byte ends the message for some readers and not for others: read past it.
        found = scope.foreign(message.replace("\0", " "))
        if found:
            said = ", ".join(f"'{phrase}'" for phrase in found[:3])
            allowed = (
                f"only {scope.repo}#{scope.number} may be closed"
                if scope.number is not None
                else "no issue may be closed by keyword"
            )
            raise PushRefused(
                head,
                f"the commit {sha[:12]} says {said}, which would close another issue when "
                f"merged ({allowed}); reword it, e.g. 'Refs' instead of the keyword",
            )
