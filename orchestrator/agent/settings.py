"""Frozen settings of the workspaces, hooks and the agent runner.

These are the runner's own values, validated on construction; the runtime maps
the operator's policy (WORKFLOW.md) onto them, so this package never depends on
the policy loader.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from types import MappingProxyType

from orchestrator.agent.errors import SettingsError
from orchestrator.agent.naming import is_valid_branch_name
from orchestrator.agent.sandbox import SandboxSettings

MIB = 1024 * 1024


class AgentPreset(StrEnum):
    """Which agent program runs a turn, and how its events are read."""

    CODEX = "codex"
    # ``codex app-server``: Codex's JSON-RPC protocol on stdio (orchestrator.agent.app_server).
    CODEX_APP_SERVER = "codex-app-server"
    CLAUDE = "claude"
    PI = "pi"
    COMMAND = "command"


class AgentPermissions(StrEnum):
    """What a preset's command line lets the agent CLI do (see docs/agent.md, "Presets")."""

    WORKSPACE = "workspace"
    FULL = "full"


# Names that never reach an agent or a hook, whatever the allow list says.
ALWAYS_DENIED_ENV = frozenset(
    {
        "GITHUB_TOKEN",
        "GH_TOKEN",
        "GH_ENTERPRISE_TOKEN",
        "GITHUB_ENTERPRISE_TOKEN",
        "GITHUB_PAT",
        "SSH_AUTH_SOCK",
        "GIT_ASKPASS",
        "SSH_ASKPASS",
        "GIT_CONFIG_PARAMETERS",
        "GIT_CONFIG_COUNT",
        "GIT_CONFIG_GLOBAL",
        "GIT_CONFIG_SYSTEM",
    }
)


def _non_negative(name: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise SettingsError(name, f"must be a whole number >= 0, got {value!r}")


def _positive(name: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise SettingsError(name, f"must be a whole number > 0, got {value!r}")


@dataclass(frozen=True)
class HookSettings:
    """Shell snippets run with ``bash -lc`` in the workspace at four moments, each bounded."""

    after_create: str | None = None
    before_run: str | None = None
    after_run: str | None = None
    before_remove: str | None = None
    # Run after_create first, in the empty staging folder (Symphony's order).
    after_create_in_empty_dir: bool = False
    timeout_ms: int = 60_000
    grace_period_ms: int = 2_000
    log_output_bytes: int = 4_096
    # The OS sandbox hooks run in (the agents' one); None runs them as they are.
    sandbox: SandboxSettings | None = None

    def __post_init__(self) -> None:
        _positive("hooks.timeout_ms", self.timeout_ms)
        _non_negative("hooks.grace_period_ms", self.grace_period_ms)
        _positive("hooks.log_output_bytes", self.log_output_bytes)
        for name in ("after_create", "before_run", "after_run", "before_remove"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise SettingsError(f"hooks.{name}", f"must be a shell snippet, got {value!r}")


@dataclass(frozen=True)
class WorkspaceSettings:
    """Where workspaces live and how their git branches are named."""

    root: Path
    branch_prefix: str = "orchestrator/"
    base_branch: str | None = None
    git_user_name: str = "Orchestrator Agent"
    git_user_email: str = "agent@orchestrator.invalid"
    git_timeout_ms: int = 600_000
    log_dir: Path | None = None
    # Where the repositories' mirrors live: outside the workspace root, never inside a
    # workspace (default: a sibling folder of the root, ``<root>.mirrors``).
    mirror_root: Path | None = None

    def __post_init__(self) -> None:
        # Callers mapping a policy may hand over plain strings.
        object.__setattr__(self, "root", Path(self.root))
        if not self.root.is_absolute():
            raise SettingsError("workspace.root", f"must be an absolute path, got {self.root}")
        if self.mirror_root is not None:
            object.__setattr__(self, "mirror_root", Path(self.mirror_root))
            if not self.mirror_root.is_absolute():
                raise SettingsError(
                    "workspace.mirror_root", f"must be an absolute path, got {self.mirror_root}"
                )
        if self.log_dir is not None and not Path(self.log_dir).is_absolute():
            raise SettingsError("workspace.log_dir", f"must be absolute, got {self.log_dir}")
        if not is_valid_branch_name(f"{self.branch_prefix}1-x"):
            raise SettingsError(
                "pr.branch_prefix",
                f"{self.branch_prefix!r} does not make valid git branch names "
                "(no spaces, '..', '~', '^', ':', '?', '*', '[', '\\', leading '-' or '.')",
            )
        if self.base_branch is not None and not is_valid_branch_name(self.base_branch):
            raise SettingsError("pr.base_branch", f"{self.base_branch!r} is not a valid branch")
        _positive("workspace.git_timeout_ms", self.git_timeout_ms)

    @property
    def logs(self) -> Path:
        """The folder for per-run logs (outside every workspace, so agents cannot edit them)."""
        return Path(self.log_dir) if self.log_dir is not None else self.root / ".logs"


@dataclass(frozen=True)
class AgentSettings:
    """Which agent runs, its watchdogs and the environment it gets.

    Timeouts are in milliseconds; 0 turns a watchdog off. ``command`` is the
    whole shell command for the ``command`` and ``codex-app-server`` presets,
    and replaces the program name (``codex``, ``claude``, ``pi``) for the others.
    """

    preset: AgentPreset = AgentPreset.COMMAND
    command: str | None = None
    extra_args: tuple[str, ...] = ()
    permissions: AgentPermissions = AgentPermissions.WORKSPACE
    first_event_timeout_ms: int = 0
    stall_timeout_ms: int = 300_000
    turn_timeout_ms: int = 3_600_000
    grace_period_ms: int = 5_000
    # Set for the agent and hooks (policy ``agent.env``).
    extra_env: Mapping[str, str] = field(default_factory=dict)
    # Names of the daemon's environment that never pass / pass besides the base allow-list
    # (see orchestrator.agent.environment); credentials never pass whatever these say.
    env_deny: frozenset[str] = frozenset()
    env_allow: frozenset[str] = frozenset()
    max_line_bytes: int = 10 * MIB
    result_max_bytes: int = MIB
    # The OS sandbox and home of the agent; None runs it as it is, with the inherited HOME.
    sandbox: SandboxSettings | None = None

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "preset", AgentPreset(self.preset))
        except ValueError:
            choices = ", ".join(p.value for p in AgentPreset)
            raise SettingsError(
                "agent.preset", f"{self.preset!r} is not one of {choices}"
            ) from None
        try:
            object.__setattr__(self, "permissions", AgentPermissions(self.permissions))
        except ValueError:
            raise SettingsError(
                "agent.permissions", f"{self.permissions!r} is not one of workspace, full"
            ) from None
        if self.preset is AgentPreset.COMMAND and not (self.command and self.command.strip()):
            raise SettingsError("agent.command", "the command preset needs a command to run")
        if self.command is not None and not self.command.strip():
            raise SettingsError("agent.command", "must not be empty")
        args: object = self.extra_args
        if not isinstance(args, tuple | list) or not all(isinstance(a, str) for a in args):
            raise SettingsError("agent.extra_args", "must be a list of strings")
        object.__setattr__(self, "extra_args", tuple(self.extra_args))
        for name in ("first_event_timeout_ms", "stall_timeout_ms", "turn_timeout_ms"):
            _non_negative(f"agent.{name}", getattr(self, name))
        _non_negative("agent.grace_period_ms", self.grace_period_ms)
        _positive("agent.max_line_bytes", self.max_line_bytes)
        _positive("agent.result_max_bytes", self.result_max_bytes)
        for key, value in self.extra_env.items():
            if not isinstance(key, str) or not isinstance(value, str) or not key:
                raise SettingsError("agent.env", f"{key!r}: names and values must be strings")
            if "=" in key or "\x00" in key or "\x00" in value:
                raise SettingsError(f"agent.env.{key}", "contains '=' or a NUL character")
            if key.upper() in ALWAYS_DENIED_ENV or key.upper().startswith("GIT_CONFIG"):
                raise SettingsError(
                    f"agent.env.{key}", "a GitHub or git credential may never be given to an agent"
                )
        object.__setattr__(self, "extra_env", MappingProxyType(dict(self.extra_env)))
        object.__setattr__(self, "env_deny", frozenset(n.upper() for n in self.env_deny))
        object.__setattr__(self, "env_allow", frozenset(n.upper() for n in self.env_allow))
