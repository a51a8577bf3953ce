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
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support import agent_clis
from tests.support.agent_clis import Invocation
from tests.support.model_api import ModelApi, Reply, Shell, Text, WriteFile

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
