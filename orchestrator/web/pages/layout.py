"""The page shell and the pieces both pages show: escaping, gate values, times, links.

Every value is escaped: titles, reasons and prompts come from GitHub users and
agents.
"""

from __future__ import annotations

from datetime import UTC, datetime
from html import escape
from typing import Any

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


def esc(value: object) -> str:
    """``value`` as HTML text (None as nothing)."""
    return "" if value is None else escape(str(value))


def gate(value: str | None) -> str:
    """A gate's value coloured by what it means (pass, fail, pending)."""
    if not value:
        return '<span class="muted">-</span>'
    css = {"pass": "pass", "fail": "fail", "pending": "pending", "required": "pending"}.get(
        value, "muted"
    )
    return f'<span class="{css}">{esc(value)}</span>'


def page(title: str, body: str, refresh_s: int | None = None) -> str:
    """A whole HTML document around ``body``; it reloads itself every ``refresh_s``."""
    refresh = f'<meta http-equiv="refresh" content="{refresh_s}">' if refresh_s else ""
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8">{refresh}'
        f"<title>{esc(title)}</title><style>{STYLE}</style></head><body>{body}</body></html>"
    )


def time_tag(iso: str | None, *, time_only: bool = False) -> str:
    """A stored time as an operator reads it (UTC, to the second); the exact value in a title."""
    if not iso:
        return ""
    try:
        moment = datetime.fromisoformat(iso).astimezone(UTC)
    except ValueError:
        return esc(iso)
    shown = moment.strftime("%H:%M:%S" if time_only else "%Y-%m-%d %H:%M:%S")
    return f'<time datetime="{esc(iso)}" title="{esc(iso)}">{shown}</time>'


def sha_link(value: str | None, html_base: str, repo: str, length: int = 8) -> str:
    """A commit, shortened, linked to its page on GitHub."""
    if not value:
        return ""
    return (
        f'<a href="{esc(html_base)}/{esc(repo)}/commit/{esc(value)}" title="{esc(value)}">'
        f"<code>{esc(value[:length])}</code></a>"
    )


def pr_link(number: int | None, html_base: str, repo: str) -> str:
    """A pull request's number, linked to its page on GitHub."""
    if not number:
        return ""
    return f'<a href="{esc(html_base)}/{esc(repo)}/pull/{number}">#{number}</a>'


def merge_cell(merge: dict[str, Any] | None, html_base: str, repo: str) -> str:
    """A finished issue's merge: 'merged', its pull request and merge commit."""
    if not merge:
        return ""
    parts = [f'<span class="pass">{esc(merge.get("state"))}</span>']
    if merge.get("pr_number"):
        parts.append(pr_link(merge["pr_number"], html_base, repo))
    if merge.get("commit_sha"):
        parts.append(sha_link(merge["commit_sha"], html_base, repo))
    return " ".join(parts)
