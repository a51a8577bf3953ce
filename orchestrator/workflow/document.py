"""Split WORKFLOW.md into YAML front matter and a prompt body, and parse the YAML.

The YAML is read with ruamel.yaml's composer, so every key keeps its line and
column; the result is plain Python data plus a table of positions by key path.
Line endings are normalised first; duplicate keys, tabs where YAML wants
indentation, custom tags, merge keys and alias bombs are located errors.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from orchestrator.workflow.problems import Location, Problem

DELIMITER = "---"
# Beyond this many nodes (aliases count each time they are used) the document is refused.
MAX_NODES = 20_000
MAX_DEPTH = 32

_STANDARD_SCALAR_TAGS = {
    "tag:yaml.org,2002:str",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
}
_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"
_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_MERGE_TAG = "tag:yaml.org,2002:merge"


@dataclass(frozen=True)
class Position:
    """A 1-based line and column in the policy file."""

    line: int
    column: int


@dataclass(frozen=True)
class Document:
    """A parsed WORKFLOW.md: the front matter as plain data, key positions and the prompt body."""

    config: Mapping[str, object] | None
    positions: Mapping[str, Position]
    front_matter_line: int
    prompt: str
    prompt_line: int


def normalise_text(text: str) -> str:
    """Drop a byte-order mark and turn CRLF and lone CR into LF."""
    if text.startswith("\ufeff"):
        text = text[1:]
    return text.replace("\r\n", "\n").replace("\r", "\n")


def split_front_matter(text: str) -> tuple[str | None, int, str, int] | str:
    """``(yaml, yaml_first_line, body, body_first_line)``, or an error message.

    Front matter opens with a ``---`` line (blank lines before it are allowed)
    and closes with the next ``---`` line. Without it, the whole text is the body.
    """
    lines = text.split("\n")
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None or lines[first].rstrip() != DELIMITER:
        return None, 1, text, 1
    for end in range(first + 1, len(lines)):
        if lines[end].rstrip() == DELIMITER:
            yaml_text = "\n".join(lines[first + 1 : end])
            body = "\n".join(lines[end + 1 :])
            return yaml_text, first + 2, body, end + 2
    return f"the front matter opened with '---' on line {first + 1} is never closed by a '---' line"


class _Reader:
    """Walks composed YAML nodes into plain data, recording positions and problems."""

    def __init__(self, source: str, line_offset: int) -> None:
        self.source = source
        self.line_offset = line_offset
        self.positions: dict[str, Position] = {}
        self.problems: list[Problem] = []
        self.nodes = 0
        # The top-level key being read: where an oversized document is reported.
        self.section: tuple[str, Position] | None = None
        self._yaml = YAML(typ="safe", pure=True)

    def position(self, node: Node) -> Position:
        mark = node.start_mark
        return Position(mark.line + self.line_offset, mark.column + 1)

    def error(self, node: Node, key: str | None, message: str) -> None:
        pos = self.position(node)
        self.problems.append(Problem(Location(self.source, pos.line, pos.column), key, message))

    def read(self, node: Node, path: str, depth: int = 0) -> object:
        self.nodes += 1
        if self.nodes > MAX_NODES or depth > MAX_DEPTH:
            raise _TooLarge
        if isinstance(node, MappingNode):
            return self._mapping(node, path, depth)
        if isinstance(node, SequenceNode):
            if node.tag != _SEQ_TAG:
                self.error(node, path or None, f"unsupported YAML tag {node.tag}")
                return None
            items = []
            for index, item in enumerate(node.value):
                item_path = f"{path}[{index}]"
                self.positions[item_path] = self.position(item)
                items.append(self.read(item, item_path, depth + 1))
            return items
        if isinstance(node, ScalarNode):
            return self._scalar(node, path)
        self.error(node, path or None, "unsupported YAML node")
        return None

    def _mapping(self, node: MappingNode, path: str, depth: int) -> dict[str, object]:
        if node.tag != _MAP_TAG:
            self.error(node, path or None, f"unsupported YAML tag {node.tag}")
        result: dict[str, object] = {}
        seen: dict[str, Position] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                self.error(key_node, path or None, "merge keys (<<) are not supported")
                continue
            if not isinstance(key_node, ScalarNode) or key_node.tag != "tag:yaml.org,2002:str":
                shown = key_node.value if isinstance(key_node, ScalarNode) else "a collection"
                self.error(key_node, path or None, f"keys must be strings, got {shown}")
                continue
            key = str(key_node.value)
            key_path = f"{path}.{key}" if path else key
            pos = self.position(key_node)
            if key in seen:
                first = seen[key]
                self.error(
                    key_node,
                    key_path,
                    f"duplicate key (first defined at line {first.line}, column {first.column})",
                )
                continue
            seen[key] = pos
            self.positions[key_path] = pos
            if depth == 0:
                self.section = (key, pos)
            result[key] = self.read(value_node, key_path, depth + 1)
        return result

    def _scalar(self, node: ScalarNode, path: str) -> object:
        if node.tag == _TIMESTAMP_TAG:
            # No setting is a date: a value like 2026-01-01 is taken as the text it is.
            return str(node.value)
        if node.tag not in _STANDARD_SCALAR_TAGS:
            self.error(node, path or None, f"unsupported YAML tag {node.tag}")
            return None
        try:
            return self._yaml.constructor.construct_object(node, deep=True)
        except (YAMLError, ValueError, OverflowError):
            # The resolver matched a pattern its constructor cannot read (such as `-_`):
            # the value is the text that was written.
            return str(node.value)


class _TooLarge(Exception):
    """The document expands beyond the node or depth limit."""


def _yaml_problem(exc: MarkedYAMLError, source: str, line_offset: int) -> Problem:
    mark = exc.problem_mark or exc.context_mark
    problem = str(exc.problem or exc.context or "invalid YAML")
    if "'\\t'" in problem:
        message = "tab character where YAML expects indentation or a value; indent with spaces"
    else:
        message = f"invalid YAML: {problem}"
        if exc.context and exc.problem:
            message += f" ({exc.context})"
    if mark is None:
        return Problem(Location(source, line_offset), None, message)
    return Problem(Location(source, mark.line + line_offset, mark.column + 1), None, message)


def parse_front_matter(
    yaml_text: str, source: str, first_line: int
) -> tuple[Any, dict[str, Position], list[Problem]]:
    """Parse the YAML text whose first line is line ``first_line`` of the file."""
    yaml = YAML(typ="safe", pure=True)
    try:
        node = yaml.compose(io.StringIO(yaml_text))
    except MarkedYAMLError as exc:
        return None, {}, [_yaml_problem(exc, source, first_line)]
    except YAMLError as exc:
        return None, {}, [Problem(Location(source, first_line), None, f"invalid YAML: {exc}")]
    if node is None:
        return None, {}, []
    reader = _Reader(source, first_line)
    try:
        data = reader.read(node, "")
    except _TooLarge:
        message = (
            f"front matter too large or too deeply nested (more than {MAX_NODES} values "
            f"or {MAX_DEPTH} levels, aliases included)"
        )
        if reader.section is None:
            return None, {}, [Problem(Location(source, first_line), None, message)]
        key, pos = reader.section
        return None, {}, [Problem(Location(source, pos.line, pos.column), key, message)]
    return data, reader.positions, reader.problems


def parse_document(text: str, source: str) -> tuple[Document | None, list[Problem]]:
    """Parse a whole WORKFLOW.md text; ``source`` is the name used in messages."""
    text = normalise_text(text)
    if not text.strip():
        return None, [
            Problem(
                Location(source, 1, 1),
                None,
                "the file is empty; a policy needs at least a tracker section",
            )
        ]
    split = split_front_matter(text)
    if isinstance(split, str):
        return None, [Problem(Location(source, 1, 1), None, split)]
    yaml_text, yaml_line, body, body_line = split
    if yaml_text is None:
        return Document(None, {}, 1, body, body_line), []
    data, positions, problems = parse_front_matter(yaml_text, source, yaml_line)
    if problems:
        return None, problems
    if data is not None and not isinstance(data, dict):
        shown = "a list" if isinstance(data, list) else f"the value {data!r}"
        return None, [
            Problem(
                Location(source, yaml_line, 1),
                None,
                f"the front matter must be a mapping of sections (tracker:, agent:, ...), "
                f"got {shown}",
            )
        ]
    return Document(data, positions, yaml_line, body, body_line), []
