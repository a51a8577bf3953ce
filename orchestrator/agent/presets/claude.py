"""The ``claude`` preset: Claude Code in ``stream-json`` mode, its command line and its events.

The command is ``claude -p --output-format stream-json --verbose --allowedTools
Bash,Edit,Write,Read,Glob,Grep`` (its default permissions deny Bash, so no
commit); ``agent.permissions: full`` gives ``--permission-mode
bypassPermissions`` (refused as root unless the agent's environment says
``IS_SANDBOX=1``). A continuation resumes with ``--resume SESSION_ID``.
"""

from __future__ import annotations

import shlex
from typing import Any

from orchestrator.agent.events import AgentEvent, EventKind, TokenUsage
from orchestrator.agent.presets.command import EventMapper
from orchestrator.agent.presets.values import clip_text, dollars, token_count, valid_session_id

# Claude Code's tools a workspace agent needs: read, search, edit files and run commands.
CLAUDE_WORKSPACE_TOOLS = "Bash,Edit,Write,Read,Glob,Grep"


def claude_flags(*, full: bool) -> list[str]:
    """The flags that let Claude Code edit, run commands and commit (``full``: no checks)."""
    if full:
        return ["--permission-mode", "bypassPermissions"]
    return ["--allowedTools", CLAUDE_WORKSPACE_TOOLS]


def claude_command(program: str, flags: list[str], resume: str | None) -> str:
    """``program -p --output-format stream-json --verbose FLAGS [--resume ID]`` (quoted flags)."""
    parts = [program, "-p", "--output-format", "stream-json", "--verbose", *flags]
    if resume:
        parts += ["--resume", shlex.quote(resume)]
    return " ".join(parts)


def _claude_usage(raw: object) -> TokenUsage | None:
    if not isinstance(raw, dict):
        return None
    cache_read = token_count(raw.get("cache_read_input_tokens"))
    cache_write = token_count(raw.get("cache_creation_input_tokens"))
    return TokenUsage(
        input_tokens=token_count(raw.get("input_tokens")) + cache_read + cache_write,
        cached_input_tokens=cache_read,
        output_tokens=token_count(raw.get("output_tokens")),
    )


class ClaudeMapper(EventMapper):
    """``claude -p --output-format stream-json --verbose``: system, assistant, user, result.

    An assistant message may arrive as several lines (one per content block)
    carrying the same usage, so usage is kept per message id; the final
    ``result`` line carries the turn's total and replaces the running sum.
    """

    def __init__(self, baseline: TokenUsage | None = None) -> None:
        super().__init__(baseline)
        self._per_message: dict[str, TokenUsage] = {}
        self._total: TokenUsage | None = None

    @property
    def usage(self) -> TokenUsage:
        if self._total is not None:
            return self._total
        total = TokenUsage()
        for usage in self._per_message.values():
            total = total + usage
        return total

    def map(self, obj: dict[str, Any]) -> AgentEvent:
        raw_type = str(obj.get("type") or "")
        session = valid_session_id(obj.get("session_id"))
        self.session_id = session or self.session_id
        if raw_type == "system" and obj.get("subtype") == "init":
            return AgentEvent(EventKind.SESSION, raw_type, session_id=session)
        if raw_type == "assistant":
            message = obj.get("message")
            message = message if isinstance(message, dict) else {}
            usage = _claude_usage(message.get("usage"))
            if usage is not None:
                key = str(message.get("id") or len(self._per_message))
                self._per_message[key] = usage
            blocks = message.get("content")
            blocks = blocks if isinstance(blocks, list) else []
            texts = [
                b.get("text") for b in blocks if isinstance(b, dict) and b.get("type") == "text"
            ]
            tools = [
                b.get("name") for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use"
            ]
            if any(isinstance(t, str) and t for t in texts):
                joined = "\n".join(t for t in texts if isinstance(t, str))
                return AgentEvent(EventKind.MESSAGE, raw_type, text=clip_text(joined), usage=usage)
            if tools:
                return AgentEvent(EventKind.TOOL, raw_type, text=clip_text(tools[0]), usage=usage)
            return AgentEvent(EventKind.OTHER, raw_type, usage=usage)
        if raw_type == "user":
            return AgentEvent(EventKind.TOOL, raw_type, text="tool_result")
        if raw_type == "system" and obj.get("subtype") == "api_retry":
            # Claude Code retrying its model API: alive, but no progress.
            status = obj.get("error_status")
            retry = f"retrying the model API (status {status})" if status else "retrying"
            return AgentEvent(EventKind.ERROR, raw_type, text=clip_text(retry), no_progress=True)
        if raw_type == "result":
            total = _claude_usage(obj.get("usage"))
            if total is not None:
                self._total = total
            self.cost_usd = dollars(obj.get("total_cost_usd"))
            self.denied_tools = _denied_tools(obj.get("permission_denials"))
            failed = bool(obj.get("is_error")) or obj.get("subtype") not in (None, "success")
            kind = EventKind.ERROR if failed else EventKind.TURN_COMPLETED
            text = clip_text(obj.get("result")) or clip_text(obj.get("subtype"))
            if failed:
                self.failure = text or "the turn ended in an error"
            return AgentEvent(kind, raw_type, text=text, session_id=session, usage=total)
        return AgentEvent(EventKind.OTHER, raw_type)


def _denied_tools(raw: object) -> tuple[str, ...]:
    """The distinct tool names of Claude Code's ``permission_denials``, in order."""
    if not isinstance(raw, list):
        return ()
    names: list[str] = []
    for item in raw[:100]:
        name = item.get("tool_name") if isinstance(item, dict) else None
        clipped = clip_text(name)
        if clipped and clipped not in names:
            names.append(clipped[:100])
    return tuple(names)
