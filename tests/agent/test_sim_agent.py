"""The scripted agent on its own: scenario validation, behaviour selection, its command line."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from orchestrator_sim.agent import EXIT_SCENARIO_ERROR, agent_command, run_scripted_agent
from orchestrator_sim.scenario_agent import ScenarioError, load_scenario, parse_scenario

from .conftest import git, make_origin


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ([], "top level: must be a mapping"),
        ({"stepz": []}, "stepz: unknown key; expected one of steps, exit_code, phases"),
        ({"steps": {}}, "steps: must be a list of steps"),
        ({"steps": ["message"]}, "steps[0]: each step is a mapping with exactly one action"),
        ({"steps": [{"message": "a", "sleep_ms": 1}]}, "steps[0]: each step"),
        ({"steps": [{"wrte": {}}]}, "steps[0]: unknown step 'wrte' (did you mean 'write'?)"),
        ({"steps": [{"message": 3}]}, "steps[0].message: must be text, got int"),
        ({"steps": [{"sleep_ms": -1}]}, "steps[0].sleep_ms: must be a whole number >= 0"),
        ({"steps": [{"hang": "yes"}]}, "steps[0].hang: must be true or false"),
        ({"steps": [{"write": {"path": "a"}}]}, "steps[0].write: missing field content"),
        (
            {"steps": [{"write": {"path": "../x", "content": ""}}]},
            "steps[0].write.path: must be a relative path inside the workspace",
        ),
        (
            {"steps": [{"write": {"path": "a", "content": "", "mode": 1}}]},
            "steps[0].write.mode: unknown field",
        ),
        (
            {"steps": [{"review": {"findings": [{"title": "t"}]}}]},
            "steps[0].review.findings[0]: missing field summary",
        ),
        ({"steps": [{"events": {"interval_ms": 3}}]}, "steps[0].events: missing field count"),
        ({"exit_code": "0"}, "exit_code: must be a whole number >= 0"),
        ({"phases": []}, "phases: must be a mapping"),
        (
            {"phases": {"reviewing": {"steps": [{"crash": 1}]}}},
            "phases.reviewing.steps[0].crash: must be a mapping",
        ),
        (
            {"phases": {"reviewing": {"attempts": {"zero": {}}}}},
            "phases.reviewing.attempts.zero: attempt numbers are whole numbers from 1",
        ),
        (
            {"phases": {"reviewing": {"attempts": {"2": {"phases": {}}}}}},
            "phases.reviewing.attempts.2.phases: unknown key",
        ),
        (
            {"steps": [{"special_file": {"path": "a", "kind": "socket"}}]},
            "steps[0].special_file.kind: must be one of symlink, hardlink, fifo, directory",
        ),
        (
            {"steps": [{"special_file": {"path": "a", "kind": "symlink"}}]},
            "steps[0].special_file: a symlink needs a target",
        ),
    ],
)
def test_scenario_errors_name_the_entry(document: Any, message: str) -> None:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(document, "demo.yaml")
    assert str(caught.value).startswith("demo.yaml: ")
    assert message in str(caught.value)


def test_behaviour_selection_falls_back_from_attempt_to_phase_to_default() -> None:
    scenario = parse_scenario(
        {
            "steps": [{"message": "default"}],
            "exit_code": 0,
            "phases": {
                "reviewing": {
                    "exit_code": 4,
                    "attempts": {2: {"steps": [{"message": "second"}]}},
                },
                "rework": {"steps": [{"message": "rework"}]},
            },
        }
    )
    assert scenario.behaviour("implementing", 1).steps[0].arg == "default"
    reviewing = scenario.behaviour("reviewing", 1)
    assert reviewing.steps[0].arg == "default" and reviewing.exit_code == 4
    second = scenario.behaviour("reviewing", 2)
    assert second.steps[0].arg == "second" and second.exit_code == 4
    assert scenario.behaviour("rework", 7).steps[0].arg == "rework"
    assert parse_scenario(None).behaviour("implementing", 1).steps == ()


def test_yaml_and_json_scenarios_load(tmp_path: Path) -> None:
    yaml_file = tmp_path / "s.yaml"
    yaml_file.write_text(
        "# a comment\nsteps:\n  - message: hello\n  - usage: {input_tokens: 3}\nexit_code: 1\n"
    )
    assert load_scenario(yaml_file).default.exit_code == 1
    json_file = tmp_path / "s.json"
    json_file.write_text('{"steps": [{"message": "hi"}]}')
    assert len(load_scenario(json_file).default.steps) == 1
    broken = tmp_path / "broken.json"
    broken.write_text('{"steps": [}')
    with pytest.raises(ScenarioError, match=r"broken.json:1: invalid JSON"):
        load_scenario(broken)
    bad_yaml = tmp_path / "bad.yaml"
    bad_yaml.write_text("steps: [\n")
    with pytest.raises(ScenarioError, match="invalid YAML"):
        load_scenario(bad_yaml)
    with pytest.raises(ScenarioError, match="cannot be read"):
        load_scenario(tmp_path / "missing.yaml")


def _checkout(tmp_path: Path) -> Path:
    """A clone of a fresh origin with a committer identity, for the agent to work in."""
    origin = make_origin(tmp_path / "origin.git")
    work = tmp_path / "work"
    git(tmp_path, "clone", "--quiet", str(origin), str(work))
    git(work, "config", "user.name", "Agent")
    git(work, "config", "user.email", "agent@example.invalid")
    return work


def test_the_scripted_agent_plays_a_turn_in_a_checkout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = _checkout(tmp_path)
    scenario = tmp_path / "s.json"
    scenario.write_text(
        json.dumps(
            {
                "steps": [
                    {"session": "auto"},
                    {"write": {"path": "a.txt", "content": "one\n"}},
                    {"write": {"path": "a.txt", "content": "two\n", "append": True}},
                    {"commit": "add a"},
                    {"blocked": {"question": "Which port?", "reason": "missing_context"}},
                    {"result_file": {"name": "pr-description.md", "content": "Body"}},
                    {"noise": "plain text"},
                ]
            }
        )
    )
    monkeypatch.chdir(work)
    monkeypatch.setenv("ORCHESTRATOR_RUN_ID", "run-1")
    monkeypatch.delenv("ORCHESTRATOR_WORKSPACE", raising=False)
    monkeypatch.delenv("ORCHESTRATOR_RESULT_DIR", raising=False)
    monkeypatch.delenv("ORCHESTRATOR_SESSION_ID", raising=False)
    out, err = io.StringIO(), io.StringIO()
    code = run_scripted_agent(scenario, phase="implementing", attempt=1, out=out, err=err)
    assert code == 0, err.getvalue()
    lines = out.getvalue().splitlines()
    assert json.loads(lines[0]) == {"type": "session", "session_id": "sim-run-1"}
    assert lines[-1] == "plain text"
    assert (work / "a.txt").read_text() == "one\ntwo\n"
    assert git(work, "log", "-1", "--format=%s") == "add a"
    blocked = (work / ".orchestrator" / "blocked.md").read_text()
    assert blocked.startswith("<!-- orchestrator-blocked-reason: missing_context -->")
    assert (work / ".orchestrator" / "pr-description.md").read_text() == "Body"


def test_paths_contents_and_messages_expand_environment_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = _checkout(tmp_path)
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        "steps:\n"
        "  - write: {path: 'src/feature_${DEMO_ISSUE}.py', content: 'N = ${DEMO_ISSUE}  # $$x'}\n"
        "  - commit: 'Add feature ${DEMO_ISSUE} (${UNSET_IN_TEST})'\n"
    )
    monkeypatch.chdir(work)
    monkeypatch.setenv("DEMO_ISSUE", "7")
    monkeypatch.delenv("UNSET_IN_TEST", raising=False)
    monkeypatch.delenv("ORCHESTRATOR_WORKSPACE", raising=False)
    monkeypatch.delenv("ORCHESTRATOR_RESULT_DIR", raising=False)
    out, err = io.StringIO(), io.StringIO()
    assert run_scripted_agent(scenario, phase="implementing", attempt=1, out=out, err=err) == 0
    assert (work / "src" / "feature_7.py").read_text() == "N = 7  # $x"
    assert git(work, "log", "-1", "--format=%s") == "Add feature 7 (${UNSET_IN_TEST})"


def test_a_failing_git_step_is_a_crash_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ORCHESTRATOR_WORKSPACE", str(tmp_path))
    scenario = tmp_path / "s.json"
    scenario.write_text(json.dumps({"steps": [{"commit": "nothing here"}, {"message": "never"}]}))
    out, err = io.StringIO(), io.StringIO()
    code = run_scripted_agent(scenario, phase="implementing", attempt=1, out=out, err=err)
    assert code == 1
    assert "git add -A failed" in err.getvalue()
    assert out.getvalue() == ""


def test_a_bad_scenario_exits_with_a_distinct_code(tmp_path: Path) -> None:
    scenario = tmp_path / "s.json"
    scenario.write_text(json.dumps({"steps": [{"mesage": "x"}]}))
    err = io.StringIO()
    code = run_scripted_agent(scenario, phase="implementing", attempt=1, out=io.StringIO(), err=err)
    assert code == EXIT_SCENARIO_ERROR
    assert "did you mean 'message'" in err.getvalue()


def test_the_click_command_checks_a_scenario(tmp_path: Path) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text("steps:\n  - message: hi\nphases:\n  reviewing: {}\n")
    runner = CliRunner()
    ok = runner.invoke(agent_command, ["--scenario", str(scenario), "--check"])
    assert ok.exit_code == 0, ok.output
    assert "valid (1 default steps; phases: reviewing)" in ok.output
    scenario.write_text("steps:\n  - hang: maybe\n")
    bad = runner.invoke(agent_command, ["--scenario", str(scenario), "--check"])
    assert bad.exit_code == 1
    assert "steps[0].hang: must be true or false" in bad.output


def test_the_module_runs_as_a_program(tmp_path: Path) -> None:
    scenario = tmp_path / "s.json"
    scenario.write_text(json.dumps({"steps": [{"message": "hi"}], "exit_code": 3}))
    done = subprocess.run(
        [sys.executable, "-m", "orchestrator_sim.agent", "--scenario", str(scenario)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": "/usr/bin:/bin", "ORCHESTRATOR_PHASE": "reviewing"},
    )
    assert done.returncode == 3
    assert json.loads(done.stdout) == {"type": "message", "text": "hi"}
