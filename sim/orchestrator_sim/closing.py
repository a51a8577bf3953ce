"""Closing keywords in commit messages, as the emulated GitHub reads them.

GitHub closes an issue when a commit that reaches the repository's default branch
(pushed there, or put there by a merge, a squash or a rebase) says ``close``,
``closes``, ``closed``, ``fix``, ``fixes``, ``fixed``, ``resolve``, ``resolves``
or ``resolved`` before a reference to it (``#12``, ``owner/repo#12`` or the
issue's URL), in any repository the person who pushed or merged can write. The
emulator reads more than GitHub documents, so that a test catches whatever GitHub
might close: markdown emphasis, code marks and HTML tags are read through, any
Unicode space separates, ``GH-12`` is a reference, and an issue URL may be on any
host, with or without its scheme.

This reading is written apart from the product's own
(:mod:`orchestrator.domain.pr_body`): a form the product misses must not be
missed here for the same reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Marks that do not stop GitHub (or a reader) from seeing the phrase: emphasis, code,
# HTML tags, zero-width characters. An underscore inside a name (my_repo) stays.
_NOISE = re.compile(
    r"[*~`\u200b\u200c\u200d\u2060\ufeff]|<[^<>\n]{0,40}>|(?<![0-9a-z])_+|_+(?![0-9a-z])",
    re.IGNORECASE,
)
_ENTITY = re.compile(r"&(?:nbsp|#160|#x0*a0);", re.IGNORECASE)
_PHRASE = re.compile(
    r"(?<![0-9a-z])(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)[\s:]*"
    r"(?:"
    r"(?:https?://)?[0-9a-z.-]+(?::\d+)?/(?P<url_owner>[\w.-]+)/(?P<url_name>[\w.-]+)"
    r"/(?:issues|pulls?)/(?P<url_number>\d+)"
    r"|(?:(?P<owner>[\w.-]+)/(?P<name>[\w.-]+))?#(?P<number>\d+)"
    r"|gh-(?P<gh_number>\d+)"
    r")(?![0-9a-z])",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class ClosedReference:
    """An issue a commit message closes: ``repo`` as ``owner/name`` (None: the same
    repository) and its number."""

    repo: str | None
    number: int


def closing_references(message: str) -> list[ClosedReference]:
    """Every issue ``message`` closes by keyword, in order (repeats kept)."""
    text = _ENTITY.sub(" ", _NOISE.sub("", message))
    found = []
    for match in _PHRASE.finditer(text):
        if match.group("url_number"):
            repo: str | None = f"{match.group('url_owner')}/{match.group('url_name')}"
            number = match.group("url_number")
        elif match.group("number"):
            owner = match.group("owner")
            repo = f"{owner}/{match.group('name')}" if owner else None
            number = match.group("number")
        else:
            repo, number = None, match.group("gh_number")
        found.append(ClosedReference(repo, int(number)))
    return found
