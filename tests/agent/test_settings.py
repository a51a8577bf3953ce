"""Settings validation, the environment filter and the process helpers, without an agent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from orchestrator.agent import AgentPreset, AgentSettings, HookSettings, SettingsError
from orchestrator.agent.bounded_run import OutputCapture, run_bounded
from orchestrator.agent.environment import AgentEnvironment, build_environment
from orchestrator.agent.hook_result import HookName
from orchestrator.agent.hooks import run_hook
from orchestrator.agent.settings import WorkspaceSettings
from orchestrator.agent.stream import LineSplitter


@pytest.mark.parametrize(
    ("kwargs", "field", "message"),
    [
        (
            {"preset": "gpt"},
            "agent.preset",
            "'gpt' is not one of codex, codex-app-server, claude, pi, command",
        ),
        ({}, "agent.command", "the command preset needs a command"),
        ({"preset": "codex", "command": "  "}, "agent.command", "must not be empty"),
        ({"command": "x", "stall_timeout_ms": -1}, "agent.stall_timeout_ms", ">= 0"),
        ({"command": "x", "turn_timeout_ms": 1.5}, "agent.turn_timeout_ms", "whole number"),
        ({"command": "x", "first_event_timeout_ms": True}, "agent.first_event_timeout_ms", ""),
        ({"command": "x", "max_line_bytes": 0}, "agent.max_line_bytes", "> 0"),
        ({"command": "x", "extra_args": "--yolo"}, "agent.extra_args", "list of strings"),
        ({"command": "x", "extra_env": {"GITHUB_TOKEN": "t"}}, "agent.env.GITHUB_TOKEN", "never"),
        (
            {"command": "x", "extra_env": {"GIT_CONFIG_KEY_0": "t"}},
            "agent.env.GIT_CONFIG_KEY_0",
            "",
        ),
        ({"command": "x", "extra_env": {"A=B": "t"}}, "agent.env.A=B", "'='"),
        ({"command": "x", "extra_env": {"A": 1}}, "agent.env", "must be strings"),
    ],
)
def test_agent_settings_errors_name_the_setting(
    kwargs: dict[str, Any], field: str, message: str
) -> None:
    with pytest.raises(SettingsError) as caught:
        AgentSettings(**kwargs)
    assert caught.value.field == field
    assert message in str(caught.value)


def test_agent_settings_normalise_their_values() -> None:
    settings = AgentSettings(
        preset="claude",
        extra_args=["--model", "opus"],
        env_deny=frozenset({"vault_addr"}),
        extra_env={"A": "1"},
    )
    assert settings.preset is AgentPreset.CLAUDE
    assert settings.extra_args == ("--model", "opus")
    assert settings.env_deny == {"VAULT_ADDR"}
    with pytest.raises(TypeError):
        settings.extra_env["B"] = "2"  # type: ignore[index]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"root": Path("relative")}, "workspace.root"),
        ({"root": Path("/w"), "branch_prefix": "bad prefix/"}, "pr.branch_prefix"),
        ({"root": Path("/w"), "branch_prefix": "-x/"}, "pr.branch_prefix"),
        ({"root": Path("/w"), "base_branch": "a..b"}, "pr.base_branch"),
        ({"root": Path("/w"), "git_timeout_ms": 0}, "workspace.git_timeout_ms"),
        ({"root": Path("/w"), "log_dir": Path("logs")}, "workspace.log_dir"),
    ],
)
def test_workspace_settings_errors(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(SettingsError) as caught:
        WorkspaceSettings(**kwargs)
    assert caught.value.field == field


def test_workspace_settings_accept_a_string_root() -> None:
    settings = WorkspaceSettings(root="/srv/workspaces")  # type: ignore[arg-type]
    assert settings.root == Path("/srv/workspaces")
    assert settings.logs == Path("/srv/workspaces/.logs")


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"timeout_ms": 0}, "hooks.timeout_ms"),
        ({"grace_period_ms": -1}, "hooks.grace_period_ms"),
        ({"before_run": 3}, "hooks.before_run"),
    ],
)
def test_hook_settings_errors(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(SettingsError) as caught:
        HookSettings(**kwargs)
    assert caught.value.field == field


def test_environment_filter_reports_withheld_names_only() -> None:
    built = build_environment(
        {"PATH": "/bin", "GH_TOKEN": "t0k3n-value", "X_PASSWORD": "p", "Weird_Secret": "s"},
        AgentSettings(command="x"),
        secrets=["t0k3n-value", None, "ab"],
        runner_vars={"ORCHESTRATOR_PHASE": "implementing"},
    )
    assert built.variables == {"PATH": "/bin", "ORCHESTRATOR_PHASE": "implementing"}
    assert built.withheld == ("GH_TOKEN", "Weird_Secret", "X_PASSWORD")


def test_runner_variables_cannot_be_overridden_by_extra_env() -> None:
    environment = AgentEnvironment(
        AgentSettings(command="x", extra_env={"ORCHESTRATOR_PHASE": "merging"}), base={}
    )
    built = environment.build({"ORCHESTRATOR_PHASE": "rework"})
    assert built.variables["ORCHESTRATOR_PHASE"] == "rework"


def test_a_secret_added_later_is_withheld_from_then_on() -> None:
    environment = AgentEnvironment(
        AgentSettings(
            command="x",
            extra_env={"CONFIG": "uses rotated-secret-1"},
            env_allow=frozenset({"RENAMED"}),
        ),
        base={"RENAMED": "rotated-secret-1"},
    )
    assert "RENAMED" in environment.build().variables
    environment.add_secret("rotated-secret-1")
    built = environment.build()
    assert "RENAMED" not in built.variables and "CONFIG" not in built.variables


def test_output_capture_keeps_head_and_tail() -> None:
    capture = OutputCapture(10)
    for chunk in (b"abc", b"defgh", b"ijklmnop", b"qrstuvwxyz"):
        capture.add(chunk)
    assert capture.truncated
    assert capture.total == 26
    assert capture.value().startswith(b"abcde")
    assert capture.value().endswith(b"vwxyz")
    assert b"16 bytes omitted" in capture.value()
    small = OutputCapture(100)
    small.add(b"hello")
    assert small.value() == b"hello" and not small.truncated


def test_run_bounded_times_out_and_kills_the_group(tmp_path: Path) -> None:
    result = run_bounded(
        ["bash", "-c", "trap '' TERM; sleep 30 & sleep 30"],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin"},
        timeout_s=0.3,
        grace_s=0.1,
        capture_bytes=100,
    )
    assert result.timed_out and result.exit_code is None and not result.ok


def test_run_hook_without_a_snippet_does_nothing(tmp_path: Path) -> None:
    assert run_hook(HookName.BEFORE_RUN, HookSettings(), cwd=tmp_path, env={}) is None
    result = run_hook(
        HookName.AFTER_RUN,
        HookSettings(after_run="kill -9 $$"),
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert result is not None and not result.ok
    assert result.describe() == "was killed by signal 9"


def test_line_splitter_bounds_lines() -> None:
    splitter = LineSplitter(5)
    assert list(splitter.feed(b"ab\ncd")) == [b"ab"]
    assert list(splitter.feed(b"e\n123456")) == [b"cde", None]
    assert list(splitter.feed(b"789\nok\n")) == [b"ok"]
    assert list(splitter.feed(b"tail")) == []
    assert splitter.finish() == b"tail"
    assert splitter.finish() is None
    assert list(splitter.feed(b"1234567\n")) == [None]
