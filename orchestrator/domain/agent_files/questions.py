"""Parsing what an agent says to people: ``blocked.md`` and ``pr-description.md``.

``blocked.md`` is the question for a human when the agent cannot go on;
``pr-description.md`` is the body of the pull request it opened. Both end up
in comments the bot writes, so their text is made inert and kept within
GitHub's body limit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from orchestrator.domain.agent_files.errors import (
    GITHUB_BODY_LIMIT,
    ResultError,
    ResultErrorKind,
    check_size,
    inert,
    normalise,
    shown,
)
from orchestrator.domain.phases import WaitingReason

BLOCKED_FILE = "blocked.md"
PR_DESCRIPTION_FILE = "pr-description.md"

_BLOCKED_REASON_LINE = re.compile(r"^<!--\s*orchestrator-blocked-reason:\s*(\S+)\s*-->\s*$")

_BLOCKABLE_REASONS = frozenset(
    {WaitingReason.MISSING_CONTEXT, WaitingReason.MISSING_AUTH, WaitingReason.TOOL_UNAVAILABLE}
)


@dataclass(frozen=True, slots=True)
class BlockedQuestion:
    """The question an agent asks a human when it cannot go on (``blocked.md``)."""

    reason: WaitingReason
    summary: str
    text: str


@dataclass(frozen=True, slots=True)
class PRDescription:
    """The pull request body an agent wrote (``pr-description.md``)."""

    body: str


def parse_blocked(text: str, *, max_bytes: int = 64_000) -> BlockedQuestion | ResultError:
    """Parse ``blocked.md``: the question for a human, optionally led by a reason marker."""
    file = BLOCKED_FILE
    problem = check_size(text, file, max_bytes)
    if problem is not None:
        return problem
    lines = normalise(text).split("\n")
    reason = WaitingReason.MISSING_CONTEXT
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None:
        return ResultError(file, None, None, "file is empty", ResultErrorKind.EMPTY)
    marker = _BLOCKED_REASON_LINE.match(lines[first].strip())
    if marker is not None:
        named = {str(r): r for r in _BLOCKABLE_REASONS}.get(marker.group(1))
        if named is None:
            return ResultError(
                file,
                first + 1,
                "reason",
                f"{shown(marker.group(1))} is not one of "
                + ", ".join(sorted(str(r) for r in _BLOCKABLE_REASONS)),
                ResultErrorKind.INVALID_VALUE,
            )
        reason = named
        lines = lines[first + 1 :]
    body = "\n".join(lines).strip()
    if not body:
        return ResultError(file, None, None, "the question is empty", ResultErrorKind.EMPTY)
    if len(body) > GITHUB_BODY_LIMIT // 2:
        return ResultError(
            file,
            None,
            None,
            f"the question is {len(body)} characters, more than {GITHUB_BODY_LIMIT // 2}",
            ResultErrorKind.TOO_LARGE,
        )
    body = inert(body)
    summary_line = next(line for line in body.split("\n") if line.strip())
    summary = summary_line.strip().lstrip("#").strip() or summary_line.strip()
    return BlockedQuestion(reason=reason, summary=summary[:200], text=body)


# ------------------------------------------------------- pr-description.md


def parse_pr_description(
    text: str, *, max_bytes: int = 256_000, max_chars: int = GITHUB_BODY_LIMIT
) -> PRDescription | ResultError:
    """Parse ``pr-description.md``: a non-empty body within GitHub's body limit."""
    file = PR_DESCRIPTION_FILE
    problem = check_size(text, file, max_bytes)
    if problem is not None:
        return problem
    body = normalise(text).strip()
    if not body:
        return ResultError(file, None, None, "file is empty", ResultErrorKind.EMPTY)
    if len(body) > max_chars:
        return ResultError(
            file,
            None,
            None,
            f"description is {len(body)} characters, more than the limit of {max_chars}",
            ResultErrorKind.TOO_LARGE,
        )
    return PRDescription(body=inert(body))
