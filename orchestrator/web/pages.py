"""Server-rendered HTML: the dashboard table and one issue's timeline.

Readable without JavaScript; the dashboard refreshes itself. Every value is
escaped: titles, reasons and prompts come from GitHub users and agents.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from html import escape
from typing import Any
from urllib.parse import quote

from orchestrator.web.views import Header, IssueRow, ReplicaView

STYLE = """
body{font-family:system-ui,sans-serif;margin:1.5rem;color:#1f2328;background:#fff}
h1{font-size:1.3rem;margin:0 0 .5rem}h2{font-size:1.1rem;margin:1.5rem 0 .5rem}
table{border-collapse:collapse;width:100%;font-size:.85rem}
th,td{border:1px solid #d0d7de;padding:.3rem .45rem;text-align:left;vertical-align:top}
th{background:#f6f8fa}.hdr{display:flex;flex-wrap:wrap;gap:.5rem 1.5rem;margin-bottom:1rem}
.hdr div{padding:.35rem .6rem;border:1px solid #d0d7de;border-radius:6px}
.pass{color:#1a7f37}.fail,.active{color:#cf222e;font-weight:600}.pending{color:#9a6700}
.muted{color:#656d76}code,pre{font-family:ui-monospace,monospace}
pre{background:#f6f8fa;padding:.6rem;overflow:auto;max-height:28rem;white-space:pre-wrap}
"""

_GATE_ABBREVIATIONS = {
    "checks": "checks",
    "human_approval": "approval",
    "mergeability": "merge",
    "head_match": "head",
}


def _e(value: object) -> str:
    return "" if value is None else escape(str(value))


def _gate(value: str | None) -> str:
    if not value:
        return '<span class="muted">-</span>'
    css = {"pass": "pass", "fail": "fail", "pending": "pending", "required": "pending"}.get(
        value, "muted"
    )
    return f'<span class="{css}">{_e(value)}</span>'


def _page(title: str, body: str, refresh_s: int | None = None) -> str:
    refresh = f'<meta http-equiv="refresh" content="{refresh_s}">' if refresh_s else ""
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8">{refresh}'
        f"<title>{_e(title)}</title><style>{STYLE}</style></head><body>{body}</body></html>"
    )


def _header(h: Header) -> str:
    budgets = (
        ", ".join(
            f"{_e(b['resource'])} {_e(b['remaining'])}/{_e(b['limit'])}"
            f" (resets {_e(b['reset_at'])})"
            for b in h.budgets
        )
        or "unknown"
    )
    items = [
        f"rollout mode: <b>{_e(h.rollout_mode)}</b>",
        f'agent sandbox: <b title="{_e(h.agent_sandbox_reason)}">{_e(h.agent_sandbox)}</b>',
        "local brake: " + ('<span class="active">ON</span>' if h.brake_active else "off"),
        "stopped repos: " + (_e(", ".join(h.stopped_repos)) if h.stopped_repos else "none"),
        f"GitHub budget: {budgets}",
        _role(h),
        f"running agents: {h.running}",
        f"replica: {_e(h.replica_id)}" + (" (leader)" if h.role == "leader" else ""),
    ]
    if h.polling is not None:
        items.append(_polling(h.polling))
    items += [f'<span class="fail">{_e(warning)}</span>' for warning in h.sandbox_warnings]
    if h.rate_limited_until:
        items.append(f'<span class="active">rate limited until {_e(h.rate_limited_until)}</span>')
    if h.policy_error:
        items.append(f'<span class="fail">policy error: {_e(h.policy_error)}</span>')
    if h.last_tick_error:
        items.append(f'<span class="fail">last tick failed: {_e(h.last_tick_error)}</span>')
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
            text += f'; <span class="fail">{_e(budget["resource"])} budget runs out at '
            text += f"{_e(budget['exhausted_at'])}</span>"
    if sweep["passive"]:
        last = sweep["last_pass_ticks"]
        text += (
            f"; waiting pull requests re-read {sweep['read_this_pass']}/{sweep['passive']} "
            f"this pass (a pass every {last if last is not None else sweep['spread_ticks']} ticks)"
        )
        if sweep["behind"]:
            text += ' <span class="pending">behind: the last tick ran out of time</span>'
    for line in polling["catching_up"]:
        text += f'; <span class="pending">catching up {_e(line)}</span>'
    return text


def _role(h: Header) -> str:
    """The leader's last tick; on a follower, which replica leads (followers do not tick)."""
    if h.role == "follower":
        if h.leader is None:
            return '<span class="pending">follower (no replica leads now)</span>'
        return f"follower of <b>{_e(h.leader)}</b>"
    return f"last tick: {_e(h.last_tick_at) or 'never'} ({h.ticks} ticks)"


def _replicas(replicas: Sequence[ReplicaView], this: str) -> str:
    if not replicas:
        return ""
    head = (
        "<tr><th>replica</th><th>role</th><th>alive</th><th>version</th>"
        "<th>last heartbeat</th><th>turns</th><th>started</th></tr>"
    )
    lines = []
    for r in replicas:
        name = _e(r.replica_id) + (
            ' <span class="muted">(this one)</span>' if r.replica_id == this else ""
        )
        if r.leader:
            role = "leader of " + _e(", ".join(r.leads))
        else:
            role = "follower" if r.alive else "-"
        if r.alive:
            alive = '<span class="pass">yes</span>'
        elif r.stopped_at:
            alive = '<span class="muted">stopped</span>'
        else:
            alive = '<span class="fail">no</span>'
        lines.append(
            f'<tr id="replica-{_e(r.replica_id)}"><td>{name}</td><td>{role}</td><td>{alive}</td>'
            f"<td>{_e(r.version)}</td><td>{_e(r.heartbeat_at)}</td><td>{r.running_turns}</td>"
            f"<td>{_e(r.started_at)}</td></tr>"
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
        "<th>waiting</th><th>gates</th><th>agent</th><th>retry due</th></tr>"
    )
    lines = []
    for r in rows:
        issue_link = f"/issues/{quote(r.repo)}/{r.number}"
        pr = (
            f'<a href="{_e(html_base)}/{_e(r.repo)}/pull/{r.pr_number}">#{r.pr_number}</a>'
            if r.pr_number
            else ""
        )
        head_sha = (
            f'<a href="{_e(html_base)}/{_e(r.repo)}/commit/{_e(r.pr_head_sha)}">'
            f"<code>{_e(r.pr_head_sha[:8])}</code></a>"
            if r.pr_head_sha
            else ""
        )
        gates = " ".join(
            f"{_GATE_ABBREVIATIONS[name]}:{_gate(r.gates.get(name))}"
            for name in _GATE_ABBREVIATIONS
        )
        agent = ""
        if r.running_phase:
            agent = f"{_e(r.running_phase)} {r.running_elapsed_s or 0:.0f}s"
            if r.last_event:
                agent += f'<br><span class="muted">{_e(r.last_event)}</span>'
        lines.append(
            f'<tr id="{_e(r.key)}"><td><a href="{issue_link}">{_e(r.key)}</a><br>'
            f'<span class="muted">{_e(r.title)}</span></td>'
            f"<td>{_e(r.tracker_state)}</td><td><b>{_e(r.phase)}</b></td>"
            f"<td>{_e(r.rollout_mode)}</td><td>{_gate(r.ownership)}</td>"
            f'<td class="killswitch">{_gate(r.kill_switch)}</td>'
            f"<td>{pr}</td><td>{head_sha}</td><td>{_e(r.last_observed_at)}</td>"
            f"<td>{_e(r.next_action)}</td><td>{_e(r.waiting_reason)}</td><td>{gates}</td>"
            f"<td>{agent}</td><td>{_e(r.retry_due_at)}</td></tr>"
        )
    table = (
        f"<table><thead>{head}</thead><tbody>{''.join(lines)}</tbody></table>"
        if lines
        else "<p>No tracked issues yet.</p>"
    )
    body = f"<h1>Orchestrator</h1>{_header(h)}{table}{_replicas(replicas, h.replica_id)}"
    return _page("orchestrator", body, refresh_s)


def _table(rows: list[dict[str, Any]], columns: list[str]) -> str:
    if not rows:
        return '<p class="muted">none</p>'
    head = "".join(f"<th>{_e(c)}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{_cell(row.get(c))}</td>" for c in columns) + "</tr>" for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _cell(value: object) -> str:
    if isinstance(value, dict | list):
        return f"<code>{_e(json.dumps(value, sort_keys=True)[:400])}</code>"
    return _e(value)


def issue_page(data: dict[str, Any]) -> str:
    issue = data["issue"]
    title = f"{issue['repo']}#{issue['number']}"
    summary = _table([issue], list(issue))
    body = (
        f'<p><a href="/">&larr; dashboard</a></p><h1>{_e(title)}: {_e(issue["title"])}</h1>'
        f"{summary}"
        "<h2>Phase events</h2>"
        + _table(data["phase_events"], ["at", "from", "to", "reason", "actor"])
        + "<h2>Side effects</h2>"
        + _table(
            data["side_effects"],
            ["created_at", "kind", "status", "rollout_mode", "attempts", "result", "key"],
        )
        + "<h2>Agent runs</h2>"
        + _table(
            data["agent_runs"],
            [
                "started_at",
                "phase",
                "attempt",
                "outcome",
                "duration_s",
                "total_tokens",
                "cached_input_tokens",
                "cost_usd",
                "error",
                "run_id",
            ],
        )
        + "<h2>Observation</h2>"
        + f"<pre>{_e(json.dumps(data['observation'], indent=2, sort_keys=True))}</pre>"
        + "<h2>Workpad record</h2>"
        + f"<pre>{_e(json.dumps(data['workpad'], indent=2, sort_keys=True))}</pre>"
        + "<h2>Last prompt</h2>"
        + (
            f"<pre>{_e(data['last_prompt'])}</pre>"
            if data["last_prompt"]
            else '<p class="muted">none yet</p>'
        )
    )
    return _page(title, body)
