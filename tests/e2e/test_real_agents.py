"""The real Codex (exec and app-server), Claude Code and Pi CLIs take an issue to a pull request.

Each test runs the daemon on the emulator with the CLI's preset as shipped (only
the model provider and its key added, through ``agent.extra_args`` and
``agent.env``), in the product's sandbox where this machine has one. The model
is the local stand-in (tests/support/model_api.py) scripted to reply with a
shell call that edits a file and commits, then one that writes
``.orchestrator/pr-description.md``. The pinned CLIs come from ``make agents``;
under ``make test`` (``ORCHESTRATOR_REQUIRE_AGENTS=1``) a missing CLI fails the
test instead of skipping it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from orchestrator_sim.testing import SimWorld
from tests.support import agent_clis
from tests.support.model_api import HttpError, ModelApi, Reply, Shell, Text, WriteFile

from .harness import agent_home, flow_for, merge_sections

SCRIPT: list[Reply] = [
    Shell(
        "mkdir -p src && printf 'FEATURE = 1\\n' >> src/feature.py && git add -A "
        "&& git commit -qm 'Add the feature'"
    ),
    WriteFile(".orchestrator/pr-description.md", "## Summary\n\nAdds src/feature.py.\n"),
    Text("Added src/feature.py and committed it."),
]


def _installed(cli: str) -> None:
    if agent_clis.installed(cli):
        return
    message = f"{agent_clis.binary(cli)} is missing (run `make agents`)"
    if os.environ.get("ORCHESTRATOR_REQUIRE_AGENTS") == "1":
        pytest.fail(message)
    pytest.skip(message)


def agent_policy(cli: str, api: ModelApi, home: Path) -> dict[str, Any]:
    """The preset as shipped, pointed at the stand-in: provider flags and keys only."""
    agent: dict[str, Any] = {
        "preset": cli,
        "command": str(agent_clis.binary(cli)),
        "stall_timeout_ms": 60_000,
        "turn_timeout_ms": 150_000,
        "max_concurrent_agents": 1,
    }
    if cli == "codex-app-server":
        invocation = agent_clis.codex_app_server(api.base_url, home)
        # As a Symphony codex.command: the program and `app-server`; the -c settings after.
        agent["command"] = f"{agent_clis.binary('codex')} app-server"
        agent["extra_args"] = invocation.argv[2:]
        agent["env"] = invocation.env
    elif cli == "codex":
        invocation = agent_clis.codex(api.base_url, home, "")
        # Everything after the preset's own flags (exec --json --sandbox ...).
        agent["extra_args"] = invocation.argv[invocation.argv.index("--model") :]
        agent["env"] = invocation.env
    elif cli == "claude":
        invocation = agent_clis.claude(api.base_url, "", max_retries=2)
        agent["env"] = invocation.env
    else:
        invocation = agent_clis.pi(api.base_url, home, "")
        agent["extra_args"] = ["--provider", agent_clis.PI_PROVIDER]
        agent["env"] = invocation.env
    return {"agent": agent, "review": {"enabled": False}}


@pytest.mark.timeout(280)
@pytest.mark.parametrize("cli", ["codex", "codex-app-server", "claude", "pi"])
def test_the_real_cli_opens_a_pull_request_through_the_daemon(
    cli: str, tmp_path: Path, world: SimWorld
) -> None:
    _installed(cli.removesuffix("-app-server"))
    home = agent_home(tmp_path)
    home.mkdir(parents=True, exist_ok=True)
    with ModelApi(SCRIPT) as api:
        policy = agent_policy(cli, api, home)
        with flow_for(tmp_path, world, policy=policy) as flow:
            number = flow.open_issue("Add the feature")
            flow.run_to_phase(number, "waiting_for_checks", max_ticks=60)
            pr = flow.pr_number(number)
            pull = flow.pull(pr)
            runs = flow.d.db.runs.for_issue(1)
        assert api.remaining == [], f"{cli} did not ask for every scripted reply"

    assert pull["state"] == "open"
    assert pull["body"].startswith("## Summary\n\nAdds src/feature.py.")
    assert f"Closes #{number}" in pull["body"]
    commits = flow.rest("GET", f"/repos/{world.repo}/pulls/{pr}/commits")
    assert [c["commit"]["message"] for c in commits] == ["Add the feature"]
    (run,) = runs
    assert run.outcome == "completed", run.error
    assert run.session_id, "the CLI's session id is recorded"
    assert run.output_tokens and run.output_tokens > 0
    if cli == "claude":
        assert run.cost_usd is not None and run.cost_usd > 0
    # The daemon's prompt reached the model once (pi would join stdin and an @file).
    assert run.prompt
    opening = json.dumps(run.prompt.strip().splitlines()[0][:120])[1:-1]
    first = api.main_requests()[0]
    assert json.dumps(first.body).count(opening) == 1


FAILING: dict[str, Any] = {
    "agent": {"max_retry_backoff_ms": 1_000},
    "orchestration": {"max_failed_attempts": 2},
}


@pytest.mark.timeout(280)
@pytest.mark.parametrize(
    ("cli", "reason"),
    [
        ("codex", "auth: unexpected status 401 Unauthorized"),
        ("codex-app-server", "codex-app-server: auth: unexpected status 401 Unauthorized"),
        ("claude", "Invalid API key"),
        ("pi", "pi: 401"),
    ],
)
def test_a_real_cli_refused_by_its_model_api_blocks_the_issue_naming_why(
    cli: str, reason: str, tmp_path: Path, world: SimWorld
) -> None:
    _installed(cli.removesuffix("-app-server"))
    home = agent_home(tmp_path)
    home.mkdir(parents=True, exist_ok=True)
    with ModelApi.failing(HttpError(401)) as api:
        policy = merge_sections(agent_policy(cli, api, home), FAILING)
        with flow_for(tmp_path, world, policy=policy) as flow:
            number = flow.open_issue("Add the feature")
            flow.run_to_phase(number, "blocked", max_ticks=80)
            flow.idle_ticks(1)
            runs = flow.d.db.runs.for_issue(1)
            (workpad,) = flow.workpads(number)
            (comment,) = flow.bot_comments(number, "<!-- orchestrator-blocked-question -->")
    assert len(runs) == 2 and all(r.outcome == "failed" for r in runs)
    assert all(reason in (r.error or "") for r in runs), [r.error for r in runs]
    assert "**Why:** 2 failed turns:" in workpad["body"]
    assert reason in comment["body"]


@pytest.mark.timeout(280)
def test_codex_without_network_stalls_on_the_watchdog_and_blocks_naming_the_network(
    tmp_path: Path, world: SimWorld
) -> None:
    _installed("codex")
    home = agent_home(tmp_path)
    home.mkdir(parents=True, exist_ok=True)
    api = ModelApi()
    api.start()
    policy = agent_policy("codex", api, home)
    api.stop()  # nothing listens: every connection is refused
    policy = merge_sections(policy, FAILING)
    policy["agent"]["stall_timeout_ms"] = 5_000
    with flow_for(tmp_path, world, policy=policy) as flow:
        number = flow.open_issue("Add the feature")
        flow.run_to_phase(number, "blocked", max_ticks=80)
        runs = flow.d.db.runs.for_issue(1)
    assert len(runs) == 2
    for run in runs:
        assert run.outcome == "stalled", run.error
        assert run.error is not None and "network: Reconnecting... waiting for network" in run.error
        assert run.ended_at is not None
        # The watchdog, not the 150 s turn limit, ended it.
        assert (run.ended_at - run.started_at).total_seconds() < 30
