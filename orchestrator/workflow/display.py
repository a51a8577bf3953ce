"""Show an effective policy: every key, its value (secrets masked) and where it came from."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from orchestrator.logs import redact_text
from orchestrator.workflow.catalog import SettingSpec, settings
from orchestrator.workflow.loader import Workflow
from orchestrator.workflow.provenance import Origin


@dataclass(frozen=True)
class EffectiveSetting:
    """One line of the effective policy: key, value as shown, and origin."""

    path: str
    shown: str
    origin: Origin


def _text(value: str) -> str:
    if "\n" in value.strip():
        lines = value.strip().split("\n")
        return f"{json.dumps(lines[0])} ... ({len(lines)} lines)"
    if not value or value != value.strip() or value in ("null", "true", "false"):
        return json.dumps(value)
    return value


def format_value(value: object) -> str:
    """A compact, YAML-like rendering of a setting's value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, StrEnum):
        return value.value
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, Mapping):
        inner = ", ".join(f"{format_value(k)}: {format_value(v)}" for k, v in value.items())
        return "{" + inner + "}"
    if isinstance(value, tuple | list):
        items = [format_value(v) for v in value]
        return "[" + ", ".join(json.dumps(i) if "," in i else i for i in items) + "]"
    return str(value)


def _by_reference(variables: tuple[str, ...]) -> str:
    return ", ".join(f"${name}" for name in variables) + " (set)"


def _masked(spec: SettingSpec, value: object, origin: Origin, workflow: Workflow) -> str:
    if value is None:
        return "null"
    if spec.secret:
        if origin.variables:
            return _by_reference(origin.variables)
        return "(set, hidden)"
    if spec.sensitive and isinstance(value, Mapping):
        shown = []
        for key, item in value.items():
            variables = workflow.references.get(f"{spec.path}.{key}")
            text = _by_reference(variables) if variables else format_value(item)
            shown.append(f"{key}: {text}")
        return "{" + ", ".join(shown) + "}"
    if spec.sensitive:
        if origin.variables:
            return _by_reference(origin.variables)
        return redact_text(format_value(value))
    return format_value(value)


def effective_settings(workflow: Workflow) -> list[EffectiveSetting]:
    """Every setting of ``workflow`` in schema order, masked for display."""
    rows = []
    for path, spec in settings().items():
        value: object = workflow.policy
        for part in path.split("."):
            value = getattr(value, part)
        origin = workflow.origins[path]
        rows.append(EffectiveSetting(path, _masked(spec, value, origin, workflow), origin))
    return rows


def effective_policy_lines(workflow: Workflow) -> list[str]:
    """Aligned ``key  value  origin`` lines for a terminal."""
    rows = effective_settings(workflow)
    key_width = max(len(r.path) for r in rows)
    value_width = min(48, max(len(r.shown) for r in rows))
    lines = []
    for row in rows:
        lines.append(f"{row.path:<{key_width}}  {row.shown:<{value_width}}  [{row.origin}]")
    return lines
