"""Bounded readers of the values agents put in their events: ids, text, token counts, costs.

Everything in an agent's JSON lines is the agent's to choose, so each value is
checked for its type and cut to a bound before the runner keeps it.
"""

from __future__ import annotations

import math
import re

from orchestrator.agent.events import MAX_TOKEN_COUNT, TokenUsage

TEXT_LIMIT = 2_000

# Session ids end up on a command line: accept only plain tokens, never an option.
_SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$")


def valid_session_id(value: object) -> str | None:
    """``value`` if it is a plausible session id, else None."""
    return value if isinstance(value, str) and _SESSION_ID.match(value) else None


def clip_text(value: object) -> str | None:
    """A non-empty string cut to :data:`TEXT_LIMIT` characters; None for anything else."""
    if not isinstance(value, str) or not value:
        return None
    return value if len(value) <= TEXT_LIMIT else value[:TEXT_LIMIT] + "..."


def token_count(value: object) -> int:
    """A token count from the agent: a finite number >= 0, at most ``MAX_TOKEN_COUNT``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    if isinstance(value, float) and not math.isfinite(value):
        return 0
    return int(min(max(value, 0), MAX_TOKEN_COUNT))


def usage_less(total: TokenUsage, earlier: TokenUsage) -> TokenUsage:
    """``total`` minus ``earlier``, never below zero."""
    return TokenUsage(
        input_tokens=max(total.input_tokens - earlier.input_tokens, 0),
        cached_input_tokens=max(total.cached_input_tokens - earlier.cached_input_tokens, 0),
        output_tokens=max(total.output_tokens - earlier.output_tokens, 0),
    )


def dollars(value: object) -> float | None:
    """A cost the agent reports: a finite number of dollars >= 0, at most a million."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not math.isfinite(value) or value < 0:
        return None
    return min(float(value), 1_000_000.0)
