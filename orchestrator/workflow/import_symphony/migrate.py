"""``orchestrator migrate-workflow``: a Symphony or pi-symphony WORKFLOW.md in our own keys.

The front matter is read exactly as the loader reads it (Symphony's keys become
ours, see :mod:`orchestrator.workflow.import_symphony.keys`), then written back in schema
order with a YAML comment wherever behaviour differs: keys read from
Symphony's, keys dropped and why, a ``git clone`` in ``after_create`` (the
runtime has checked the repository out already), and prompt lines that ask the
agent to do what the runtime does here (run ``gh``, push, move tracker states).
The prompt's ``{% if attempt %}`` becomes ``{% if attempt > 1 %}``: in a native
file ``attempt`` is 1 on the first run.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterable
from dataclasses import dataclass

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.scalarstring import LiteralScalarString

from orchestrator.workflow.catalog import groups, settings
from orchestrator.workflow.document import parse_document
from orchestrator.workflow.import_symphony.reading import Reading
from orchestrator.workflow.layers import read_document
from orchestrator.workflow.problems import Location, Problem, Severity

_LINES = "\x00LINES\x00"
_ATTEMPT_IF = re.compile(r"\{%(-?)\s*if\s+attempt\s*(-?)%\}")
_CLONE_LINE = re.compile(r"^(\s*)(git\s+clone\b.*)$")
_CLONE_URL = re.compile(
    r"github\.com[:/]([A-Za-z0-9][A-Za-z0-9-]*)/([A-Za-z0-9._-]+?)(?:\.git)?/?(?:\s|$)"
)

# Prompt lines that ask the agent for what the runtime does here.
PROMPT_CHECKS: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"`gh\b|\bgh\s+(?:pr|issue|api|run|repo|label|release|auth|workflow)\b"),
        "asks the agent to run `gh`: here the runtime opens and updates the pull request and "
        "reads its reviews and checks, and the agent holds no GitHub credentials",
    ),
    (
        re.compile(r"\bgit\s+push\b"),
        "asks the agent to push: here the runtime pushes the workspace's branch after each turn",
    ),
    (
        re.compile(
            r"linear_graphql|Linear MCP|\bLinear (?:comment|issue)\b"
            r"|\bmov(?:e|es|ing)\b[^.]*?\b(?:to|into)\s+`[^`]+`"
            r"|\bmove (?:the |it |issue|ticket)"
        ),
        "asks the agent to write to the tracker or change the issue's state: here the runtime "
        "moves tracker states and keeps the workpad comment from the agent's result files",
    ),
)


@dataclass(frozen=True)
class Migration:
    """The native file's text, the source's errors (nothing is written then), and the notes."""

    text: str | None
    errors: tuple[Problem, ...]
    # What differs, located in the output file (prompt lines) or the source (keys).
    notes: tuple[Problem, ...]


def _nest(flat: Iterable[tuple[str, object]]) -> CommentedMap:
    root = CommentedMap()
    for path, value in flat:
        node = root
        parts = path.split(".")
        for part in parts[:-1]:
            child = node.get(part)
            if not isinstance(child, CommentedMap):
                child = CommentedMap()
                node[part] = child
            node = child
        node[parts[-1]] = _yaml_value(value)
    return root


def _yaml_value(value: object) -> object:
    if isinstance(value, str) and "\n" in value:
        return LiteralScalarString(value)
    if isinstance(value, list | tuple):
        seq = CommentedSeq(_yaml_value(v) for v in value)
        if all(not isinstance(v, dict | list) for v in value) and len(value) <= 8:
            seq.fa.set_flow_style()
        return seq
    if isinstance(value, dict):
        mapping = CommentedMap()
        for key, item in value.items():
            mapping[key] = _yaml_value(item)
        return mapping
    return value


def _comment_on(root: CommentedMap, path: str, text: str) -> None:
    parts = path.split(".")
    node = root
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, CommentedMap):
            return
        node = child
    if parts[-1] not in node:
        return
    indent = 2 * (len(parts) - 1)
    node.yaml_set_comment_before_after_key(parts[-1], before=text, indent=indent)


def _section_order(path: str) -> tuple[int, ...]:
    """A key's position in the schema, so the output reads in the reference's order."""
    order: list[int] = []
    prefix = ""
    for part in path.split("."):
        names = groups().get(prefix, ())
        order.append(names.index(part) if part in names else len(names))
        prefix = f"{prefix}.{part}" if prefix else part
        if prefix in settings():
            break
    return tuple(order)


def _cloned_repo(script: str) -> str | None:
    """The ``owner/name`` a ``git clone`` line of ``script`` clones, if any."""
    for line in script.split("\n"):
        match = _CLONE_LINE.match(line)
        found = _CLONE_URL.search(match.group(2) + " ") if match is not None else None
        if found is not None:
            return f"{found.group(1)}/{found.group(2)}"
    return None


def _prompt(body: str) -> tuple[str, list[tuple[int, str]]]:
    """The prompt with Symphony's first-attempt test rewritten, and its lines to review."""
    text = _ATTEMPT_IF.sub(
        lambda m: "{%" + m.group(1) + " if attempt > 1 " + m.group(2) + "%}", body
    )
    found: list[tuple[int, str]] = []
    for offset, line in enumerate(text.split("\n")):
        for pattern, why in PROMPT_CHECKS:
            if pattern.search(line):
                found.append((offset, why))
                break
    return text, found


def _header(source: str, reading: Reading, changes: list[str]) -> str:
    lines = [
        f"Native policy written by `orchestrator migrate-workflow` from {source}.",
        "Here the runtime, not the agent, opens the pull request, pushes, writes to",
        "GitHub and moves tracker states; the agent edits, tests and commits in its",
        "workspace. `orchestrator validate` shows the effective policy.",
    ]
    lines += changes
    if reading.ignored:
        lines.append("Not carried over (no equivalent here):")
        lines += [f"  {path}: {why}" for path, why in reading.ignored]
    return "\n".join(lines)


def migrate_text(text: str, *, source: str, output: str) -> Migration:
    """The native equivalent of the policy ``text`` read from ``source``, for ``output``."""
    document, problems = parse_document(text, source)
    if document is None:
        return Migration(None, tuple(problems), ())
    layer, layer_problems, reading = read_document(document, source)
    errors = tuple(p for p in [*problems, *layer_problems] if p.is_error)
    if errors:
        return Migration(None, errors, ())
    notes = [p for p in layer_problems if not p.is_error]
    values = {path: raw.value for path, raw in layer.items()}
    changes: list[str] = []
    key_comments: dict[str, str] = {}
    script = values.get("hooks.after_create")
    if isinstance(script, str):
        repo = _cloned_repo(script)
        if repo is not None and "tracker.repo" not in values:
            values["tracker.repo"] = repo
            key_comments["tracker.repo"] = "From the `git clone` of hooks.after_create."
    if values.get("hooks.after_create_in_empty_dir") is True:
        key_comments["hooks.after_create_in_empty_dir"] = (
            "Symphony's order: after_create runs first, in the empty folder (its `git clone`\n"
            "works as written); the runtime then checks the issue's branch out around it."
        )
    for mapped in reading.mapped:
        if mapped.target in values and mapped.sources:
            named = [f"the {p}: section" if p in ("codex", "pi") else p for p in mapped.sources]
            key_comments.setdefault(mapped.target, "From " + ", ".join(named) + ".")
    ordered = sorted(values.items(), key=lambda item: _section_order(item[0]))
    root = _nest(ordered)
    for path, comment in key_comments.items():
        _comment_on(root, path, comment)
    yaml = YAML(typ="rt")
    yaml.width = 4096
    yaml.indent(mapping=2, sequence=4, offset=2)
    front = io.StringIO()
    if root:
        yaml.dump(root, front)
    body, prompt_notes = _prompt(document.prompt)
    if body != document.prompt:
        changes.append(
            "The prompt's `{% if attempt %}` is `{% if attempt > 1 %}`: attempt is 1 on the "
            "first run here."
        )
    if prompt_notes:
        changes.append(f"Prompt lines to rewrite (the runtime does what they ask): {_LINES}.")
    header = _header(source, reading, changes)
    comment = "".join(f"# {line}".rstrip() + "\n" for line in header.split("\n"))
    head = "---\n" + comment + front.getvalue() + "---\n"
    first = head.count("\n") + 1
    located = [
        Problem(Location(output, first + offset), "prompt", why, Severity.WARNING)
        for offset, why in prompt_notes
    ]
    numbers = ", ".join(str(p.location.line) for p in located)
    text_out = head.replace(_LINES, numbers, 1) + body
    return Migration(text_out, (), tuple([*notes, *located]))
