"""The little markdown the workpad comment uses, as HTML: what GitHub shows of it."""

from __future__ import annotations

import re
from html import escape

_INLINE = (
    (re.compile(r"\*\*(.+?)\*\*"), r"<b>\1</b>"),
    (re.compile(r"`([^`]+)`"), r"<code>\1</code>"),
)
_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
_FENCE = re.compile(r"^(`{3,}|~{3,})")


def markdown_html(text: str) -> str:
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
            out.append(f"<pre>{escape(chr(10).join(block))}</pre>")
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
    html = escape(text)
    for pattern, replacement in _INLINE:
        html = pattern.sub(replacement, html)
    return html
