"""One issue's page: its facts, phase events, side effects, agent runs, observation,
workpad and last prompt."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from orchestrator.web.markdown import markdown_html
from orchestrator.web.pages.layout import esc, gate, merge_cell, page, pr_link, sha_link, time_tag
from orchestrator.web.views.issue import fold_side_effects, observation_lines


class _Times:
    """Times down a table, as in a log: the date only on the first row and when it changes."""

    def __init__(self) -> None:
        self.day: str | None = None

    def __call__(self, iso: str | None) -> str:
        day = iso[:10] if iso else None
        same = day is not None and day == self.day
        self.day = day or self.day
        return time_tag(iso, time_only=same)


def _long(text: str, limit: int = 160) -> str:
    """Text that may be long (a payload, an error): cut to ``limit``, the whole under details."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return f'<span class="wrap">{esc(flat)}</span>'
    return (
        f'<details class="wrap"><summary>{esc(flat[:limit])}&hellip;</summary>'
        f"<pre>{esc(text)}</pre></details>"
    )


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


def _facts(items: list[tuple[str, str]]) -> str:
    shown = [(label, value) for label, value in items if value]
    if not shown:
        return '<p class="muted">none</p>'
    return (
        '<dl class="facts">'
        + "".join(f"<dt>{esc(label)}</dt><dd>{value}</dd>" for label, value in shown)
        + "</dl>"
    )


def _raw(title: str, value: object) -> str:
    return (
        f'<details class="raw"><summary>{esc(title)}</summary>'
        f"<pre>{esc(json.dumps(value, indent=2, sort_keys=True, default=str))}</pre></details>"
    )


def _summary(data: dict[str, Any], html_base: str) -> str:
    issue = data["issue"]
    repo = issue["repo"]
    workpad = data.get("workpad") or {}
    waiting = workpad.get("waiting") if isinstance(workpad, dict) else None
    detail = waiting.get("detail") if isinstance(waiting, dict) else None
    labels = issue.get("labels") or []
    tracker = esc(issue["tracker_state"])
    if labels:
        tracker += f' <span class="muted">(labels: {esc(", ".join(labels))})</span>'
    return _facts(
        [
            ("phase", f"<b>{esc(issue['phase'])}</b> since {time_tag(issue['phase_since'])}"),
            ("tracker state", tracker),
            ("merge", merge_cell(issue.get("merge"), html_base, repo)),
            ("pull request", pr_link(issue["pr_number"], html_base, repo)),
            ("head", sha_link(issue["pr_head_sha"], html_base, repo, 12)),
            ("branch", f"<code>{esc(issue['branch'])}</code>" if issue["branch"] else ""),
            ("waiting", esc(issue["waiting_reason"])),
            ("why", esc(detail)),
            ("last failure", _long(data["last_failure"]) if data.get("last_failure") else ""),
            ("retry due", time_tag(issue["retry_due_at"])),
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
        f"<tr><td>{when(e['at'])}</td><td>{esc(e['from'] or '-')}</td><td><b>{esc(e['to'])}</b>"
        f'</td><td class="wrap">{esc(e["reason"])}</td><td>{esc(e["actor"])}</td></tr>'
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
        exit_cell = f'<span class="{_OUTCOME_CSS.get(outcome, "muted")}">{esc(outcome)}</span>'
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
            f'<tr class="run"><td>{when(r["started_at"])}</td><td>{esc(r["phase"])}</td>'
            f'<td>{esc(r["attempt"])}</td><td class="nw">{esc(r.get("replica_id") or "-")}</td>'
            f'<td>{exit_cell}</td><td class="nw">{_duration(r["duration_s"])}</td>'
            f'<td class="nw" title="{esc(split)}">{tokens}</td><td>{cost}</td>'
            f'<td><code class="nw">{esc(r["run_id"])}</code></td></tr>'
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
        kind = esc(effect["kind"])
        if effect["count"] > 1:
            when += " &ndash; " + time_tag(effect["last_at"], time_only=True)
            count = effect["count"]
            kind += f' <span class="count" title="{count} in a row">&times; {count}</span>'
        status = effect["status"]
        css = "pass" if status == "done" else ("pending" if status == "intended" else "fail")
        key = str(effect["key"])
        # The key without what the row already says (the issue, the kind).
        short = key.removeprefix(prefix).removeprefix(f"{effect['kind']}:")
        lines.append(
            f'<tr class="effect"><td>{when}</td><td>{kind}</td>'
            f'<td class="{css}">{esc(status)}</td><td>{esc(effect["rollout_mode"])}</td>'
            f"<td>{esc(effect['attempts'])}</td><td>{_result(effect['result'])}</td>"
            f'<td class="key"><code class="wrap" title="{esc(key)}">{esc(short)}</code></td></tr>'
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
        return f'<span class="wrap">{esc(flat)}</span>'
    return (
        f'<details class="wrap"><summary>{esc(flat[:160])}&hellip;</summary>'
        f"<pre>{esc(json.dumps(result, indent=2, sort_keys=True))}</pre></details>"
    )


def issue_page(data: dict[str, Any], html_base: str = "https://github.com") -> str:
    issue = data["issue"]
    title = f"{issue['repo']}#{issue['number']}"
    observation = data["observation"] or {}
    shown: dict[str, Callable[[str], str]] = {"gates": _gate_text, "last observed": time_tag}
    observed = _facts(
        [(label, shown.get(label, esc)(value)) for label, value in observation_lines(observation)]
    )
    comment = data.get("workpad_comment")
    workpad = (
        f'<div class="workpad">{markdown_html(comment)}</div>'
        if comment
        else '<p class="muted">no readable workpad record</p>'
    )
    prompt = data["last_prompt"]
    body = (
        f'<p><a href="/">&larr; dashboard</a></p><h1>{esc(title)}: {esc(issue["title"])}</h1>'
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
            f"<pre>{esc(prompt)}</pre></details>"
            if prompt
            else '<p class="muted">none yet</p>'
        )
    )
    return page(title, body)


def _gate_text(text: str) -> str:
    """ "checks pass, human_approval required" with each value coloured as on the dashboard."""
    if text == "none":
        return '<span class="muted">none</span>'
    parts = []
    for pair in text.split(", "):
        name, _, value = pair.rpartition(" ")
        parts.append(f"{esc(name)} {gate(value)}")
    return ", ".join(parts)
