"""A PostgreSQL outage in the middle of an agent turn: two log lines, no traceback, nothing stuck.

The daemon reaches PostgreSQL through a TCP relay the test can cut: every open
connection is dropped and new ones are refused, as when the server restarts
or the network goes away. The agent's turn ends during the outage; its result
is held and applied when the database returns, and the issue goes on.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from orchestrator.store import migrate
from orchestrator_sim.testing import SimWorld
from tests.e2e.harness import Flow, default_scenario, policy_document, write_policy, write_scenario
from tests.replicas.relay import Relay, relayed

ORCHESTRATOR = str(Path(sys.executable).parent / "orchestrator")
OUTAGE_S = 8.0


@pytest.fixture
def relay(pg_url: str) -> Iterator[tuple[Relay, str]]:
    with relayed(pg_url) as pair:
        yield pair


def events(log: Path, name: str | None = None) -> list[dict[str, Any]]:
    found = []
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("{"):
            entry = json.loads(line)
            if name is None or entry.get("event") == name:
                found.append(entry)
    return found


def wait_for(condition: Any, what: str, log: Path, timeout_s: float = 90.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            tail = [e for e in events(log) if e.get("event") != "tick"][-25:]
            pytest.fail(f"never happened: {what}\n" + "\n".join(map(str, tail)))
        time.sleep(0.1)


@pytest.mark.slow
def test_a_database_outage_during_a_turn_holds_its_result_and_logs_two_lines(
    tmp_path: Path, world: SimWorld, pg_url: str, relay: tuple[Relay, str]
) -> None:
    cuttable, relayed_url = relay
    migrate.upgrade(pg_url)
    scenario = default_scenario()
    scenario["steps"].insert(1, {"sleep_ms": 3000})
    scenario_path = write_scenario(tmp_path, scenario)
    document = policy_document(
        tmp_path,
        world,
        scenario_path,
        "mutate",
        {"polling": {"interval_ms": 500}, "database": {"url": relayed_url}},
    )
    policy_path = write_policy(tmp_path / "WORKFLOW.md", document)
    flow = Flow(world, tmp_path, policy_path, scenario_path, {})
    log = tmp_path / "daemon.log"
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "E2E_ENDPOINT": world.url,
        "E2E_TOKEN": world.bot.token,
    }
    argv = [ORCHESTRATOR, "--log-format", "json", "run", str(policy_path), "--port", "0"]
    with log.open("ab") as out:
        proc = subprocess.Popen([*argv, "--lease-seconds", "30"], env=env, stdout=out, stderr=out)
    try:
        flow.open_issue()
        wait_for(lambda: bool(events(log, "agent_start")), "the agent starts", log)
        cuttable.cut()
        # The agent ends (3 s) while the database is away.
        wait_for(lambda: bool(events(log, "turn_held")), "the turn is held", log)
        web = events(log, "web_started")[0]["url"]
        ready = httpx.get(f"{web}/readyz", timeout=10)
        assert ready.status_code == 503
        assert any(p.startswith("database unreachable") for p in ready.json()["problems"])
        assert httpx.get(f"{web}/healthz", timeout=10).status_code == 200
        time.sleep(max(0.0, OUTAGE_S - 3.0))
        cuttable.restore()
        wait_for(lambda: bool(events(log, "database_reachable")), "the database is back", log)
        wait_for(lambda: bool(flow.pulls()), "the pull request", log)
        assert proc.poll() is None
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
    down = events(log, "database_unreachable")
    up = events(log, "database_reachable")
    assert len(down) == 1 and len(up) == 1, (down, up)
    assert up[0]["failed_attempts"] >= 1 and up[0]["outage_s"] > 0
    assert len(down[0]["error"]) <= 300
    text = log.read_text(errors="replace")
    assert "Traceback" not in text
    assert not events(log, "turn_job_failed") and not events(log, "tick_failed")
    assert [e["outcome"] for e in events(log, "turn_applied")] == ["succeeded"]
    assert len(flow.pulls()) == 1
