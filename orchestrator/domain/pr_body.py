"""The pull request description: the agent's text, kept honest and respectful of people's edits.

Ownership of the body (docs/domain.md, "The pull request body"):

- **Closing keywords.** GitHub closes an issue when a PR whose body says
  ``close``/``closes``/``closed``/``fix``/``fixes``/``fixed``/``resolve``/
  ``resolves``/``resolved``, an optional colon, and a reference (``#12``,
  ``owner/repo#12``, ``GH-12`` or an issue URL) is merged, and when a commit
  whose message says so reaches the default branch. Only the tracked issue may
  be closed that way: any other reference loses its keyword (``Closes #999``
  becomes ``Refs #999``), in another tracked repository too. ``Closes #N`` for
  the tracked issue is added when no keyword already names it; ``#1`` is never
  mistaken for ``#12``. The reading is wider than GitHub's where GitHub's is
  not documented: markdown emphasis, code marks or HTML tags around the keyword
  (``**Closes** #1``), any Unicode space between keyword and reference (a
  no-break space too), URLs with or without ``http(s)://`` and ``www.`` on
  github.com and on the configured Enterprise host all count as closing.
- **Template headings.** Headings of the repository's pull request template the
  description lacks are restored, empty, with a note.
- **People's edits.** When the body on GitHub is no longer what the runtime last
  wrote, the new description is merged with it by section
  (:func:`merge_human_edits`): a section a person changed or added is kept as
  they wrote it, and one they removed stays removed.

Every change is listed in ``notes``, which the workpad shows.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, replace
from urllib.parse import urlsplit

from orchestrator.domain.agent_files.errors import GITHUB_BODY_LIMIT
from orchestrator.domain.policy import MergeMethod

GITHUB_WEB = "https://github.com"

# The keyword, not inside a longer word (``prefixes``), but after ``_`` (``_Fixes_``).
_KEYWORD = r"(?<![^\W_])(?P<keyword>close[sd]?|fix(?:e[sd])?|resolve[sd]?)"
# What may stand between a keyword and its reference and still read as one phrase: any
# Unicode space (a no-break space too), zero-width characters, a colon, markdown emphasis
# or code marks, inline HTML tags and no-break space entities, as in
# ``**Closes**:\u00a0`#1` ``. Bounded, so that no text makes the match slow.
_GAP = (
    r"(?P<gap>(?:[\s:*_~`\u200b-\u200d\u2060\ufeff]|</?[a-z]+[ \t]*>"
    r"|&(?:nbsp|#160|#xa0);){0,40})"
)
_NAME = r"[\w.-]+/[\w.-]+"
_GITHUB_HOSTS = r"(?:www\.)?github\.com"
# The subject line GitHub writes for a squash, ``<title> (#N)``, stays within a PR title's
# 256 characters.
TITLE_LIMIT = 256

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
_FENCE = re.compile(r"^[ \t]{0,3}(```|~~~)")

EMPTY_SECTION_NOTE = "_Not filled in: the pull request template asks for this section._"


@dataclass(frozen=True)
class Body:
    """A description to write, and what the runtime changed in the agent's text."""

    text: str
    notes: tuple[str, ...] = ()


@functools.lru_cache(maxsize=8)
def _closing(web_base: str) -> re.Pattern[str]:
    """The closing-keyword pattern, with issue URLs on github.com and on ``web_base``."""
    hosts = [_GITHUB_HOSTS]
    parts = urlsplit(web_base if "//" in web_base else f"//{web_base}")
    place = (parts.netloc + parts.path.rstrip("/")).lower()
    if place and place not in ("github.com", "www.github.com"):
        hosts.append(re.escape(place))
    url = (
        rf"(?:https?://)?(?:{'|'.join(hosts)})/(?P<url_repo>{_NAME})"
        r"/(?:issues|pulls?)/(?P<url_number>\d+)"
    )
    reference = (
        rf"(?P<ref>{url}|(?:(?P<repo>{_NAME}))?#(?P<number>\d+)|gh-(?P<gh_number>\d+))(?![\w/])"
    )
    return re.compile(_KEYWORD + _GAP + reference, re.IGNORECASE)


@dataclass(frozen=True)
class ClosingScope:
    """The one issue a pull request may close by keyword, and where issue URLs point.

    ``number`` None: no issue may be closed by keyword (the tracker's issue is not a
    GitHub issue of ``repo``). ``web_base`` is the web address of GitHub (an Enterprise
    server's when the policy names one).
    """

    repo: str
    number: int | None
    web_base: str = GITHUB_WEB

    def foreign(self, text: str) -> tuple[str, ...]:
        """The closing phrases of ``text`` that name another issue (``Closes other/repo#1``)."""
        return foreign_closing(text, self.repo, self.number, web_base=self.web_base)

    def honest(self, text: str) -> Body:
        """``text`` with the keyword dropped before every reference to another issue."""
        return drop_foreign_closing(text, self.repo, self.number, web_base=self.web_base)


def _names_tracked(match: re.Match[str], repo: str, number: int | None) -> bool:
    if number is None:
        return False
    found_repo = match.group("url_repo") or match.group("repo")
    found_number = match.group("url_number") or match.group("number") or match.group("gh_number")
    if int(found_number) != number:
        return False
    return found_repo is None or found_repo.lower() == repo.lower()


def _phrase(match: re.Match[str]) -> str:
    return f"{match.group('keyword')} {match.group('ref')}"


def closes_tracked(text: str, repo: str, number: int, *, web_base: str = GITHUB_WEB) -> bool:
    """Whether a closing keyword in ``text`` names the tracked issue (exactly, not a prefix)."""
    return any(_names_tracked(m, repo, number) for m in _closing(web_base).finditer(text))


def foreign_closing(
    text: str, repo: str, number: int | None, *, web_base: str = GITHUB_WEB
) -> tuple[str, ...]:
    """The closing phrases of ``text`` naming any issue but ``number`` of ``repo``."""
    return tuple(
        _phrase(m) for m in _closing(web_base).finditer(text) if not _names_tracked(m, repo, number)
    )


def drop_foreign_closing(
    text: str, repo: str, number: int | None, *, web_base: str = GITHUB_WEB
) -> Body:
    """``text`` with the closing keyword replaced by ``Refs`` before every reference to
    another issue (all of them when ``number`` is None)."""
    dropped: list[str] = []

    def neutral(match: re.Match[str]) -> str:
        if _names_tracked(match, repo, number):
            return match.group(0)
        dropped.append(_phrase(match))
        return f"Refs{match.group('gap')}{match.group('ref')}"

    result = _closing(web_base).sub(neutral, text)
    allowed = f"only #{number} may be closed" if number is not None else "no issue may be closed"
    notes = tuple(
        f"dropped the closing keyword of '{d}': {allowed} by this PR" for d in dropped[:10]
    )
    if len(dropped) > 10:
        notes += (f"dropped {len(dropped) - 10} more closing keywords",)
    return Body(result, notes)


@dataclass(frozen=True)
class CommitText:
    """The subject and message GitHub writes for a merge (``commit_title``/``commit_message``)."""

    title: str
    message: str


def merge_commit_text(
    method: MergeMethod,
    *,
    pr_number: int,
    pr_title: str,
    pr_body: str,
    head_label: str,
    scope: ClosingScope,
) -> CommitText | None:
    """What the merge commit says, so that it closes no issue at all.

    GitHub's defaults are ``<title> (#N)`` over the list of the branch's commit
    messages for a squash, and ``Merge pull request #N from <head>`` over the title
    for a merge commit: both would carry whatever the agent wrote. The squash says
    the pull request's body instead, the merge commit its title, each with every
    closing keyword dropped, the tracked issue's too: the runtime closes that one
    once the merge is confirmed (and GitHub through the body's own ``Closes #N``).
    A rebase writes no commit of its own (None): the branch's commits land as they
    are, and were checked before they were pushed.
    """
    quiet = replace(scope, number=None)

    # Cut before cleaning: a cut could end a longer reference (``#1a``) as a closing one.
    def line(text: str) -> str:
        return quiet.honest(" ".join(text.split())[:TITLE_LIMIT]).text

    title = line(pr_title)
    if method is MergeMethod.SQUASH:
        message = quiet.honest(pr_body[:GITHUB_BODY_LIMIT]).text
        return CommitText(f"{title} (#{pr_number})", message)
    if method is MergeMethod.MERGE:
        return CommitText(line(f"Merge pull request #{pr_number} from {head_label}"), title)
    return None


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
