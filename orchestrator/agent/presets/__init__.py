"""Presets for real coding agents: the command each runs and how its JSON lines are read.

Verified with Codex 0.169.0, Claude Code 2.1.197 and Pi 0.73.1 (docs/agent.md,
"Presets"); the prompt always goes on stdin, once (``codex-app-server``: in a
JSON-RPC request on stdin).

- ``codex``: ``codex exec --json`` (:mod:`.codex`);
- ``claude``: ``claude -p --output-format stream-json`` (:mod:`.claude`);
- ``pi``: ``pi --mode json`` (:mod:`.pi`);
- ``codex-app-server``: ``agent.command`` as written (default ``codex app-server``,
  as Symphony's ``codex.command``), spoken to in JSON-RPC on stdin and stdout
  (:mod:`orchestrator.agent.app_server`); the prompt, the workspace, the
  sandbox and the approval policy go in its requests, a continuation resumes
  the recorded thread.
- ``command``: any program that follows the contract in docs/agent.md
  (:mod:`.command`, whose :class:`EventMapper` every mapper extends).

``agent.extra_args`` come after the preset's flags (before ``resume`` and the
prompt).

The event shapes are those the agents document for their JSON modes; fields a
mapper does not know are ignored, so a newer agent version degrades to
"an event happened" rather than failing.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from orchestrator.agent.events import TokenUsage
from orchestrator.agent.presets.claude import (
    CLAUDE_WORKSPACE_TOOLS,
    ClaudeMapper,
    claude_command,
    claude_flags,
)
from orchestrator.agent.presets.codex import CodexMapper, codex_command, codex_flags
from orchestrator.agent.presets.command import EventMapper
from orchestrator.agent.presets.pi import PiMapper, pi_command
from orchestrator.agent.presets.values import valid_session_id
from orchestrator.agent.settings import AgentPermissions, AgentPreset, AgentSettings

__all__ = [
    "APP_SERVER_COMMAND",
    "CLAUDE_WORKSPACE_TOOLS",
    "ClaudeMapper",
    "CodexMapper",
    "EventMapper",
    "PiMapper",
    "build_command",
    "new_mapper",
    "permissions_summary",
    "preset_flags",
    "supports_resume",
    "valid_session_id",
]

# What the ``codex-app-server`` preset runs unless ``agent.command`` says otherwise.
APP_SERVER_COMMAND = "codex app-server"

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
        return codex_flags(full=full)
    if settings.preset is AgentPreset.CLAUDE:
        return claude_flags(full=full)
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
        return codex_command(program, flags, resume)
    if preset is AgentPreset.CLAUDE:
        return claude_command(program, flags, resume)
    return pi_command(program, flags, resume)
