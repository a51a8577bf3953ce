"""Pure parsers of the result files an agent leaves in its workspace.

Each parser takes the file's text and returns either a typed, frozen value or a
:class:`ResultError` that names the file, the line when known, the field and
the problem. Bad content is never an exception: it is a failed turn the
runtime can report. The shared error type lives in
:mod:`orchestrator.domain.result_errors` and the ``fix-summary.json`` parser in
:mod:`orchestrator.domain.fix_summary`; both are re-exported here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from orchestrator.domain.fix_summary import (
    FIX_SUMMARY_FILE,
    FixEntry,
    FixStatus,
    FixSummary,
    FixTargetKind,
    parse_fix_summary,
)
from orchestrator.domain.phases import WaitingReason
from orchestrator.domain.result_errors import (
    GITHUB_BODY_LIMIT,
    HeadMismatch,
    ResultError,
    ResultErrorKind,
    check_size,
    inert,
    normalise,
    shown,
)

__all__ = [
    "BLOCKED_FILE",
    "FIX_SUMMARY_FILE",
    "GITHUB_BODY_LIMIT",
    "PR_DESCRIPTION_FILE",
    "REVIEW_FILE",
    "REVIEW_FORMAT",
    "BlockedQuestion",
    "Finding",
    "FixEntry",
    "FixStatus",
    "FixSummary",
    "FixTargetKind",
    "HeadMismatch",
    "PRDescription",
    "ResultError",
    "ResultErrorKind",
    "Review",
    "Severity",
    "inert",
    "parse_blocked",
    "parse_fix_summary",
    "parse_pr_description",
    "parse_review",
]

REVIEW_FILE = "review.md"
BLOCKED_FILE = "blocked.md"
PR_DESCRIPTION_FILE = "pr-description.md"

REVIEW_FORMAT = "structured_markdown_v1"

_HEAD_LINE = re.compile(r"^<!--\s*orchestrator-review-head:\s*(\S+)\s*-->\s*$")
_SHA40 = re.compile(r"^[0-9a-f]{40}$")
_COMMIT = re.compile(r"^[0-9a-f]{7,40}$")
_FINDING_HEADING = re.compile(r"^###\s+(\S+)\s+\[([^\]]*)\]\s*(.*)$")
_FINDING_ID = re.compile(r"^F[1-9][0-9]{0,3}$")
_FIELD_LINE = re.compile(r"^[-*]\s+([A-Za-z_][A-Za-z0-9_ ]*?)\s*:\s?(.*)$")
_BLOCKED_REASON_LINE = re.compile(r"^<!--\s*orchestrator-blocked-reason:\s*(\S+)\s*-->\s*$")


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


# ---------------------------------------------------------------- review.md

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


# ------------------------------------------------------------- blocked.md


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
