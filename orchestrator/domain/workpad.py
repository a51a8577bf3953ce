"""The workpad record of one issue, and its comment form.

The record (schema_version 1) is what the daemon knows about an issue's flow:
phase, branch, pull request, review and merge state, why it waits, and what it
last observed. It is rendered to one issue comment (a marker heading, a fenced
yaml block, a short summary for humans) and parsed back from it; a comment that
cannot be trusted yields a recovery result instead of a guess.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from types import MappingProxyType
from typing import TypeVar

from orchestrator.domain.phases import GateValue, Phase, RolloutMode, WaitingReason
from orchestrator.domain.results import GITHUB_BODY_LIMIT as GITHUB_COMMENT_LIMIT
from orchestrator.domain.safe_yaml import YamlProblem, YamlValue, load_plain_yaml

SCHEMA_VERSION = 1

# The first line of every workpad comment the runtime writes: the comment is found by
# this machine marker alone (never by its heading, which anyone can quote), and only
# on comments the bot itself wrote.
WORKPAD_COMMENT_MARKER = "<!-- orchestrator-workpad -->"

_NO_GATES: Mapping[str, GateValue] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class PRRef:
    """The pull request opened for the issue."""

    number: int
    url: str
    head_sha: str | None = None


@dataclass(frozen=True, slots=True)
class ReviewState:
    """Self-review bookkeeping, keyed to head SHAs."""

    comment_id: int | None = None
    # Passes persisted in the current head lineage (a run of heads our own fixes produced).
    passes_completed: int = 0
    last_reviewed_head_sha: str | None = None
    last_fixed_head_sha: str | None = None


@dataclass(frozen=True, slots=True)
class MergeState:
    """What the daemon attempted and confirmed about merging."""

    last_attempted_at: datetime | None = None
    last_attempted_head_sha: str | None = None
    last_merge_commit_sha: str | None = None
    last_merged_head_sha: str | None = None
    last_failure_reason: str | None = None


@dataclass(frozen=True, slots=True)
class WaitingState:
    """Why the issue waits, and since when."""

    reason: WaitingReason | None = None
    since: datetime | None = None
    # Why, in one line, when the issue is blocked (the failure or question that stopped it).
    detail: str | None = None


@dataclass(frozen=True, slots=True)
class Observation:
    """What the daemon last saw and would do next (the operator's view, kept in observe mode)."""

    last_observed_at: datetime | None = None
    next_intended_action: str | None = None
    rollout_mode: RolloutMode | None = None
    gates: Mapping[str, GateValue] = field(default_factory=lambda: _NO_GATES)


@dataclass(frozen=True, slots=True)
class Validation:
    """The agent's summary of local validation (tests, build) for humans."""

    summary: str | None = None


@dataclass(frozen=True, slots=True)
class WorkpadRecord:
    """The machine record of one issue's flow, schema_version 1."""

    schema_version: int = SCHEMA_VERSION
    owned: bool = True
    phase: Phase = Phase.IMPLEMENTING
    rework_cycles: int = 0
    branch: str | None = None
    pr: PRRef | None = None
    review: ReviewState = field(default_factory=ReviewState)
    merge: MergeState = field(default_factory=MergeState)
    waiting: WaitingState = field(default_factory=WaitingState)
    observation: Observation = field(default_factory=Observation)
    validation: Validation = field(default_factory=Validation)
    # What the runtime changed in the agent's pull request description, in one line.
    pr_description_notes: str | None = None

    def with_phase(
        self,
        phase: Phase,
        reason: WaitingReason | None,
        since: datetime,
        detail: str | None = None,
    ) -> WorkpadRecord:
        """This record in ``phase``, waiting for ``reason`` since ``since`` because ``detail``."""
        waiting = WaitingState(
            reason=reason, since=since if reason is not None else None, detail=detail
        )
        if reason is not None and self.waiting.reason is reason:
            waiting = replace(self.waiting, detail=detail)
        return replace(self, phase=phase, waiting=waiting)


def fresh_record(phase: Phase = Phase.IMPLEMENTING) -> WorkpadRecord:
    """A minimal record for an issue the daemon has not worked on yet."""
    return WorkpadRecord(phase=phase)


# ------------------------------------------------------------ comment form


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


ROOT_KEY = "orchestrator"
MAX_BLOCK_CHARS = 32_768
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([A-Za-z0-9_+-]*)[^`]*$")
_GATE_VALUES = frozenset(value.value for value in GateValue)
_GATE_NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
_NEEDS_ESCAPE = re.compile(r"[\x00-\x1f\x7f-\x9f\"\\\u2028\u2029\ufeff\ud800-\udfff]")


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


def recovery_record(now: datetime) -> WorkpadRecord:
    """The fresh record written after a recovery: blocked for metadata recovery."""
    return WorkpadRecord(
        phase=Phase.BLOCKED,
        waiting=WaitingState(reason=WaitingReason.METADATA_RECOVERY_REQUIRED, since=now),
    )


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


def render_workpad(
    record: WorkpadRecord,
    *,
    marker: str = "## Orchestrator Workpad",
    recovery_raw: str | None = None,
    recovery_problem: str | None = None,
) -> str:
    """The workpad comment body: heading, yaml block, summary, and any recovery note.

    The result always fits GitHub's comment limit: the recovery text is cut first,
    then over-long free text in the record.
    """
    body = _render_parts(record, marker)
    if len(body) > GITHUB_COMMENT_LIMIT:
        body = _render_parts(_shortened(record, len(body) - GITHUB_COMMENT_LIMIT), marker)
    if recovery_raw is None:
        return body
    note = _recovery_note(recovery_raw, recovery_problem, GITHUB_COMMENT_LIMIT - len(body))
    return body + note


def mirror_is_current(
    record: WorkpadRecord, observation: Observation, mirrored: WorkpadRecord
) -> bool:
    """Whether the comment (``mirrored``) already shows ``record`` with ``observation``.

    The observation time is ignored: a comment is rewritten only when something an
    operator would read has changed.
    """
    seen = mirrored.observation
    # Cheap, most often changing fields first; nested records last.
    return (
        record.phase is mirrored.phase
        and observation.next_intended_action == seen.next_intended_action
        and observation.rollout_mode is seen.rollout_mode
        and (observation.gates is seen.gates or observation.gates == seen.gates)
        and record.rework_cycles == mirrored.rework_cycles
        and record.owned is mirrored.owned
        and record.branch == mirrored.branch
        and record.schema_version == mirrored.schema_version
        and (record.waiting is mirrored.waiting or record.waiting == mirrored.waiting)
        and (record.pr is mirrored.pr or record.pr == mirrored.pr)
        and (record.review is mirrored.review or record.review == mirrored.review)
        and (record.merge is mirrored.merge or record.merge == mirrored.merge)
        and (record.validation is mirrored.validation or record.validation == mirrored.validation)
    )


_OBSERVED_LINE = re.compile(r"^    last_observed_at: .*\n", re.MULTILINE)


def workpad_digest(body: str) -> str:
    """A short hash of a rendered workpad that ignores the observation time."""
    return hashlib.sha256(_OBSERVED_LINE.sub("", body, count=1).encode()).hexdigest()[:16]


_TEXT_CAP = 1_000


def _shortened(record: WorkpadRecord, excess: int) -> WorkpadRecord:
    summary = record.validation.summary or ""
    keep = max(0, len(summary) - excess - 200)
    shorter = replace(
        record,
        validation=Validation(summary=summary[:keep] + "\n(truncated)" if summary else None),
    )
    if len(_render_parts(shorter, "#")) <= GITHUB_COMMENT_LIMIT - 200:
        return shorter

    def cap(value: str | None) -> str | None:
        return value if value is None or len(value) <= _TEXT_CAP else value[:_TEXT_CAP]

    return replace(
        shorter,
        branch=cap(shorter.branch),
        pr=None
        if shorter.pr is None
        else replace(shorter.pr, url=cap(shorter.pr.url) or "", head_sha=cap(shorter.pr.head_sha)),
        review=replace(
            shorter.review,
            last_reviewed_head_sha=cap(shorter.review.last_reviewed_head_sha),
            last_fixed_head_sha=cap(shorter.review.last_fixed_head_sha),
        ),
        merge=replace(
            shorter.merge,
            last_attempted_head_sha=cap(shorter.merge.last_attempted_head_sha),
            last_merge_commit_sha=cap(shorter.merge.last_merge_commit_sha),
            last_merged_head_sha=cap(shorter.merge.last_merged_head_sha),
            last_failure_reason=cap(shorter.merge.last_failure_reason),
        ),
        waiting=replace(shorter.waiting, detail=cap(shorter.waiting.detail)),
        observation=replace(
            shorter.observation,
            next_intended_action=cap(shorter.observation.next_intended_action),
        ),
        validation=Validation(summary=cap(shorter.validation.summary)),
        pr_description_notes=cap(shorter.pr_description_notes),
    )


def _quote(value: str) -> str:
    def escape(match: re.Match[str]) -> str:
        char = match.group(0)
        special = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t"}
        return special.get(char, f"\\u{ord(char):04x}")

    return '"' + _NEEDS_ESCAPE.sub(escape, value) + '"'


def _moment(value: datetime | None) -> str:
    if value is None:
        return "null"
    text = value.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def _text(value: str | None) -> str:
    return "null" if value is None else _quote(value)


def _int(value: int | None) -> str:
    return "null" if value is None else str(value)


def _enum(value: StrEnum | None) -> str:
    return "null" if value is None else f"{value}"


def _yaml_lines(record: WorkpadRecord) -> list[str]:
    lines = [
        f"{ROOT_KEY}:",
        f"  schema_version: {record.schema_version}",
        f"  owned: {'true' if record.owned else 'false'}",
        f"  phase: {record.phase}",
        f"  rework_cycles: {record.rework_cycles}",
        f"  branch: {_text(record.branch)}",
    ]
    if record.pr is None:
        lines.append("  pr: null")
    else:
        lines += [
            "  pr:",
            f"    number: {record.pr.number}",
            f"    url: {_quote(record.pr.url)}",
            f"    head_sha: {_text(record.pr.head_sha)}",
        ]
    review, merge = record.review, record.merge
    lines += [
        "  review:",
        f"    comment_id: {_int(review.comment_id)}",
        f"    passes_completed: {review.passes_completed}",
        f"    last_reviewed_head_sha: {_text(review.last_reviewed_head_sha)}",
        f"    last_fixed_head_sha: {_text(review.last_fixed_head_sha)}",
        "  merge:",
        f"    last_attempted_at: {_moment(merge.last_attempted_at)}",
        f"    last_attempted_head_sha: {_text(merge.last_attempted_head_sha)}",
        f"    last_merge_commit_sha: {_text(merge.last_merge_commit_sha)}",
        f"    last_merged_head_sha: {_text(merge.last_merged_head_sha)}",
        f"    last_failure_reason: {_text(merge.last_failure_reason)}",
        "  waiting:",
        f"    reason: {_enum(record.waiting.reason)}",
        f"    since: {_moment(record.waiting.since)}",
        f"    detail: {_text(record.waiting.detail)}",
        "  observation:",
        f"    last_observed_at: {_moment(record.observation.last_observed_at)}",
        f"    next_intended_action: {_text(record.observation.next_intended_action)}",
        f"    rollout_mode: {_enum(record.observation.rollout_mode)}",
    ]
    gates = record.observation.gates
    if gates:
        lines.append("    gates:")
        lines += [f"      {name}: {value}" for name, value in gates.items()]
    else:
        lines.append("    gates: {}")
    lines += ["  validation:", f"    summary: {_text(record.validation.summary)}"]
    lines.append(f"  pr_description_notes: {_text(record.pr_description_notes)}")
    return lines


def _summary_lines(record: WorkpadRecord) -> list[str]:
    lines = [f"**Phase:** `{record.phase}`"]
    if record.observation.rollout_mode is not None:
        lines[0] += f" · **Rollout:** `{record.observation.rollout_mode}`"
    if record.waiting.reason is not None:
        since = f" since {_moment(record.waiting.since)}" if record.waiting.since else ""
        lines.append(f"**Waiting:** `{record.waiting.reason}`{since}")
        if record.waiting.detail:
            lines.append(f"**Why:** {_one_line(record.waiting.detail)}")
    next_action = record.observation.next_intended_action
    if next_action:
        lines.append(f"**Next:** {_one_line(next_action)}")
    if record.pr is not None:
        head = f" at `{record.pr.head_sha[:12]}`" if record.pr.head_sha else ""
        lines.append(f"**Pull request:** #{record.pr.number}{head}")
    if record.pr_description_notes:
        lines.append(f"**Description:** {_one_line(record.pr_description_notes)}")
    if record.observation.gates:
        lines.append(
            "**Gates:** "
            + " · ".join(f"{name} {value}" for name, value in record.observation.gates.items())
        )
    # Two trailing spaces make each line its own line in rendered markdown.
    return [line + "  " for line in lines[:-1]] + lines[-1:]


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= 300 else flat[:297] + "..."


def is_workpad_comment(body: str) -> bool:
    """Whether a comment body is a workpad as the runtime writes it (its first line is the marker).

    Only meaningful for comments the bot wrote: anyone else can type the marker.
    """
    first = body.lstrip("\ufeff").replace("\r\n", "\n").split("\n", 1)[0]
    return first.strip() == WORKPAD_COMMENT_MARKER


def _render_parts(record: WorkpadRecord, marker: str) -> str:
    parts = [
        WORKPAD_COMMENT_MARKER,
        marker,
        "",
        "```yaml",
        *_yaml_lines(record),
        "```",
        "",
        *_summary_lines(record),
    ]
    return "\n".join(parts) + "\n"


def _recovery_note(raw: str, problem: str | None, budget: int) -> str:
    longest = max((len(run) for run in re.findall(r"~+", raw)), default=0)
    fence = "~" * max(4, longest + 1)
    intro = (
        "\n### Recovery note\n\n"
        "The previous workpad block could not be trusted"
        + (f" ({_one_line(problem)})" if problem else "")
        + ". Its text is kept below; the issue stays blocked until an operator checks it.\n\n"
    )
    shell = f"{intro}{fence}text\n\n{fence}\n"
    room = budget - len(shell) - 60
    if room <= 0:
        return ""
    # The kept text is shown, never obeyed: no marker in it can pass for the runtime's own.
    kept = raw.replace("<!--", "&lt;!--")
    if len(kept) > room:
        kept = kept[:room] + f"\n... ({len(kept) - room} characters cut)"
    return f"{intro}{fence}text\n{kept}\n{fence}\n"
