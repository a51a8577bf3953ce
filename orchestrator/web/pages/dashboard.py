"""The dashboard: the daemon's header, a line per tracked issue, the replicas.

Readable without JavaScript; it refreshes itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from orchestrator.web.pages.layout import esc, gate, merge_cell, page, pr_link, sha_link, time_tag
from orchestrator.web.views.dashboard import Header, IssueRow, ReplicaView

_GATE_ABBREVIATIONS = {
    "checks": "checks",
    "human_approval": "approval",
    "mergeability": "merge",
    "head_match": "head",
}


def _word(value: object) -> str:
    """A snake_case value (a phase, a reason) that may break after its underscores."""
    return esc(value).replace("_", "_<wbr>")


def _header(h: Header) -> str:
    budgets = (
        ", ".join(
            f"{esc(b['resource'])} {esc(b['remaining'])}/{esc(b['limit'])}"
            f" (resets {time_tag(b['reset_at'], time_only=True)})"
            for b in h.budgets
        )
        or "unknown"
    )
    items = [
        f"rollout mode: <b>{esc(h.rollout_mode)}</b>",
        f'agent sandbox: <b title="{esc(h.agent_sandbox_reason)}">{esc(h.agent_sandbox)}</b>',
        "local brake: " + ('<span class="active">ON</span>' if h.brake_active else "off"),
        "repositories: " + (esc(", ".join(h.repos)) if h.repos else "none"),
        "stopped repos: " + (esc(", ".join(h.stopped_repos)) if h.stopped_repos else "none"),
        f"GitHub budget: {budgets}",
        _role(h),
        f"running agents: {h.running}",
        f"replica: {esc(h.replica_id)}" + (" (leader)" if h.role == "leader" else ""),
    ]
    if h.polling is not None:
        items.append(_polling(h.polling))
    items += [f'<span class="fail">{esc(warning)}</span>' for warning in h.sandbox_warnings]
    if h.rate_limited_until:
        items.append(
            f'<span class="active">rate limited until {time_tag(h.rate_limited_until)}</span>'
        )
    if h.policy_error:
        items.append(f'<span class="fail">policy error: {esc(h.policy_error)}</span>')
    if h.last_tick_error:
        items.append(f'<span class="fail">last tick failed: {esc(h.last_tick_error)}</span>')
    return '<div class="hdr">' + "".join(f"<div>{i}</div>" for i in items) + "</div>"


def _polling(polling: dict[str, Any]) -> str:
    """Cost per cycle, the passive sweep's progress, and any catching up with its pace."""
    sweep = polling["sweep"]
    per_issue = polling["units_per_issue"]
    text = f"polling: {polling['units_per_cycle']} units per cycle"
    if per_issue is not None:
        text += f" ({per_issue} per issue)"
    for budget in polling["budgets"]:
        if budget["exhausted_at"]:
            text += f'; <span class="fail">{esc(budget["resource"])} budget runs out at '
            text += f"{time_tag(budget['exhausted_at'])}</span>"
    if sweep["passive"]:
        last = sweep["last_pass_ticks"]
        text += (
            f"; waiting pull requests re-read {sweep['read_this_pass']}/{sweep['passive']} "
            f"this pass (a pass every {last if last is not None else sweep['spread_ticks']} ticks)"
        )
        if sweep["behind"]:
            text += ' <span class="pending">behind: the last tick ran out of time</span>'
    for line in polling["catching_up"]:
        text += f'; <span class="pending">catching up {esc(line)}</span>'
    return text


def _role(h: Header) -> str:
    """The leader's last tick; on a follower, which replica leads (followers do not tick)."""
    if h.role == "follower":
        if h.leader is None:
            return '<span class="pending">follower (no replica leads now)</span>'
        return f"follower of <b>{esc(h.leader)}</b>"
    return f"last tick: {time_tag(h.last_tick_at) or 'never'} ({h.ticks} ticks)"


def _replicas(replicas: Sequence[ReplicaView], this: str) -> str:
    if not replicas:
        return ""
    head = (
        "<tr><th>replica</th><th>role</th><th>alive</th><th>version</th>"
        "<th>last heartbeat</th><th>turns</th><th>started</th></tr>"
    )
    lines = []
    for r in replicas:
        name = esc(r.replica_id) + (
            ' <span class="muted">(this one)</span>' if r.replica_id == this else ""
        )
        if r.leader:
            role = "leader of " + esc(", ".join(r.leads))
        else:
            role = "follower" if r.alive else "-"
        if r.alive:
            alive = '<span class="pass">yes</span>'
        elif r.stopped_at:
            alive = '<span class="muted">stopped</span>'
        else:
            alive = '<span class="fail">no</span>'
        lines.append(
            f'<tr id="replica-{esc(r.replica_id)}"><td>{name}</td><td>{role}</td><td>{alive}</td>'
            f"<td>{esc(r.version)}</td><td>{time_tag(r.heartbeat_at)}</td><td>{r.running_turns}</td>"
            f"<td>{time_tag(r.started_at)}</td></tr>"
        )
    return (
        f'<h2>Replicas</h2><table class="replicas"><thead>{head}</thead>'
        f"<tbody>{''.join(lines)}</tbody></table>"
    )


def dashboard(
    h: Header,
    rows: list[IssueRow],
    html_base: str,
    replicas: Sequence[ReplicaView] = (),
    refresh_s: int = 5,
) -> str:
    head = (
        "<tr><th>issue</th><th>tracker state</th><th>phase</th><th>mode</th><th>owned</th>"
        "<th>kill switch</th><th>PR</th><th>head</th><th>observed</th><th>next action</th>"
        "<th>waiting</th><th>gates / merge</th><th>agent</th><th>retry due</th></tr>"
    )
    lines: list[tuple[str, str]] = []
    groups = _by_repo(rows)
    counts = {repo: len(members) for repo, members in groups}
    for r in (row for _, members in groups for row in members):
        if len(groups) > 1 and (not lines or lines[-1][1] != r.repo):
            lines.append((_repo_heading(r.repo, counts[r.repo], h), r.repo))
        issue_link = f"/issues/{quote(r.repo)}/{r.number}"
        if r.merge:
            gates = merge_cell(r.merge, html_base, r.repo)
        elif r.gates:
            gates = " ".join(
                f"{_GATE_ABBREVIATIONS[name]}:{gate(r.gates.get(name))}"
                for name in _GATE_ABBREVIATIONS
            )
        else:
            gates = '<span class="muted">-</span>'
        agent = ""
        if r.running_phase:
            agent = f"{_word(r.running_phase)} {r.running_elapsed_s or 0:.0f}s"
            if r.last_event:
                agent += f'<br><span class="muted wrap">{esc(r.last_event)}</span>'
        lines.append(
            (
                f'<tr id="{esc(r.key)}"><td><a class="nw" href="{issue_link}">{esc(r.key)}</a><br>'
                f'<span class="muted wrap">{esc(r.title)}</span></td>'
                f'<td class="tracker">{esc(r.tracker_state)}</td><td><b>{_word(r.phase)}</b></td>'
                f"<td>{esc(r.rollout_mode)}</td><td>{gate(r.ownership)}</td>"
                f'<td class="killswitch">{gate(r.kill_switch)}</td>'
                f"<td>{pr_link(r.pr_number, html_base, r.repo)}</td>"
                f"<td>{sha_link(r.pr_head_sha, html_base, r.repo)}</td>"
                f"<td>{time_tag(r.last_observed_at)}</td>"
                f'<td class="next">{esc(r.next_action)}</td><td>'
                f'{_word(r.waiting_reason)}</td><td class="gates">{gates}</td>'
                f"<td>{agent}</td><td>{time_tag(r.retry_due_at)}</td></tr>",
                r.repo,
            )
        )
    body_rows = "".join(line for line, _ in lines)
    table = (
        f'<table class="issues"><thead>{head}</thead><tbody>{body_rows}</tbody></table>'
        if lines
        else "<p>No tracked issues yet.</p>"
    )
    body = f"<h1>Orchestrator</h1>{_header(h)}{table}{_replicas(replicas, h.replica_id)}"
    return page("orchestrator", body, refresh_s)


def _by_repo(rows: list[IssueRow]) -> list[tuple[str, list[IssueRow]]]:
    """The rows grouped by repository, the repositories in order of name, each group's rows
    in their given order."""
    groups: dict[str, list[IssueRow]] = {}
    for row in rows:
        groups.setdefault(row.repo, []).append(row)
    return sorted(groups.items(), key=lambda item: item[0].lower())


def _repo_heading(repo: str, count: int, h: Header) -> str:
    stopped = ' <span class="active">stopped by its repository-wide label</span>' * (
        repo in h.stopped_repos
    )
    return (
        f'<tr class="repo" id="repo-{esc(repo)}"><th colspan="14">{esc(repo)} '
        f'<span class="muted">({count} issue{"s" * (count != 1)})</span>{stopped}</th></tr>'
    )
