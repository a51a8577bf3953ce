"""The ``command`` preset: any program that follows the contract in docs/agent.md.

Its JSON lines (``session``, ``message``, ``tool``, ``usage``,
``turn_completed``, ``error``) are read by :class:`EventMapper`, the base every
other preset's mapper extends. The previous session id is given to the
program as ``ORCHESTRATOR_SESSION_ID``; its command runs as written.
"""

from __future__ import annotations

from typing import Any

from orchestrator.agent.events import AgentEvent, EventKind, TokenUsage
from orchestrator.agent.presets.values import clip_text, token_count, valid_session_id


class EventMapper:
    """Turns one agent's JSON objects into :class:`AgentEvent` values, keeping session and usage.

    One mapper serves one turn. The base class reads the contract of the
    ``command`` preset.

    A ``conversational`` mapper (the ``codex-app-server`` preset) also talks
    back: the runner gives the agent a pipe instead of the prompt on standard
    input, writes what :meth:`outgoing` returns, and ends the process once
    ``turn_over`` is set.
    """

    conversational = False

    def __init__(self, baseline: TokenUsage | None = None) -> None:
        self.session_id: str | None = None
        # The protocol said the turn ended (conversational mappers): the runner stops the agent.
        self.turn_over = False
        self._usage = TokenUsage()
        # What earlier turns of a resumed session already counted (agents that report
        # a session's running total).
        self.baseline = baseline or TokenUsage()
        # Why the turn failed although the agent may exit 0 (its final error), if it did.
        self.failure: str | None = None
        # Tools the agent's own permission rules refused it during the turn.
        self.denied_tools: tuple[str, ...] = ()
        # What the turn cost, in US dollars, when the agent says.
        self.cost_usd: float | None = None

    @property
    def usage(self) -> TokenUsage:
        """All tokens reported so far in this turn."""
        return self._usage

    def outgoing(self) -> list[bytes]:
        """Lines to write to the agent's standard input now (conversational mappers only)."""
        return []

    def map(self, obj: dict[str, Any]) -> AgentEvent:
        raw_type = str(obj.get("type") or "")
        if raw_type == "session":
            session = valid_session_id(obj.get("session_id")) or valid_session_id(obj.get("id"))
            self.session_id = session or self.session_id
            return AgentEvent(EventKind.SESSION, raw_type, session_id=session)
        if raw_type == "message":
            return AgentEvent(EventKind.MESSAGE, raw_type, text=clip_text(obj.get("text")))
        if raw_type == "tool":
            return AgentEvent(EventKind.TOOL, raw_type, text=clip_text(obj.get("name")))
        if raw_type == "usage":
            usage = TokenUsage(
                input_tokens=token_count(obj.get("input_tokens")),
                cached_input_tokens=token_count(obj.get("cached_input_tokens")),
                output_tokens=token_count(obj.get("output_tokens")),
            )
            self._usage = self._usage + usage
            return AgentEvent(EventKind.USAGE, raw_type, usage=usage)
        if raw_type in ("turn_completed", "done"):
            return AgentEvent(
                EventKind.TURN_COMPLETED, raw_type, text=clip_text(obj.get("summary"))
            )
        if raw_type == "error":
            return AgentEvent(EventKind.ERROR, raw_type, text=clip_text(obj.get("message")))
        return AgentEvent(EventKind.OTHER, raw_type)
