"""The ``pi`` preset: ``pi --mode json``, its command line and its events.

A continuation resumes with ``--session SESSION_ID``; the prompt comes on stdin.
"""

from __future__ import annotations

import shlex
from typing import Any

from orchestrator.agent.events import AgentEvent, EventKind, TokenUsage
from orchestrator.agent.presets.command import EventMapper
from orchestrator.agent.presets.values import clip_text, dollars, token_count, valid_session_id


def pi_command(program: str, flags: list[str], resume: str | None) -> str:
    """``program --mode json FLAGS [--session ID]`` (``flags`` come shell-quoted)."""
    parts = [program, "--mode", "json", *flags]
    if resume:
        parts += ["--session", shlex.quote(resume)]
    return " ".join(parts)


class PiMapper(EventMapper):
    """``pi --mode json``: the session header, then agent, turn, message and tool events."""

    def map(self, obj: dict[str, Any]) -> AgentEvent:
        raw_type = str(obj.get("type") or "")
        if raw_type == "session":
            session = valid_session_id(obj.get("id"))
            self.session_id = session or self.session_id
            return AgentEvent(EventKind.SESSION, raw_type, session_id=session)
        if raw_type == "message_end":
            message = obj.get("message")
            message = message if isinstance(message, dict) else {}
            if message.get("role") != "assistant":
                return AgentEvent(EventKind.OTHER, raw_type)
            raw = message.get("usage")
            usage = None
            if isinstance(raw, dict):
                cache_read = token_count(raw.get("cacheRead"))
                usage = TokenUsage(
                    input_tokens=token_count(raw.get("input"))
                    + cache_read
                    + token_count(raw.get("cacheWrite")),
                    cached_input_tokens=cache_read,
                    output_tokens=token_count(raw.get("output")),
                )
                self._usage = self._usage + usage
            if message.get("stopReason") in ("error", "aborted"):
                text = clip_text(message.get("errorMessage")) or clip_text(
                    message.get("stopReason")
                )
                # Pi exits 0 after an error: the turn failed unless a later reply succeeds.
                self.failure = text
                return AgentEvent(EventKind.ERROR, raw_type, text=text, usage=usage)
            self.failure = None
            cost = raw.get("cost") if isinstance(raw, dict) else None
            spent = dollars(cost.get("total") if isinstance(cost, dict) else None)
            if spent is not None:
                self.cost_usd = (self.cost_usd or 0.0) + spent
            blocks = message.get("content")
            blocks = blocks if isinstance(blocks, list) else []
            texts = [
                b.get("text") for b in blocks if isinstance(b, dict) and b.get("type") == "text"
            ]
            joined = "\n".join(t for t in texts if isinstance(t, str) and t)
            return AgentEvent(EventKind.MESSAGE, raw_type, text=clip_text(joined), usage=usage)
        if raw_type in ("tool_execution_start", "tool_execution_end"):
            return AgentEvent(EventKind.TOOL, raw_type, text=clip_text(obj.get("toolName")))
        if raw_type == "auto_retry_start":
            # Pi retrying its model API: alive, but no progress.
            text = clip_text(obj.get("errorMessage")) or "retrying the model API"
            return AgentEvent(EventKind.ERROR, raw_type, text=text, no_progress=True)
        if raw_type == "agent_end":
            return AgentEvent(EventKind.TURN_COMPLETED, raw_type)
        return AgentEvent(EventKind.OTHER, raw_type)
