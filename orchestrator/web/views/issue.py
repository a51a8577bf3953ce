"""The presenter of one issue: everything recorded about it, as its page and the API show it.

Also the pieces of an issue's record the dashboard shows on its line: whether
its flow is over, its final merge, its last observation.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from orchestrator.domain.phases import Phase
from orchestrator.domain.workpad import render_workpad
from orchestrator.logs import get_logger
from orchestrator.store.codec import TYPE_KEY, CodecError, decode_workpad
from orchestrator.store.database import Database
from orchestrator.store.models import TrackedIssue
from orchestrator.store.records import RECOVERY_KEY
from orchestrator.tracker.base import CLOSED_STATE

log = get_logger(__name__)


def iso_time(value: datetime | None) -> str | None:
    """A stored time as ISO 8601 text (None stays None)."""
    return value.isoformat() if value else None


def observation_of(row: TrackedIssue) -> dict[str, Any]:
    """The issue's last observation (the workpad's copy when the row has none)."""
    observation = row.observation or {}
    if not observation and isinstance(row.workpad, dict):
        nested = row.workpad.get("observation")
        observation = nested if isinstance(nested, dict) else {}
    return observation


def finished(row: TrackedIssue) -> bool:
    """Whether the issue's flow is over: merged (done) or closed on the tracker."""
    return row.phase == Phase.DONE or row.tracker_state == CLOSED_STATE


def final_merge(row: TrackedIssue) -> dict[str, Any] | None:
    """A done issue's merge: its pull request and merge commit (None before it is done)."""
    if row.phase != Phase.DONE:
        return None
    merge = (row.workpad or {}).get("merge") if isinstance(row.workpad, dict) else None
    commit = merge.get("last_merge_commit_sha") if isinstance(merge, dict) else None
    return {"state": "merged", "pr_number": row.pr_number, "commit_sha": commit}


def timeline(db: Database, repo: str, number: int) -> dict[str, Any] | None:
    """Everything recorded about one issue, newest last, or None if it is not tracked."""
    row = db.issues.get(repo, number)
    if row is None:
        return None
    runs = list(reversed(db.runs.for_issue(row.id)))
    effects = list(reversed(db.outbox.for_issue(row.id)))
    return {
        "issue": {
            "repo": row.repo,
            "number": row.number,
            "title": row.title,
            "phase": row.phase,
            "phase_since": row.phase_since.isoformat(),
            "tracker_state": row.tracker_state,
            "labels": list(row.labels or ()),
            "branch": row.branch,
            "pr_number": row.pr_number,
            "pr_head_sha": row.pr_head_sha,
            "rework_cycles": row.rework_cycles,
            "waiting_reason": row.waiting_reason,
            "retry_due_at": iso_time(row.retry_due_at),
            "version": row.version,
            "merge": final_merge(row),
        },
        "workpad": row.workpad,
        "workpad_comment": _workpad_comment(row, effects),
        "observation": observation_of(row),
        "phase_events": [
            {
                "at": e.at.isoformat(),
                "from": e.from_phase,
                "to": e.to_phase,
                "reason": e.reason,
                "actor": e.actor,
            }
            for e in db.issues.events(row.id)
        ],
        "side_effects": [
            {
                "kind": s.kind,
                "key": s.idempotency_key,
                "status": s.status,
                "rollout_mode": s.rollout_mode,
                "attempts": s.attempts,
                "result": s.result,
                "created_at": s.created_at.isoformat(),
                "updated_at": s.updated_at.isoformat(),
            }
            for s in effects
        ],
        "agent_runs": [
            {
                "run_id": r.run_id,
                "phase": r.phase,
                "attempt": r.attempt,
                "replica_id": r.replica_id,
                "started_at": r.started_at.isoformat(),
                "first_event_at": iso_time(r.first_event_at),
                "ended_at": iso_time(r.ended_at),
                "outcome": r.outcome,
                "error": r.error,
                "exit_reason": exit_reason(r.outcome, r.error),
                "duration_s": (r.ended_at - r.started_at).total_seconds() if r.ended_at else None,
                "input_tokens": r.input_tokens,
                "output_tokens": r.output_tokens,
                "total_tokens": r.total_tokens,
                "cached_input_tokens": r.cached_input_tokens,
                "cost_usd": r.cost_usd,
            }
            for r in runs
        ],
        "last_prompt": _last_prompt(runs),
        "last_failure": _last_failure(runs),
    }


def exit_reason(outcome: str | None, error: str | None) -> str:
    """Why a run ended, in one line: its outcome, and the error when it did not complete."""
    if outcome is None:
        return "running"
    if not error:
        return outcome
    text = " ".join(error.split())
    return f"{outcome}: {text}"


# Side-effect kinds whose consecutive repeats are shown as one line (the workpad comment
# is rewritten whenever what it shows changed: dozens of times over one issue's life).
FOLDED_KINDS = frozenset({"upsert_workpad"})


def fold_side_effects(effects: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The timeline's side effects with consecutive repeated workpad updates folded into one.

    Each entry is a side effect as :func:`timeline` gives it plus ``count`` and
    ``first_at``/``last_at``; a folded entry carries the newest repeat's fields.
    Only repeats of the same kind, status and rollout mode fold, so a failed or
    refused update always keeps its own line.
    """
    folded: list[dict[str, Any]] = []
    for effect in effects:
        last = folded[-1] if folded else None
        if (
            last is not None
            and effect["kind"] in FOLDED_KINDS
            and last["kind"] == effect["kind"]
            and last["status"] == effect["status"]
            and last["rollout_mode"] == effect["rollout_mode"]
        ):
            folded[-1] = {
                **effect,
                "count": last["count"] + 1,
                "first_at": last["first_at"],
                "last_at": effect["created_at"],
                "attempts": last["attempts"] + effect["attempts"],
            }
            continue
        folded.append(
            {
                **effect,
                "count": 1,
                "first_at": effect["created_at"],
                "last_at": effect["created_at"],
            }
        )
    return folded


# The observation's fields in reading order, with the words an operator reads them by.
_OBSERVATION_FIELDS = (
    ("next_intended_action", "next action"),
    ("last_observed_at", "last observed"),
    ("rollout_mode", "rollout mode"),
    ("gates", "gates"),
)


def observation_lines(observation: dict[str, Any]) -> list[tuple[str, str]]:
    """The observation as (label, value) lines: gates as "name value" pairs, no codec keys."""
    lines: list[tuple[str, str]] = []
    for key, label in _OBSERVATION_FIELDS:
        value = observation.get(key)
        if key == "gates" and isinstance(value, dict):
            gates = {k: v for k, v in value.items() if k != TYPE_KEY}
            text = ", ".join(f"{name} {state}" for name, state in gates.items())
            lines.append((label, text or "none"))
        elif value is not None:
            lines.append((label, str(value)))
    known = {key for key, _ in _OBSERVATION_FIELDS} | {TYPE_KEY}
    lines += [(key, str(value)) for key, value in observation.items() if key not in known]
    return lines


def _workpad_comment(row: TrackedIssue, effects: Sequence[Any]) -> str | None:
    """The workpad comment the record renders to, as written on the issue (None if unreadable).

    The heading is the one the newest comment write used (the policy's marker).
    """
    if not row.workpad:
        return None
    try:
        record = decode_workpad(row.workpad)
    except CodecError as error:
        log.warning("workpad_unreadable", issue=f"{row.repo}#{row.number}", error=str(error))
        return None
    heading = next(
        (
            e.payload.get("heading")
            for e in reversed(effects)
            if e.kind == "upsert_workpad" and isinstance(e.payload, dict)
        ),
        None,
    )
    recovery = (row.record or {}).get(RECOVERY_KEY) if isinstance(row.record, dict) else None
    raw = recovery.get("raw") if isinstance(recovery, dict) else None
    problem = recovery.get("problem") if isinstance(recovery, dict) else None
    options: dict[str, Any] = {"marker": heading} if isinstance(heading, str) and heading else {}
    return render_workpad(
        record,
        recovery_raw=raw if isinstance(raw, str) else None,
        recovery_problem=problem if isinstance(problem, str) else None,
        **options,
    )


def _last_failure(runs: list[Any]) -> str | None:
    """Why the newest agent run failed, in one line (None when it did not fail)."""
    if not runs:
        return None
    newest = runs[-1]
    if newest.outcome in (None, "completed") or not newest.error:
        return None
    text = " ".join(str(newest.error).split())
    return text if len(text) <= 300 else text[:297] + "..."


def _last_prompt(runs: list[Any]) -> str | None:
    for run in reversed(runs):
        prompt = getattr(run, "prompt", None)
        if prompt:
            return str(prompt)
    return None
