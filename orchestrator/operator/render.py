"""Plain-text rendering of the operator views for a terminal, and the status as JSON."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from orchestrator.github.outcomes import FailingCheck
from orchestrator.web.views.dashboard import IssueRow
from orchestrator.web.views.issue import fold_side_effects, observation_lines

COLUMNS = (
    "issue",
    "phase",
    "tracker",
    "mode",
    "PR",
    "head",
    "gates",
    "waiting",
    "agent",
    "next action",
)


def _cells(row: IssueRow) -> list[str]:
    gates = " ".join(f"{k.split('_')[0]}:{v}" for k, v in row.gates.items())
    agent = f"{row.running_phase} {row.running_elapsed_s or 0:.0f}s" if row.running_phase else ""
    if not agent and row.retry_due_at:
        agent = f"retry {row.retry_due_at[11:19]}"
    return [
        row.key,
        row.phase,
        row.tracker_state or "",
        row.rollout_mode or "",
        f"#{row.pr_number}" if row.pr_number else "",
        (row.pr_head_sha or "")[:8],
        gates,
        row.waiting_reason or "",
        agent,
        row.next_action or "",
    ]


def table(rows: Sequence[IssueRow], width: int | None = None) -> str:
    """The dashboard table as aligned text columns, each line cut to ``width`` when given.

    A terminal gives its width; into a pipe or a file every line is whole.
    """
    if not rows:
        return "No tracked issues."
    grid = [list(COLUMNS)] + [_cells(row) for row in rows]
    widths = [max(len(line[i]) for line in grid) for i in range(len(COLUMNS) - 1)]
    out = []
    for line in grid:
        text = "  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=False))
        whole = text + "  " + line[-1]
        out.append((whole if width is None else whole[:width]).rstrip())
    return "\n".join(out)


def header_lines(daemon: dict[str, Any] | None, *, not_reached: str | None = None) -> list[str]:
    """The daemon's header: mode, brake, role, sandbox, budgets, polling; or why it is absent."""
    if not daemon:
        why = f": {not_reached}" if not_reached else ""
        return [f"daemon: not reached (showing the database only){why}"]
    lines = [
        f"rollout mode: {daemon['rollout_mode']}   brake: "
        f"{'ON' if daemon['brake_active'] else 'off'}   running agents: {daemon['running']}   "
        + _role(daemon)
    ]
    sandbox = daemon.get("agent_sandbox")
    if sandbox:
        reason = daemon.get("agent_sandbox_reason") or ""
        lines.append(f"agent sandbox: {sandbox}" + (f" ({reason})" if reason else ""))
    for warning in daemon.get("sandbox_warnings") or ():
        lines.append(f"warning: {warning}")
    if daemon.get("policy_error"):
        lines.append(f"policy error: {daemon['policy_error']}")
    for budget in daemon.get("budgets", []):
        lines.append(
            f"GitHub {budget['resource']}: {budget['remaining']}/{budget['limit']} "
            f"left, resets {budget['reset_at']}"
        )
    lines += polling_lines(daemon.get("polling"))
    return lines


def polling_lines(polling: dict[str, Any] | None) -> list[str]:
    """Polling's cost per cycle, the passive sweep, and catching up, as the API gives them."""
    if not polling:
        return []
    per_issue = polling.get("units_per_issue")
    line = f"polling: {polling['units_per_cycle']} units per cycle"
    if per_issue is not None:
        line += f" ({per_issue} per issue, {polling['issues']} issues)"
    lines = [line]
    for budget in polling.get("budgets") or ():
        if budget.get("exhausted_at"):
            lines.append(
                f"warning: the {budget['resource']} budget runs out at {budget['exhausted_at']} "
                "at this pace"
            )
    sweep = polling.get("sweep") or {}
    if sweep.get("passive"):
        last = sweep.get("last_pass_ticks")
        lines.append(
            f"waiting pull requests: {sweep['read_this_pass']}/{sweep['passive']} re-read this "
            f"pass, a pass every {last if last is not None else sweep['spread_ticks']} ticks"
            + (" (behind: the last tick ran out of time)" if sweep.get("behind") else "")
        )
    lines += [f"catching up {item}" for item in polling.get("catching_up") or ()]
    return lines


def _role(daemon: dict[str, Any]) -> str:
    """The leader's last tick; a follower names the leader instead (followers do not tick)."""
    replica = daemon.get("replica_id") or "-"
    if daemon.get("role") == "follower":
        leader = daemon.get("leader")
        return f"replica {replica}: " + (
            f"follower of {leader}" if leader else "follower (no replica leads now)"
        )
    return f"replica {replica}: leader, last tick: {daemon['last_tick_at'] or 'never'}"


REPLICA_COLUMNS = ("replica", "role", "alive", "version", "last heartbeat", "turns")


def replica_lines(leader: str | None, replicas: Sequence[dict[str, Any]]) -> list[str]:
    """Who leads, then one aligned line per replica (none on a database without replicas)."""
    if not replicas:
        return []
    grid = [list(REPLICA_COLUMNS)]
    for r in replicas:
        if r["leads"]:
            role = "leader of " + ", ".join(r["leads"])
        else:
            role = "follower" if r["alive"] else "-"
        alive = "yes" if r["alive"] else ("stopped" if r["stopped_at"] else "no")
        grid.append(
            [r["replica_id"], role, alive, r["version"], r["heartbeat_at"], str(r["running_turns"])]
        )
    widths = [max(len(line[i]) for line in grid) for i in range(len(REPLICA_COLUMNS))]
    out = [f"leader: {leader or 'none'}"]
    out += [
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in grid
    ]
    return [*out, ""]


def timeline(data: dict[str, Any]) -> str:
    issue = data["issue"]
    out = [
        f"{issue['repo']}#{issue['number']}: {issue['title']}",
        f"  phase {issue['phase']} since {issue['phase_since']}; tracker state "
        f"{issue['tracker_state']}; PR {issue['pr_number'] or '-'} at "
        f"{(issue['pr_head_sha'] or '-')[:12]}; rework cycles {issue['rework_cycles']}",
    ]
    merge = issue.get("merge")
    if merge:
        commit = f" as {merge['commit_sha'][:12]}" if merge.get("commit_sha") else ""
        out.append(f"  {merge['state']}: PR #{merge['pr_number']}{commit}")
    if issue["waiting_reason"]:
        out.append(f"  waiting: {issue['waiting_reason']}")
    waiting = (data.get("workpad") or {}).get("waiting") or {}
    if waiting.get("detail"):
        out.append(f"  why: {waiting['detail']}")
    if data.get("last_failure"):
        out.append(f"  last failure: {data['last_failure']}")
    out += [f"  {label}: {value}" for label, value in observation_lines(data["observation"])]
    out.append("phase events:")
    out += [
        f"  {e['at']}  {e['from'] or '-'} -> {e['to']}  ({e['actor']}: {e['reason']})"
        for e in data["phase_events"]
    ]
    out.append("side effects:")
    out += [_effect_line(s) for s in fold_side_effects(data["side_effects"])] or ["  none"]
    out.append("agent runs:")
    out += [_run_line(r) for r in data["agent_runs"]] or ["  none"]
    return "\n".join(out)


def _effect_line(effect: dict[str, Any]) -> str:
    """One side effect; consecutive workpad updates as one line with their count and times."""
    if effect["count"] > 1:
        kind, status = f"{effect['kind']} x{effect['count']}", effect["status"]
        return f"  {effect['first_at']}  {kind:<22} {status:<24} until {effect['last_at']}"
    return f"  {effect['created_at']}  {effect['kind']:<22} {effect['status']:<24} {effect['key']}"


def _run_line(run: dict[str, Any]) -> str:
    """One agent run: when, phase, attempt, replica, duration, tokens, and why it ended."""
    duration = run["duration_s"]
    tokens = run.get("total_tokens")
    reason = run.get("exit_reason") or run["outcome"] or "running"
    if len(reason) > 200:
        reason = reason[:197] + "..."
    return (
        f"  {run['started_at']}  {run['phase']:<12} attempt {run['attempt']}  "
        f"on {run.get('replica_id') or '-'}  "
        f"{f'{duration:.1f} s' if duration is not None else '-'}  "
        f"{f'{tokens:,} tokens' if tokens is not None else '- tokens'}  {reason}"
    )


def checks(items: Sequence[FailingCheck]) -> str:
    if not items:
        return "No failing checks on the head commit."
    out = []
    for check in items:
        out.append(f"✗ {check.name} ({check.conclusion})")
        if check.summary:
            out += [f"    {line}" for line in check.summary.splitlines()[:12]]
        for note in check.annotations:
            where = f"{note.path}:{note.line}" if note.line else note.path
            out.append(f"    {where}: [{note.level}] {note.message}")
        if check.log_tail:
            out.append("    log tail:")
            out += [f"      {line}" for line in check.log_tail.splitlines()]
    return "\n".join(out)


@dataclass(frozen=True)
class Reached:
    """Which daemon ``status`` asked (``url``, None when none is known) and why it failed."""

    url: str | None
    error: str | None


def status_document(
    *,
    as_of: str,
    reached: Reached,
    daemon: dict[str, Any] | None,
    leader: str | None,
    replicas: Sequence[dict[str, Any]],
    queued_turns: int,
    rows: Sequence[IssueRow],
) -> dict[str, Any]:
    """What ``orchestrator status --json`` prints; its keys are documented in docs/runtime.md.

    ``source`` says whether the live daemon answered (``daemon``) or the
    database was read (``database``; ``daemon`` is then null and
    ``daemon_error`` says why).
    """
    return {
        "as_of": as_of,
        "source": "database" if daemon is None else "daemon",
        "daemon_url": reached.url,
        "daemon_error": reached.error,
        "daemon": daemon,
        "leader": leader,
        "replicas": list(replicas),
        "queued_turns": queued_turns,
        "issues": [row.as_json() for row in rows],
    }
