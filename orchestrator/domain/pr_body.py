"""The pull request description: the agent's text, kept honest and respectful of people's edits.

Ownership of the body (docs/domain.md, "The pull request body"):

- **Closing keywords.** GitHub closes an issue when a PR whose body says
  ``close``/``closes``/``closed``/``fix``/``fixes``/``fixed``/``resolve``/
  ``resolves``/``resolved``, an optional colon, and a reference (``#12``,
  ``owner/repo#12`` or an issue URL) is merged. Only the tracked issue may be
  closed that way: any other reference loses its keyword (``Closes #999``
  becomes ``Refs #999``). ``Closes #N`` for the tracked issue is added when no
  keyword already names it; ``#1`` is never mistaken for ``#12``.
- **Template headings.** Headings of the repository's pull request template the
  description lacks are restored, empty, with a note.
- **People's edits.** When the body on GitHub is no longer what the runtime last
  wrote, the new description is merged with it by section
  (:func:`merge_human_edits`): a section a person changed or added is kept as
  they wrote it, and one they removed stays removed.

Every change is listed in ``notes``, which the workpad shows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_KEYWORD = r"(?P<keyword>\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?))(?P<gap>[ \t]*:?[ \t]*)"
_REFERENCE = (
    r"(?P<ref>(?:https?://github\.com/(?P<url_repo>[\w.-]+/[\w.-]+)/issues/(?P<url_number>\d+))"
    r"|(?:(?P<repo>[\w.-]+/[\w.-]+))?#(?P<number>\d+))(?![\w/])"
)
_CLOSING = re.compile(_KEYWORD + _REFERENCE, re.IGNORECASE)
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
_FENCE = re.compile(r"^[ \t]{0,3}(```|~~~)")

EMPTY_SECTION_NOTE = "_Not filled in: the pull request template asks for this section._"


@dataclass(frozen=True)
class Body:
    """A description to write, and what the runtime changed in the agent's text."""

    text: str
    notes: tuple[str, ...] = ()


def _names_tracked(match: re.Match[str], repo: str, number: int) -> bool:
    found_repo = match.group("url_repo") or match.group("repo")
    found_number = match.group("url_number") or match.group("number")
    if int(found_number) != number:
        return False
    return found_repo is None or found_repo.lower() == repo.lower()


def closes_tracked(text: str, repo: str, number: int) -> bool:
    """Whether a closing keyword in ``text`` names the tracked issue (exactly, not a prefix)."""
    return any(_names_tracked(m, repo, number) for m in _CLOSING.finditer(text))


def drop_foreign_closing(text: str, repo: str, number: int) -> Body:
    """``text`` with the closing keyword removed before every reference to another issue."""
    dropped: list[str] = []

    def neutral(match: re.Match[str]) -> str:
        if _names_tracked(match, repo, number):
            return match.group(0)
        dropped.append(f"{match.group('keyword')} {match.group('ref')}")
        return f"Refs {match.group('ref')}"

    result = _CLOSING.sub(neutral, text)
    notes = tuple(
        f"dropped the closing keyword of '{d}': only #{number} may be closed by this PR"
        for d in dropped[:10]
    )
    if len(dropped) > 10:
        notes += (f"dropped {len(dropped) - 10} more closing keywords",)
    return Body(result, notes)


def headings(text: str) -> list[tuple[str, str]]:
    """The markdown headings of ``text`` outside code fences: (marker, title) pairs."""
    found = []
    in_fence = False
    for line in text.split("\n"):
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        match = None if in_fence else _HEADING.match(line)
        if match is not None:
            found.append((match.group(1), match.group(2).strip()))
    return found


def _key(title: str) -> str:
    return " ".join(title.lower().split())


def restore_template_headings(text: str, template: tuple[str, ...]) -> Body:
    """``text`` with each heading of the template it lacks appended, empty, with a note.

    ``template`` holds the template's heading lines (``## Testing``).
    """
    present = {_key(title) for _, title in headings(text)}
    missing = []
    for line in template:
        match = _HEADING.match(line)
        if match is not None and _key(match.group(2)) not in present:
            missing.append(line.strip())
            present.add(_key(match.group(2)))
    if not missing:
        return Body(text)
    added = "".join(f"\n\n{line}\n\n{EMPTY_SECTION_NOTE}" for line in missing)
    notes = tuple(f"restored the template heading '{line}', left empty" for line in missing)
    return Body(text.rstrip() + added, notes)


def _sections(text: str) -> list[tuple[str, str]]:
    """``text`` cut at its headings: (heading key, section text); the preamble's key is ''."""
    sections: list[tuple[str, list[str]]] = [("", [])]
    in_fence = False
    for line in text.split("\n"):
        if _FENCE.match(line):
            in_fence = not in_fence
        match = None if in_fence else _HEADING.match(line)
        if match is not None:
            sections.append((_key(match.group(2)), [line]))
        else:
            sections[-1][1].append(line)
    return [(key, "\n".join(lines).strip()) for key, lines in sections]


def merge_human_edits(last_written: str, current: str, new: str) -> Body:
    """The new description, keeping what people changed since the runtime last wrote it.

    Bodies are compared section by section (a section runs from a heading to
    the next; the text before the first heading is one too). A section
    someone changed keeps their text, one they added is kept (after the new
    text), one they removed stays removed; every other section is the new one.
    """
    if current.strip() == last_written.strip():
        return Body(new)
    before = dict(_sections(last_written))
    now = _sections(current)
    now_by_key = dict(now)
    merged: list[str] = []
    kept: list[str] = []
    placed: set[str] = set()
    for key, text in _sections(new):
        placed.add(key)
        if key in before and key not in now_by_key:
            if before[key]:
                kept.append(f"kept the removal of '{key or 'the opening text'}'")
            continue
        if key in now_by_key and now_by_key[key] != before.get(key):
            merged.append(now_by_key[key])
            kept.append(f"kept a person's edit of '{key or 'the opening text'}'")
            continue
        merged.append(text)
    for key, text in now:
        if key in placed or not text or before.get(key) == text:
            continue
        merged.append(text)
        what = "added" if key not in before else "edited"
        kept.append(f"kept the section '{key or 'the opening text'}' a person {what}")
    return Body("\n\n".join(part for part in merged if part), tuple(kept))
