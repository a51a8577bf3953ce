"""The small, normalized event type every agent's JSON lines are mapped onto.

Each preset reads its agent's own event shapes (see :mod:`orchestrator.agent.presets`);
the runner only sees :class:`AgentEvent` values, a running session id and the
token usage so far.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

# The most tokens one count may hold (a hostile agent may report any number).
MAX_TOKEN_COUNT = 10**15


class EventKind(StrEnum):
    """What an event says, whatever agent sent it."""

    SESSION = "session"
    MESSAGE = "message"
    TOOL = "tool"
    USAGE = "usage"
    TURN_COMPLETED = "turn_completed"
    ERROR = "error"
    OTHER = "other"


@dataclass(frozen=True)
class TokenUsage:
    """Tokens an agent reported: all input (cached included), the cached part, and output."""

    input_tokens: int = 0
    cached_input_tokens: int = 0
    output_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def is_empty(self) -> bool:
        return not (self.input_tokens or self.cached_input_tokens or self.output_tokens)

    def __add__(self, other: TokenUsage) -> TokenUsage:
        # The agent reports these: the sums stay within what the store's columns hold.
        return TokenUsage(
            input_tokens=min(self.input_tokens + other.input_tokens, MAX_TOKEN_COUNT),
            cached_input_tokens=min(
                self.cached_input_tokens + other.cached_input_tokens, MAX_TOKEN_COUNT
            ),
            output_tokens=min(self.output_tokens + other.output_tokens, MAX_TOKEN_COUNT),
        )


@dataclass(frozen=True)
class AgentEvent:
    """One JSON line from the agent, normalized.

    ``raw_type`` keeps the agent's own type name (``item.completed``,
    ``assistant``, ``message_end`` ...) for logs; ``text`` is the message or
    tool name when there is one, truncated.
    """

    kind: EventKind
    raw_type: str
    text: str | None = None
    session_id: str | None = None
    usage: TokenUsage | None = None
    # The agent is alive but not getting anywhere (a CLI retrying its model API): the
    # event does not reset the stall watchdog.
    no_progress: bool = False
