"""The stored record of an issue as JSON, and back: every field of the domain's frozen values.

The domain's :class:`StoredRecord` (phase, workpad, last outcome with its parsed
result files, thread history, completed effects, mirrored workpad) is written to
the database as one JSON document, so a restart plans from exactly what was
known. The codec follows the dataclasses' type hints; values whose declared type
is a union of several dataclasses carry their class name under ``"__type__"``.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from datetime import datetime
from enum import Enum
from types import MappingProxyType
from typing import Any

from orchestrator.domain.agent_files.errors import HeadMismatch, ResultError
from orchestrator.domain.agent_files.fix_summary import FixEntry, FixSummary
from orchestrator.domain.agent_files.questions import BlockedQuestion, PRDescription
from orchestrator.domain.agent_files.review import Finding, Review
from orchestrator.domain.snapshot import (
    AgentOutcome,
    HeadSighting,
    OperatorRequest,
    StoredRecord,
    ThreadHistoryEntry,
    TurnCommit,
)
from orchestrator.domain.workpad import (
    MergeState,
    Observation,
    PRRef,
    ReviewState,
    Validation,
    WaitingState,
    WorkpadRecord,
)

TYPE_KEY = "__type__"

# Every dataclass a stored record can contain, by the name written under TYPE_KEY.
_CLASSES: Mapping[str, type[Any]] = MappingProxyType(
    {
        cls.__name__: cls
        for cls in (
            StoredRecord,
            HeadSighting,
            WorkpadRecord,
            PRRef,
            ReviewState,
            MergeState,
            WaitingState,
            Observation,
            Validation,
            AgentOutcome,
            TurnCommit,
            OperatorRequest,
            ThreadHistoryEntry,
            Review,
            Finding,
            FixSummary,
            FixEntry,
            BlockedQuestion,
            PRDescription,
            ResultError,
            HeadMismatch,
        )
    }
)


class CodecError(ValueError):
    """A stored document does not match the shape of the record (names the field)."""


def encode_record(record: StoredRecord) -> dict[str, Any]:
    """The JSON document of ``record``."""
    encoded = _encode(record)
    assert isinstance(encoded, dict)
    return encoded


def decode_record(document: Mapping[str, Any]) -> StoredRecord:
    """The record stored as ``document``; raises :class:`CodecError` naming the bad field."""
    value = _decode(document, StoredRecord, "record")
    assert isinstance(value, StoredRecord)
    return value


def encode_workpad(workpad: WorkpadRecord) -> dict[str, Any]:
    """The JSON document of a workpad record (the dashboard's copy in its own column)."""
    encoded = _encode(workpad)
    assert isinstance(encoded, dict)
    return encoded


def decode_workpad(document: Mapping[str, Any]) -> WorkpadRecord:
    """The workpad record stored as ``document``."""
    value = _decode(document, WorkpadRecord, "workpad")
    assert isinstance(value, WorkpadRecord)
    return value


def encode_value(value: Any) -> Any:
    """A value made of the domain's frozen dataclasses, enums, timestamps and
    collections, as JSON data (dataclasses carry their name under ``__type__``)."""
    return _encode(value)


def decode_value(document: Any, hint: Any, where: str) -> Any:
    """The value of type ``hint`` written as ``document``; CodecError names ``where``."""
    return _decode(document, hint, where)


def _encode(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, datetime):
        return value.isoformat()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out: dict[str, Any] = {TYPE_KEY: type(value).__name__}
        for item in dataclasses.fields(value):
            out[item.name] = _encode(getattr(value, item.name))
        return out
    if isinstance(value, Mapping):
        return {str(_encode(key)): _encode(item) for key, item in value.items()}
    if isinstance(value, frozenset | set):
        return sorted(_encode(item) for item in value)
    if isinstance(value, tuple | list):
        return [_encode(item) for item in value]
    raise CodecError(f"cannot store a value of type {type(value).__name__}")


_HINTS: dict[type[Any], dict[str, Any]] = {}


def _hints(cls: type[Any]) -> dict[str, Any]:
    found = _HINTS.get(cls)
    if found is None:
        found = _HINTS[cls] = typing.get_type_hints(cls)
    return found


def _decode(value: Any, hint: Any, where: str) -> Any:
    origin = typing.get_origin(hint)
    if origin is typing.Union or origin is types.UnionType:
        return _decode_union(value, typing.get_args(hint), where)
    if hint is Any:
        return value
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _decode_dataclass(value, hint, where)
    if isinstance(hint, type) and issubclass(hint, Enum):
        try:
            return hint(value)
        except ValueError:
            raise CodecError(f"{where}: {value!r} is not a {hint.__name__}") from None
    if hint is datetime:
        if not isinstance(value, str):
            raise CodecError(f"{where}: expected a timestamp, got {value!r}")
        return datetime.fromisoformat(value)
    if hint in (str, int, bool, float):
        if not isinstance(value, hint) or (hint is int and isinstance(value, bool)):
            raise CodecError(f"{where}: expected {hint.__name__}, got {value!r}")
        return value
    if origin in (tuple, frozenset):
        if not isinstance(value, list):
            raise CodecError(f"{where}: expected a list, got {value!r}")
        item_hint = typing.get_args(hint)[0]
        items = [_decode(item, item_hint, f"{where}[{i}]") for i, item in enumerate(value)]
        return tuple(items) if origin is tuple else frozenset(items)
    if origin is Mapping or origin is dict or hint is Mapping:
        if not isinstance(value, dict):
            raise CodecError(f"{where}: expected a mapping, got {value!r}")
        key_hint, item_hint = typing.get_args(hint) or (str, Any)
        return MappingProxyType(
            {
                _decode(key, key_hint, where): _decode(item, item_hint, f"{where}.{key}")
                for key, item in value.items()
            }
        )
    raise CodecError(f"{where}: no decoder for {hint!r}")


def _decode_union(value: Any, options: tuple[Any, ...], where: str) -> Any:
    if value is None:
        if type(None) in options:
            return None
        raise CodecError(f"{where}: missing value")
    candidates = [option for option in options if option is not type(None)]
    if len(candidates) == 1:
        return _decode(value, candidates[0], where)
    if isinstance(value, dict) and TYPE_KEY in value:
        cls = _CLASSES.get(str(value[TYPE_KEY]))
        if cls is None or not any(isinstance(o, type) and issubclass(cls, o) for o in candidates):
            raise CodecError(f"{where}: unexpected type {value[TYPE_KEY]!r}")
        return _decode_dataclass(value, cls, where)
    for option in candidates:
        try:
            return _decode(value, option, where)
        except CodecError:
            continue
    raise CodecError(f"{where}: {value!r} matches none of the expected types")


def _decode_dataclass(value: Any, cls: type[Any], where: str) -> Any:
    if not isinstance(value, dict):
        raise CodecError(f"{where}: expected an object, got {value!r}")
    named = value.get(TYPE_KEY)
    if named is not None and named != cls.__name__:
        sub = _CLASSES.get(str(named))
        if sub is None or not issubclass(sub, cls):
            raise CodecError(f"{where}: expected {cls.__name__}, got {named!r}")
        cls = sub
    hints = _hints(cls)
    arguments: dict[str, Any] = {}
    for item in dataclasses.fields(cls):
        if item.name in value:
            arguments[item.name] = _decode(
                value[item.name], hints[item.name], f"{where}.{item.name}"
            )
    try:
        return cls(**arguments)
    except (TypeError, ValueError) as error:
        raise CodecError(f"{where}: {error}") from None
