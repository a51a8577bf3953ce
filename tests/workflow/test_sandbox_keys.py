"""The agent sandbox keys: defaults, located errors, rules, and the decision they lead to."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from orchestrator.agent import SandboxMode, SandboxVerdict
from orchestrator.cli import cli
from orchestrator.domain.phases import RolloutMode
from orchestrator.wiring.containment import SandboxRefused, decide
from orchestrator.workflow.schema import AgentSandbox, Policy
from tests.workflow.conftest import ENV, MINIMAL, check

HEAD = "---\ntracker:\n  repo: acme/widgets\n"
WORKS = SandboxVerdict("bwrap", True, "bubblewrap 0.8.0 works here")
BROKEN = SandboxVerdict("bwrap", False, "bwrap not found (install Debian's bubblewrap)")


def policy(body: str) -> str:
    return HEAD + body + "---\n"


def messages(text: str, env: dict[str, str] | None = None) -> list[str]:
    result = check(text, env={**ENV, **(env or {})})
    return [str(p) for p in result.problems]


def test_defaults() -> None:
    workflow = check(MINIMAL).workflow
    assert workflow is not None
    agent = workflow.policy.agent
    assert (agent.sandbox, agent.allow_unsandboxed, agent.home) == (AgentSandbox.AUTO, False, None)
    for key in ("agent.sandbox", "agent.allow_unsandboxed", "agent.home"):
        assert str(workflow.origins[key]) == "default"


def test_values_and_their_origins(tmp_path: Path) -> None:
    text = policy("agent:\n  sandbox: bwrap\n  home: agents/home\n")
    result = check(text, env={**ENV, "ORCHESTRATOR_AGENT__ALLOW_UNSANDBOXED": "yes"}, base=tmp_path)
    workflow = result.workflow
    assert workflow is not None, result.problems
    agent = workflow.policy.agent
    assert agent.sandbox is AgentSandbox.BWRAP
    # Relative to the policy file's folder, like every path.
    assert agent.home == tmp_path / "agents" / "home"
    assert agent.allow_unsandboxed is True
    assert str(workflow.origins["agent.sandbox"]) == "file WORKFLOW.md:5:3"
    assert str(workflow.origins["agent.allow_unsandboxed"]) == (
        "env ORCHESTRATOR_AGENT__ALLOW_UNSANDBOXED"
    )


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (
            "agent:\n  sandbox: bwarp\n",
            "WORKFLOW.md:5:3: agent.sandbox: expected one of auto, bwrap, none, got 'bwarp'; "
            "did you mean 'bwrap'?",
        ),
        (
            "agent:\n  sandbx: none\n",
            "WORKFLOW.md:5:3: agent.sandbx: unknown key; did you mean 'sandbox'?",
        ),
        (
            "agent:\n  allow_unsandboxed: sometimes\n",
            "WORKFLOW.md:5:3: agent.allow_unsandboxed: expected true or false, got 'sometimes'",
        ),
        (
            "agent:\n  home: [a, b]\n",
            "WORKFLOW.md:5:3: agent.home: expected a path, got a list",
        ),
    ],
)
def test_bad_values_are_located_errors(body: str, error: str) -> None:
    assert messages(policy(body)) == [error]


def test_a_home_over_the_daemons_folders_is_refused() -> None:
    text = policy(
        "workspace:\n  root: /var/lib/orchestrator/workspaces\n"
        "rollout:\n  kill_switch_file: /var/lib/orchestrator/STOP\n"
        "agent:\n  home: /var/lib/orchestrator\n"
    )
    found = messages(text)
    assert any("agent.home: overlaps workspace.root" in m for m in found), found
    assert any(
        "agent.home: holds the daemon's private folder /var/lib/orchestrator "
        "(rollout.kill_switch_file)" in m
        for m in found
    ), found
    fine = policy(
        "workspace:\n  root: /var/lib/orchestrator/workspaces\n"
        "agent:\n  home: /var/lib/orchestrator/agent-home\n"
    )
    assert messages(fine) == []


def test_warnings_for_running_without_a_sandbox() -> None:
    found = messages(policy("rollout:\n  mode: merge\nagent:\n  allow_unsandboxed: true\n"))
    assert found == [
        "WORKFLOW.md:7:3: agent.allow_unsandboxed: warning: is true: in rollout mode merge, "
        "agents run without an OS sandbox when bubblewrap does not work here"
    ]
    found = messages(policy("rollout:\n  mode: merge\nagent:\n  sandbox: none\n"))
    assert found == [
        "WORKFLOW.md:7:3: agent.sandbox: warning: is none: in rollout mode merge, agents run "
        "without an OS sandbox"
    ]
    found = messages(policy("agent:\n  env:\n    HOME: /somewhere\n"))
    assert found == [
        "WORKFLOW.md:6:5: agent.env.HOME: warning: is replaced by the agents' home; "
        "set agent.home instead"
    ]


def _policy(mode: RolloutMode, sandbox: AgentSandbox, allow: bool = False) -> Policy:
    workflow = check(
        policy(
            f"rollout:\n  mode: {mode.value}\n"
            f"agent:\n  sandbox: {sandbox.value}\n  allow_unsandboxed: {str(allow).lower()}\n"
        )
    ).workflow
    assert workflow is not None
    return workflow.policy


@pytest.mark.parametrize("mode", list(RolloutMode))
def test_auto_uses_bubblewrap_where_it_works(mode: RolloutMode) -> None:
    decision = decide(_policy(mode, AgentSandbox.AUTO), WORKS)
    assert decision.mode is SandboxMode.BWRAP
    assert decision.reason == "auto: bubblewrap 0.8.0 works here"
    assert decision.warnings == ()


def test_auto_without_bubblewrap_refuses_merge_mode() -> None:
    with pytest.raises(SandboxRefused) as refused:
        decide(_policy(RolloutMode.MERGE, AgentSandbox.AUTO), BROKEN)
    text = str(refused.value)
    for named in ("agent.sandbox", "agent.allow_unsandboxed", "rollout.mode", "bwrap not found"):
        assert named in text


def test_auto_without_bubblewrap_runs_unsandboxed_elsewhere_or_when_allowed() -> None:
    mutate = decide(_policy(RolloutMode.MUTATE, AgentSandbox.AUTO), BROKEN)
    assert mutate.mode is SandboxMode.NONE
    assert mutate.warnings == (
        "agents run without an OS sandbox: bwrap not found (install Debian's bubblewrap)",
    )
    allowed = decide(_policy(RolloutMode.MERGE, AgentSandbox.AUTO, allow=True), BROKEN)
    assert allowed.mode is SandboxMode.NONE
    assert allowed.warnings[0].startswith("agent.allow_unsandboxed is true")
    # Shown even where bubblewrap works: the setting is what the operator must see.
    works = decide(_policy(RolloutMode.MERGE, AgentSandbox.AUTO, allow=True), WORKS)
    assert works.mode is SandboxMode.BWRAP and works.warnings[0].startswith("agent.allow")


def test_bwrap_that_does_not_work_is_refused_in_every_mode() -> None:
    for mode in RolloutMode:
        with pytest.raises(SandboxRefused, match=r"agent\.sandbox is bwrap"):
            decide(_policy(mode, AgentSandbox.BWRAP, allow=True), BROKEN)


def test_none_is_a_choice_with_a_warning_in_merge_mode() -> None:
    decision = decide(_policy(RolloutMode.MERGE, AgentSandbox.NONE), BROKEN)
    assert decision.mode is SandboxMode.NONE
    assert decision.warnings == ("agents run without an OS sandbox (agent.sandbox: none)",)
    assert decide(_policy(RolloutMode.MUTATE, AgentSandbox.NONE), WORKS).warnings == ()


def test_validate_shows_the_sandbox_and_fails_where_the_daemon_would_not_start(
    tmp_path: Path,
) -> None:
    path = tmp_path / "WORKFLOW.md"
    path.write_text(policy("rollout:\n  mode: merge\n"), encoding="utf-8")
    env = {**ENV, "ORCHESTRATOR_BWRAP": str(tmp_path / "no-bwrap")}
    result = CliRunner().invoke(cli, ["validate", "-q", str(path)], env=env)
    assert result.exit_code == 1, result.output
    assert "on this machine the daemon would refuse to start: agent.sandbox is auto" in (
        result.output
    )
    allowed = {**env, "ORCHESTRATOR_AGENT__ALLOW_UNSANDBOXED": "true"}
    result = CliRunner().invoke(cli, ["validate", "--no-prompts", str(path)], env=allowed)
    assert result.exit_code == 0, result.output
    assert "agent.allow_unsandboxed: warning: is true" in result.output
    assert "agent sandbox on this machine: none (auto: " in result.output
    assert "  agent command: " in result.output and "(prompt on stdin)" in result.output
    assert "the agent may: " in result.output
    assert "with no OS sandbox: everything the daemon's user may read and write" in result.output


def test_validate_shows_the_app_server_command_as_written(tmp_path: Path) -> None:
    path = tmp_path / "WORKFLOW.md"
    body = "agent:\n  preset: codex-app-server\n  command: npx -y @openai/codex app-server\n"
    path.write_text(policy(body), encoding="utf-8")
    env = {
        **ENV,
        "ORCHESTRATOR_BWRAP": str(tmp_path / "no-bwrap"),
        "ORCHESTRATOR_AGENT__ALLOW_UNSANDBOXED": "true",
    }
    result = CliRunner().invoke(cli, ["validate", "--no-prompts", str(path)], env=env)
    assert result.exit_code == 0, result.output
    assert (
        "  agent command: npx -y @openai/codex app-server "
        "(spoken to in JSON-RPC; the prompt goes in its turn/start request)"
    ) in result.output
    assert "commit in its workspace (approvals never asked)" in result.output
