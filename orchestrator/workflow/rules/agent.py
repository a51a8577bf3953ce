"""Rules of the ``agent`` section: limits, environment, watchdogs and the OS sandbox."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from orchestrator.domain.phases import PHASE_CLASS, PhaseClass, RolloutMode
from orchestrator.state_home import expand_path
from orchestrator.workflow.problems import Problem
from orchestrator.workflow.rules.context import RuleContext
from orchestrator.workflow.schema import AgentPreset, AgentSandbox

# Credentials an agent must never receive through agent.env.
GITHUB_CREDENTIAL_NAMES = frozenset(
    {
        "GITHUB_TOKEN",
        "GH_TOKEN",
        "GH_ENTERPRISE_TOKEN",
        "GITHUB_ENTERPRISE_TOKEN",
        "GITHUB_PAT",
        "GIT_ASKPASS",
        "SSH_AUTH_SOCK",
    }
)
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def check_agent(ctx: RuleContext) -> Iterator[Problem]:
    """Agent limits, the environment given to the agent, and the watchdogs."""
    agent = ctx.policy.agent
    if agent.preset is AgentPreset.COMMAND and agent.command is None:
        yield ctx.error("agent.command", "required when agent.preset is command")
    for phase, limit in agent.max_concurrent_agents_by_phase.items():
        path = f"agent.max_concurrent_agents_by_phase.{phase}"
        if PHASE_CLASS[phase] is not PhaseClass.ACTIVE:
            yield ctx.error(
                path, f"'{phase}' is not an active phase; limits apply to phases that run work"
            )
        elif limit > agent.max_concurrent_agents:
            yield ctx.warning(
                path,
                f"{limit} is above agent.max_concurrent_agents ({agent.max_concurrent_agents}), "
                "which still applies",
            )
    token = ctx.policy.tracker.token
    api_key = ctx.policy.tracker.api_key
    for name, value in agent.env.items():
        path = f"agent.env.{name}"
        if not _ENV_NAME.match(name):
            yield ctx.error(path, f"'{name}' is not a valid environment variable name")
        elif name.upper() in GITHUB_CREDENTIAL_NAMES:
            yield ctx.error(path, "a GitHub credential may never be given to the agent")
        elif token is not None and value == token:
            yield ctx.error(
                path, "is the tracker token; the agent must never hold GitHub credentials"
            )
        elif api_key is not None and value == api_key:
            yield ctx.error(
                path, "is the Linear API key; the agent must never hold tracker credentials"
            )
    if 0 < agent.turn_timeout_ms <= agent.first_event_timeout_ms:
        yield ctx.error(
            "agent.first_event_timeout_ms",
            f"must be shorter than agent.turn_timeout_ms ({agent.turn_timeout_ms})",
        )
    if agent.stall_timeout_ms >= agent.turn_timeout_ms:
        yield ctx.warning(
            "agent.stall_timeout_ms",
            f"has no effect: not shorter than agent.turn_timeout_ms ({agent.turn_timeout_ms})",
        )


def _sqlite_folder(url: str) -> Path | None:
    """The folder of a SQLite database file named by an absolute path, else None."""
    if not url.startswith("sqlite") or ":///" not in url:
        return None
    path = Path(expand_path(url.split(":///", 1)[1].split("?", 1)[0]))
    return path.parent if path.is_absolute() else None


def check_sandbox(ctx: RuleContext) -> Iterator[Problem]:
    """The agent sandbox keys; whether bubblewrap works here is checked at start-up."""
    policy = ctx.policy
    agent = policy.agent
    merging = policy.rollout.mode is RolloutMode.MERGE
    if agent.allow_unsandboxed and agent.sandbox is AgentSandbox.AUTO:
        yield ctx.warning(
            "agent.allow_unsandboxed",
            "is true: in rollout mode merge, agents run without an OS sandbox when bubblewrap "
            "does not work here",
        )
    elif agent.allow_unsandboxed:
        yield ctx.warning(
            "agent.allow_unsandboxed", f"has no effect with agent.sandbox {agent.sandbox}"
        )
    if agent.sandbox is AgentSandbox.NONE and merging:
        yield ctx.warning(
            "agent.sandbox", "is none: in rollout mode merge, agents run without an OS sandbox"
        )
    if "HOME" in agent.env:
        yield ctx.warning(
            "agent.env.HOME", "is replaced by the agents' home; set agent.home instead"
        )
    home = agent.home
    if home is None:
        return
    root = Path(policy.workspace.root)
    if home == root or home.is_relative_to(root) or root.is_relative_to(home):
        yield ctx.error("agent.home", f"overlaps workspace.root ({root}): agents would share it")
    private = [
        ("rollout.kill_switch_file", Path(policy.rollout.kill_switch_file).parent),
        ("database.url", _sqlite_folder(policy.database.url)),
    ]
    for key, folder in private:
        if folder is not None and folder.is_relative_to(home):
            yield ctx.error(
                "agent.home",
                f"holds the daemon's private folder {folder} ({key}), which the sandbox hides "
                f"from agents; use a folder of its own, such as {home / 'agent-home'}",
            )
