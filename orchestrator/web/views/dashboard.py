"""The presenter of the dashboard: one line per issue, the daemon's header, the cluster.

The dashboard page, the JSON API's state and the terminal table all show these
values.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from orchestrator.daemon.polling_status import PollingStatus
from orchestrator.daemon.status import RuntimeStatus
from orchestrator.repos.cluster import poll_lease_name
from orchestrator.store.database import Database
from orchestrator.store.models import TrackedIssue
from orchestrator.turns.pool import RunningTurn
from orchestrator.web.views.issue import final_merge, finished, iso_time, observation_of

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


def issue_row(row: TrackedIssue, running: RunningTurn | None, now: datetime) -> IssueRow:
    observation = observation_of(row)
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
        running_since=iso_time(running.started_at) if running else None,
        running_elapsed_s=(now - running.started_at).total_seconds() if running else None,
        last_event=running.last_event if running else None,
        last_event_at=iso_time(running.last_event_at) if running else None,
        retry_due_at=iso_time(row.retry_due_at),
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
                "reset_at": iso_time(b.reset_at),
            }
            for b in status.budgets
        ),
        rate_limited_until=iso_time(status.rate_limited_until),
        last_tick_at=iso_time(status.last_tick_at),
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
                "exhausted_at": iso_time(cost.exhausted_at),
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
            stopped_at=iso_time(row.stopped_at),
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
