"""What a replica needs to run a turn another replica planned, as JSON and back.

The polling leader plans a turn from its snapshot; the replica that claims it
gets the dispatch, the issue and its pull request as they were planned, without
reading GitHub again. The values are the domain's frozen dataclasses, written
field by field and read back by their type hints.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Any

from orchestrator.domain.actions import Dispatch
from orchestrator.domain.snapshot import PullRequest, TrackedIssue


class HandoffError(ValueError):
    """A queued turn's document does not have the expected shape (names the field)."""


@dataclass(frozen=True)
class TurnInputs:
    """The planned turn: what to run, for which issue, with which pull request."""

    dispatch: Dispatch
    issue: TrackedIssue
    pr: PullRequest | None


def encode_inputs(inputs: TurnInputs) -> dict[str, Any]:
    """The JSON document of a planned turn."""
    document = _plain(inputs)
    assert isinstance(document, dict)
    return document


def decode_inputs(document: dict[str, Any]) -> TurnInputs:
    """The planned turn written as ``document``; raises :class:`HandoffError`."""
    value = _typed(document, TurnInputs, "turn")
    assert isinstance(value, TurnInputs)
    return value


def _plain(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, datetime):
        return value.isoformat()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {item.name: _plain(getattr(value, item.name)) for item in dataclasses.fields(value)}
    if isinstance(value, frozenset | set):
        return sorted(_plain(item) for item in value)
    if isinstance(value, tuple | list):
        return [_plain(item) for item in value]
    raise HandoffError(f"cannot hand over a value of type {type(value).__name__}")


def _typed(value: Any, hint: Any, where: str) -> Any:
    origin = typing.get_origin(hint)
    if origin is typing.Union or origin is types.UnionType:
        options = [option for option in typing.get_args(hint) if option is not type(None)]
        if value is None:
            return None
        if len(options) != 1:
            raise HandoffError(f"{where}: ambiguous type {hint!r}")
        return _typed(value, options[0], where)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        if not isinstance(value, dict):
            raise HandoffError(f"{where}: expected an object, got {value!r}")
        hints = typing.get_type_hints(hint)
        arguments = {
            item.name: _typed(value[item.name], hints[item.name], f"{where}.{item.name}")
            for item in dataclasses.fields(hint)
            if item.name in value
        }
        try:
            return hint(**arguments)
        except (TypeError, ValueError) as error:
            raise HandoffError(f"{where}: {error}") from None
    if isinstance(hint, type) and issubclass(hint, Enum):
        try:
            return hint(value)
        except ValueError:
            raise HandoffError(f"{where}: {value!r} is not a {hint.__name__}") from None
    if hint is datetime:
        if not isinstance(value, str):
            raise HandoffError(f"{where}: expected a timestamp, got {value!r}")
        return datetime.fromisoformat(value)
    if hint in (str, int, bool, float):
        if not isinstance(value, hint) or (hint is int and isinstance(value, bool)):
            raise HandoffError(f"{where}: expected {hint.__name__}, got {value!r}")
        return value
    if origin in (tuple, frozenset):
        if not isinstance(value, list):
            raise HandoffError(f"{where}: expected a list, got {value!r}")
        item_hint = typing.get_args(hint)[0]
        items = [_typed(item, item_hint, f"{where}[{i}]") for i, item in enumerate(value)]
        return tuple(items) if origin is tuple else frozenset(items)
    raise HandoffError(f"{where}: no reader for {hint!r}")
