"""The agent side of a policy: workspace, hook and runner settings, the sandbox decision,
and the runner they make (rebuilt only when one of them changes).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from orchestrator.agent import (
    AgentEnvironment,
    AgentPreset,
    AgentRunner,
    AgentSettings,
    HookSettings,
    WorkspaceManager,
    WorkspaceSettings,
)
from orchestrator.agent.events import AgentEvent
from orchestrator.agent.registry import REGISTRY_DIR, ProcessRegistry
from orchestrator.agent.settings import AgentPermissions
from orchestrator.wiring.containment import (
    SandboxDecision,
    SandboxRefused,
    decide,
    probe_for,
    sandbox_settings,
    state_directory,
)
from orchestrator.wiring.credentials import key_folder
from orchestrator.wiring.policy_view import WiringError
from orchestrator.workflow.schema import Policy


def workspace_settings(policy: Policy) -> WorkspaceSettings:
    return WorkspaceSettings(
        root=Path(policy.workspace.root),
        branch_prefix=policy.pr.branch_prefix,
        base_branch=policy.pr.base_branch,
    )


def hook_settings(policy: Policy) -> HookSettings:
    hooks = policy.hooks
    return HookSettings(
        after_create=hooks.after_create,
        before_run=hooks.before_run,
        after_run=hooks.after_run,
        before_remove=hooks.before_remove,
        after_create_in_empty_dir=hooks.after_create_in_empty_dir,
        timeout_ms=hooks.timeout_ms,
    )


def agent_settings(policy: Policy) -> AgentSettings:
    agent = policy.agent
    return AgentSettings(
        preset=AgentPreset(agent.preset.value),
        command=agent.command,
        extra_args=tuple(agent.extra_args),
        permissions=AgentPermissions(agent.permissions.value),
        first_event_timeout_ms=agent.first_event_timeout_ms,
        stall_timeout_ms=agent.stall_timeout_ms,
        turn_timeout_ms=agent.turn_timeout_ms,
        extra_env=dict(agent.env),
    )


def agent_wiring_key(policy: Policy) -> tuple[object, ...]:
    """What the agent runner depends on: a change rebuilds it (running turns keep theirs)."""
    return (
        policy.agent,
        policy.hooks,
        policy.workspace,
        policy.pr.branch_prefix,
        policy.pr.base_branch,
        # The sandbox: what it hides, and whether merge mode may run agents without it.
        policy.rollout.mode,
        policy.rollout.kill_switch_file,
        policy.database.url,
        # The App's key: its folder is hidden from agents, a PEM in a $VAR withheld.
        policy.tracker.private_key_file,
    )


@dataclass(frozen=True)
class AgentWiring:
    """The workspaces and the runner built from one policy version, and their sandbox."""

    workspaces: WorkspaceManager
    runner: AgentRunner
    settings: AgentSettings
    sandbox: SandboxDecision | None = None


def build_agent_wiring(
    policy: Policy,
    *,
    secrets: list[str | None],
    on_event: Callable[[str, AgentEvent], None],
    db_url: str,
    env: Mapping[str, str] | None = None,
    extra_hidden: Sequence[Path] = (),
) -> AgentWiring:
    """Workspaces and runner for ``policy``, agents and hooks in the sandbox decided here.

    Raises :class:`WiringError` when the policy's sandbox cannot be had on this
    machine (``agent.sandbox: bwrap`` without a working bubblewrap, or
    ``auto`` in rollout mode merge without ``agent.allow_unsandboxed``).

    The runner records its agents' sessions in the state directory; before it
    is handed out, whatever a dead daemon's agents left running there is ended
    (a live daemon's, this one's included, is left alone), so a daemon ends its
    previous life's orphans before its first tick.
    """
    try:
        decision = decide(policy, probe_for(policy.agent.sandbox, env))
    except SandboxRefused as refused:
        raise WiringError(str(refused)) from None
    settings = agent_settings(policy)
    hooks = hook_settings(policy)
    spaces = workspace_settings(policy)
    environment = AgentEnvironment(settings, secrets=secrets)
    workspaces = WorkspaceManager(spaces, hooks, environment)
    sandbox = sandbox_settings(
        policy,
        decision,
        db_url=db_url,
        workspace_root=workspaces.root,
        mirror_root=workspaces.mirrors.root,
        extra_hidden=(*extra_hidden, spaces.logs, *filter(None, [key_folder(policy)])),
        env=env,
    )
    settings = replace(settings, sandbox=sandbox)
    # The manager reads its hook settings at each call: its hooks run in the same sandbox.
    workspaces.hooks = replace(hooks, sandbox=sandbox)
    registry = ProcessRegistry(state_directory(db_url) / REGISTRY_DIR)
    registry.end_orphans()
    runner = AgentRunner(
        settings,
        workspaces.hooks,
        environment,
        log_dir=spaces.logs,
        on_event=on_event,
        registry=registry,
    )
    return AgentWiring(workspaces=workspaces, runner=runner, settings=settings, sandbox=decision)
