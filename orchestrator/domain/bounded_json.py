"""JSON from an agent, parsed with bounds: nesting depth, integer digits, no NaN or Infinity.

Python's own parser raises ``RecursionError`` on deep nesting and a plain
``ValueError`` on an integer of more than 4300 digits; neither is a located
problem, and either escaping a parser would crash whoever called it. Here:

- nesting is measured before parsing, and more than ``max_depth`` levels of
  arrays and objects is refused with the line where the limit was crossed;
- an integer of more than ``max_digits`` digits is never converted: it is
  reported with its path in the document (``entries[0].thread``) and line;
- a float must be finite and written in at most ``MAX_FLOAT_CHARS``
  characters; ``NaN`` and ``Infinity`` are refused.

Every problem is a :class:`JsonLimitError` (or :class:`JsonSyntaxError`) with
a line and, when known, the path.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

DEFAULT_MAX_DEPTH = 32
DEFAULT_MAX_DIGITS = 18
MAX_FLOAT_CHARS = 40
_KEY_SHOWN = 60

# A JSON string (escapes included), or one bracket outside strings.
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)


class BoundedJsonError(ValueError):
    """A JSON document that cannot be used; ``line`` and ``path`` say where."""

    def __init__(self, message: str, *, line: int | None = None, path: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.path = path


class JsonSyntaxError(BoundedJsonError):
    """The text is not JSON."""


class JsonLimitError(BoundedJsonError):
    """The text is JSON beyond a bound: too deep, an integer too long, a number not finite."""


@dataclass(frozen=True)
class _Refused:
    """A number left unconverted by the parser, found and reported by the walk after it."""

    text: str
    problem: str


def _line_at(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def check_depth(text: str, max_depth: int) -> None:
    """Raise :class:`JsonLimitError` if arrays and objects nest deeper than ``max_depth``."""
    depth = 0
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > max_depth:
                raise JsonLimitError(
                    f"nested deeper than {max_depth} levels of arrays and objects",
                    line=_line_at(text, match.start()),
                )
        elif token in "]}":
            depth = max(0, depth - 1)


def load_bounded(
    text: str, *, max_depth: int = DEFAULT_MAX_DEPTH, max_digits: int = DEFAULT_MAX_DIGITS
) -> Any:
    """The parsed document; :class:`BoundedJsonError` for bad syntax or any bound crossed."""
    check_depth(text, max_depth)

    def parse_int(digits: str) -> int | _Refused:
        count = len(digits.lstrip("-"))
        if count > max_digits:
            return _Refused(digits, f"integer has {count} digits, more than {max_digits}")
        return int(digits)

    def parse_float(literal: str) -> float | _Refused:
        if len(literal) > MAX_FLOAT_CHARS:
            return _Refused(literal, f"number is {len(literal)} characters long")
        value = float(literal)
        if not math.isfinite(value):
            return _Refused(literal, "number is too large to be finite")
        return value

    def parse_constant(name: str) -> _Refused:
        return _Refused(name, f"{name} is not a JSON number")

    try:
        document = json.loads(
            text, parse_int=parse_int, parse_float=parse_float, parse_constant=parse_constant
        )
    except json.JSONDecodeError as error:
        raise JsonSyntaxError(f"invalid JSON: {error.msg}", line=error.lineno) from None
    except RecursionError:
        # check_depth keeps this from happening; never let it escape all the same.
        raise JsonLimitError("nested too deeply") from None
    except ValueError as error:
        raise JsonSyntaxError(f"invalid JSON: {error}") from None
    refused = _first_refused(document, "")
    if refused is not None:
        path, value = refused
        where = text.find(value.text)
        raise JsonLimitError(
            value.problem, line=_line_at(text, where) if where >= 0 else None, path=path or None
        )
    return document


def _first_refused(value: Any, path: str) -> tuple[str, _Refused] | None:
    """The path and value of the first refused number (depth is already bounded)."""
    if isinstance(value, _Refused):
        return path, value
    if isinstance(value, dict):
        for key, item in value.items():
            name = str(key) if len(str(key)) <= _KEY_SHOWN else f"{str(key)[:_KEY_SHOWN]}..."
            found = _first_refused(item, f"{path}.{name}" if path else name)
            if found is not None:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = _first_refused(item, f"{path}[{index}]")
            if found is not None:
                return found
    return None
