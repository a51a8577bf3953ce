"""Parsing ``review.md``: the agent's structured review of one head commit.

The format is ``structured_markdown_v1`` (docs/domain.md): a first line naming
the reviewed head, an overview, then one ``### F1 [P1] Title`` section per
finding with ``- field: value`` lines. Any problem is a :class:`ResultError`
naming the line and the finding.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from orchestrator.domain.agent_files.errors import (
    HeadMismatch,
    ResultError,
    ResultErrorKind,
    check_size,
    inert,
    normalise,
    shown,
)

REVIEW_FILE = "review.md"

REVIEW_FORMAT = "structured_markdown_v1"

_HEAD_LINE = re.compile(r"^<!--\s*orchestrator-review-head:\s*(\S+)\s*-->\s*$")
_SHA40 = re.compile(r"^[0-9a-f]{40}$")
_FINDING_HEADING = re.compile(r"^###\s+(\S+)\s+\[([^\]]*)\]\s*(.*)$")
_FINDING_ID = re.compile(r"^F[1-9][0-9]{0,3}$")
_FIELD_LINE = re.compile(r"^[-*]\s+([A-Za-z_][A-Za-z0-9_ ]*?)\s*:\s?(.*)$")


class Severity(StrEnum):
    """Finding severity, P0 (must fix, breaks things) to P3 (nit)."""

    P0 = "P0"
    P1 = "P1"
    P2 = "P2"
    P3 = "P3"

    @property
    def rank(self) -> int:
        """0 for P0 (most severe) up to 3 for P3."""
        return int(self.value[1])


@dataclass(frozen=True, slots=True)
class Finding:
    """One finding of a structured review."""

    id: str
    severity: Severity
    title: str
    summary: str
    why_it_matters: str
    suggested_fix: str
    location: str | None = None


@dataclass(frozen=True, slots=True)
class Review:
    """A parsed ``structured_markdown_v1`` review of one head commit."""

    head_sha: str
    findings: tuple[Finding, ...]
    overview: str = ""

    def finding(self, finding_id: str) -> Finding | None:
        """The finding with this id, if any."""
        for item in self.findings:
            if item.id == finding_id:
                return item
        return None


_REVIEW_FIELDS = ("summary", "why_it_matters", "suggested_fix")
_REVIEW_OPTIONAL = ("location",)


def parse_review(
    text: str, *, expected_head: str | None = None, max_bytes: int = 256_000
) -> Review | ResultError:
    """Parse a ``structured_markdown_v1`` review (see docs/domain.md for the format)."""
    file = REVIEW_FILE
    problem = check_size(text, file, max_bytes)
    if problem is not None:
        return problem
    lines = normalise(text).split("\n")
    if not lines or not lines[0].strip():
        if not text.strip():
            return ResultError(file, None, None, "file is empty", ResultErrorKind.EMPTY)
        return ResultError(
            file,
            1,
            None,
            "first line must be <!-- orchestrator-review-head: SHA -->",
            ResultErrorKind.SYNTAX,
        )
    head_match = _HEAD_LINE.match(lines[0].strip())
    if head_match is None:
        return ResultError(
            file,
            1,
            None,
            "first line must be <!-- orchestrator-review-head: SHA -->",
            ResultErrorKind.SYNTAX,
        )
    head = head_match.group(1).lower()
    if not _SHA40.match(head):
        return ResultError(
            file,
            1,
            "head",
            f"{shown(head_match.group(1))} is not a 40-character hexadecimal commit SHA",
            ResultErrorKind.INVALID_VALUE,
        )
    if expected_head is not None and head != expected_head.lower():
        return HeadMismatch(
            file,
            1,
            "head",
            f"review is for {head[:12]} but the current head is {expected_head.lower()[:12]}",
            ResultErrorKind.HEAD_MISMATCH,
            expected=expected_head.lower(),
            found=head,
        )
    return _parse_findings(lines, head)


@dataclass
class _FindingDraft:
    id: str
    severity: Severity
    title: str
    line: int
    fields: dict[str, list[str]]
    current: str | None = None


def _parse_findings(lines: list[str], head: str) -> Review | ResultError:
    overview: list[str] = []
    drafts: list[_FindingDraft] = []
    seen: dict[str, int] = {}
    in_fence = False
    for index, raw in enumerate(lines[1:], start=2):
        line = raw.rstrip()
        heading = None if in_fence else _FINDING_HEADING.match(line)
        if heading is not None:
            draft_or_error = _start_finding(heading, index, seen)
            if isinstance(draft_or_error, ResultError):
                return draft_or_error
            drafts.append(draft_or_error)
            continue
        if not drafts:
            if line.lstrip().startswith("```"):
                in_fence = not in_fence
            overview.append(raw)
            continue
        draft = drafts[-1]
        problem = _add_finding_line(draft, line, index)
        if problem is not None:
            return problem
    findings: list[Finding] = []
    for draft in drafts:
        finding_or_error = _finish_finding(draft)
        if isinstance(finding_or_error, ResultError):
            return finding_or_error
        findings.append(finding_or_error)
    return Review(head_sha=head, findings=tuple(findings), overview="\n".join(overview).strip())


def _start_finding(
    heading: re.Match[str], index: int, seen: dict[str, int]
) -> _FindingDraft | ResultError:
    file = REVIEW_FILE
    finding_id, severity_text, title = heading.group(1), heading.group(2).strip(), heading.group(3)
    if not _FINDING_ID.match(finding_id):
        return ResultError(
            file,
            index,
            f"finding {finding_id if len(finding_id) <= 20 else finding_id[:20] + '...'}",
            "finding id must be F followed by a number (F1, F2, ...)",
            ResultErrorKind.INVALID_VALUE,
        )
    if finding_id in seen:
        return ResultError(
            file,
            index,
            f"finding {finding_id}",
            f"duplicate finding id (first used on line {seen[finding_id]})",
            ResultErrorKind.DUPLICATE,
        )
    seen[finding_id] = index
    try:
        severity = Severity(severity_text.upper())
    except ValueError:
        return ResultError(
            file,
            index,
            f"finding {finding_id}",
            f"severity {shown(severity_text)} is not one of P0, P1, P2, P3",
            ResultErrorKind.INVALID_VALUE,
        )
    if not title.strip():
        return ResultError(
            file,
            index,
            f"finding {finding_id}",
            "missing title after the severity",
            ResultErrorKind.MISSING_FIELD,
        )
    return _FindingDraft(finding_id, severity, title.strip(), index, {})


def _add_finding_line(draft: _FindingDraft, line: str, index: int) -> ResultError | None:
    file = REVIEW_FILE
    label = f"finding {draft.id}"
    if not line.strip():
        if draft.current is not None:
            draft.fields[draft.current].append("")
        return None
    field_match = _FIELD_LINE.match(line)
    if field_match is not None:
        key = field_match.group(1).strip().lower().replace(" ", "_")
        if key not in _REVIEW_FIELDS and key not in _REVIEW_OPTIONAL:
            return ResultError(
                file,
                index,
                label,
                f"unknown field {shown(key)}; expected one of "
                + ", ".join(_REVIEW_FIELDS + _REVIEW_OPTIONAL),
                ResultErrorKind.UNKNOWN_FIELD,
            )
        if key in draft.fields:
            return ResultError(
                file, index, label, f"field {key} given twice", ResultErrorKind.DUPLICATE
            )
        draft.fields[key] = [field_match.group(2)]
        draft.current = key
        return None
    if line.startswith(("  ", "\t")) and draft.current is not None:
        draft.fields[draft.current].append(line.strip())
        return None
    return ResultError(
        file,
        index,
        label,
        "unexpected text; write '- field: value' lines, and indent continuation lines",
        ResultErrorKind.SYNTAX,
    )


def _finish_finding(draft: _FindingDraft) -> Finding | ResultError:
    values: dict[str, str] = {}
    for key, parts in draft.fields.items():
        values[key] = "\n".join(parts).strip()
    for key in _REVIEW_FIELDS:
        if not values.get(key):
            return ResultError(
                REVIEW_FILE,
                draft.line,
                f"finding {draft.id}",
                f"missing field {key}",
                ResultErrorKind.MISSING_FIELD,
            )
    location = values.get("location")
    return Finding(
        id=draft.id,
        severity=draft.severity,
        title=inert(draft.title),
        summary=inert(values["summary"]),
        why_it_matters=inert(values["why_it_matters"]),
        suggested_fix=inert(values["suggested_fix"]),
        location=inert(location) if location else None,
    )
