"""``orchestrator sim linear`` against a running emulator."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from orchestrator.cli import cli
from orchestrator_sim.linear.client import LinearControl
from orchestrator_sim.server import SimServer


@pytest.fixture
def server(tmp_path: Path) -> Iterator[SimServer]:
    with SimServer(tmp_path / "sim") as running:
        yield running


def _run(server: SimServer, *args: str, ok: bool = True) -> Any:
    result = CliRunner().invoke(cli, ["sim", "linear", "--url", server.url, *args])
    if ok:
        assert result.exit_code == 0, result.output
        return json.loads(result.output)
    assert result.exit_code != 0
    return result.output


def test_a_workspace_built_and_played_from_the_command_line(server: SimServer) -> None:
    user = _run(
        server, "setup", "user", "bot", "--api-key", "lin_api_secret", "--git-username", "bot"
    )
    assert user["has_api_key"] is True
    assert "lin_api_secret" not in json.dumps(user)
    _run(server, "setup", "user", "alice")
    guest = _run(server, "setup", "user", "gus", "--kind", "guest")
    assert (guest["guest"], guest["app"], guest["active"]) == (True, False, True)
    team = _run(
        server,
        "setup",
        "team",
        "ENG",
        "--name",
        "Engineering",
        "--state",
        "Todo=unstarted",
        "--state",
        "Doing=started",
        "--state",
        "Done=completed",
    )
    assert [s["name"] for s in team["states"]] == ["Todo", "Doing", "Done"]
    _run(server, "setup", "label", "agent")
    _run(server, "setup", "project", "Website", "--slug-id", "web-1")
    created = _run(
        server,
        "issue",
        "create",
        "--team",
        "ENG",
        "--title",
        "Fix login",
        "--label",
        "agent",
        "--project",
        "web-1",
    )
    assert (created["identifier"], created["state"], created["labels"]) == (
        "ENG-1",
        "Todo",
        ["agent"],
    )
    assert _run(server, "issue", "state", "ENG-1", "Doing", "--as", "alice")["state"] == "Doing"
    _run(server, "setup", "label", "blocked")
    added = _run(server, "label", "add", "ENG-1", "blocked", "--as", "gus")
    assert added["labels"] == ["agent", "blocked"]
    assert _run(server, "label", "remove", "ENG-1", "agent")["labels"] == ["blocked"]
    assert [(e["actor"], e["to_state"], e["added_labels"]) for e in added["history"]] == [
        ("alice", "Doing", []),
        ("gus", None, ["blocked"]),
    ]
    _run(server, "comment", "ENG-1", "Please hurry", "--as", "alice")
    shown = _run(server, "show", "ENG-1")
    assert [(c["user"], c["body"]) for c in shown["comments"]] == [("alice", "Please hurry")]
    summary = _run(server, "state")
    assert summary["teams"][0]["states"][1] == {
        **summary["teams"][0]["states"][1],
        "issues": ["ENG-1"],
    }
    assert LinearControl(server.url).issue("ENG-1")["project"] == "Website"


def test_refusals_are_shown_as_errors(server: SimServer) -> None:
    assert "no issue 'ENG-9'" in _run(server, "show", "ENG-9", ok=False)
    assert "is not NAME=TYPE" in _run(server, "setup", "team", "ENG", "--state", "Todo", ok=False)
    _run(server, "setup", "team", "ENG")
    message = _run(server, "issue", "state", "ENG-1", "Nowhere", ok=False)
    assert "no issue 'ENG-1'" in message


HELP_COMMANDS = [
    ["show"],
    ["state"],
    ["issue", "create"],
    ["issue", "state"],
    ["label", "add"],
    ["label", "remove"],
    ["comment"],
    ["setup", "user"],
    ["setup", "team"],
    ["setup", "label"],
    ["setup", "project"],
]


@pytest.mark.parametrize("command", HELP_COMMANDS, ids=" ".join)
def test_every_command_has_help(command: list[str]) -> None:
    result = CliRunner().invoke(cli, ["sim", "linear", *command, "--help"])
    assert result.exit_code == 0, result.output
    assert f"Usage: cli sim linear {' '.join(command)}" in result.output


def test_the_linear_group_is_reached_through_the_real_entry_point() -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    result = subprocess.run(
        [sys.executable, "-m", "orchestrator", "sim", "linear", "--help"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    for command in ("comment", "issue", "label", "setup", "show", "state"):
        assert f"  {command} " in result.stdout, command
