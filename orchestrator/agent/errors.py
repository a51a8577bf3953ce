"""The errors of the agent layer: one hierarchy the runtime can catch as a whole.

Problems with what an agent *did* (timeouts, crashes, bad result files) are not
errors: they are outcomes in a :class:`~orchestrator.agent.turn.TurnResult`.
These exceptions cover what stops a turn from being attempted at all.
"""

from __future__ import annotations

from orchestrator.agent.hook_result import HookResult


class AgentLayerError(Exception):
    """Base class of every error raised by :mod:`orchestrator.agent`."""


class SettingsError(AgentLayerError, ValueError):
    """A runner setting has a bad value; ``field`` names the setting."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class WorkspaceError(AgentLayerError):
    """A workspace could not be created, reused or removed."""


class PushRefused(WorkspaceError):
    """The daemon will not push the agent's branch as it is; the message says which commit and
    why, for the agent's next turn to put right."""

    def __init__(self, head: str, problem: str) -> None:
        super().__init__(f"refusing to push {head[:12]}: {problem}")
        self.head = head
        self.problem = problem


class UnsafeWorkspacePath(WorkspaceError):
    """A workspace path would resolve outside the workspace root, or is not a plain directory."""


class GitError(WorkspaceError):
    """A git command failed; the message carries the (credential-free) command and its output."""

    def __init__(self, command: str, exit_code: int | None, output: str) -> None:
        detail = f"exit code {exit_code}" if exit_code is not None else "timed out"
        super().__init__(f"git {command} failed ({detail}): {output.strip()}")
        self.command = command
        self.exit_code = exit_code
        self.output = output


class HookFailed(AgentLayerError):
    """A hook whose failure aborts the operation (after_create, before_run) failed."""

    def __init__(self, result: HookResult) -> None:
        super().__init__(f"{result.name} hook {result.describe()}")
        self.result = result
