"""A real ``orchestrator run`` killed with SIGKILL mid-turn leaves no agent running for long.

Without the sandbox the agent's leader dies with the daemon (parent death
signal) and the daemon's next start ends what it had started; in the sandbox
everything dies with the daemon at once. The agent is the scripted one behind
a background ``sleep`` of the same process group, which only the registry
can find once the leader is gone.
"""

from __future__ import annotations

import json
import shlex
import signal
from pathlib import Path
from typing import Any

import pytest

from orchestrator.agent.reaper import GroupEntry, read_process
from orchestrator.agent.registry import REGISTRY_DIR
from orchestrator_sim.testing import SimWorld

from ..agent.test_orphans import sleepers
from ..agent.test_sandbox import require_bwrap, sleep_token, wait_for
from .harness import SIM_AGENT, default_scenario, flow_for, write_scenario
from .test_kill_restart import Runner, agents_of, running


def events(log: Path, name: str) -> list[dict[str, Any]]:
    found = []
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("{"):
            entry = json.loads(line)
            if entry.get("event") == name:
                found.append(entry)
    return found


def alive(pid: int, start_time: int) -> bool:
    found = read_process(pid)
    return found is not None and found.alive and found.start_time == start_time


def recorded(folder: Path) -> list[GroupEntry]:
    return [GroupEntry.from_json(p.read_text()) for p in folder.glob("*.json")]


def restart_stopped(runner: Runner, log: Path) -> None:
    """Start the daemon again with the kill switch on, so it ends orphans but starts no agent."""
    (runner.flow.tmp / "STOP").write_text("stop\n")
    before = len(events(log, "daemon_started"))
    runner.start()
    assert wait_for(lambda: len(events(log, "daemon_started")) > before, timeout_s=60), (
        "the daemon did not start again"
    )


@pytest.mark.slow
@pytest.mark.parametrize("sandbox", ["none", "bwrap"])
def test_a_killed_daemon_leaves_no_agent_running(
    tmp_path: Path, world: SimWorld, sandbox: str
) -> None:
    if sandbox == "bwrap":
        require_bwrap()
    token = sleep_token()
    scenario = default_scenario()
    scenario["steps"].insert(1, {"sleep_ms": 20_000})
    scenario_path = shlex.quote(str(write_scenario(tmp_path, scenario)))
    command = f"sleep {token} </dev/null >/dev/null 2>&1 & {SIM_AGENT} --scenario {scenario_path}"
    policy = {"agent": {"sandbox": sandbox, "command": command}, "polling": {"interval_ms": 250}}
    with flow_for(
        tmp_path, world, mode="mutate", scenario=scenario, policy=policy, start=False
    ) as flow:
        flow.open_issue()
        folder = tmp_path / REGISTRY_DIR
        log = tmp_path / "daemon.log"
        with running(flow, tmp_path / "orchestrator.db") as runner:
            runner.start()
            assert wait_for(
                lambda: sleepers(token) and agents_of(flow.scenario_path) and recorded(folder),
                timeout_s=60,
            ), "the agent never started"
            (entry,) = recorded(folder)
            sleeping = sleepers(token)
            started = [*sleeping, *agents_of(flow.scenario_path)]
            assert entry.pid in started
            processes = {pid: info.start_time for pid in started if (info := read_process(pid))}
            assert runner.proc is not None
            runner.proc.send_signal(signal.SIGKILL)
            runner.proc.wait(10)

            assert wait_for(lambda: not alive(entry.pid, entry.start_time)), "the leader lived on"
            if sandbox == "bwrap":
                # The sandbox's PID namespace went down with bubblewrap: nothing is left to end.
                assert wait_for(lambda: not any(alive(*p) for p in processes.items()))
            restart_stopped(runner, log)
            assert wait_for(lambda: not any(alive(*p) for p in processes.items()))
            assert wait_for(lambda: not recorded(folder))
            ended = events(log, "agent_orphans_ended")
            if sandbox == "none":
                # The background sleep outlived the leader (its parent death signal ended
                # that one; the scripted agent may end itself once its output pipe is gone).
                (line,) = ended
                assert set(sleeping) <= set(line["pids"])
                assert line["count"] == len(line["pids"])
            else:
                assert ended == []
            assert runner.stop() == 0
