"""A small, bounded YAML reader for machine blocks that people can also edit.

It accepts only plain data (mappings, sequences, scalars) and refuses tags,
anchors and aliases, several documents, deep nesting and large inputs before
building anything, so a hostile document (for example "billion laughs") fails
fast instead of expanding. Plain scalars resolve to None, bool, int or str only.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError
from ruamel.yaml.events import (
    AliasEvent,
    DocumentStartEvent,
    Event,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
)

_INT = re.compile(r"^[-+]?(0|[1-9][0-9]*)$")
_NULLS = frozenset({"", "~", "null", "Null", "NULL"})
_TRUE = frozenset({"true", "True", "TRUE"})
_FALSE = frozenset({"false", "False", "FALSE"})

YamlValue = None | bool | int | str | list["YamlValue"] | dict[str, "YamlValue"]


@dataclass(frozen=True)
class YamlProblem:
    """Why a document was refused, with its 1-based line when known."""

    line: int | None
    message: str


class _Refused(Exception):
    def __init__(self, line: int | None, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


def load_plain_yaml(
    text: str, *, max_chars: int = 32_768, max_depth: int = 8, max_nodes: int = 2_000
) -> YamlValue | YamlProblem:
    """The single document in ``text`` as plain Python data, or why it was refused."""
    if len(text) > max_chars:
        return YamlProblem(None, f"block is {len(text)} characters, more than {max_chars}")
    reader = YAML(typ="safe", pure=True)
    try:
        events = _checked_events(reader.parse(text), max_depth=max_depth, max_nodes=max_nodes)
        value = _build(events)
    except _Refused as refused:
        return YamlProblem(refused.line, refused.message)
    except YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        return YamlProblem(line, f"invalid YAML: {problem}")
    return value


def _line(event: Event) -> int | None:
    mark = event.start_mark
    return mark.line + 1 if mark is not None else None


def _checked_events(source: Iterator[Event], *, max_depth: int, max_nodes: int) -> Iterator[Event]:
    depth = 0
    nodes = 0
    documents = 0
    for event in source:
        if isinstance(event, AliasEvent):
            raise _Refused(_line(event), "aliases are not allowed")
        if isinstance(event, DocumentStartEvent):
            documents += 1
            if documents > 1:
                raise _Refused(_line(event), "only one YAML document is allowed")
        if isinstance(event, ScalarEvent | MappingStartEvent | SequenceStartEvent):
            if getattr(event, "anchor", None) is not None:
                raise _Refused(_line(event), "anchors are not allowed")
            if getattr(event, "tag", None) is not None:
                raise _Refused(_line(event), "tags are not allowed")
            nodes += 1
            if nodes > max_nodes:
                raise _Refused(_line(event), f"more than {max_nodes} values")
        if isinstance(event, MappingStartEvent | SequenceStartEvent):
            depth += 1
            if depth > max_depth:
                raise _Refused(_line(event), f"nested deeper than {max_depth} levels")
        elif isinstance(event, MappingEndEvent | SequenceEndEvent):
            depth -= 1
        yield event


def _scalar(event: ScalarEvent) -> YamlValue:
    value: str = event.value
    if event.style is not None:
        return value
    if value in _NULLS:
        return None
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    if _INT.match(value):
        return int(value)
    return value


def _build(events: Iterator[Event]) -> YamlValue:
    # The outermost value; an empty stream is an empty document (None).
    result: YamlValue = None
    for event in events:
        if isinstance(event, ScalarEvent | MappingStartEvent | SequenceStartEvent):
            result = _node(event, events)
    return result


def _node(start: Event, events: Iterator[Event]) -> YamlValue:
    if isinstance(start, ScalarEvent):
        return _scalar(start)
    if isinstance(start, SequenceStartEvent):
        items: list[YamlValue] = []
        for event in events:
            if isinstance(event, SequenceEndEvent):
                return items
            items.append(_node(event, events))
        raise _Refused(None, "unterminated sequence")
    mapping: dict[str, YamlValue] = {}
    for event in events:
        if isinstance(event, MappingEndEvent):
            return mapping
        if not isinstance(event, ScalarEvent):
            raise _Refused(_line(event), "mapping keys must be plain strings")
        key = _scalar(event)
        if not isinstance(key, str):
            raise _Refused(_line(event), f"mapping key {event.value!r} must be a string")
        if key in mapping:
            raise _Refused(_line(event), f"duplicate key {key!r}")
        value_event = next(events, None)
        if value_event is None:
            raise _Refused(None, "unterminated mapping")
        mapping[key] = _node(value_event, events)
    raise _Refused(None, "unterminated mapping")
