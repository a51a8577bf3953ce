"""Parsing ``fix-summary.json``: the agent's account of each thread, check and finding it had.

The file is JSON written by the agent, so it is parsed with bounds
(:mod:`orchestrator.domain.bounded_json`: at most 32 levels of nesting,
integers of at most 18 digits, finite numbers only) and every field is checked
for its type and size. Any problem is a :class:`ResultError` naming the file,
the line when known and the path in the document (``entries[3].status``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from orchestrator.domain.agent_files.errors import (
    ResultError,
    ResultErrorKind,
    check_size,
    cut,
    inert,
    normalise,
    shown,
)
from orchestrator.domain.bounded_json import BoundedJsonError, JsonSyntaxError, load_bounded

FIX_SUMMARY_FILE = "fix-summary.json"

# Bounds of the document beyond its size: entries, and each text field in characters.
MAX_ENTRIES = 500
MAX_TARGET_CHARS = 256
MAX_TEXT_CHARS = 10_000

_COMMIT = re.compile(r"^[0-9a-f]{7,40}$")


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


@dataclass(frozen=True, slots=True)
class FixEntry:
    """The agent's account of one thread, check or finding."""

    target_kind: FixTargetKind
    target: str
    status: FixStatus
    message: str
    evidence: str | None = None
    commit: str | None = None


@dataclass(frozen=True, slots=True)
class FixSummary:
    """A parsed ``fix-summary.json``: one entry per thread, check or finding."""

    entries: tuple[FixEntry, ...]

    def for_target(self, kind: FixTargetKind, target: str) -> FixEntry | None:
        """The entry about this target, if the agent wrote one."""
        for entry in self.entries:
            if entry.target_kind is kind and entry.target == target:
                return entry
        return None


_ENTRY_KEYS = frozenset({"thread", "check", "finding", "status", "message", "evidence", "commit"})
_TARGET_KEYS = ("thread", "check", "finding")


def parse_fix_summary(text: str, *, max_bytes: int = 256_000) -> FixSummary | ResultError:
    """Parse ``fix-summary.json``: ``{"entries": [{"thread": ..., "status": ...}, ...]}``."""
    file = FIX_SUMMARY_FILE
    problem = check_size(text, file, max_bytes)
    if problem is not None:
        return problem
    text = normalise(text)
    if not text.strip():
        return ResultError(file, None, None, "file is empty", ResultErrorKind.EMPTY)
    try:
        document = load_bounded(text)
    except BoundedJsonError as error:
        kind = (
            ResultErrorKind.SYNTAX
            if isinstance(error, JsonSyntaxError)
            else ResultErrorKind.INVALID_VALUE
        )
        return ResultError(file, error.line, error.path, error.message, kind)
    if not isinstance(document, dict):
        return ResultError(
            file, 1, None, "top level must be a JSON object", ResultErrorKind.INVALID_VALUE
        )
    unknown = sorted(set(document) - {"entries"})
    if unknown:
        return ResultError(
            file,
            None,
            cut(str(unknown[0])),
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
    if len(raw_entries) > MAX_ENTRIES:
        return ResultError(
            file,
            None,
            "entries",
            f"{len(raw_entries)} entries, more than the limit of {MAX_ENTRIES}",
            ResultErrorKind.TOO_LARGE,
        )
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
                f"second entry for {entry.target_kind} {shown(entry.target)}",
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
    if len(value) > MAX_TEXT_CHARS:
        return ResultError(
            FIX_SUMMARY_FILE,
            None,
            f"{label}.{key}",
            f"{len(value)} characters, more than the limit of {MAX_TEXT_CHARS}",
            ResultErrorKind.TOO_LARGE,
        )
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
            f"{label}.{cut(str(unknown[0]))}",
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
    if len(target_value) > MAX_TARGET_CHARS:
        return ResultError(
            file,
            None,
            f"{label}.{target_key}",
            f"{len(target_value)} characters, more than the limit of {MAX_TARGET_CHARS}",
            ResultErrorKind.TOO_LARGE,
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
            f"{shown(status_text)} is not one of fixed, skipped, dismissed, uncertain",
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
                f"{shown(commit)} is not a hexadecimal commit SHA (7 to 40 characters)",
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
