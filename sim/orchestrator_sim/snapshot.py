"""Conversion between the emulator's record dataclasses and JSON data.

Only the types records use are supported: str, int, bool, None unions, lists,
dicts with str or int keys, and nested record dataclasses. Loading checks every
value against the field's type and names the path of the first bad one.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from functools import cache
from typing import Any, TypeVar

T = TypeVar("T")


def to_json(value: Any) -> Any:
    """JSON-ready data for a record, list, dict or scalar (dict keys become strings)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, list):
        return [to_json(item) for item in value]
    if isinstance(value, dict):
        return {str(key): to_json(item) for key, item in value.items()}
    return value


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def from_json(cls: type[T], data: Any, where: str) -> T:
    """Build record ``cls`` from ``data``; ValueError names ``where`` the data is wrong."""
    return typing.cast(T, _convert(cls, data, where))


def _convert(hint: Any, data: Any, where: str) -> Any:
    origin = typing.get_origin(hint)
    if origin in (types.UnionType, typing.Union):
        options = typing.get_args(hint)
        if data is None and type(None) in options:
            return None
        errors = []
        for option in options:
            if option is type(None):
                continue
            try:
                return _convert(option, data, where)
            except ValueError as exc:
                errors.append(str(exc))
        raise ValueError(errors[0] if errors else f"{where}: unexpected null")
    if origin is list:
        if not isinstance(data, list):
            raise ValueError(f"{where}: expected a list")
        (item,) = typing.get_args(hint)
        return [_convert(item, value, f"{where}[{i}]") for i, value in enumerate(data)]
    if origin is dict:
        if not isinstance(data, dict):
            raise ValueError(f"{where}: expected an object")
        key_type, item = typing.get_args(hint)
        result: dict[Any, Any] = {}
        for key, value in data.items():
            try:
                converted_key = int(key) if key_type is int else str(key)
            except ValueError as exc:
                raise ValueError(f"{where}: key {key!r} is not an integer") from exc
            result[converted_key] = _convert(item, value, f"{where}.{key}")
        return result
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        if not isinstance(data, dict):
            raise ValueError(f"{where}: expected an object")
        hints = _hints(hint)
        values: dict[str, Any] = {}
        for spec in dataclasses.fields(hint):
            if spec.name in data:
                values[spec.name] = _convert(
                    hints[spec.name], data[spec.name], f"{where}.{spec.name}"
                )
            elif (
                spec.default is dataclasses.MISSING and spec.default_factory is dataclasses.MISSING
            ):
                raise ValueError(f"{where}.{spec.name}: missing")
        unknown = set(data) - {spec.name for spec in dataclasses.fields(hint)}
        if unknown:
            raise ValueError(f"{where}: unknown keys {sorted(unknown)}")
        return hint(**values)
    if hint is bool:
        if not isinstance(data, bool):
            raise ValueError(f"{where}: expected true or false")
        return data
    if hint is int:
        if isinstance(data, bool) or not isinstance(data, int):
            raise ValueError(f"{where}: expected an integer")
        return data
    if hint is str:
        if not isinstance(data, str):
            raise ValueError(f"{where}: expected a string")
        return data
    raise ValueError(f"{where}: unsupported type {hint!r}")
