"""Agent runner and workspaces: per-issue git checkouts and coding-agent turns, contained.

The runtime creates a :class:`WorkspaceManager` and an :class:`AgentRunner`
from the policy, ensures an issue's workspace, then runs a turn and gets one
:class:`TurnResult` back. See docs/agent.md for the contract agents follow.
"""

from orchestrator.agent.environment import AgentEnvironment
from orchestrator.agent.errors import (
    AgentLayerError,
    GitError,
    HookFailed,
    SettingsError,
    UnsafeWorkspacePath,
    WorkspaceError,
)
from orchestrator.agent.events import AgentEvent, EventKind, TokenUsage
from orchestrator.agent.git import RepoSource
from orchestrator.agent.head import HeadSnapshot
from orchestrator.agent.hook_result import HookName, HookResult
from orchestrator.agent.naming import branch_name, workspace_key
from orchestrator.agent.result_files import ResultFile, ResultFiles
from orchestrator.agent.runner import AgentRunner, AgentTurn
from orchestrator.agent.sandbox import (
    SandboxError,
    SandboxMode,
    SandboxSettings,
    SandboxVerdict,
    probe_bwrap,
)
from orchestrator.agent.settings import AgentPreset, AgentSettings, HookSettings, WorkspaceSettings
from orchestrator.agent.turn import TurnOutcome, TurnRequest, TurnResult
from orchestrator.agent.workspace import IssueRef, Workspace, WorkspaceManager

__all__ = [
    "AgentEnvironment",
    "AgentEvent",
    "AgentLayerError",
    "AgentPreset",
    "AgentRunner",
    "AgentSettings",
    "AgentTurn",
    "EventKind",
    "GitError",
    "HeadSnapshot",
    "HookFailed",
    "HookName",
    "HookResult",
    "HookSettings",
    "IssueRef",
    "RepoSource",
    "ResultFile",
    "ResultFiles",
    "SandboxError",
    "SandboxMode",
    "SandboxSettings",
    "SandboxVerdict",
    "SettingsError",
    "TokenUsage",
    "TurnOutcome",
    "TurnRequest",
    "TurnResult",
    "UnsafeWorkspacePath",
    "Workspace",
    "WorkspaceError",
    "WorkspaceManager",
    "WorkspaceSettings",
    "branch_name",
    "probe_bwrap",
    "workspace_key",
]
