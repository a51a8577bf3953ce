"""One agent turn end to end with the scripted agent and real git: I/O, environment, HEAD, hooks."""

from __future__ import annotations

import contextlib
import json
import os
import signal
from pathlib import Path

import pytest

from orchestrator.agent import (
    AgentEvent,
    AgentRunner,
    EventKind,
    HookFailed,
    HookSettings,
    IssueRef,
    TurnOutcome,
    TurnRequest,
    WorkspaceError,
)
from orchestrator.agent.result_files import ResultFile
from orchestrator.domain.agent_files.errors import ResultError, ResultErrorKind
from orchestrator.domain.phases import Phase
from orchestrator.domain.snapshot import OutcomeKind

from .conftest import TOKEN, Harness


def test_prompt_arrives_on_stdin_and_in_a_file(harness: Harness, tmp_path: Path) -> None:
    saved = tmp_path / "prompt-seen.txt"
    env_file = tmp_path / "env.json"
    prompt = "Implement issue #7.\nÜnïcødé and a second line.\n"
    result = harness.run(
        {"steps": [{"save_prompt": str(saved)}, {"dump_env": str(env_file)}]}, prompt=prompt
    )
    assert result.outcome is TurnOutcome.COMPLETED
    assert saved.read_text() == prompt
    env = json.loads(env_file.read_text())
    assert Path(env["ORCHESTRATOR_PROMPT_FILE"]).read_text() == prompt


def test_the_agent_gets_its_orchestrator_variables(harness: Harness, tmp_path: Path) -> None:
    env_file = tmp_path / "env.json"
    workspace = harness.workspace()
    result = harness.run(
        {"steps": [{"dump_env": str(env_file)}]},
        workspace=workspace,
        phase=Phase.REWORK,
        attempt=3,
        resume="sess-41",
    )
    env = json.loads(env_file.read_text())
    assert env["ORCHESTRATOR_PHASE"] == "rework"
    assert env["ORCHESTRATOR_ATTEMPT"] == "3"
    assert env["ORCHESTRATOR_ISSUE"] == "acme/widgets#7"
    assert env["ORCHESTRATOR_RUN_ID"] == result.run_id
    assert env["ORCHESTRATOR_WORKSPACE"] == str(workspace.path)
    assert env["ORCHESTRATOR_RESULT_DIR"] == str(workspace.result_dir)
    assert env["ORCHESTRATOR_BRANCH"] == workspace.branch
    assert env["ORCHESTRATOR_BASE_BRANCH"] == "main"
    assert env["ORCHESTRATOR_SESSION_ID"] == "sess-41"
    assert env["ORCHESTRATOR_HEAD_SHA"] == result.head_before.sha


def test_the_agent_environment_holds_no_token(harness: Harness, tmp_path: Path) -> None:
    env_file = tmp_path / "env.json"
    harness.base_env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "GITHUB_TOKEN": TOKEN,
        "GH_TOKEN": TOKEN,
        "SSH_AUTH_SOCK": "/tmp/agent.sock",
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "http.extraHeader",
        "GIT_CONFIG_VALUE_0": "Authorization: Basic abc",
        "NPM_TOKEN": "npm-secret-value",
        "DB_PASSWORD": "hunter22",
        "SIGNING_SECRET": "s3cr3t-signing",
        "ALLOWED_TOKEN": "fine-to-pass",
        "COMPANY_VAULT": "deny-listed",
        "MY_TRACKER_CREDENTIAL": f"prefix-{TOKEN}-suffix",
        "ORCHESTRATOR_SERVER_TOKEN": "daemon-api-token",
        "ORCHESTRATOR_DATABASE_URL": "postgresql://u:pw@db/orch",
        "OPENAI_API_KEY": "sk-for-the-agent",
        "LANG": "C.UTF-8",
    }
    harness.secrets = (TOKEN,)
    result = harness.run(
        {"steps": [{"dump_env": str(env_file)}]},
        env_deny=frozenset({"company_vault"}),
        env_allow=frozenset({"ALLOWED_TOKEN"}),
        extra_env={"ORCHESTRATOR_SCENARIO_NOTE": "extra", "AGENT_MODE": "ci"},
    )
    assert result.outcome is TurnOutcome.COMPLETED, result.message
    env = json.loads(env_file.read_text())
    for name in (
        "GITHUB_TOKEN",
        "GH_TOKEN",
        "SSH_AUTH_SOCK",
        "GIT_CONFIG_COUNT",
        "GIT_CONFIG_KEY_0",
        "GIT_CONFIG_VALUE_0",
        "NPM_TOKEN",
        "DB_PASSWORD",
        "SIGNING_SECRET",
        "COMPANY_VAULT",
        "MY_TRACKER_CREDENTIAL",
        "ORCHESTRATOR_SERVER_TOKEN",
        "ORCHESTRATOR_DATABASE_URL",
    ):
        assert name not in env, name
    assert TOKEN not in json.dumps(env)
    assert env["ALLOWED_TOKEN"] == "fine-to-pass"
    # Not on any allow-list: a model key reaches the agent only when the policy gives it.
    assert "OPENAI_API_KEY" not in env
    assert env["LANG"] == "C.UTF-8"
    assert env["AGENT_MODE"] == "ci"
    assert env["ORCHESTRATOR_SCENARIO_NOTE"] == "extra"


def test_malformed_lines_are_counted_never_fatal(harness: Harness) -> None:
    scenario = {
        "steps": [
            {"noise": "Starting up..."},
            {"message": "first"},
            {"noise": {"lines": 3, "text": "{not json"}},
            {"emit": {"type": "tool", "name": "bash"}},
            {"noise": "[1, 2, 3]"},
            {"huge_line": 5000},
            {"message": "last"},
        ]
    }
    result = harness.run(scenario, max_line_bytes=4096)
    assert result.outcome is TurnOutcome.COMPLETED, result.message
    assert result.events == 3
    assert result.malformed_lines == 1 + 3 + 1 + 1
    assert result.last_message == "last"


def test_events_reach_the_listener(harness: Harness) -> None:
    seen: list[tuple[str, AgentEvent]] = []
    agent = harness.agent(
        {
            "steps": [
                {"session": "abc-1"},
                {"message": "hello"},
                {"usage": {"input_tokens": 100, "cached_input_tokens": 40, "output_tokens": 7}},
                {"usage": {"input_tokens": 50, "output_tokens": 3}},
            ]
        }
    )
    runner = AgentRunner(
        agent,
        harness.hooks,
        harness.environment(agent),
        log_dir=harness.root / ".logs",
        on_event=lambda run_id, event: seen.append((run_id, event)),
    )
    result = runner.run(
        TurnRequest(workspace=harness.workspace(), prompt="go", phase=Phase.IMPLEMENTING)
    )
    assert [event.kind for _, event in seen] == [
        EventKind.SESSION,
        EventKind.MESSAGE,
        EventKind.USAGE,
        EventKind.USAGE,
    ]
    assert {run_id for run_id, _ in seen} == {result.run_id}
    assert result.session_id == "abc-1"
    assert result.usage.input_tokens == 150
    assert result.usage.cached_input_tokens == 40
    assert result.usage.output_tokens == 10


def test_a_crash_is_a_failed_turn_with_the_exit_code_and_stderr(harness: Harness) -> None:
    result = harness.run(
        {"steps": [{"message": "trying"}, {"crash": {"exit_code": 3, "message": "boom: no disk"}}]}
    )
    assert result.outcome is TurnOutcome.FAILED
    assert result.exit_code == 3
    assert "exited with code 3" in result.message
    assert "boom: no disk" in result.stderr_tail
    assert result.to_agent_outcome().kind is OutcomeKind.FAILED
    assert "boom: no disk" in result.stderr_log.read_text()
    assert result.stderr_log.is_relative_to(harness.root / ".logs")


def test_a_command_that_does_not_exist_fails_cleanly(harness: Harness) -> None:
    result = harness.run({}, command="definitely-not-an-agent-program --json")
    assert result.outcome is TurnOutcome.FAILED
    assert result.exit_code == 127
    assert "not found" in result.stderr_tail


def test_exit_zero_without_a_commit_is_visible_in_the_head_snapshot(harness: Harness) -> None:
    result = harness.run({"steps": [{"message": "all done, nothing to change"}]})
    assert result.outcome is TurnOutcome.COMPLETED
    assert not result.committed
    assert result.head_after.sha == result.head_before.sha
    assert result.new_commits == 0
    assert result.head_after.compared_to == "refs/remotes/origin/main"


def test_commits_are_seen_with_the_ahead_count(harness: Harness) -> None:
    workspace = harness.workspace()
    scenario = {
        "steps": [
            {"write": {"path": "src/widget.py", "content": "WIDGET = 1\n"}},
            {"commit": "Add the widget"},
            {"write": {"path": "tests/test_widget.py", "content": "def test(): pass\n"}},
            {"commit": {"message": "Test the widget"}},
            {"message": "committed twice"},
        ]
    }
    result = harness.run(scenario, workspace=workspace)
    assert result.outcome is TurnOutcome.COMPLETED, result.message
    assert result.committed
    assert result.new_commits == 2
    assert result.head_after.branch == workspace.branch
    # Continuation in the same workspace starts from there.
    again = harness.run({"steps": [{"message": "nothing more"}]}, workspace=workspace)
    assert again.head_before.sha == result.head_after.sha
    assert not again.committed
    assert again.new_commits == 2


def test_phase_and_attempt_pick_the_scenario_behaviour(harness: Harness, tmp_path: Path) -> None:
    scenario = {
        "steps": [{"message": "default"}],
        "phases": {
            "reviewing": {
                "steps": [{"message": "reviewing"}],
                "attempts": {"2": {"steps": [{"message": "second review"}], "exit_code": 5}},
            }
        },
    }
    workspace = harness.workspace()
    assert harness.run(scenario, workspace=workspace).last_message == "default"
    first = harness.run(scenario, workspace=workspace, phase=Phase.REVIEWING)
    assert first.last_message == "reviewing"
    second = harness.run(scenario, workspace=workspace, phase=Phase.REVIEWING, attempt=2)
    assert second.last_message == "second review"
    assert second.exit_code == 5


def test_results_are_read_and_parsed(harness: Harness) -> None:
    scenario = {
        "steps": [
            {"write": {"path": "a.txt", "content": "a\n"}},
            {"commit": "a"},
            {
                "review": {
                    "overview": "One problem.",
                    "findings": [
                        {
                            "severity": "P1",
                            "title": "Off by one",
                            "summary": "The loop skips the last item.",
                            "why_it_matters": "Data is lost.",
                            "suggested_fix": "Use <= instead of <.",
                            "location": "a.txt:1",
                        }
                    ],
                }
            },
            {
                "fix_summary": [
                    {"thread": "T1", "status": "fixed", "message": "ok", "commit": "HEAD"}
                ]
            },
            {"pr_description": "## Summary\nAdds a.\n"},
        ]
    }
    result = harness.run(scenario, phase=Phase.REVIEWING)
    assert result.outcome is TurnOutcome.COMPLETED, result.message
    review = result.results.review
    assert review is not None and review.head_sha == result.head_after.sha
    assert review.findings[0].title == "Off by one"
    assert result.results.fix_summary is not None
    assert result.results.fix_summary.entries[0].commit == result.head_after.sha
    assert result.results.pr_description is not None
    assert result.results.present == {
        ResultFile.REVIEW,
        ResultFile.FIX_SUMMARY,
        ResultFile.PR_DESCRIPTION,
    }
    recorded = result.to_agent_outcome()
    assert recorded.kind is OutcomeKind.SUCCEEDED
    assert recorded.phase is Phase.REVIEWING
    assert recorded.review == review
    assert recorded.committed
    assert recorded.blocked is None
    assert recorded.finished_at >= recorded.started_at


def test_a_review_of_a_stale_head_fails_the_turn(harness: Harness) -> None:
    scenario = {
        "steps": [
            {"write": {"path": "a.txt", "content": "a\n"}},
            {"commit": "a"},
            {"review": {"head": "stale", "findings": []}},
        ]
    }
    result = harness.run(scenario, phase=Phase.REVIEWING)
    assert result.outcome is TurnOutcome.INVALID_RESULTS
    assert "review.md:1: head: review is for" in result.message
    assert result.results.review is None
    recorded = result.to_agent_outcome()
    assert recorded.kind is OutcomeKind.SUCCEEDED
    assert isinstance(recorded.review, ResultError)
    assert recorded.review.kind is ResultErrorKind.HEAD_MISMATCH


def test_a_huge_result_file_fails_the_turn(harness: Harness) -> None:
    scenario = {"steps": [{"huge_file": {"path": ".orchestrator/review.md", "bytes": 300_000}}]}
    result = harness.run(scenario, result_max_bytes=100_000)
    assert result.outcome is TurnOutcome.INVALID_RESULTS
    assert "review.md: file is 300000 bytes, more than the limit of 100000" in result.message


def test_a_required_result_that_is_missing_fails_the_turn(harness: Harness) -> None:
    result = harness.run(
        {"steps": [{"message": "forgot the review"}]},
        phase=Phase.REVIEWING,
        required=frozenset({ResultFile.REVIEW}),
    )
    assert result.outcome is TurnOutcome.INVALID_RESULTS
    assert "review.md" in result.message and "did not write" in result.message


def test_results_of_an_earlier_turn_are_not_read_again(harness: Harness) -> None:
    workspace = harness.workspace()
    first = harness.run({"steps": [{"blocked": "Which database?"}]}, workspace=workspace)
    assert first.results.blocked is not None
    second = harness.run({"steps": [{"message": "carry on"}]}, workspace=workspace)
    assert second.results.blocked is None
    assert second.results.present == frozenset()


def test_a_planted_prompt_link_is_replaced_not_followed(harness: Harness, tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("original")
    workspace = harness.workspace()
    (workspace.result_dir / "prompt.md").symlink_to(victim)
    result = harness.run({"steps": [{"message": "hi"}]}, workspace=workspace, prompt="new prompt")
    assert result.outcome is TurnOutcome.COMPLETED
    assert victim.read_text() == "original"
    assert (workspace.result_dir / "prompt.md").read_text() == "new prompt"


# ------------------------------------------------------------------- hooks


def test_before_run_failure_aborts_the_attempt(harness: Harness, tmp_path: Path) -> None:
    marker = tmp_path / "agent-ran.json"
    after = tmp_path / "after-run.txt"
    harness.hooks = HookSettings(
        before_run="echo no toolchain >&2; exit 9", after_run=f"touch {after}"
    )
    result = harness.run({"steps": [{"dump_env": str(marker)}]})
    assert result.outcome is TurnOutcome.HOOK_FAILED
    assert "before_run hook exited with code 9" in result.message
    assert not marker.exists()
    assert after.exists()


def test_before_run_timeout_aborts_the_attempt(harness: Harness) -> None:
    harness.hooks = HookSettings(before_run="sleep 30", timeout_ms=300, grace_period_ms=100)
    result = harness.run({"steps": [{"message": "never"}]})
    assert result.outcome is TurnOutcome.HOOK_FAILED
    assert "timed out" in result.message
    assert result.events == 0


def test_after_run_runs_after_a_timeout_and_its_failure_is_ignored(
    harness: Harness, tmp_path: Path
) -> None:
    after = tmp_path / "after-run.txt"
    harness.hooks = HookSettings(after_run=f'echo "$ORCHESTRATOR_PHASE" > {after}; exit 1')
    timed_out = harness.run(
        {"steps": [{"hang": True}]}, first_event_timeout_ms=300, phase=Phase.REWORK
    )
    assert timed_out.outcome is TurnOutcome.SESSION_START_TIMEOUT
    assert after.read_text().strip() == "rework"
    after.unlink()
    fine = harness.run({"steps": [{"message": "ok"}]})
    assert fine.outcome is TurnOutcome.COMPLETED
    assert after.exists()


def test_after_run_can_commit_and_the_end_snapshot_sees_it(harness: Harness) -> None:
    harness.hooks = HookSettings(
        after_run="echo formatted > fmt.txt && git add fmt.txt && git commit -qm format"
    )
    result = harness.run({"steps": [{"message": "done"}]})
    assert result.committed
    assert result.new_commits == 1


def test_hook_output_is_truncated_for_the_log(harness: Harness) -> None:
    harness.hooks = HookSettings(
        after_create="head -c 100000 /dev/zero | tr '\\0' 'y'; exit 2", log_output_bytes=512
    )
    with pytest.raises(HookFailed) as caught:
        harness.workspace()
    output = caught.value.result.output
    assert len(output) < 700
    assert "bytes omitted" in output


# ------------------------------------------------------- hostile plain agents


def test_a_shell_agent_follows_the_contract_too(harness: Harness) -> None:
    command = (
        "read -r first_line; "
        'echo "{\\"type\\": \\"message\\", \\"text\\": \\"$first_line\\"}"; '
        'echo "$ORCHESTRATOR_PHASE" > "$ORCHESTRATOR_RESULT_DIR/pr-description.md"'
    )
    result = harness.run({}, command=command, prompt="Fix the widget\nmore text\n")
    assert result.outcome is TurnOutcome.COMPLETED, result.message
    assert result.last_message == "Fix the widget"
    assert result.results.pr_description is not None
    assert result.results.pr_description.body == "implementing"


def test_a_result_folder_swapped_for_a_link_is_refused(harness: Harness, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "pr-description.md").write_text("Injected body")
    command = (
        f"rm -rf .orchestrator && ln -s {elsewhere} .orchestrator && "
        'echo \'{"type": "message", "text": "swapped"}\''
    )
    result = harness.run({}, command=command)
    assert result.outcome is TurnOutcome.INVALID_RESULTS
    assert ".orchestrator" in result.message and "symbolic link" in result.message
    assert result.results.pr_description is None


def test_an_escaped_process_holding_stdout_does_not_hang_the_turn(
    harness: Harness, tmp_path: Path
) -> None:
    pid_file = tmp_path / "escaped.pid"
    command = (
        f"setsid sh -c 'echo $$ > {pid_file}; exec sleep 60' & "
        'sleep 0.2; echo \'{"type": "message", "text": "bye"}\''
    )
    try:
        result = harness.run({}, command=command)
        assert result.outcome is TurnOutcome.COMPLETED, result.message
        assert result.last_message == "bye"
    finally:
        if pid_file.exists():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid_file.read_text()), signal.SIGKILL)


def test_running_in_a_removed_workspace_is_refused(harness: Harness) -> None:
    workspace = harness.workspace()
    harness.manager().remove(IssueRef(workspace.identifier, 7))
    with pytest.raises(WorkspaceError, match="does not exist"):
        harness.run({"steps": []}, workspace=workspace)
