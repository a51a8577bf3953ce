"""``$VAR`` references: settings read values from the environment.

A value that is exactly ``$NAME`` or ``${NAME}`` is replaced by the variable;
``${NAME}`` may also stand inside a longer value
(``${ORCHESTRATOR_DEMO_DIR}/workspaces``). A bare ``$`` elsewhere is plain text
(``$5`` stays ``$5``) and ``$$`` is a literal ``$``. A reference to a variable
that is unset or empty is an error naming the variable, never an empty string.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_WHOLE = re.compile(rf"^\$(?:({_NAME})|\{{({_NAME})\}})$")
_INSIDE = re.compile(rf"\$\$|\$\{{({_NAME})\}}")


@dataclass(frozen=True)
class Resolved:
    """A string after reference resolution, with the variables it read (in order)."""

    value: str
    variables: tuple[str, ...] = ()


class UnsetReference(Exception):
    """A referenced environment variable is unset or empty."""

    def __init__(self, variable: str, *, empty: bool) -> None:
        state = "set but empty" if empty else "not set"
        super().__init__(f"environment variable {variable} is {state}")
        self.variable = variable


def _lookup(name: str, env: Mapping[str, str]) -> str:
    value = env.get(name)
    if value is None or value == "":
        raise UnsetReference(name, empty=value == "")
    return value


def resolve(text: str, env: Mapping[str, str]) -> Resolved:
    """Resolve the references in ``text`` against ``env``; raises :class:`UnsetReference`."""
    whole = _WHOLE.match(text.strip())
    if whole is not None:
        name = whole.group(1) or whole.group(2)
        return Resolved(_lookup(name, env), (name,))
    if "$" not in text:
        return Resolved(text)
    names: list[str] = []

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name is None:
            return "$"
        names.append(name)
        return _lookup(name, env)

    value = _INSIDE.sub(replace, text)
    return Resolved(value, tuple(dict.fromkeys(names)))
