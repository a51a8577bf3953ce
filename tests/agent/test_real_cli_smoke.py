"""The real coding-agent CLIs against the local model-API stand-in: each one commits.

Skipped unless `make agents` installed the CLI into .cache/agents. Each test starts the
stand-in (tests/support/model_api.py) with a script of three replies (a shell command that
commits, a write of the PR description, a closing text), runs the CLI with its verified
command line (tests/support/agent_clis.py) in a throw-away git repository, and checks the
commit, the file, the JSON lines on stdout and what the stand-in was asked.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Callable
from pathlib import Path

import pytest

from orchestrator.agent import AgentPreset, AgentSettings, TurnOutcome, TurnRequest
from orchestrator.domain.phases import Phase
from tests.support import agent_clis
from tests.support.agent_clis import Invocation
from tests.support.model_api import ModelApi, Reply, Shell, Text, WriteFile

from .conftest import Harness

PROMPT = "Add src/feature.py, commit it, and write the pull request description."
SCRIPT: list[Reply] = [
    Shell(
        "mkdir -p src && printf 'x = 1\\n' >> src/feature.py && git add -A "
        "&& git commit -qm 'Add feature'"
    ),
    WriteFile(".orchestrator/pr-description.md", "## Summary\n\nAdds src/feature.py.\n"),
    Text("Added src/feature.py and committed it."),
]

Build = Callable[[str, Path], Invocation]

CLIS: dict[str, Build] = {
    "codex": lambda base_url, home: agent_clis.codex(base_url, home, PROMPT),
    "claude": lambda base_url, home: agent_clis.claude(base_url, PROMPT, max_retries=2),
    "pi": lambda base_url, home: agent_clis.pi(base_url, home, PROMPT),
}

#: The last JSON line's type when the run ended well.
LAST_EVENT = {"codex": "turn.completed", "claude": "result", "pi": "agent_end"}


def _prompt_seen(body: object) -> bool:
    return PROMPT in json.dumps(body)


@pytest.mark.slow
@pytest.mark.timeout(180)
@pytest.mark.parametrize("cli", sorted(CLIS))
def test_the_cli_runs_the_stand_ins_tool_calls_and_commits(cli: str, tmp_path: Path) -> None:
    if not agent_clis.installed(cli):
        message = f"{agent_clis.binary(cli)} is missing (run `make agents`)"
        if os.environ.get("ORCHESTRATOR_REQUIRE_AGENTS") == "1":
            pytest.fail(message)
        pytest.skip(message)
    repo = agent_clis.make_repo(tmp_path / "repo")
    home = tmp_path / "home"
    with ModelApi(SCRIPT) as api:
        invocation = CLIS[cli](api.base_url, home)
        run = agent_clis.run(invocation, repo, home=home, timeout=120)

    assert run.returncode == 0, f"{cli} failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    assert agent_clis.commits(repo) == ["Add feature", "Initial commit"]
    assert (repo / "src" / "feature.py").read_text() == "x = 1\n"
    assert (repo / ".orchestrator" / "pr-description.md").read_text().startswith("## Summary")

    events = run.events()
    assert events, f"{cli} printed no JSON lines: {run.stdout[:2000]}"
    assert len(events) == len(run.stdout.splitlines())
    assert events[-1]["type"] == LAST_EVENT[cli]
    if cli == "claude":
        assert events[-1]["subtype"] == "success"
        assert events[-1]["is_error"] is False
        assert events[-1]["permission_denials"] == []

    # Every reply of the script was asked for, by the main loop, with the prompt in it.
    assert api.remaining == []
    main = api.main_requests()
    assert len(main) == len(SCRIPT)
    assert all(_prompt_seen(r.body) for r in main)


def _app_server_settings(base_url: str, home: Path) -> AgentSettings:
    if not agent_clis.installed("codex"):
        message = f"{agent_clis.binary('codex')} is missing (run `make agents`)"
        if os.environ.get("ORCHESTRATOR_REQUIRE_AGENTS") == "1":
            pytest.fail(message)
        pytest.skip(message)
    invocation = agent_clis.codex_app_server(base_url, home)
    return AgentSettings(
        preset=AgentPreset.CODEX_APP_SERVER,
        # As Symphony's codex.command: the program and `app-server`, the rest as flags.
        command=" ".join(shlex.quote(word) for word in invocation.argv[:2]),
        extra_args=tuple(invocation.argv[2:]),
        extra_env=invocation.env,
        stall_timeout_ms=60_000,
        turn_timeout_ms=120_000,
    )


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_codex_app_server_commits_through_the_runner(harness: Harness, tmp_path: Path) -> None:
    """``codex app-server`` driven by the preset's client (orchestrator/agent/app_server.py)."""
    workspace = harness.workspace()
    with ModelApi(SCRIPT) as api:
        settings = _app_server_settings(api.base_url, tmp_path / "home")
        result = harness.runner(settings).run(
            TurnRequest(workspace=workspace, prompt=PROMPT, phase=Phase.IMPLEMENTING)
        )

    assert result.outcome is TurnOutcome.COMPLETED, f"{result.message}\n{result.stderr_tail}"
    # Once its input ended the server exited by itself, its thread saved.
    assert result.exit_code == 0
    assert result.committed and result.new_commits == 1
    assert agent_clis.commits(workspace.path)[0] == "Add feature"
    assert (workspace.path / "src" / "feature.py").read_text() == "x = 1\n"
    assert result.results.pr_description is not None
    assert result.session_id is not None and result.usage.output_tokens > 0
    assert result.last_message == "Added src/feature.py and committed it."
    assert api.remaining == []
    assert all(_prompt_seen(r.body) for r in api.main_requests())


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_codex_app_server_resumes_its_thread_in_a_new_process(
    harness: Harness, tmp_path: Path
) -> None:
    workspace = harness.workspace()
    more = Shell("printf 'y = 2\\n' > src/more.py && git add -A && git commit -qm 'Add more'")
    script: list[Reply] = [*SCRIPT, more, Text("Added src/more.py.")]
    with ModelApi(script) as api:
        runner = harness.runner(_app_server_settings(api.base_url, tmp_path / "home"))
        first = runner.run(
            TurnRequest(workspace=workspace, prompt=PROMPT, phase=Phase.IMPLEMENTING)
        )
        second = runner.run(
            TurnRequest(
                workspace=workspace,
                prompt="Also add src/more.py and commit it.",
                phase=Phase.IMPLEMENTING,
                resume_session_id=first.session_id,
                usage_baseline=first.usage,
            )
        )
    assert first.outcome is TurnOutcome.COMPLETED, first.message
    assert second.outcome is TurnOutcome.COMPLETED, second.message
    assert second.session_id == first.session_id
    assert agent_clis.commits(workspace.path)[:2] == ["Add more", "Add feature"]
    # The stand-in reports the same usage per reply: 3 replies, then 2.
    assert first.usage.output_tokens == 3 * second.usage.output_tokens // 2 > 0
    # The resumed thread carried the first turn's history to the model.
    last = api.main_requests()[-1]
    assert _prompt_seen(last.body)
