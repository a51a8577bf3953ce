"""The located error every result-file parser returns, and the helpers all of them share.

A result file is written by the agent, so everything about it is hostile: its
size, its bytes, and any value a message would echo back. :class:`ResultError`
names the file, the line when known, the field (or the path in a JSON
document) and the problem; :func:`shown` keeps an echoed value short.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

# GitHub rejects issue, comment and pull request bodies longer than this.
GITHUB_BODY_LIMIT = 65_536

# How much of an agent-written value an error message repeats.
SHOWN_LIMIT = 60


class ResultErrorKind(StrEnum):
    """The class of a result-file problem, for callers that branch on it."""

    EMPTY = "empty"
    TOO_LARGE = "too_large"
    SYNTAX = "syntax"
    MISSING_FIELD = "missing_field"
    INVALID_VALUE = "invalid_value"
    UNKNOWN_FIELD = "unknown_field"
    DUPLICATE = "duplicate"
    HEAD_MISMATCH = "head_mismatch"


@dataclass(frozen=True, slots=True)
class ResultError:
    """A located problem in a result file; ``str()`` gives ``file:line: field: message``."""

    file: str
    line: int | None
    field: str | None
    message: str
    kind: ResultErrorKind = ResultErrorKind.INVALID_VALUE

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        if self.field:
            return f"{where}: {self.field}: {self.message}"
        return f"{where}: {self.message}"


@dataclass(frozen=True, slots=True)
class HeadMismatch(ResultError):
    """The review was written for another commit than the one the runtime expected."""

    expected: str = ""
    found: str = ""


def shown(value: object) -> str:
    """``repr(value)``, cut to :data:`SHOWN_LIMIT` characters, for an error message."""
    text = repr(value)
    if len(text) <= SHOWN_LIMIT:
        return text
    return f"{text[:SHOWN_LIMIT]}... ({len(text)} characters)"


def cut(name: str) -> str:
    """A name from the document (a key, an id) as it is, or its start when it is long."""
    return name if len(name) <= SHOWN_LIMIT else f"{name[:SHOWN_LIMIT]}..."


def inert(text: str) -> str:
    """Agent-written text made unable to carry the runtime's hidden markers.

    The runtime finds its own comments (the workpad, the review comment, replies)
    by HTML comments such as ``<!-- orchestrator-workpad -->``. Text from the agent
    ends up in comments the bot writes, so an HTML comment opener in it is written
    as the visible ``&lt;!--`` instead: it can never pass for one of those markers.
    """
    return text.replace("<!--", "&lt;!--")


def normalise(text: str) -> str:
    """``text`` without a byte order mark and with ``\\n`` line ends only."""
    if text.startswith("\ufeff"):
        text = text[1:]
    return text.replace("\r\n", "\n").replace("\r", "\n")


def check_size(text: str, file: str, max_bytes: int) -> ResultError | None:
    """An error when ``text`` is over ``max_bytes`` in UTF-8 or holds a NUL byte."""
    size = len(text.encode("utf-8", errors="surrogatepass"))
    if size > max_bytes:
        return ResultError(
            file,
            None,
            None,
            f"file is {size} bytes, more than the limit of {max_bytes}",
            ResultErrorKind.TOO_LARGE,
        )
    if "\x00" in text:
        return ResultError(file, None, None, "file contains a NUL byte", ResultErrorKind.SYNTAX)
    return None
