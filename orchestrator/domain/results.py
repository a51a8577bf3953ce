"""Pure parsers of the result files an agent leaves in its workspace.

Each parser takes the file's text and returns either a typed, frozen value or a
:class:`ResultError` that names the file, the line when known, the field and
the problem. Bad content is never an exception: it is a failed turn the
runtime can report.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from orchestrator.domain.phases import WaitingReason

REVIEW_FILE = "review.md"
FIX_SUMMARY_FILE = "fix-summary.json"
BLOCKED_FILE = "blocked.md"
PR_DESCRIPTION_FILE = "pr-description.md"

# GitHub rejects issue, comment and pull request bodies longer than this.
GITHUB_BODY_LIMIT = 65_536

REVIEW_FORMAT = "structured_markdown_v1"

_HEAD_LINE = re.compile(r"^<!--\s*orchestrator-review-head:\s*(\S+)\s*-->\s*$")
_SHA40 = re.compile(r"^[0-9a-f]{40}$")
_COMMIT = re.compile(r"^[0-9a-f]{7,40}$")
_FINDING_HEADING = re.compile(r"^###\s+(\S+)\s+\[([^\]]*)\]\s*(.*)$")
_FINDING_ID = re.compile(r"^F[1-9][0-9]{0,3}$")
_FIELD_LINE = re.compile(r"^[-*]\s+([A-Za-z_][A-Za-z0-9_ ]*?)\s*:\s?(.*)$")
_BLOCKED_REASON_LINE = re.compile(r"^<!--\s*orchestrator-blocked-reason:\s*(\S+)\s*-->\s*$")


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


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class HeadMismatch(ResultError):
    """The review was written for another commit than the one the runtime expected."""

    expected: str = ""
    found: str = ""


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


@dataclass(frozen=True)
class Finding:
    """One finding of a structured review."""

    id: str
    severity: Severity
    title: str
    summary: str
    why_it_matters: str
    suggested_fix: str
    location: str | None = None


@dataclass(frozen=True)
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


class FixStatus(StrEnum):
    """What the agent did about one review thread, check or finding."""

    FIXED = "fixed"
    SKIPPED = "skipped"
    DISMISSED = "dismissed"
    UNCERTAIN = "uncertain"


class FixTargetKind(StrEnum):
    """What a fix-summary entry is about."""

    THREAD = "thread"
    CHECK = "check"
    FINDING = "finding"


@dataclass(frozen=True)
class FixEntry:
    """The agent's account of one thread, check or finding."""

    target_kind: FixTargetKind
    target: str
    status: FixStatus
    message: str
    evidence: str | None = None
    commit: str | None = None


@dataclass(frozen=True)
class FixSummary:
    """A parsed ``fix-summary.json``: one entry per thread, check or finding."""

    entries: tuple[FixEntry, ...]

    def for_target(self, kind: FixTargetKind, target: str) -> FixEntry | None:
        """The entry about this target, if the agent wrote one."""
        for entry in self.entries:
            if entry.target_kind is kind and entry.target == target:
                return entry
        return None


_BLOCKABLE_REASONS = frozenset(
    {WaitingReason.MISSING_CONTEXT, WaitingReason.MISSING_AUTH, WaitingReason.TOOL_UNAVAILABLE}
)


@dataclass(frozen=True)
class BlockedQuestion:
    """The question an agent asks a human when it cannot go on (``blocked.md``)."""

    reason: WaitingReason
    summary: str
    text: str


@dataclass(frozen=True)
class PRDescription:
    """The pull request body an agent wrote (``pr-description.md``)."""

    body: str


def inert(text: str) -> str:
    """Agent-written text made unable to carry the runtime's hidden markers.

    The runtime finds its own comments (the workpad, the review comment, replies)
    by HTML comments such as ``<!-- orchestrator-workpad -->``. Text from the agent
    ends up in comments the bot writes, so an HTML comment opener in it is written
    as the visible ``&lt;!--`` instead: it can never pass for one of those markers.
    """
    return text.replace("<!--", "&lt;!--")


def _normalise(text: str) -> str:
    if text.startswith("\ufeff"):
        text = text[1:]
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _check_size(text: str, file: str, max_bytes: int) -> ResultError | None:
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


# ---------------------------------------------------------------- review.md

_REVIEW_FIELDS = ("summary", "why_it_matters", "suggested_fix")
_REVIEW_OPTIONAL = ("location",)


def parse_review(
    text: str, *, expected_head: str | None = None, max_bytes: int = 256_000
) -> Review | ResultError:
    """Parse a ``structured_markdown_v1`` review (see docs/domain.md for the format)."""
    file = REVIEW_FILE
    problem = _check_size(text, file, max_bytes)
    if problem is not None:
        return problem
    lines = _normalise(text).split("\n")
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
            f"{head_match.group(1)!r} is not a 40-character hexadecimal commit SHA",
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
            f"finding {finding_id}",
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
            f"severity {severity_text!r} is not one of P0, P1, P2, P3",
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
                f"unknown field {key!r}; expected one of "
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


# ---------------------------------------------------------- fix-summary.json

_ENTRY_KEYS = frozenset({"thread", "check", "finding", "status", "message", "evidence", "commit"})
_TARGET_KEYS = ("thread", "check", "finding")


def parse_fix_summary(text: str, *, max_bytes: int = 256_000) -> FixSummary | ResultError:
    """Parse ``fix-summary.json``: ``{"entries": [{"thread": ..., "status": ...}, ...]}``."""
    file = FIX_SUMMARY_FILE
    problem = _check_size(text, file, max_bytes)
    if problem is not None:
        return problem
    text = _normalise(text)
    if not text.strip():
        return ResultError(file, None, None, "file is empty", ResultErrorKind.EMPTY)
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        return ResultError(
            file, error.lineno, None, f"invalid JSON: {error.msg}", ResultErrorKind.SYNTAX
        )
    except RecursionError:
        return ResultError(file, None, None, "JSON nested too deeply", ResultErrorKind.SYNTAX)
    if not isinstance(document, dict):
        return ResultError(
            file, 1, None, "top level must be a JSON object", ResultErrorKind.INVALID_VALUE
        )
    unknown = sorted(set(document) - {"entries"})
    if unknown:
        return ResultError(
            file,
            None,
            unknown[0],
            "unknown key; the top-level object has only 'entries'",
            ResultErrorKind.UNKNOWN_FIELD,
        )
    raw_entries = document.get("entries")
    if raw_entries is None:
        return ResultError(
            file, None, "entries", "missing field entries", ResultErrorKind.MISSING_FIELD
        )
    if not isinstance(raw_entries, list):
        return ResultError(file, None, "entries", "must be a list", ResultErrorKind.INVALID_VALUE)
    entries: list[FixEntry] = []
    seen: set[tuple[FixTargetKind, str]] = set()
    for position, raw in enumerate(raw_entries):
        entry = _parse_fix_entry(raw, f"entries[{position}]")
        if isinstance(entry, ResultError):
            return entry
        key = (entry.target_kind, entry.target)
        if key in seen:
            return ResultError(
                file,
                None,
                f"entries[{position}]",
                f"second entry for {entry.target_kind} {entry.target!r}",
                ResultErrorKind.DUPLICATE,
            )
        seen.add(key)
        entries.append(entry)
    return FixSummary(tuple(entries))


def _text_field(
    raw: dict[str, Any], key: str, label: str, *, required: bool
) -> str | ResultError | None:
    value = raw.get(key)
    if value is None:
        if required:
            return ResultError(
                FIX_SUMMARY_FILE,
                None,
                f"{label}.{key}",
                f"missing field {key}",
                ResultErrorKind.MISSING_FIELD,
            )
        return None
    if not isinstance(value, str):
        return ResultError(
            FIX_SUMMARY_FILE,
            None,
            f"{label}.{key}",
            "must be a string",
            ResultErrorKind.INVALID_VALUE,
        )
    if not value.strip():
        if required:
            return ResultError(
                FIX_SUMMARY_FILE,
                None,
                f"{label}.{key}",
                "must not be empty",
                ResultErrorKind.MISSING_FIELD,
            )
        return None
    return inert(value.strip())


def _parse_fix_entry(raw: object, label: str) -> FixEntry | ResultError:
    file = FIX_SUMMARY_FILE
    if not isinstance(raw, dict):
        return ResultError(file, None, label, "must be an object", ResultErrorKind.INVALID_VALUE)
    unknown = sorted(set(raw) - _ENTRY_KEYS)
    if unknown:
        return ResultError(
            file,
            None,
            f"{label}.{unknown[0]}",
            "unknown field; expected " + ", ".join(sorted(_ENTRY_KEYS)),
            ResultErrorKind.UNKNOWN_FIELD,
        )
    targets = [key for key in _TARGET_KEYS if key in raw]
    if len(targets) != 1:
        return ResultError(
            file,
            None,
            label,
            "needs exactly one of 'thread', 'check' or 'finding'",
            ResultErrorKind.MISSING_FIELD if not targets else ResultErrorKind.INVALID_VALUE,
        )
    target_key = targets[0]
    target_value = raw[target_key]
    if isinstance(target_value, int) and not isinstance(target_value, bool):
        target_value = str(target_value)
    if not isinstance(target_value, str) or not target_value.strip():
        return ResultError(
            file,
            None,
            f"{label}.{target_key}",
            "must be a non-empty string",
            ResultErrorKind.INVALID_VALUE,
        )
    status_text = raw.get("status")
    if status_text is None:
        return ResultError(
            file, None, f"{label}.status", "missing field status", ResultErrorKind.MISSING_FIELD
        )
    try:
        status = FixStatus(status_text)
    except ValueError:
        return ResultError(
            file,
            None,
            f"{label}.status",
            f"{status_text!r} is not one of fixed, skipped, dismissed, uncertain",
            ResultErrorKind.INVALID_VALUE,
        )
    message = _text_field(raw, "message", label, required=True)
    if isinstance(message, ResultError):
        return message
    needs_evidence = status in (FixStatus.DISMISSED, FixStatus.UNCERTAIN)
    evidence = _text_field(raw, "evidence", label, required=needs_evidence)
    if isinstance(evidence, ResultError):
        if evidence.kind is ResultErrorKind.MISSING_FIELD:
            return ResultError(
                file,
                None,
                f"{label}.evidence",
                f"status {status} needs evidence",
                ResultErrorKind.MISSING_FIELD,
            )
        return evidence
    commit = _text_field(raw, "commit", label, required=False)
    if isinstance(commit, ResultError):
        return commit
    if commit is not None:
        if status is not FixStatus.FIXED:
            return ResultError(
                file,
                None,
                f"{label}.commit",
                "only a fixed entry may name a commit",
                ResultErrorKind.INVALID_VALUE,
            )
        if not _COMMIT.match(commit.lower()):
            return ResultError(
                file,
                None,
                f"{label}.commit",
                f"{commit!r} is not a hexadecimal commit SHA (7 to 40 characters)",
                ResultErrorKind.INVALID_VALUE,
            )
        commit = commit.lower()
    assert message is not None
    return FixEntry(
        target_kind=FixTargetKind(target_key),
        target=target_value.strip(),
        status=status,
        message=message,
        evidence=evidence,
        commit=commit,
    )


# ------------------------------------------------------------- blocked.md


def parse_blocked(text: str, *, max_bytes: int = 64_000) -> BlockedQuestion | ResultError:
    """Parse ``blocked.md``: the question for a human, optionally led by a reason marker."""
    file = BLOCKED_FILE
    problem = _check_size(text, file, max_bytes)
    if problem is not None:
        return problem
    lines = _normalise(text).split("\n")
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
                f"{marker.group(1)!r} is not one of "
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
    problem = _check_size(text, file, max_bytes)
    if problem is not None:
        return problem
    body = _normalise(text).strip()
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
