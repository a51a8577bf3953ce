"""Reading a workpad comment back into its record.

A comment that cannot be trusted yields a recovery result (the raw text kept,
the issue blocked for a human) instead of a guess; every problem names where
it is (a line of the comment, or the path of a field in the block).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from types import MappingProxyType
from typing import TypeVar

from orchestrator.domain.agent_files.errors import GITHUB_BODY_LIMIT as GITHUB_COMMENT_LIMIT
from orchestrator.domain.phases import GateValue, Phase, RolloutMode, WaitingReason
from orchestrator.domain.safe_yaml import YamlProblem, YamlValue, load_plain_yaml
from orchestrator.domain.workpad.record import (
    ROOT_KEY,
    SCHEMA_VERSION,
    MergeState,
    Observation,
    PRRef,
    ReviewState,
    Validation,
    WaitingState,
    WorkpadRecord,
    fresh_record,
    recovery_record,
)


class WorkpadStatus(StrEnum):
    """How a workpad comment was read."""

    PARSED = "parsed"
    # No machine block: start from a fresh record and continue.
    MISSING = "missing"
    # A block that cannot be trusted: keep its text, block the issue for a human.
    RECOVERED = "recovered"


@dataclass(frozen=True, slots=True)
class WorkpadParse:
    """The record read from a comment, or a recovery with the raw text kept."""

    status: WorkpadStatus
    record: WorkpadRecord
    raw: str | None = None
    problem: str | None = None


MAX_BLOCK_CHARS = 32_768
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([A-Za-z0-9_+-]*)[^`]*$")
_GATE_VALUES = frozenset(value.value for value in GateValue)
_GATE_NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")


def parse_workpad(
    body: str,
    *,
    marker: str = "## Orchestrator Workpad",
    default_phase: Phase = Phase.IMPLEMENTING,
    now: datetime,
) -> WorkpadParse:
    """Read the record from a workpad comment body (rules in docs/domain.md)."""
    text = body.replace("\r\n", "\n").replace("\r", "\n")
    if len(text) > GITHUB_COMMENT_LIMIT:
        return _recovered(body, f"comment is longer than {GITHUB_COMMENT_LIMIT} characters", now)
    lines = text.split("\n")
    headings = _marker_lines(lines, marker)
    if len(headings) > 1:
        return _recovered(
            body,
            f"the heading {marker!r} appears {len(headings)} times (lines "
            + ", ".join(str(h + 1) for h in headings)
            + ")",
            now,
        )
    if not headings:
        return WorkpadParse(WorkpadStatus.MISSING, fresh_record(default_phase))
    start = headings[0] + 1
    while start < len(lines) and not lines[start].strip():
        start += 1
    opening = _FENCE.match(lines[start]) if start < len(lines) else None
    if opening is None or opening.group(2).lower() not in ("yaml", "yml"):
        later = _first_yaml_fence(lines, start)
        if later is not None:
            return _recovered(
                body,
                f"line {later + 1}: a yaml block that does not directly follow the heading",
                now,
            )
        return WorkpadParse(WorkpadStatus.MISSING, fresh_record(default_phase))
    fence = opening.group(1)
    end = _closing_fence(lines, start + 1, fence)
    if end is None:
        return _recovered(body, f"line {start + 1}: the yaml block is never closed", now)
    block = "\n".join(lines[start + 1 : end])
    loaded = load_plain_yaml(block, max_chars=MAX_BLOCK_CHARS)
    if isinstance(loaded, YamlProblem):
        where = f"line {start + 1 + loaded.line}: " if loaded.line is not None else ""
        return _recovered(body, where + loaded.message, now)
    try:
        record = _decode_record(loaded, default_phase)
    except _BadField as bad:
        return _recovered(body, f"{bad.path}: {bad.message}", now)
    return WorkpadParse(WorkpadStatus.PARSED, record)


def _recovered(raw: str, problem: str, now: datetime) -> WorkpadParse:
    return WorkpadParse(WorkpadStatus.RECOVERED, recovery_record(now), raw=raw, problem=problem)


def _marker_lines(lines: list[str], marker: str) -> list[int]:
    found: list[int] = []
    fence: str | None = None
    for index, line in enumerate(lines):
        if fence is not None:
            if _is_closing(line, fence):
                fence = None
            continue
        opening = _FENCE.match(line)
        if opening is not None:
            fence = opening.group(1)
            continue
        if line.strip() == marker:
            found.append(index)
    return found


def _first_yaml_fence(lines: list[str], start: int) -> int | None:
    fence: str | None = None
    for index in range(start, len(lines)):
        line = lines[index]
        if fence is not None:
            if _is_closing(line, fence):
                fence = None
            continue
        opening = _FENCE.match(line)
        if opening is not None:
            if opening.group(2).lower() in ("yaml", "yml"):
                return index
            fence = opening.group(1)
    return None


def _is_closing(line: str, fence: str) -> bool:
    stripped = line.strip()
    return (
        len(line) - len(line.lstrip(" ")) <= 3
        and len(stripped) >= len(fence)
        and set(stripped) == {fence[0]}
    )


def _closing_fence(lines: list[str], start: int, fence: str) -> int | None:
    for index in range(start, len(lines)):
        if _is_closing(lines[index], fence):
            return index
    return None


class _BadField(Exception):
    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


_SECTION_KEYS: Mapping[str, frozenset[str]] = MappingProxyType(
    {
        "": frozenset(
            {
                "schema_version",
                "owned",
                "phase",
                "rework_cycles",
                "branch",
                "pr",
                "review",
                "merge",
                "waiting",
                "observation",
                "validation",
                "pr_description_notes",
            }
        ),
        "pr": frozenset({"number", "url", "head_sha"}),
        "review": frozenset(
            {"comment_id", "passes_completed", "last_reviewed_head_sha", "last_fixed_head_sha"}
        ),
        "merge": frozenset(
            {
                "last_attempted_at",
                "last_attempted_head_sha",
                "last_merge_commit_sha",
                "last_merged_head_sha",
                "last_failure_reason",
            }
        ),
        "waiting": frozenset({"reason", "since", "detail"}),
        "observation": frozenset(
            {"last_observed_at", "next_intended_action", "rollout_mode", "gates"}
        ),
        "validation": frozenset({"summary"}),
    }
)


class _Fields:
    """Typed access to one mapping of the block, naming the path on any problem."""

    def __init__(self, raw: YamlValue, path: str, section: str) -> None:
        if not isinstance(raw, dict):
            raise _BadField(path, "expected a mapping")
        unknown = sorted(set(raw) - _SECTION_KEYS[section])
        if unknown:
            raise _BadField(f"{path}.{unknown[0]}", "unknown field")
        self.raw = raw
        self.path = path

    def _get(self, key: str) -> YamlValue:
        return self.raw.get(key)

    def text(self, key: str) -> str | None:
        value = self._get(key)
        if value is None:
            return None
        if not isinstance(value, str):
            raise _BadField(f"{self.path}.{key}", "expected a string")
        return value

    def integer(self, key: str, default: int | None = None, *, minimum: int = 0) -> int | None:
        value = self._get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            raise _BadField(f"{self.path}.{key}", "expected an integer")
        if value < minimum:
            raise _BadField(f"{self.path}.{key}", f"must be {minimum} or more")
        return value

    def boolean(self, key: str, default: bool) -> bool:
        value = self._get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise _BadField(f"{self.path}.{key}", "expected true or false")
        return value

    def moment(self, key: str) -> datetime | None:
        value = self._get(key)
        if value is None:
            return None
        if not isinstance(value, str):
            raise _BadField(f"{self.path}.{key}", "expected an ISO 8601 timestamp")
        try:
            return datetime.fromisoformat(value)
        except ValueError:
            raise _BadField(
                f"{self.path}.{key}", f"{value!r} is not an ISO 8601 timestamp"
            ) from None

    def choice(self, key: str, kind: type[_E]) -> _E | None:
        value = self._get(key)
        if value is None:
            return None
        members = {member.value: member for member in kind}
        if not isinstance(value, str) or value not in members:
            allowed = ", ".join(members)
            raise _BadField(f"{self.path}.{key}", f"{value!r} is not one of {allowed}")
        return members[value]

    def section(self, key: str) -> _Fields | None:
        value = self._get(key)
        if value is None:
            return None
        return _Fields(value, f"{self.path}.{key}", key)


_E = TypeVar("_E", bound=StrEnum)


def _decode_record(loaded: YamlValue, default_phase: Phase) -> WorkpadRecord:
    if not isinstance(loaded, dict) or set(loaded) != {ROOT_KEY}:
        raise _BadField(ROOT_KEY, f"the block must hold exactly one top-level key, {ROOT_KEY}")
    top = _Fields(loaded[ROOT_KEY], ROOT_KEY, "")
    version = top.integer("schema_version")
    if version is None:
        raise _BadField(f"{ROOT_KEY}.schema_version", "missing")
    if version != SCHEMA_VERSION:
        raise _BadField(f"{ROOT_KEY}.schema_version", f"unknown schema version {version}")
    pr = top.section("pr")
    pr_ref = None
    if pr is not None:
        number = pr.integer("number", minimum=1)
        url = pr.text("url")
        if number is None or url is None:
            raise _BadField(f"{ROOT_KEY}.pr", "needs number and url")
        pr_ref = PRRef(number=number, url=url, head_sha=pr.text("head_sha"))
    review = top.section("review")
    merge = top.section("merge")
    waiting = top.section("waiting")
    observation = top.section("observation")
    validation = top.section("validation")
    return WorkpadRecord(
        schema_version=version,
        owned=top.boolean("owned", True),
        phase=top.choice("phase", Phase) or default_phase,
        rework_cycles=top.integer("rework_cycles", 0) or 0,
        branch=top.text("branch"),
        pr_description_notes=top.text("pr_description_notes"),
        pr=pr_ref,
        review=_decode_review(review),
        merge=_decode_merge(merge),
        waiting=WaitingState()
        if waiting is None
        else WaitingState(
            reason=waiting.choice("reason", WaitingReason),
            since=waiting.moment("since"),
            detail=waiting.text("detail"),
        ),
        observation=_decode_observation(observation),
        validation=Validation()
        if validation is None
        else Validation(summary=validation.text("summary")),
    )


def _decode_review(review: _Fields | None) -> ReviewState:
    if review is None:
        return ReviewState()
    return ReviewState(
        comment_id=review.integer("comment_id", minimum=1),
        passes_completed=review.integer("passes_completed", 0) or 0,
        last_reviewed_head_sha=review.text("last_reviewed_head_sha"),
        last_fixed_head_sha=review.text("last_fixed_head_sha"),
    )


def _decode_merge(merge: _Fields | None) -> MergeState:
    if merge is None:
        return MergeState()
    return MergeState(
        last_attempted_at=merge.moment("last_attempted_at"),
        last_attempted_head_sha=merge.text("last_attempted_head_sha"),
        last_merge_commit_sha=merge.text("last_merge_commit_sha"),
        last_merged_head_sha=merge.text("last_merged_head_sha"),
        last_failure_reason=merge.text("last_failure_reason"),
    )


def _decode_observation(observation: _Fields | None) -> Observation:
    if observation is None:
        return Observation()
    gates_raw = observation.raw.get("gates")
    gates: dict[str, GateValue] = {}
    if gates_raw is not None:
        if not isinstance(gates_raw, dict):
            raise _BadField(f"{observation.path}.gates", "expected a mapping")
        for name, value in gates_raw.items():
            if not _GATE_NAME.match(name):
                raise _BadField(f"{observation.path}.gates.{name}", "not a gate name")
            if not isinstance(value, str) or value not in _GATE_VALUES:
                raise _BadField(
                    f"{observation.path}.gates.{name}", f"{value!r} is not a gate value"
                )
            gates[name] = GateValue(value)
    return Observation(
        last_observed_at=observation.moment("last_observed_at"),
        next_intended_action=observation.text("next_intended_action"),
        rollout_mode=observation.choice("rollout_mode", RolloutMode),
        gates=MappingProxyType(gates),
    )
