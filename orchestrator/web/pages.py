"""Server-rendered HTML: the dashboard table and one issue's timeline.

Readable without JavaScript; the dashboard refreshes itself. Every value is
escaped: titles, reasons and prompts come from GitHub users and agents.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from html import escape
from typing import Any
from urllib.parse import quote

from orchestrator.web.views import (
    Header,
    IssueRow,
    ReplicaView,
    fold_side_effects,
    observation_lines,
)

STYLE = """
body{font-family:system-ui,sans-serif;margin:1.5rem;color:#1f2328;background:#fff}
h1{font-size:1.3rem;margin:0 0 .5rem}h2{font-size:1.1rem;margin:1.5rem 0 .5rem}
table{border-collapse:collapse;width:100%;font-size:.85rem}
th,td{border:1px solid #d0d7de;padding:.3rem .45rem;text-align:left;vertical-align:top}
th{background:#f6f8fa}.hdr{display:flex;flex-wrap:wrap;gap:.5rem 1.5rem;margin-bottom:1rem}
.hdr div{padding:.35rem .6rem;border:1px solid #d0d7de;border-radius:6px}
.pass{color:#1a7f37}.fail,.active{color:#cf222e;font-weight:600}.pending{color:#9a6700}
.muted{color:#656d76}code,pre{font-family:ui-monospace,monospace}
pre{background:#f6f8fa;padding:.6rem;overflow:auto;max-height:28rem;white-space:pre-wrap;
overflow-wrap:anywhere;margin:.3rem 0}
.wrap,td.wrap,.facts dd{overflow-wrap:anywhere}.nw{white-space:nowrap}td.key{min-width:9rem}
.facts{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem;margin:0 0 1rem;
font-size:.9rem}.facts dt{color:#656d76}.facts dd{margin:0}
details>summary{cursor:pointer}details.raw{margin:.4rem 0}details.raw>summary{color:#656d76}
.count{display:inline-block;padding:0 .35rem;border-radius:1rem;background:#ddf4ff;color:#0969da}
.workpad{border:1px solid #d0d7de;border-radius:6px;padding:.2rem 1rem;max-width:60rem}
table.issues{font-size:.8rem}
.workpad h3{font-size:1rem}.workpad p{line-height:1.5}.workpad pre{max-height:none}
"""

_GATE_ABBREVIATIONS = {
    "checks": "checks",
    "human_approval": "approval",
    "mergeability": "merge",
    "head_match": "head",
}


def _e(value: object) -> str:
    return "" if value is None else escape(str(value))


def _word(value: object) -> str:
    """A snake_case value (a phase, a reason) that may break after its underscores."""
    return _e(value).replace("_", "_<wbr>")


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
            f" (resets {_when(b['reset_at'], time_only=True)})"
            for b in h.budgets
        )
        or "unknown"
    )
    items = [
        f"rollout mode: <b>{_e(h.rollout_mode)}</b>",
        f'agent sandbox: <b title="{_e(h.agent_sandbox_reason)}">{_e(h.agent_sandbox)}</b>',
        "local brake: " + ('<span class="active">ON</span>' if h.brake_active else "off"),
        "repositories: " + (_e(", ".join(h.repos)) if h.repos else "none"),
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
        items.append(
            f'<span class="active">rate limited until {_when(h.rate_limited_until)}</span>'
        )
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
            text += f"{_when(budget['exhausted_at'])}</span>"
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
    return f"last tick: {_when(h.last_tick_at) or 'never'} ({h.ticks} ticks)"


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
            f"<td>{_e(r.version)}</td><td>{_when(r.heartbeat_at)}</td><td>{r.running_turns}</td>"
            f"<td>{_when(r.started_at)}</td></tr>"
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
            gates = _merge(r.merge, html_base, r.repo)
        elif r.gates:
            gates = " ".join(
                f"{_GATE_ABBREVIATIONS[name]}:{_gate(r.gates.get(name))}"
                for name in _GATE_ABBREVIATIONS
            )
        else:
            gates = '<span class="muted">-</span>'
        agent = ""
        if r.running_phase:
            agent = f"{_word(r.running_phase)} {r.running_elapsed_s or 0:.0f}s"
            if r.last_event:
                agent += f'<br><span class="muted wrap">{_e(r.last_event)}</span>'
        lines.append(
            (
                f'<tr id="{_e(r.key)}"><td><a class="nw" href="{issue_link}">{_e(r.key)}</a><br>'
                f'<span class="muted wrap">{_e(r.title)}</span></td>'
                f'<td class="tracker">{_e(r.tracker_state)}</td><td><b>{_word(r.phase)}</b></td>'
                f"<td>{_e(r.rollout_mode)}</td><td>{_gate(r.ownership)}</td>"
                f'<td class="killswitch">{_gate(r.kill_switch)}</td>'
                f"<td>{_pr(r.pr_number, html_base, r.repo)}</td>"
                f"<td>{_sha(r.pr_head_sha, html_base, r.repo)}</td>"
                f"<td>{_when(r.last_observed_at)}</td>"
                f'<td class="next">{_e(r.next_action)}</td><td>'
                f'{_word(r.waiting_reason)}</td><td class="gates">{gates}</td>'
                f"<td>{agent}</td><td>{_when(r.retry_due_at)}</td></tr>",
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
    return _page("orchestrator", body, refresh_s)


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
        f'<tr class="repo" id="repo-{_e(repo)}"><th colspan="14">{_e(repo)} '
        f'<span class="muted">({count} issue{"s" * (count != 1)})</span>{stopped}</th></tr>'
    )


def _when(iso: str | None, *, time_only: bool = False) -> str:
    """A stored time as an operator reads it (UTC, to the second); the exact value in a title."""
    if not iso:
        return ""
    try:
        moment = datetime.fromisoformat(iso).astimezone(UTC)
    except ValueError:
        return _e(iso)
    shown = moment.strftime("%H:%M:%S" if time_only else "%Y-%m-%d %H:%M:%S")
    return f'<time datetime="{_e(iso)}" title="{_e(iso)}">{shown}</time>'


class _Times:
    """Times down a table, as in a log: the date only on the first row and when it changes."""

    def __init__(self) -> None:
        self.day: str | None = None

    def __call__(self, iso: str | None) -> str:
        day = iso[:10] if iso else None
        same = day is not None and day == self.day
        self.day = day or self.day
        return _when(iso, time_only=same)


def _long(text: str, limit: int = 160) -> str:
    """Text that may be long (a payload, an error): cut to ``limit``, the whole under details."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return f'<span class="wrap">{_e(flat)}</span>'
    return (
        f'<details class="wrap"><summary>{_e(flat[:limit])}&hellip;</summary>'
        f"<pre>{_e(text)}</pre></details>"
    )


def _sha(value: str | None, html_base: str, repo: str, length: int = 8) -> str:
    if not value:
        return ""
    return (
        f'<a href="{_e(html_base)}/{_e(repo)}/commit/{_e(value)}" title="{_e(value)}">'
        f"<code>{_e(value[:length])}</code></a>"
    )


def _pr(number: int | None, html_base: str, repo: str) -> str:
    if not number:
        return ""
    return f'<a href="{_e(html_base)}/{_e(repo)}/pull/{number}">#{number}</a>'


def _merge(merge: dict[str, Any] | None, html_base: str, repo: str) -> str:
    """A finished issue's merge: 'merged', its pull request and merge commit."""
    if not merge:
        return ""
    parts = [f'<span class="pass">{_e(merge.get("state"))}</span>']
    if merge.get("pr_number"):
        parts.append(_pr(merge["pr_number"], html_base, repo))
    if merge.get("commit_sha"):
        parts.append(_sha(merge["commit_sha"], html_base, repo))
    return " ".join(parts)


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return ""
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes, rest = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {rest:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def _count(value: int | None) -> str:
    return "" if value is None else f"{value:,}"


_INLINE = (
    (re.compile(r"\*\*(.+?)\*\*"), r"<b>\1</b>"),
    (re.compile(r"`([^`]+)`"), r"<code>\1</code>"),
)
_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
_FENCE = re.compile(r"^(`{3,}|~{3,})")


def _markdown(text: str) -> str:
    """The little markdown the workpad comment uses, as GitHub shows it.

    Headings, fenced blocks, bold and code spans, one line per line; HTML comments
    (the machine marker) are hidden. Everything is escaped first.
    """
    out: list[str] = []
    paragraph: list[str] = []
    lines = text.replace("\r\n", "\n").split("\n")

    def flush() -> None:
        if paragraph:
            out.append("<p>" + "<br>".join(paragraph) + "</p>")
            paragraph.clear()

    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        fence = _FENCE.match(line)
        if fence:
            flush()
            block = []
            while index < len(lines) and not lines[index].startswith(fence.group(1)):
                block.append(lines[index])
                index += 1
            index += 1
            out.append(f"<pre>{_e(chr(10).join(block))}</pre>")
            continue
        stripped = line.strip()
        if not stripped or (stripped.startswith("<!--") and stripped.endswith("-->")):
            flush()
            continue
        heading = _HEADING.match(stripped)
        if heading:
            flush()
            out.append(f"<h3>{_inline(heading.group(2))}</h3>")
            continue
        paragraph.append(_inline(stripped))
    flush()
    return "".join(out)


def _inline(text: str) -> str:
    html = _e(text)
    for pattern, replacement in _INLINE:
        html = pattern.sub(replacement, html)
    return html


def _facts(items: list[tuple[str, str]]) -> str:
    shown = [(label, value) for label, value in items if value]
    if not shown:
        return '<p class="muted">none</p>'
    return (
        '<dl class="facts">'
        + "".join(f"<dt>{_e(label)}</dt><dd>{value}</dd>" for label, value in shown)
        + "</dl>"
    )


def _raw(title: str, value: object) -> str:
    return (
        f'<details class="raw"><summary>{_e(title)}</summary>'
        f"<pre>{_e(json.dumps(value, indent=2, sort_keys=True, default=str))}</pre></details>"
    )


def _summary(data: dict[str, Any], html_base: str) -> str:
    issue = data["issue"]
    repo = issue["repo"]
    workpad = data.get("workpad") or {}
    waiting = workpad.get("waiting") if isinstance(workpad, dict) else None
    detail = waiting.get("detail") if isinstance(waiting, dict) else None
    labels = issue.get("labels") or []
    tracker = _e(issue["tracker_state"])
    if labels:
        tracker += f' <span class="muted">(labels: {_e(", ".join(labels))})</span>'
    return _facts(
        [
            ("phase", f"<b>{_e(issue['phase'])}</b> since {_when(issue['phase_since'])}"),
            ("tracker state", tracker),
            ("merge", _merge(issue.get("merge"), html_base, repo)),
            ("pull request", _pr(issue["pr_number"], html_base, repo)),
            ("head", _sha(issue["pr_head_sha"], html_base, repo, 12)),
            ("branch", f"<code>{_e(issue['branch'])}</code>" if issue["branch"] else ""),
            ("waiting", _e(issue["waiting_reason"])),
            ("why", _e(detail)),
            ("last failure", _long(data["last_failure"]) if data.get("last_failure") else ""),
            ("retry due", _when(issue["retry_due_at"])),
            ("rework cycles", str(issue["rework_cycles"])),
            ("record version", str(issue["version"])),
        ]
    )


_OUTCOME_CSS = {
    "completed": "pass",
    "failed": "fail",
    "session_start_timeout": "fail",
    "stalled": "fail",
    "turn_timeout": "fail",
    "invalid_results": "fail",
    "hook_failed": "fail",
    "cancelled": "pending",
    "interrupted": "pending",
}


def _events(events: list[dict[str, Any]]) -> str:
    if not events:
        return '<p class="muted">none</p>'
    head = "<tr><th>at</th><th>from</th><th>to</th><th>reason</th><th>actor</th></tr>"
    when = _Times()
    lines = [
        f"<tr><td>{when(e['at'])}</td><td>{_e(e['from'] or '-')}</td><td><b>{_e(e['to'])}</b>"
        f'</td><td class="wrap">{_e(e["reason"])}</td><td>{_e(e["actor"])}</td></tr>'
        for e in events
    ]
    return f"<table><thead>{head}</thead><tbody>{''.join(lines)}</tbody></table>"


def _runs(runs: list[dict[str, Any]]) -> str:
    if not runs:
        return '<p class="muted">none</p>'
    head = (
        "<tr><th>started</th><th>phase</th><th>attempt</th><th>replica</th>"
        "<th>exit</th><th>duration</th><th>tokens</th><th>cost</th><th>run</th></tr>"
    )
    lines = []
    when = _Times()
    for r in runs:
        outcome = r["outcome"] or "running"
        exit_cell = f'<span class="{_OUTCOME_CSS.get(outcome, "muted")}">{_e(outcome)}</span>'
        if r.get("error"):
            exit_cell += "<br>" + _long(str(r["error"]), 200)
        tokens = _count(r.get("total_tokens"))
        if r.get("cached_input_tokens"):
            tokens += f'<br><span class="muted">{_count(r["cached_input_tokens"])} cached</span>'
        split = (
            f"input {_count(r.get('input_tokens')) or '-'}, output "
            f"{_count(r.get('output_tokens')) or '-'}"
        )
        cost = f"${r['cost_usd']:.4f}" if r.get("cost_usd") is not None else ""
        lines.append(
            f'<tr class="run"><td>{when(r["started_at"])}</td><td>{_e(r["phase"])}</td>'
            f'<td>{_e(r["attempt"])}</td><td class="nw">{_e(r.get("replica_id") or "-")}</td>'
            f'<td>{exit_cell}</td><td class="nw">{_duration(r["duration_s"])}</td>'
            f'<td class="nw" title="{_e(split)}">{tokens}</td><td>{cost}</td>'
            f'<td><code class="nw">{_e(r["run_id"])}</code></td></tr>'
        )
    return f"<table><thead>{head}</thead><tbody>{''.join(lines)}</tbody></table>"


def _effects(effects: list[dict[str, Any]], prefix: str) -> str:
    if not effects:
        return '<p class="muted">none</p>'
    head = (
        "<tr><th>when</th><th>kind</th><th>status</th><th>mode</th><th>attempts</th>"
        "<th>result</th><th>key</th></tr>"
    )
    lines = []
    times = _Times()
    for effect in fold_side_effects(effects):
        when = times(effect["first_at"])
        kind = _e(effect["kind"])
        if effect["count"] > 1:
            when += " &ndash; " + _when(effect["last_at"], time_only=True)
            count = effect["count"]
            kind += f' <span class="count" title="{count} in a row">&times; {count}</span>'
        status = effect["status"]
        css = "pass" if status == "done" else ("pending" if status == "intended" else "fail")
        key = str(effect["key"])
        # The key without what the row already says (the issue, the kind).
        short = key.removeprefix(prefix).removeprefix(f"{effect['kind']}:")
        lines.append(
            f'<tr class="effect"><td>{when}</td><td>{kind}</td>'
            f'<td class="{css}">{_e(status)}</td><td>{_e(effect["rollout_mode"])}</td>'
            f"<td>{_e(effect['attempts'])}</td><td>{_result(effect['result'])}</td>"
            f'<td class="key"><code class="wrap" title="{_e(key)}">{_e(short)}</code></td></tr>'
        )
    return f"<table><thead>{head}</thead><tbody>{''.join(lines)}</tbody></table>"


def _result(result: object) -> str:
    """A side effect's result as "key: value" pairs; a long one cut, its JSON under details."""
    if not result:
        return ""
    if not isinstance(result, dict):
        return _long(json.dumps(result, sort_keys=True))
    flat = ", ".join(f"{k}: {' '.join(str(v).split())}" for k, v in result.items())
    if len(flat) <= 160:
        return f'<span class="wrap">{_e(flat)}</span>'
    return (
        f'<details class="wrap"><summary>{_e(flat[:160])}&hellip;</summary>'
        f"<pre>{_e(json.dumps(result, indent=2, sort_keys=True))}</pre></details>"
    )


def issue_page(data: dict[str, Any], html_base: str = "https://github.com") -> str:
    issue = data["issue"]
    title = f"{issue['repo']}#{issue['number']}"
    observation = data["observation"] or {}
    shown: dict[str, Callable[[str], str]] = {"gates": _gate_text, "last observed": _when}
    observed = _facts(
        [(label, shown.get(label, _e)(value)) for label, value in observation_lines(observation)]
    )
    comment = data.get("workpad_comment")
    workpad = (
        f'<div class="workpad">{_markdown(comment)}</div>'
        if comment
        else '<p class="muted">no readable workpad record</p>'
    )
    prompt = data["last_prompt"]
    body = (
        f'<p><a href="/">&larr; dashboard</a></p><h1>{_e(title)}: {_e(issue["title"])}</h1>'
        + _summary(data, html_base)
        + "<h2>Phase events</h2>"
        + _events(data["phase_events"])
        + "<h2>Side effects</h2>"
        + _effects(data["side_effects"], f"{title}:")
        + "<h2>Agent runs</h2>"
        + _runs(data["agent_runs"])
        + "<h2>Observation</h2>"
        + observed
        + _raw("raw observation (JSON)", observation)
        + "<h2>Workpad</h2>"
        + workpad
        + _raw("raw workpad record (JSON)", data["workpad"])
        + "<h2>Last prompt</h2>"
        + (
            f'<details class="raw"><summary>{len(prompt.splitlines())} lines</summary>'
            f"<pre>{_e(prompt)}</pre></details>"
            if prompt
            else '<p class="muted">none yet</p>'
        )
    )
    return _page(title, body)


def _gate_text(text: str) -> str:
    """ "checks pass, human_approval required" with each value coloured as on the dashboard."""
    if text == "none":
        return '<span class="muted">none</span>'
    parts = []
    for pair in text.split(", "):
        name, _, value = pair.rpartition(" ")
        parts.append(f"{_e(name)} {_gate(value)}")
    return ", ".join(parts)
