"""The ``agent`` section of the policy: which coding agent runs, how many at once, its watchdogs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from orchestrator.domain.phases import Phase
from orchestrator.workflow.schema_types import AgentPermissions, AgentPreset, AgentSandbox, meta

# How long running turns may finish when the daemon stops (agent.shutdown_grace_ms).
DEFAULT_SHUTDOWN_GRACE_MS = 30_000


@dataclass(frozen=True)
class AgentSettings:
    """Which coding agent runs, how many at once, and its watchdogs."""

    preset: AgentPreset = field(
        default=AgentPreset.CODEX,
        metadata=meta(
            doc="Agent preset: `codex`, `codex-app-server`, `claude`, `pi` or `command`."
        ),
    )
    command: str | None = field(
        default=None,
        metadata=meta(
            doc="For preset `command`: the whole shell command (required). For preset "
            "`codex-app-server`: the whole command that starts the server (default "
            "`codex app-server`, as Symphony's `codex.command`). For the other presets: "
            "replaces the program name (for example an absolute path to `codex`).",
            shell_text=True,
        ),
    )
    extra_args: tuple[str, ...] = field(
        default=(),
        metadata=meta(
            doc="Flags appended to the preset's command line (presets `codex`, "
            "`codex-app-server`, `claude`, `pi`), "
            "before the prompt and the resume arguments.",
            repeats=True,
        ),
    )
    permissions: AgentPermissions = field(
        default=AgentPermissions.WORKSPACE,
        metadata=meta(
            doc="What the preset lets the agent CLI do: `workspace` (edit, run commands and "
            "commit in its workspace) or `full` (the CLI's own no-checks mode). Mapped to each "
            "CLI's flags in docs/agent.md."
        ),
    )
    max_concurrent_agents: int = field(
        default=10,
        metadata=meta(
            doc="Agent turns running at once, all phases together.", minimum=1, maximum=1_000
        ),
    )
    max_concurrent_agents_by_phase: Mapping[Phase, int] = field(
        default_factory=lambda: MappingProxyType({}),
        metadata=meta(
            doc="Per active phase limit (phase -> count; 0 pauses that phase).",
            minimum=0,
            maximum=1_000,
        ),
    )
    max_turns: int = field(
        default=20, metadata=meta(doc="Agent turns per phase visit.", minimum=1, maximum=1_000)
    )
    max_retry_backoff_ms: int = field(
        default=300_000,
        metadata=meta(
            doc="Cap of the failure retry delay `min(10 s * 2^(n-1), cap)`.",
            minimum=1_000,
            maximum=86_400_000,
        ),
    )
    first_event_timeout_ms: int = field(
        default=0,
        metadata=meta(
            doc="No event at all since start for this long ends the turn as a session start "
            "timeout (0 = off).",
            minimum=0,
            maximum=86_400_000,
        ),
    )
    stall_timeout_ms: int = field(
        default=300_000,
        metadata=meta(
            doc="No event for this long ends the turn as stalled (0 = off).",
            minimum=0,
            maximum=86_400_000,
        ),
    )
    turn_timeout_ms: int = field(
        default=3_600_000,
        metadata=meta(doc="Limit of one whole turn.", minimum=1_000, maximum=86_400_000),
    )
    shutdown_grace_ms: int = field(
        default=DEFAULT_SHUTDOWN_GRACE_MS,
        metadata=meta(
            doc="When the daemon stops (SIGTERM), how long running turns may finish before they "
            "are cancelled; `orchestrator run --grace-seconds` overrides it. A stop takes up to "
            "15 s more: keep systemd's `TimeoutStopSec` and compose's `stop_grace_period` above "
            "that.",
            minimum=0,
            maximum=3_600_000,
        ),
    )
    env: Mapping[str, str] = field(
        default_factory=lambda: MappingProxyType({}),
        metadata=meta(
            doc="Extra environment for the agent (values may be `$VAR` references). GitHub "
            "credentials are refused.",
            sensitive=True,
        ),
    )
    sandbox: AgentSandbox = field(
        default=AgentSandbox.AUTO,
        metadata=meta(
            doc="OS sandbox of agent and hook commands: `auto` (bubblewrap when it works here, "
            "checked at start-up), `bwrap` (bubblewrap, or refuse to start) or `none`."
        ),
    )
    allow_unsandboxed: bool = field(
        default=False,
        metadata=meta(
            doc="With `sandbox: auto` in rollout mode `merge`: run agents without a sandbox when "
            "bubblewrap does not work here, instead of refusing to start. Shown as a warning."
        ),
    )
    home: Path | None = field(
        default=None,
        metadata=meta(
            doc="The agents' `$HOME`, writable in the sandbox, for CLIs that keep their login "
            "there (codex, claude). `null`: a scratch home per issue under the daemon's state "
            "directory (mode 0700). `~` is expanded; a relative path is relative to the policy "
            "file's directory."
        ),
    )
