"""Writing a workpad record as its issue comment, and telling when the comment is current.

The comment is a machine marker, a heading, a fenced yaml block and a short
summary for humans; after a recovery it also keeps the untrusted text it
replaced, shown but never obeyed. It always fits GitHub's comment limit.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import replace
from datetime import datetime
from enum import StrEnum

from orchestrator.domain.agent_files.errors import GITHUB_BODY_LIMIT as GITHUB_COMMENT_LIMIT
from orchestrator.domain.workpad.record import ROOT_KEY, Observation, Validation, WorkpadRecord

# The first line of every workpad comment the runtime writes: the comment is found by
# this machine marker alone (never by its heading, which anyone can quote), and only
# on comments the bot itself wrote.
WORKPAD_COMMENT_MARKER = "<!-- orchestrator-workpad -->"

_NEEDS_ESCAPE = re.compile(r"[\x00-\x1f\x7f-\x9f\"\\\u2028\u2029\ufeff\ud800-\udfff]")


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
