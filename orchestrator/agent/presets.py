"""Presets for real coding agents: the command each runs and how its JSON lines are read.

Verified with Codex 0.169.0, Claude Code 2.1.197 and Pi 0.73.1 (docs/agent.md,
"Presets"); the prompt always goes on stdin, once (``codex-app-server``: in a
JSON-RPC request on stdin).

- ``codex``: ``codex exec --json --sandbox danger-full-access -`` (Codex's own
  ``workspace-write`` sandbox keeps ``.git`` read-only, so no commit could be
  made; isolation is the product's sandbox); ``agent.permissions: full`` gives
  ``--dangerously-bypass-approvals-and-sandbox``. Resumed with
  ``... resume SESSION_ID -``.
- ``claude``: ``claude -p --output-format stream-json --verbose --allowedTools
  Bash,Edit,Write,Read,Glob,Grep`` (its default permissions deny Bash, so no
  commit); ``full`` gives ``--permission-mode bypassPermissions`` (refused as
  root unless the agent's environment says ``IS_SANDBOX=1``). Resumed with
  ``--resume SESSION_ID``.
- ``pi``: ``pi --mode json``; resumed with ``--session SESSION_ID``.
- ``codex-app-server``: ``agent.command`` as written (default ``codex app-server``,
  as Symphony's ``codex.command``), spoken to in JSON-RPC on stdin and stdout
  (:mod:`orchestrator.agent.app_server`); the prompt, the workspace, the
  sandbox and the approval policy go in its requests, a continuation resumes
  the recorded thread.
- ``command``: any program that follows the contract in docs/agent.md; the
  previous session id is given to it as ``ORCHESTRATOR_SESSION_ID``.

``agent.extra_args`` come after the preset's flags (before ``resume`` and the
prompt).

The event shapes are those the agents document for their JSON modes; fields a
mapper does not know are ignored, so a newer agent version degrades to
"an event happened" rather than failing.
"""

from __future__ import annotations

import math
import re
import shlex
from pathlib import Path
from typing import Any

from orchestrator.agent.events import MAX_TOKEN_COUNT, AgentEvent, EventKind, TokenUsage
from orchestrator.agent.settings import AgentPermissions, AgentPreset, AgentSettings

TEXT_LIMIT = 2_000
# Claude Code's tools a workspace agent needs: read, search, edit files and run commands.
CLAUDE_WORKSPACE_TOOLS = "Bash,Edit,Write,Read,Glob,Grep"

# What the ``codex-app-server`` preset runs unless ``agent.command`` says otherwise.
APP_SERVER_COMMAND = "codex app-server"

# Session ids end up on a command line: accept only plain tokens, never an option.
_SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$")


def valid_session_id(value: object) -> str | None:
    """``value`` if it is a plausible session id, else None."""
    return value if isinstance(value, str) and _SESSION_ID.match(value) else None


def _clip(value: object) -> str | None:
    if not isinstance(value, str) or not value:
        return None
    return value if len(value) <= TEXT_LIMIT else value[:TEXT_LIMIT] + "..."


def _count(value: object) -> int:
    """A token count from the agent: a finite number >= 0, at most ``MAX_TOKEN_COUNT``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    if isinstance(value, float) and not math.isfinite(value):
        return 0
    return int(min(max(value, 0), MAX_TOKEN_COUNT))


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
            return AgentEvent(EventKind.MESSAGE, raw_type, text=_clip(obj.get("text")))
        if raw_type == "tool":
            return AgentEvent(EventKind.TOOL, raw_type, text=_clip(obj.get("name")))
        if raw_type == "usage":
            usage = TokenUsage(
                input_tokens=_count(obj.get("input_tokens")),
                cached_input_tokens=_count(obj.get("cached_input_tokens")),
                output_tokens=_count(obj.get("output_tokens")),
            )
            self._usage = self._usage + usage
            return AgentEvent(EventKind.USAGE, raw_type, usage=usage)
        if raw_type in ("turn_completed", "done"):
            return AgentEvent(EventKind.TURN_COMPLETED, raw_type, text=_clip(obj.get("summary")))
        if raw_type == "error":
            return AgentEvent(EventKind.ERROR, raw_type, text=_clip(obj.get("message")))
        return AgentEvent(EventKind.OTHER, raw_type)


def _less(total: TokenUsage, earlier: TokenUsage) -> TokenUsage:
    """``total`` minus ``earlier``, never below zero."""
    return TokenUsage(
        input_tokens=max(total.input_tokens - earlier.input_tokens, 0),
        cached_input_tokens=max(total.cached_input_tokens - earlier.cached_input_tokens, 0),
        output_tokens=max(total.output_tokens - earlier.output_tokens, 0),
    )


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


# The helpers other mappers (orchestrator.agent.app_server) share.
clip_text = _clip
token_count = _count
usage_less = _less


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
                return AgentEvent(EventKind.MESSAGE, raw_type, text=_clip(item.get("text")))
            if item_type in self._TOOL_ITEMS:
                name = item.get("command") or item.get("tool") or item_type
                return AgentEvent(EventKind.TOOL, raw_type, text=_clip(name))
            if item_type == "error":
                return AgentEvent(EventKind.ERROR, raw_type, text=_clip(item.get("message")))
            return AgentEvent(EventKind.OTHER, raw_type)
        if raw_type == "turn.completed":
            raw = obj.get("usage")
            raw = raw if isinstance(raw, dict) else {}
            # Codex counts cached tokens inside input_tokens already.
            usage = TokenUsage(
                input_tokens=_count(raw.get("input_tokens")),
                cached_input_tokens=_count(raw.get("cached_input_tokens")),
                output_tokens=_count(raw.get("output_tokens")),
            )
            usage = _less(usage, self.baseline)
            self._usage = usage
            return AgentEvent(EventKind.TURN_COMPLETED, raw_type, usage=usage)
        if raw_type == "turn.failed":
            error = obj.get("error")
            message = _clip(error.get("message") if isinstance(error, dict) else None)
            self.failure = f"{codex_error_class(message or '')}: {message or 'turn failed'}"
            return AgentEvent(EventKind.ERROR, raw_type, text=self.failure)
        if raw_type == "error":
            message = _clip(obj.get("message")) or "error"
            retrying = message.startswith("Reconnecting")
            return AgentEvent(
                EventKind.ERROR,
                raw_type,
                text=f"{codex_error_class(message)}: {message}",
                no_progress=retrying,
            )
        return AgentEvent(EventKind.OTHER, raw_type)


def _claude_usage(raw: object) -> TokenUsage | None:
    if not isinstance(raw, dict):
        return None
    cache_read = _count(raw.get("cache_read_input_tokens"))
    cache_write = _count(raw.get("cache_creation_input_tokens"))
    return TokenUsage(
        input_tokens=_count(raw.get("input_tokens")) + cache_read + cache_write,
        cached_input_tokens=cache_read,
        output_tokens=_count(raw.get("output_tokens")),
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
                return AgentEvent(EventKind.MESSAGE, raw_type, text=_clip(joined), usage=usage)
            if tools:
                return AgentEvent(EventKind.TOOL, raw_type, text=_clip(tools[0]), usage=usage)
            return AgentEvent(EventKind.OTHER, raw_type, usage=usage)
        if raw_type == "user":
            return AgentEvent(EventKind.TOOL, raw_type, text="tool_result")
        if raw_type == "system" and obj.get("subtype") == "api_retry":
            # Claude Code retrying its model API: alive, but no progress.
            status = obj.get("error_status")
            retry = f"retrying the model API (status {status})" if status else "retrying"
            return AgentEvent(EventKind.ERROR, raw_type, text=_clip(retry), no_progress=True)
        if raw_type == "result":
            total = _claude_usage(obj.get("usage"))
            if total is not None:
                self._total = total
            self.cost_usd = _dollars(obj.get("total_cost_usd"))
            self.denied_tools = _denied_tools(obj.get("permission_denials"))
            failed = bool(obj.get("is_error")) or obj.get("subtype") not in (None, "success")
            kind = EventKind.ERROR if failed else EventKind.TURN_COMPLETED
            text = _clip(obj.get("result")) or _clip(obj.get("subtype"))
            if failed:
                self.failure = text or "the turn ended in an error"
            return AgentEvent(kind, raw_type, text=text, session_id=session, usage=total)
        return AgentEvent(EventKind.OTHER, raw_type)


def _dollars(value: object) -> float | None:
    """A cost the agent reports: a finite number of dollars >= 0, at most a million."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not math.isfinite(value) or value < 0:
        return None
    return min(float(value), 1_000_000.0)


def _denied_tools(raw: object) -> tuple[str, ...]:
    """The distinct tool names of Claude Code's ``permission_denials``, in order."""
    if not isinstance(raw, list):
        return ()
    names: list[str] = []
    for item in raw[:100]:
        name = item.get("tool_name") if isinstance(item, dict) else None
        clipped = _clip(name)
        if clipped and clipped not in names:
            names.append(clipped[:100])
    return tuple(names)


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
                cache_read = _count(raw.get("cacheRead"))
                usage = TokenUsage(
                    input_tokens=_count(raw.get("input"))
                    + cache_read
                    + _count(raw.get("cacheWrite")),
                    cached_input_tokens=cache_read,
                    output_tokens=_count(raw.get("output")),
                )
                self._usage = self._usage + usage
            if message.get("stopReason") in ("error", "aborted"):
                text = _clip(message.get("errorMessage")) or _clip(message.get("stopReason"))
                # Pi exits 0 after an error: the turn failed unless a later reply succeeds.
                self.failure = text
                return AgentEvent(EventKind.ERROR, raw_type, text=text, usage=usage)
            self.failure = None
            cost = raw.get("cost") if isinstance(raw, dict) else None
            spent = _dollars(cost.get("total") if isinstance(cost, dict) else None)
            if spent is not None:
                self.cost_usd = (self.cost_usd or 0.0) + spent
            blocks = message.get("content")
            blocks = blocks if isinstance(blocks, list) else []
            texts = [
                b.get("text") for b in blocks if isinstance(b, dict) and b.get("type") == "text"
            ]
            joined = "\n".join(t for t in texts if isinstance(t, str) and t)
            return AgentEvent(EventKind.MESSAGE, raw_type, text=_clip(joined), usage=usage)
        if raw_type in ("tool_execution_start", "tool_execution_end"):
            return AgentEvent(EventKind.TOOL, raw_type, text=_clip(obj.get("toolName")))
        if raw_type == "auto_retry_start":
            # Pi retrying its model API: alive, but no progress.
            text = _clip(obj.get("errorMessage")) or "retrying the model API"
            return AgentEvent(EventKind.ERROR, raw_type, text=text, no_progress=True)
        if raw_type == "agent_end":
            return AgentEvent(EventKind.TURN_COMPLETED, raw_type)
        return AgentEvent(EventKind.OTHER, raw_type)


_MAPPERS: dict[AgentPreset, type[EventMapper]] = {
    AgentPreset.CODEX: CodexMapper,
    AgentPreset.CLAUDE: ClaudeMapper,
    AgentPreset.PI: PiMapper,
    AgentPreset.COMMAND: EventMapper,
}


def new_mapper(preset: AgentPreset, baseline: TokenUsage | None = None) -> EventMapper:
    """A fresh mapper for one turn of ``preset`` (``baseline``: a resumed session's usage).

    Not for ``codex-app-server``: its client needs the turn's prompt and workspace
    (:class:`orchestrator.agent.app_server.AppServerClient`).
    """
    mapper = _MAPPERS.get(preset)
    if mapper is None:
        raise ValueError(f"preset {preset.value} has no stream mapper")
    return mapper(baseline)


def supports_resume(preset: AgentPreset) -> bool:
    """Whether a continuation turn of ``preset`` resumes the agent's own session."""
    return preset is not AgentPreset.COMMAND


def preset_flags(settings: AgentSettings) -> list[str]:
    """The flags that let the preset's CLI edit, run commands and commit (``agent.permissions``)."""
    full = settings.permissions is AgentPermissions.FULL
    if settings.preset is AgentPreset.CODEX:
        if full:
            return ["--dangerously-bypass-approvals-and-sandbox"]
        return ["--sandbox", "danger-full-access"]
    if settings.preset is AgentPreset.CLAUDE:
        if full:
            return ["--permission-mode", "bypassPermissions"]
        return ["--allowedTools", CLAUDE_WORKSPACE_TOOLS]
    return []


def permissions_summary(settings: AgentSettings, *, sandboxed: bool) -> str:
    """What the agent may do with these settings, in one line (``orchestrator validate``)."""
    if settings.preset is AgentPreset.COMMAND:
        what = "whatever agent.command allows"
    elif settings.preset is AgentPreset.CODEX_APP_SERVER:
        what = "edit files, run commands and commit in its workspace (approvals never asked)"
    elif settings.permissions is AgentPermissions.FULL:
        what = f"anything ({settings.preset.value}'s own checks are off)"
    else:
        what = "edit files, run commands and commit in its workspace"
    where = (
        "inside the sandbox: only its workspace and home are writable, the daemon's files "
        "hidden; the network is shared"
        if sandboxed
        else "with no OS sandbox: everything the daemon's user may read and write"
    )
    return f"{what}; {where}"


def build_command(
    settings: AgentSettings, *, prompt_file: Path, resume_session_id: str | None
) -> str:
    """The shell command (run with ``bash -lc``) for one turn; the prompt comes on stdin.

    For the agent presets, ``settings.command`` replaces the program name (a
    path or a wrapper such as ``npx -y @openai/codex``) and is used as written;
    everything else is quoted. ``prompt_file`` is the same prompt, for the
    ``command`` preset's programs that prefer a file.
    """
    del prompt_file
    preset = settings.preset
    if preset is AgentPreset.COMMAND:
        assert settings.command is not None
        return settings.command
    if preset is AgentPreset.CODEX_APP_SERVER:
        # The server gets the prompt, the thread to resume and its policies over JSON-RPC.
        extra = [shlex.quote(arg) for arg in settings.extra_args]
        return " ".join([settings.command or APP_SERVER_COMMAND, *extra])
    program = settings.command or preset.value
    flags = [shlex.quote(arg) for arg in (*preset_flags(settings), *settings.extra_args)]
    resume = valid_session_id(resume_session_id)
    if preset is AgentPreset.CODEX:
        parts = [program, "exec", "--json", *flags]
        if resume:
            parts += ["resume", shlex.quote(resume)]
        return " ".join([*parts, "-"])
    if preset is AgentPreset.CLAUDE:
        parts = [program, "-p", "--output-format", "stream-json", "--verbose", *flags]
        if resume:
            parts += ["--resume", shlex.quote(resume)]
        return " ".join(parts)
    parts = [program, "--mode", "json", *flags]
    if resume:
        parts += ["--session", shlex.quote(resume)]
    return " ".join(parts)
