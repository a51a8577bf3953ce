"""The workpad record of one issue, and its comment form.

The record (schema_version 1) is what the daemon knows about an issue's flow:
phase, branch, pull request, review and merge state, why it waits, and what it
last observed (:mod:`.record`). It is rendered to one issue comment (a marker
heading, a fenced yaml block, a short summary for humans: :mod:`.render`) and
parsed back from it (:mod:`.parse`); a comment that cannot be trusted yields a
recovery result instead of a guess.
"""

from orchestrator.domain.workpad.parse import (
    MAX_BLOCK_CHARS,
    WorkpadParse,
    WorkpadStatus,
    parse_workpad,
)
from orchestrator.domain.workpad.record import (
    ROOT_KEY,
    SCHEMA_VERSION,
    MergeState,
    Observation,
    PRRef,
    ReviewState,
    Validation,
    WaitingState,
    WorkpadRecord,
    fresh_record,
    recovery_record,
)
from orchestrator.domain.workpad.render import (
    WORKPAD_COMMENT_MARKER,
    is_workpad_comment,
    mirror_is_current,
    render_workpad,
    workpad_digest,
)

__all__ = [
    "MAX_BLOCK_CHARS",
    "ROOT_KEY",
    "SCHEMA_VERSION",
    "WORKPAD_COMMENT_MARKER",
    "MergeState",
    "Observation",
    "PRRef",
    "ReviewState",
    "Validation",
    "WaitingState",
    "WorkpadParse",
    "WorkpadRecord",
    "WorkpadStatus",
    "fresh_record",
    "is_workpad_comment",
    "mirror_is_current",
    "parse_workpad",
    "recovery_record",
    "render_workpad",
    "workpad_digest",
]
