"""``orchestrator validate``: the shipped examples pass, with provenance and sample prompts."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from orchestrator.cli import cli
from orchestrator.workflow import flow_policy, load_workflow

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ("observe.md", "mutate.md", "merge.md", "demo.md")
TOKEN = "ghp_" + "Exampl3Tok3n" * 3
DB_PASSWORD = "db-Passw0rd-never-shown"
EXAMPLE_ENV = {
    "GITHUB_TOKEN": TOKEN,
    "ANTHROPIC_API_KEY": "anthropic-key-never-shown",
    "ORCHESTRATOR_API_TOKEN": "api-token-never-shown",
    "ORCHESTRATOR_DATABASE_URL": f"postgresql+psycopg://orch:{DB_PASSWORD}@db.internal/orch",
    "ORCHESTRATOR_DEMO_ENDPOINT": "http://127.0.0.1:8900",
    "ORCHESTRATOR_DEMO_TOKEN": "demo-token-never-shown",
    "ORCHESTRATOR_DEMO_PYTHON": "/usr/bin/python3",
    "ORCHESTRATOR_DEMO_DIR": "/var/tmp/orchestrator-demo",
}
SECRETS = (
    TOKEN,
    DB_PASSWORD,
    "anthropic-key-never-shown",
    "api-token-never-shown",
    "demo-token-never-shown",
)


@pytest.fixture
def in_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    for name in list(os.environ):
        if name.startswith("ORCHESTRATOR_") and "__" in name:
            monkeypatch.delenv(name)


def invoke(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["validate", *args], env=env or EXAMPLE_ENV)
    return result.exit_code, result.output


def line_of(path: Path, text: str) -> int:
    for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), start=1):
        if line == text:
            return number
    raise AssertionError(f"{text!r} not in {path}")


def setting_line(output: str, key: str) -> str:
    match = re.search(rf"^    {re.escape(key)} +(.*)$", output, re.M)
    assert match is not None, f"{key} not shown"
    return match.group(1)


@pytest.mark.usefixtures("in_repo")
def test_every_example_is_valid() -> None:
    code, output = invoke(*(f"workflows/{name}" for name in EXAMPLES))
    assert code == 0, output
    for name in EXAMPLES:
        assert f"workflows/{name}: valid" in output
    assert output.count("--- prompt for phase implementing, sample issue acme/widgets#42") == 4
    assert output.count("--- prompt for phase reviewing,") == 4
    assert output.count("--- prompt for phase rework,") == 4
    for secret in SECRETS:
        assert secret not in output


@pytest.mark.usefixtures("in_repo")
def test_provenance_of_each_layer() -> None:
    env = {**EXAMPLE_ENV, "ORCHESTRATOR_AGENT__MAX_TURNS": "4"}
    code, output = invoke("workflows/merge.md", "--set", "polling.interval_ms=1500", env=env)
    assert code == 0, output
    merge = ROOT / "workflows" / "merge.md"
    repo_line = line_of(merge, "  repo: acme/widgets")
    assert setting_line(output, "tracker.repo") == (
        f"acme/widgets{' ' * 36}  [file workflows/merge.md:{repo_line}:3]"
    )
    assert setting_line(output, "agent.max_turns").split() == [
        "4",
        "[env",
        "ORCHESTRATOR_AGENT__MAX_TURNS]",
    ]
    assert setting_line(output, "polling.interval_ms").split() == ["1500", "[flag]"]
    assert setting_line(output, "pr.branch_prefix").split() == ["orchestrator/", "[default]"]
    token_line = line_of(merge, "  token: $GITHUB_TOKEN")
    assert setting_line(output, "tracker.token").split() == [
        "$GITHUB_TOKEN",
        "(set)",
        "[file",
        f"workflows/merge.md:{token_line}:3",
        "via",
        "$GITHUB_TOKEN]",
    ]
    assert setting_line(output, "database.url").startswith("$ORCHESTRATOR_DATABASE_URL (set)")
    assert "ANTHROPIC_API_KEY: $ANTHROPIC_API_KEY (set)" in setting_line(output, "agent.env")
    assert "precedence: flag > env > file > default" in output
    for secret in SECRETS:
        assert secret not in output


@pytest.mark.usefixtures("in_repo")
def test_the_demo_reads_the_emulator_from_the_environment() -> None:
    code, output = invoke("workflows/demo.md", "--no-prompts")
    assert code == 0, output
    assert setting_line(output, "tracker.endpoint").split()[0] == "http://127.0.0.1:8900"
    assert (
        setting_line(output, "workspace.root").split()[0] == "/var/tmp/orchestrator-demo/workspaces"
    )
    assert "--- prompt for phase" not in output


@pytest.mark.usefixtures("in_repo")
def test_warnings_are_shown_for_a_valid_file() -> None:
    env = {**EXAMPLE_ENV, "ORCHESTRATOR_ROLLOUT__MODE": "mutate"}
    code, output = invoke("-q", "workflows/merge.md", env=env)
    assert code == 0, output
    mode_line = line_of(ROOT / "workflows" / "merge.md", "  mode: auto")
    assert output == (
        "workflows/merge.md: valid (1 warning)\n"
        f"  workflows/merge.md:{mode_line}:3: merge.mode: warning: merge disabled by rollout mode: "
        "merge.mode is auto but rollout.mode is mutate, so nothing is merged until rollout.mode "
        "is merge\n"
    )


@pytest.mark.usefixtures("in_repo")
def test_an_unset_variable_fails_the_example() -> None:
    env = {k: v for k, v in EXAMPLE_ENV.items() if k != "ORCHESTRATOR_DEMO_DIR"}
    code, output = invoke("-q", "workflows/demo.md", env=env)
    assert code == 1
    demo = ROOT / "workflows" / "demo.md"
    root_line = line_of(demo, "  root: ${ORCHESTRATOR_DEMO_DIR}/workspaces")
    assert f"workflows/demo.md:{root_line}:3: workspace.root: environment variable " in output
    assert "ORCHESTRATOR_DEMO_DIR is not set" in output


def test_errors_exit_with_status_one(tmp_path: Path) -> None:
    bad = tmp_path / "bad.md"
    bad.write_text("---\ntracker:\n  repo: acme/widgets\nagent:\n  max_turns: ten\n---\n")
    good = tmp_path / "good.md"
    good.write_text("---\ntracker:\n  repo: acme/widgets\n---\n")
    code, output = invoke("-q", str(bad), str(good))
    assert code == 1
    assert output == (
        f"{bad}: invalid (1 error)\n"
        f"  {bad}:5:3: agent.max_turns: expected an integer, got 'ten'\n"
        "\n"
        f"{good}: valid\n"
    )


def test_a_malformed_set_option(tmp_path: Path) -> None:
    code, output = invoke("--set", "agent.max_turns", str(tmp_path / "x.md"))
    assert code == 2
    assert "expected KEY=VALUE" in output


@pytest.mark.usefixtures("in_repo")
def test_validate_runs_as_a_real_command() -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "from orchestrator.cli import main; main()",
            "validate",
            "-q",
            *(f"workflows/{name}" for name in EXAMPLES),
        ],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", **EXAMPLE_ENV},
        cwd=ROOT,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert [line for line in result.stdout.split("\n") if line.endswith(": valid")] == [
        f"workflows/{name}: valid" for name in EXAMPLES
    ]


@pytest.mark.parametrize("name", EXAMPLES)
def test_examples_map_onto_the_domain_core(name: str) -> None:
    workflow = load_workflow(ROOT / "workflows" / name, env=EXAMPLE_ENV)
    flow = flow_policy(workflow.policy)
    assert flow.rollout_mode is workflow.policy.rollout.mode
    expected = {
        "observe.md": "observe",
        "mutate.md": "mutate",
        "merge.md": "merge",
        "demo.md": "merge",
    }
    assert flow.rollout_mode.value == expected[name]
