"""Fixtures for the agent layer: real git repositories, real workspaces, the scripted agent."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from orchestrator.agent import (
    AgentEnvironment,
    AgentRunner,
    AgentSettings,
    HookSettings,
    IssueRef,
    RepoSource,
    TurnRequest,
    TurnResult,
    Workspace,
    WorkspaceManager,
    WorkspaceSettings,
)
from orchestrator.agent.result_files import ResultFile
from orchestrator.domain.phases import Phase

from .git_http import GitHttpServer

SIM_AGENT = f"{shlex.quote(sys.executable)} -m orchestrator_sim.agent"
TOKEN = "ghp_" + "Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2Rr1Qq0Pp9Oo8"


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=Test", "-c", "user.email=test@example.invalid", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def make_origin(path: Path, files: dict[str, str] | None = None) -> Path:
    """A bare repository at ``path`` whose ``main`` has one commit with ``files``."""
    seed = path.parent / (path.name + ".seed")
    seed.mkdir(parents=True)
    git(seed, "init", "--quiet", "-b", "main")
    for name, content in (files or {"README.md": "# widgets\n"}).items():
        (seed / name).parent.mkdir(parents=True, exist_ok=True)
        (seed / name).write_text(content)
    git(seed, "add", "-A")
    git(seed, "commit", "--quiet", "-m", "initial commit")
    git(path.parent, "clone", "--quiet", "--bare", str(seed), str(path))
    return path


def write_scenario(directory: Path, scenario: dict[str, Any], name: str = "scenario.json") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(json.dumps(scenario))
    return path


@dataclass
class Harness:
    """A workspace root with one origin repository, and helpers to run scripted turns."""

    tmp: Path
    origin: Path
    hooks: HookSettings = field(default_factory=HookSettings)
    base_env: dict[str, str] | None = None
    secrets: tuple[str, ...] = ()
    _count: int = 0

    @property
    def root(self) -> Path:
        return self.tmp / "workspaces"

    @property
    def source(self) -> RepoSource:
        return RepoSource(str(self.origin))

    def workspace_settings(self) -> WorkspaceSettings:
        return WorkspaceSettings(root=self.root)

    def manager(self, agent: AgentSettings | None = None) -> WorkspaceManager:
        agent = agent or AgentSettings(command="true")
        return WorkspaceManager(self.workspace_settings(), self.hooks, self.environment(agent))

    def environment(self, agent: AgentSettings) -> AgentEnvironment:
        return AgentEnvironment(agent, base=self.base_env, secrets=self.secrets)

    def workspace(
        self, identifier: str = "acme/widgets#7", title: str = "Add a widget"
    ) -> Workspace:
        number = int(identifier.rsplit("#", 1)[-1]) if "#" in identifier else 7
        return self.manager().ensure(IssueRef(identifier, number, title), self.source)

    def agent(self, scenario: dict[str, Any], **overrides: Any) -> AgentSettings:
        self._count += 1
        path = write_scenario(self.tmp / "scenarios", scenario, f"scenario-{self._count}.json")
        values: dict[str, Any] = {
            "command": f"{SIM_AGENT} --scenario {shlex.quote(str(path))}",
            "first_event_timeout_ms": 0,
            "stall_timeout_ms": 20_000,
            "turn_timeout_ms": 30_000,
            "grace_period_ms": 300,
        }
        values.update(overrides)
        return AgentSettings(**values)

    def runner(self, agent: AgentSettings) -> AgentRunner:
        return AgentRunner(
            agent,
            self.hooks,
            self.environment(agent),
            log_dir=self.workspace_settings().logs,
        )

    def run(
        self,
        scenario: dict[str, Any],
        *,
        workspace: Workspace | None = None,
        phase: Phase = Phase.IMPLEMENTING,
        attempt: int = 1,
        prompt: str = "Implement the issue.",
        required: frozenset[ResultFile] = frozenset(),
        resume: str | None = None,
        **overrides: Any,
    ) -> TurnResult:
        agent = self.agent(scenario, **overrides)
        request = TurnRequest(
            workspace=workspace or self.workspace(),
            prompt=prompt,
            phase=phase,
            attempt=attempt,
            required_results=required,
            resume_session_id=resume,
        )
        return self.runner(agent).run(request)


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    return make_origin(tmp_path / "remotes" / "widgets.git")


@pytest.fixture
def harness(tmp_path: Path, origin: Path) -> Harness:
    return Harness(tmp=tmp_path, origin=origin)


@pytest.fixture
def git_server(tmp_path: Path) -> Iterator[GitHttpServer]:
    """A smart-HTTP git server that demands ``TOKEN``, serving ``widgets.git``."""
    served = tmp_path / "served"
    make_origin(served / "widgets.git")
    subprocess.run(
        ["git", "config", "http.receivepack", "true"], cwd=served / "widgets.git", check=True
    )
    server = GitHttpServer(served, TOKEN)
    server.start()
    try:
        yield server
    finally:
        server.stop()
