"""Turn raw values (from YAML, environment variables or flags) into typed setting values.

Values from the YAML file must already have the right YAML type (``max_turns:
ten`` is an error, not a guess). Values that arrive as text (environment
overrides, ``$VAR`` references, ``--set`` flags) are parsed: ``true``/``false``,
integers, comma-separated or ``[a, b]`` lists, ``{k: v}`` mappings, ``null``.
"""

from __future__ import annotations

import difflib
import io
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from orchestrator.logs import register_secret
from orchestrator.state_home import expand_path
from orchestrator.workflow.catalog import Kind, SettingSpec, ValueType
from orchestrator.workflow.references import UnsetReference, resolve

_TRUE = frozenset({"true", "yes", "on", "1"})
_FALSE = frozenset({"false", "no", "off", "0"})


class ConversionError(Exception):
    """A value does not fit its setting; ``subpath`` locates it inside a list or mapping."""

    def __init__(self, message: str, subpath: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.subpath = subpath


@dataclass
class Conversion:
    """The inputs of one conversion and the ``$VAR`` references it resolved."""

    spec: SettingSpec
    env: Mapping[str, str]
    base_dir: Path
    textual: bool
    references: dict[str, tuple[str, ...]] = field(default_factory=dict)


def describe(value: object, *, secret: bool = False) -> str:
    """How a wrong value is shown in a message (secrets only by their type)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    if secret:
        return "a string" if isinstance(value, str) else "a number"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return repr(shown)
    return str(value)


def convert(conversion: Conversion, raw: object) -> object:
    """The typed value of ``raw`` for ``conversion.spec``; raises :class:`ConversionError`."""
    return _convert(conversion, conversion.spec.type, raw, "", conversion.textual)


def _convert(c: Conversion, vt: ValueType, raw: object, sub: str, textual: bool) -> object:
    if isinstance(raw, str) and not c.spec.shell:
        try:
            resolved = resolve(raw, c.env)
        except UnsetReference as exc:
            raise ConversionError(str(exc), sub) from None
        if resolved.variables:
            c.references[sub] = resolved.variables
            textual = True
            if c.spec.secret or c.spec.sensitive:
                register_secret(resolved.value)
        raw = resolved.value
    if isinstance(raw, str) and textual and raw.strip() == "null":
        raw = None
    if raw is None:
        if vt.optional:
            return None
        raise ConversionError(f"expected {_article(vt)}, got null", sub)
    if vt.kind is Kind.LIST:
        return _list(c, vt, raw, sub, textual)
    if vt.kind is Kind.MAP:
        return _map(c, vt, raw, sub, textual)
    if vt.kind is Kind.BOOL:
        return _bool(raw, sub, textual)
    if vt.kind is Kind.INT:
        return _int(c, raw, sub, textual)
    if not isinstance(raw, str):
        raise ConversionError(
            f"expected {_article(vt)}, got {describe(raw, secret=c.spec.secret)}", sub
        )
    if not raw.strip():
        raise ConversionError("must not be empty", sub)
    if vt.kind is Kind.ENUM:
        return _enum(vt, raw, sub)
    if vt.kind is Kind.PATH:
        path = Path(expand_path(raw.strip()))
        if not path.is_absolute():
            path = c.base_dir / path
        return Path(os.path.normpath(path))
    if c.spec.secret:
        register_secret(raw)
    return raw


def _article(vt: ValueType) -> str:
    text = {
        Kind.BOOL: "true or false",
        Kind.INT: "an integer",
        Kind.STR: "a string",
        Kind.PATH: "a path",
        Kind.LIST: "a list",
        Kind.MAP: "a mapping",
    }.get(vt.kind)
    if text is None and vt.enum is not None:
        text = "one of " + ", ".join(str(m.value) for m in vt.enum)
    return text or "a value"


def _parse_text(text: str, sub: str, what: str) -> object:
    yaml = YAML(typ="safe", pure=True)
    try:
        return yaml.load(io.StringIO(text))
    except (YAMLError, ValueError, OverflowError):
        raise ConversionError(f"expected {what} in YAML flow style, got {text!r}", sub) from None


def _list(c: Conversion, vt: ValueType, raw: object, sub: str, textual: bool) -> tuple[object, ...]:
    if isinstance(raw, str) and textual:
        text = raw.strip()
        if text.startswith("["):
            parsed = _parse_text(text, sub, "a list like [a, b]")
            if not isinstance(parsed, list):
                raise ConversionError(f"expected a list, got {describe(raw)}", sub)
            raw = ["" if item is None else str(item) for item in parsed]
        else:
            raw = [part.strip() for part in text.split(",") if part.strip()]
    if not isinstance(raw, list | tuple):
        raise ConversionError(f"expected a list, got {describe(raw)}", sub)
    assert vt.item is not None
    items = [
        _convert(c, vt.item, item, f"{sub}[{index}]", textual) for index, item in enumerate(raw)
    ]
    seen: set[object] = set()
    for index, item in enumerate(items):
        if item in seen and not vt.repeats:
            raise ConversionError(f"{item} is listed twice", f"{sub}[{index}]")
        seen.add(item)
    return tuple(items)


def _map(c: Conversion, vt: ValueType, raw: object, sub: str, textual: bool) -> object:
    if isinstance(raw, str) and textual:
        parsed = _parse_text(raw.strip(), sub, "a mapping like {key: value}")
        if parsed is None:
            parsed = {}
        if not isinstance(parsed, dict):
            raise ConversionError(f"expected a mapping, got {describe(raw)}", sub)
        raw = {
            str(k): v if isinstance(v, str) or v is None else _scalar_text(v)
            for k, v in parsed.items()
        }
    if not isinstance(raw, dict):
        raise ConversionError(f"expected a mapping, got {describe(raw)}", sub)
    assert vt.key is not None and vt.item is not None
    result: dict[object, object] = {}
    for key, item in raw.items():
        item_sub = f"{sub}.{key}"
        typed_key: object = str(key)
        if vt.key.kind is Kind.ENUM:
            typed_key = _enum(vt.key, str(key), item_sub)
        result[typed_key] = _convert(c, vt.item, item, item_sub, textual)
    return MappingProxyType(result)


def _scalar_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _bool(raw: object, sub: str, textual: bool) -> bool:
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, str) and textual:
        lowered = raw.strip().lower()
        if lowered in _TRUE:
            return True
        if lowered in _FALSE:
            return False
    raise ConversionError(f"expected true or false, got {describe(raw)}", sub)


def _int(c: Conversion, raw: object, sub: str, textual: bool) -> int:
    value: int | None = None
    if isinstance(raw, int) and not isinstance(raw, bool):
        value = raw
    elif isinstance(raw, str) and textual:
        try:
            value = int(raw.strip())
        except ValueError:
            value = None
    if value is None:
        raise ConversionError(f"expected an integer, got {describe(raw)}", sub)
    low, high = c.spec.minimum, c.spec.maximum
    if low is not None and high is not None and not low <= value <= high:
        raise ConversionError(f"must be between {low} and {high}, got {value}", sub)
    if low is not None and value < low:
        raise ConversionError(f"must be at least {low}, got {value}", sub)
    if high is not None and value > high:
        raise ConversionError(f"must be at most {high}, got {value}", sub)
    return value


def _enum(vt: ValueType, raw: str, sub: str) -> object:
    assert vt.enum is not None
    choices = [str(m.value) for m in vt.enum]
    text = raw.strip()
    if text in choices:
        return vt.enum(text)
    close = difflib.get_close_matches(text, choices, n=1, cutoff=0.6)
    hint = f"; did you mean '{close[0]}'?" if close else ""
    raise ConversionError(f"expected one of {', '.join(choices)}, got {raw!r}{hint}", sub)
