"""CODEOWNERS read as GitHub reads it: which owners a changed file needs a review from.

GitHub takes the first of `LOCATIONS` that exists on the pull request's base
branch. Each line is a pattern and its owners (``@user``, ``@org/team`` or an
email address); ``#`` starts a comment. Patterns follow ``.gitignore`` rules
with GitHub's exceptions: no ``!`` negation and no ``[...]`` ranges (such a
line is skipped, as GitHub skips invalid lines), ``\\#`` escapes a leading
``#``, and ``docs/*`` matches the files directly in ``docs`` only. The last
line that matches a path decides its owners; a matching line without owners
leaves the path unowned.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Where GitHub looks for the file, in order; the first one found is the only one read.
LOCATIONS = (".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS")


@dataclass(frozen=True, slots=True)
class OwnerRule:
    """One line of a CODEOWNERS file: its pattern, compiled, and the owners it names."""

    pattern: str
    regex: re.Pattern[str]
    owners: tuple[str, ...]


def parse(text: str) -> list[OwnerRule]:
    """The valid rules of a CODEOWNERS file, in file order (invalid lines are skipped)."""
    rules = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        words = _words(line)
        pattern, owners = words[0], tuple(words[1:])
        if pattern.startswith("!") or "[" in pattern or "]" in pattern:
            continue
        if not all(_valid_owner(owner) for owner in owners):
            continue
        rules.append(OwnerRule(pattern, _compile(pattern.replace("\\#", "#")), owners))
    return rules


def owners_of(rules: list[OwnerRule], path: str) -> tuple[str, ...]:
    """The owners of ``path``: those of the last rule matching it (none: unowned)."""
    for rule in reversed(rules):
        if rule.regex.fullmatch(path):
            return rule.owners
    return ()


def owner_name(owner: str) -> str:
    """How GitHub names an owner in a refusal: a login or ``org/team`` without the ``@``."""
    return owner[1:] if owner.startswith("@") else owner


def _words(line: str) -> list[str]:
    """The line's words up to a comment; a ``\\#`` in the pattern is not a comment."""
    words = []
    for word in line.split():
        if word.startswith("#"):
            break
        words.append(word)
    return words


def _valid_owner(owner: str) -> bool:
    if owner.startswith("@"):
        return re.fullmatch(r"@[A-Za-z0-9-]+(\[bot\])?(/[A-Za-z0-9._-]+)?", owner) is not None
    return re.fullmatch(r"[^@\s]+@[^@\s]+", owner) is not None


def _compile(pattern: str) -> re.Pattern[str]:
    """The regular expression matching the repository paths a pattern covers."""
    directory = pattern.endswith("/")
    anchored = "/" in pattern.rstrip("/")
    body = pattern.strip("/")
    parts = []
    index = 0
    while index < len(body):
        if body.startswith("**/", index):
            parts.append("(?:.*/)?")
            index += 3
        elif body.startswith("**", index):
            parts.append(".*")
            index += 2
        elif body[index] == "*":
            parts.append("[^/]*")
            index += 1
        elif body[index] == "?":
            parts.append("[^/]")
            index += 1
        else:
            parts.append(re.escape(body[index]))
            index += 1
    last = body.rsplit("/", 1)[-1]
    if directory:
        suffix = "/.*"
    elif any(mark in last for mark in "*?"):
        # A wildcard in the last segment matches names at that level only (``docs/*``).
        suffix = ""
    else:
        # A plain name matches a file, or a directory and everything below it.
        suffix = "(?:/.*)?"
    prefix = "" if anchored else "(?:.*/)?"
    return re.compile(prefix + "".join(parts) + suffix)
