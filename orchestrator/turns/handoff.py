"""What a replica needs to run a turn another replica planned, as JSON and back.

The polling leader plans a turn from its snapshot; the replica that claims it
gets the dispatch, the issue and its pull request as they were planned, without
reading GitHub again. The values are the domain's frozen dataclasses, written
field by field and read back by their type hints, with the same codec as the
stored flow record.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from orchestrator.domain.actions import Dispatch
from orchestrator.domain.snapshot import PullRequest, TrackedIssue
from orchestrator.store.codec import CodecError, decode_value, encode_value


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
    document = encode_value(inputs)
    assert isinstance(document, dict)
    return document


def decode_inputs(document: dict[str, Any]) -> TurnInputs:
    """The planned turn written as ``document``; raises :class:`HandoffError`."""
    try:
        value = decode_value(document, TurnInputs, "turn")
    except CodecError as error:
        raise HandoffError(str(error)) from None
    assert isinstance(value, TurnInputs)
    return value
