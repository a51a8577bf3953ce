"""The presenter: database rows and the live status turned into view values.

Pages, the JSON API and the terminal table all render these values, so what
an operator sees is the same everywhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from orchestrator.domain.phases import Phase
from orchestrator.domain.workpad import render_workpad
from orchestrator.logs import get_logger
from orchestrator.runtime.cluster import poll_lease_name
from orchestrator.runtime.codec import TYPE_KEY, CodecError, decode_workpad
from orchestrator.runtime.polling_status import PollingStatus
from orchestrator.runtime.records import RECOVERY_KEY
from orchestrator.runtime.status import RunningTurn, RuntimeStatus
from orchestrator.store.database import Database
from orchestrator.store.models import TrackedIssue
from orchestrator.tracker.base import CLOSED_STATE

log = get_logger(__name__)

GATE_NAMES = ("checks", "human_approval", "mergeability", "head_match")


@dataclass(frozen=True, slots=True)
class IssueRow:
    """One line of the dashboard table."""

    repo: str
    number: int
    title: str
    tracker_state: str | None
    phase: str
    phase_since: str
    rollout_mode: str | None
    ownership: str | None
    kill_switch: str | None
    pr_number: int | None
    pr_head_sha: str | None
    last_observed_at: str | None
    next_action: str | None
    waiting_reason: str | None
    gates: dict[str, str]
    running_phase: str | None
    running_since: str | None
    running_elapsed_s: float | None
    last_event: str | None
    last_event_at: str | None
    retry_due_at: str | None
    rework_cycles: int
    # A finished issue's merge (state, pull request, merge commit) instead of its gates.
    merge: dict[str, Any] | None = None

    @property
    def key(self) -> str:
        return f"{self.repo}#{self.number}"

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def _observation(row: TrackedIssue) -> dict[str, Any]:
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


def issue_row(row: TrackedIssue, running: RunningTurn | None, now: datetime) -> IssueRow:
    observation = _observation(row)
    gates = {str(k): str(v) for k, v in (observation.get("gates") or {}).items()}
    # The gates of a finished issue judge nothing any more (a merged pull request's
    # mergeability stays "pending" for ever): its merge is shown instead.
    shown_gates = {} if finished(row) else {n: gates[n] for n in GATE_NAMES if n in gates}
    return IssueRow(
        repo=row.repo,
        number=row.number,
        title=row.title,
        tracker_state=row.tracker_state,
        phase=row.phase,
        phase_since=row.phase_since.isoformat(),
        rollout_mode=observation.get("rollout_mode"),
        ownership=gates.get("ownership"),
        kill_switch=gates.get("kill_switch"),
        pr_number=row.pr_number,
        pr_head_sha=row.pr_head_sha,
        last_observed_at=observation.get("last_observed_at"),
        next_action=observation.get("next_intended_action"),
        waiting_reason=row.waiting_reason,
        gates=shown_gates,
        running_phase=running.phase if running else None,
        running_since=_iso(running.started_at) if running else None,
        running_elapsed_s=(now - running.started_at).total_seconds() if running else None,
        last_event=running.last_event if running else None,
        last_event_at=_iso(running.last_event_at) if running else None,
        retry_due_at=_iso(row.retry_due_at),
        rework_cycles=row.rework_cycles,
        merge=final_merge(row),
    )


def issue_rows(db: Database, status: RuntimeStatus | None, now: datetime) -> list[IssueRow]:
    running = {(t.repo, t.number): t for t in (status.running if status else ())}
    return [issue_row(row, running.get((row.repo, row.number)), now) for row in db.issues.all()]


@dataclass(frozen=True, slots=True)
class Header:
    """The dashboard's header: global mode, brake, policy, budget, ticks."""

    rollout_mode: str
    brake_active: bool
    stopped_repos: tuple[str, ...]
    policy_path: str
    policy_error: str | None
    budgets: tuple[dict[str, Any], ...]
    rate_limited_until: str | None
    last_tick_at: str | None
    last_tick_error: str | None
    ticks: int
    replica_id: str
    running: int
    # leader (this replica polls) or follower; the replica that leads, by the database.
    role: str
    leader: str | None = None
    # The agents' OS sandbox in force (bwrap or none), why, and warnings to show with it.
    agent_sandbox: str = "unknown"
    agent_sandbox_reason: str = ""
    sandbox_warnings: tuple[str, ...] = ()
    # What polling costs per cycle, the passive sweep, catching up (None on a follower).
    polling: dict[str, Any] | None = None
    # The repositories the daemon polls.
    repos: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def header(status: RuntimeStatus, leader: str | None = None) -> Header:
    return Header(
        rollout_mode=status.rollout_mode,
        brake_active=status.brake_active,
        stopped_repos=status.stopped_repos,
        repos=status.repos,
        policy_path=status.policy_path,
        policy_error=status.policy_error,
        budgets=tuple(
            {
                "resource": b.resource,
                "remaining": b.remaining,
                "limit": b.limit,
                "reset_at": _iso(b.reset_at),
            }
            for b in status.budgets
        ),
        rate_limited_until=_iso(status.rate_limited_until),
        last_tick_at=_iso(status.last_tick_at),
        last_tick_error=status.last_tick_error,
        ticks=status.ticks,
        replica_id=status.replica_id,
        running=len(status.running),
        role=status.role,
        leader=leader,
        agent_sandbox=status.sandbox.mode if status.sandbox else "unknown",
        agent_sandbox_reason=status.sandbox.reason if status.sandbox else "",
        sandbox_warnings=status.sandbox.warnings if status.sandbox else (),
        polling=_polling(status.polling),
    )


def _polling(polling: PollingStatus | None) -> dict[str, Any] | None:
    if polling is None:
        return None
    sweep = polling.sweep
    per_issue = polling.units_per_issue
    return {
        "interval_s": polling.interval_s,
        "issues": polling.issues,
        "units_per_cycle": round(polling.units_per_cycle, 2),
        "units_per_issue": round(per_issue, 4) if per_issue is not None else None,
        "budgets": [
            {
                "resource": cost.resource,
                "units_per_cycle": round(cost.units_per_cycle, 2),
                "remaining": cost.remaining,
                "exhausted_at": _iso(cost.exhausted_at),
            }
            for cost in polling.costs
        ],
        "sweep": {
            "passive": sweep.passive,
            "read_this_pass": sweep.read_this_pass,
            "spread_ticks": sweep.spread,
            "last_pass_ticks": sweep.last_pass_ticks,
            "behind": sweep.behind,
        },
        "catching_up": list(polling.catching_up),
    }


@dataclass(frozen=True, slots=True)
class ReplicaView:
    """One replica of the cluster: version, presence, what it leads, the turns it holds."""

    replica_id: str
    version: str
    started_at: str
    heartbeat_at: str
    stopped_at: str | None
    alive: bool
    # The repositories whose poll lease it holds now.
    leads: tuple[str, ...]
    # Open turn claims it holds (a dead replica keeps them until another takes them over).
    running_turns: int

    @property
    def leader(self) -> bool:
        return bool(self.leads)

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "leader": self.leader}


@dataclass(frozen=True, slots=True)
class ClusterView:
    """Every replica known to the database, and who leads."""

    leader: str | None
    replicas: tuple[ReplicaView, ...]
    # Turns planned and not claimed by any replica yet.
    queued_turns: int = 0


def cluster(db: Database, now: datetime, repo: str | None = None) -> ClusterView:
    """The replicas as the database sees them, on its clock; ``leader`` polls ``repo``.

    Without ``repo`` the leader is the one replica that leads any repository (None
    when none or several do).
    """
    prefix = poll_lease_name("")
    claims = db.claims.open_by_owner()
    replicas = tuple(
        ReplicaView(
            replica_id=row.replica_id,
            version=row.version,
            started_at=row.started_at.isoformat(),
            heartbeat_at=row.heartbeat_at.isoformat(),
            stopped_at=_iso(row.stopped_at),
            alive=row.alive,
            leads=tuple(
                sorted(
                    name.removeprefix(prefix)
                    for name in db.leases.held_by(row.replica_id, now=now)
                    if name.startswith(prefix)
                )
            ),
            running_turns=claims.get(row.replica_id, 0),
        )
        for row in db.replicas.all(now=now)
    )
    if repo is not None:
        leader = db.leases.holder(poll_lease_name(repo), now=now)
    else:
        leaders = [r.replica_id for r in replicas if r.leader]
        leader = leaders[0] if len(leaders) == 1 else None
    return ClusterView(
        leader=leader,
        replicas=replicas,
        queued_turns=claims.get(None, 0),
    )


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
            "retry_due_at": _iso(row.retry_due_at),
            "version": row.version,
            "merge": final_merge(row),
        },
        "workpad": row.workpad,
        "workpad_comment": _workpad_comment(row, effects),
        "observation": _observation(row),
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
                "first_event_at": _iso(r.first_event_at),
                "ended_at": _iso(r.ended_at),
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
