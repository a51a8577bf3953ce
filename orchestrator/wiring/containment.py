"""The agents' sandbox as the policy asks for it and as this machine allows it.

``agent.sandbox`` is ``auto``, ``bwrap`` or ``none``. Whether bubblewrap works
here is probed once (:func:`orchestrator.agent.sandbox.probe_bwrap`); the
decision combines that verdict with the rollout mode: in mode ``merge`` an
``auto`` that cannot sandbox refuses to start unless
``agent.allow_unsandboxed`` is true, and ``bwrap`` that does not work is
always refused. The decision is logged at start-up and shown by the status
API, the dashboard, ``orchestrator status`` and ``orchestrator validate``.

:func:`sandbox_settings` then lists what agents must not see: the daemon's
state directory, its SQLite database's folder, the git mirrors, the
kill-switch file's folder, the per-issue homes and (through the workspace
root) every other workspace.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy.engine import make_url

from orchestrator.agent.sandbox import (
    SandboxMode,
    SandboxSettings,
    SandboxVerdict,
    bwrap_program,
    probe_bwrap,
)
from orchestrator.domain.phases import RolloutMode
from orchestrator.logs import get_logger
from orchestrator.state_home import expand_path
from orchestrator.store.engine import default_database_path, is_sqlite
from orchestrator.workflow.schema import STATE_DIR, AgentSandbox, Policy

log = get_logger(__name__)

HOMES_DIR = "agent-homes"


@dataclass(frozen=True, slots=True)
class SandboxStatus:
    """The agents' OS sandbox: asked for, in force, why, and what the operator must know."""

    requested: str
    mode: str
    reason: str
    warnings: tuple[str, ...] = ()


class SandboxRefused(Exception):
    """The policy's sandbox cannot be had here; the message names the keys to change."""


@dataclass(frozen=True)
class SandboxDecision:
    """How agents run under one policy on this machine, and why."""

    requested: AgentSandbox
    mode: SandboxMode
    reason: str
    allow_unsandboxed: bool = False
    warnings: tuple[str, ...] = ()

    def log_fields(self) -> dict[str, Any]:
        """Stable keys for the start-up and reload log lines."""
        return {
            "sandbox_requested": self.requested.value,
            "sandbox": self.mode.value,
            "sandbox_reason": self.reason,
            "allow_unsandboxed": self.allow_unsandboxed,
            "sandbox_warnings": list(self.warnings),
        }


def log_sandbox(decision: SandboxDecision) -> None:
    """One line for the sandbox agents get, a warning when something needs attention."""
    if decision.warnings:
        log.warning("agent_sandbox", **decision.log_fields())
    else:
        log.info("agent_sandbox", **decision.log_fields())


def sandbox_status(decision: SandboxDecision | None) -> SandboxStatus | None:
    """The decision as the status API shows it."""
    if decision is None:
        return None
    return SandboxStatus(
        requested=decision.requested.value,
        mode=decision.mode.value,
        reason=decision.reason,
        warnings=decision.warnings,
    )


def probe_for(requested: AgentSandbox, env: Mapping[str, str] | None = None) -> SandboxVerdict:
    """The verdict on bubblewrap here (not probed for ``none``, which never uses it)."""
    program = bwrap_program(env)
    if requested is AgentSandbox.NONE:
        return SandboxVerdict(program, False, "not checked: agent.sandbox is none")
    return probe_bwrap(program)


def decide(policy: Policy, verdict: SandboxVerdict) -> SandboxDecision:
    """The sandbox agents get under ``policy`` given ``verdict``; raises :class:`SandboxRefused`."""
    agent = policy.agent
    requested = agent.sandbox
    merging = policy.rollout.mode is RolloutMode.MERGE
    warnings: list[str] = []
    if agent.allow_unsandboxed:
        warnings.append(
            "agent.allow_unsandboxed is true: in rollout mode merge, agents may run without an "
            "OS sandbox"
        )
    if requested is AgentSandbox.NONE:
        if merging:
            warnings.append("agents run without an OS sandbox (agent.sandbox: none)")
        return SandboxDecision(
            requested,
            SandboxMode.NONE,
            "agent.sandbox is none",
            agent.allow_unsandboxed,
            tuple(warnings),
        )
    if verdict.usable:
        return SandboxDecision(
            requested,
            SandboxMode.BWRAP,
            f"{requested.value}: {verdict.reason}",
            agent.allow_unsandboxed,
            tuple(warnings),
        )
    if requested is AgentSandbox.BWRAP:
        raise SandboxRefused(
            f"agent.sandbox is bwrap but bubblewrap does not work here: {verdict.reason}. "
            "Make it work (see the threat model in docs/agent.md and deploy/README.md), or set "
            "agent.sandbox to auto or none"
        )
    if merging and not agent.allow_unsandboxed:
        raise SandboxRefused(
            f"agent.sandbox is auto and bubblewrap does not work here ({verdict.reason}); "
            "rollout.mode merge does not run agents without an OS sandbox unless told to: "
            "make bubblewrap work, set agent.sandbox: none to run agents unsandboxed on "
            "purpose, or set agent.allow_unsandboxed: true"
        )
    warnings.append(f"agents run without an OS sandbox: {verdict.reason}")
    return SandboxDecision(
        requested,
        SandboxMode.NONE,
        f"auto: {verdict.reason}",
        agent.allow_unsandboxed,
        tuple(warnings),
    )


def state_directory(db_url: str) -> Path:
    """The daemon's state directory: its SQLite file's folder, else ``$XDG_STATE_HOME``'s."""
    if is_sqlite(db_url):
        database = make_url(db_url).database
        if database and database != ":memory:":
            return Path(os.path.abspath(database)).parent
    return default_database_path().parent


def private_paths(policy: Policy, *, db_url: str, mirror_root: Path | None) -> tuple[Path, ...]:
    """The daemon's folders agents must not see (they are hidden when they exist)."""
    paths = [
        state_directory(db_url),
        default_database_path().parent,
        Path(os.path.expanduser(STATE_DIR)),
        Path(expand_path(STATE_DIR)),
        Path(policy.rollout.kill_switch_file).parent,
    ]
    if mirror_root is not None:
        paths.append(mirror_root)
    unique: list[Path] = []
    for path in paths:
        normal = Path(os.path.normpath(path))
        if normal not in unique:
            unique.append(normal)
    return tuple(unique)


def sandbox_settings(
    policy: Policy,
    decision: SandboxDecision,
    *,
    db_url: str,
    workspace_root: Path,
    mirror_root: Path | None = None,
    extra_hidden: Sequence[Path] = (),
    env: Mapping[str, str] | None = None,
) -> SandboxSettings:
    """The runner's sandbox settings for ``policy`` under ``decision``."""
    home = policy.agent.home
    return SandboxSettings(
        mode=decision.mode,
        program=bwrap_program(env),
        home=Path(home) if home is not None else None,
        home_root=state_directory(db_url) / HOMES_DIR,
        workspace_root=workspace_root,
        hidden=(*private_paths(policy, db_url=db_url, mirror_root=mirror_root), *extra_hidden),
    )
