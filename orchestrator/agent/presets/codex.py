"""The ``codex`` preset: ``codex exec --json``, its command line and its events.

The command is ``codex exec --json --sandbox danger-full-access -`` (Codex's
own ``workspace-write`` sandbox keeps ``.git`` read-only, so no commit could be
made; isolation is the product's sandbox); ``agent.permissions: full`` gives
``--dangerously-bypass-approvals-and-sandbox``. A continuation resumes with
``... resume SESSION_ID -``. The prompt comes on stdin.
"""

from __future__ import annotations

import shlex
from typing import Any

from orchestrator.agent.events import AgentEvent, EventKind, TokenUsage
from orchestrator.agent.presets.command import EventMapper
from orchestrator.agent.presets.values import (
    clip_text,
    token_count,
    usage_less,
    valid_session_id,
)


def codex_flags(*, full: bool) -> list[str]:
    """The flags that let Codex edit, run commands and commit (``full``: no checks at all)."""
    if full:
        return ["--dangerously-bypass-approvals-and-sandbox"]
    return ["--sandbox", "danger-full-access"]


def codex_command(program: str, flags: list[str], resume: str | None) -> str:
    """``program exec --json FLAGS [resume ID] -`` (``flags`` come shell-quoted)."""
    parts = [program, "exec", "--json", *flags]
    if resume:
        parts += ["resume", shlex.quote(resume)]
    return " ".join([*parts, "-"])


def codex_error_class(message: str) -> str:
    """``network``, ``auth``, ``quota``, ``server`` or ``error``: what a Codex error says."""
    lowered = message.lower()
    if "waiting for network" in lowered or "connection failed" in lowered:
        return "network"
    if "401" in lowered or "403" in lowered or "unauthorized" in lowered or "api key" in lowered:
        return "auth"
    if "429" in lowered or "quota" in lowered or "rate limit" in lowered:
        return "quota"
    if "high demand" in lowered or "500" in lowered or "server error" in lowered:
        return "server"
    return "error"


class CodexMapper(EventMapper):
    """``codex exec --json``: thread.started, turn.*, item.* and error lines.

    ``turn.completed`` reports the thread's running total: a resumed turn's usage
    is that total less the ``baseline`` of the turns before it. ``error`` lines
    while Codex retries its model API ("Reconnecting...") are no progress: they
    do not keep the stall watchdog from firing, and the last one names the
    reason (``codex: network: ...``).
    """

    _TOOL_ITEMS = frozenset({"command_execution", "file_change", "mcp_tool_call", "web_search"})

    def map(self, obj: dict[str, Any]) -> AgentEvent:
        raw_type = str(obj.get("type") or "")
        if raw_type in ("thread.started", "thread.resumed"):
            session = valid_session_id(obj.get("thread_id"))
            self.session_id = session or self.session_id
            return AgentEvent(EventKind.SESSION, raw_type, session_id=session)
        if raw_type.startswith("item."):
            item = obj.get("item")
            item = item if isinstance(item, dict) else {}
            item_type = str(item.get("type") or item.get("item_type") or "")
            if item_type in ("agent_message", "assistant_message"):
                return AgentEvent(EventKind.MESSAGE, raw_type, text=clip_text(item.get("text")))
            if item_type in self._TOOL_ITEMS:
                name = item.get("command") or item.get("tool") or item_type
                return AgentEvent(EventKind.TOOL, raw_type, text=clip_text(name))
            if item_type == "error":
                return AgentEvent(EventKind.ERROR, raw_type, text=clip_text(item.get("message")))
            return AgentEvent(EventKind.OTHER, raw_type)
        if raw_type == "turn.completed":
            raw = obj.get("usage")
            raw = raw if isinstance(raw, dict) else {}
            # Codex counts cached tokens inside input_tokens already.
            usage = TokenUsage(
                input_tokens=token_count(raw.get("input_tokens")),
                cached_input_tokens=token_count(raw.get("cached_input_tokens")),
                output_tokens=token_count(raw.get("output_tokens")),
            )
            usage = usage_less(usage, self.baseline)
            self._usage = usage
            return AgentEvent(EventKind.TURN_COMPLETED, raw_type, usage=usage)
        if raw_type == "turn.failed":
            error = obj.get("error")
            message = clip_text(error.get("message") if isinstance(error, dict) else None)
            self.failure = f"{codex_error_class(message or '')}: {message or 'turn failed'}"
            return AgentEvent(EventKind.ERROR, raw_type, text=self.failure)
        if raw_type == "error":
            message = clip_text(obj.get("message")) or "error"
            retrying = message.startswith("Reconnecting")
            return AgentEvent(
                EventKind.ERROR,
                raw_type,
                text=f"{codex_error_class(message)}: {message}",
                no_progress=retrying,
            )
        return AgentEvent(EventKind.OTHER, raw_type)
