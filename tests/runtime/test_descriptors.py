"""The daemon's open-file limit: raised to the hard limit, a quarter of it for web connections."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from structlog.testing import capture_logs

from orchestrator.cli import cli
from orchestrator.daemon.daemon import Daemon
from orchestrator.daemon.descriptors import (
    DescriptorLimit,
    current_limit,
    expected_limit,
    web_connection_cap,
)
from orchestrator_sim.testing import running_world
from tests.e2e.harness import flow_for
from tests.workflow.conftest import ENV

RAISE = """
import json
from orchestrator.daemon.descriptors import raise_limit, current_limit
before = current_limit()
after = raise_limit()
print(json.dumps({"before": before.soft, "soft": after.soft, "hard": after.hard,
                  "started_with": after.started_with, "now": current_limit().soft,
                  "web_budget": after.web_budget}))
"""


def run_limited(soft: int, hard: int) -> dict[str, int]:
    prlimit = shutil.which("prlimit")
    if prlimit is None:
        pytest.fail("prlimit (util-linux) is needed to start a process with other limits")
    done = subprocess.run(
        [prlimit, f"--nofile={soft}:{hard}", "--", sys.executable, "-c", RAISE],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    return dict(json.loads(done.stdout))


def test_the_soft_limit_is_raised_to_the_hard_one() -> None:
    found = run_limited(1024, 4096)
    assert found == {
        "before": 1024,
        "soft": 4096,
        "hard": 4096,
        "started_with": 1024,
        "now": 4096,
        "web_budget": 1024,
    }


def test_a_soft_limit_already_at_the_hard_one_stays() -> None:
    found = run_limited(1024, 1024)
    assert (found["soft"], found["started_with"], found["web_budget"]) == (1024, 1024, 256)


@pytest.mark.parametrize(
    ("wanted", "soft", "serving"),
    [
        (256, 1024, 256),  # the default fits the usual 1,024 exactly
        (1000, 1024, 256),  # more than a quarter: clamped
        (1000, 65536, 1000),
        (256, 8, 2),
        (256, 2, 1),  # never none at all
    ],
)
def test_the_web_server_gets_a_quarter_of_the_descriptors_at_most(
    wanted: int, soft: int, serving: int
) -> None:
    limit = DescriptorLimit(soft=soft, hard=soft, started_with=soft)
    assert web_connection_cap(wanted, limit) == serving


def test_the_daemon_clamps_a_cap_beyond_its_share_and_says_so(tmp_path: Path) -> None:
    budget = current_limit().web_budget
    wanted = budget * 2
    with (
        running_world(tmp_path / "sim") as world,
        flow_for(
            tmp_path,
            world,
            policy={"server": {"port": 0, "max_connections": wanted}},
            start=False,
        ) as flow,
    ):
        daemon = Daemon(flow.policy_path, env=flow.env, port=0)
        daemon.start()
        try:
            with capture_logs() as logs:
                daemon.run_scheduler()
            clamped = [e for e in logs if e["event"] == "web_connections_clamped"]
            assert clamped and clamped[0]["max_connections"] == wanted
            assert clamped[0]["serving"] == budget
            started = [e for e in logs if e["event"] == "web_started"]
            assert started[0]["max_connections"] == budget
            assert httpx.get(f"{started[0]['url']}/healthz").status_code == 200
        finally:
            daemon.shutdown(grace_s=0)


def test_validate_says_when_the_cap_is_beyond_the_share_of_this_machine(tmp_path: Path) -> None:
    soft = expected_limit().soft
    # More than a quarter of what the daemon can raise its limit to (within the key's range).
    wanted = min(soft, 1_000_000)
    path = tmp_path / "WORKFLOW.md"
    path.write_text(
        f"---\ntracker:\n  repo: acme/widgets\nserver:\n  max_connections: {wanted}\n---\n"
    )
    result = CliRunner().invoke(cli, ["validate", "-q", str(path)], env=dict(ENV))
    assert result.exit_code == 0, result.output
    assert (
        f"server.max_connections {wanted} is more than a quarter of the {soft} descriptors "
        f"the daemon can have here: it holds {soft // 4} connections at most"
    ) in result.output
    path.write_text("---\ntracker:\n  repo: acme/widgets\n---\n")
    result = CliRunner().invoke(cli, ["validate", "--no-prompts", str(path)], env=dict(ENV))
    assert "the web server holds up to 256 connections (server.max_connections" in result.output
