"""The daemon and the agents' sandbox: refusing to start, warnings everywhere the mode shows.

"bubblewrap does not work here" is played by pointing ``ORCHESTRATOR_BWRAP``
at a program that does not exist, in the daemon's environment.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from orchestrator.agent import probe_bwrap
from orchestrator.agent.sandbox import BWRAP_ENV
from orchestrator.cli import cli
from orchestrator.daemon.daemon import Daemon, DaemonError
from orchestrator.web.server import start_web
from orchestrator_sim.testing import SimWorld

from .harness import flow_for, policy_document, write_policy


def without_bwrap(tmp: Path) -> dict[str, str]:
    return {BWRAP_ENV: str(tmp / "no-such-bwrap")}


@contextmanager
def served(daemon: Daemon) -> Iterator[str]:
    handle = start_web(
        "127.0.0.1", 0, db=daemon.db, status=daemon.status, control=daemon, token=None
    )
    try:
        yield handle.url
    finally:
        handle.stop()


def test_merge_mode_refuses_to_start_when_auto_cannot_sandbox(
    tmp_path: Path, world: SimWorld
) -> None:
    with flow_for(tmp_path, world, mode="merge", start=False) as flow:
        flow.env.update(without_bwrap(tmp_path))
        with pytest.raises(DaemonError) as refused:
            flow.start()
    message = str(refused.value)
    assert "agent.sandbox is auto and bubblewrap does not work here" in message
    assert "set agent.sandbox: none" in message and "agent.allow_unsandboxed: true" in message


def test_bwrap_that_does_not_work_is_a_start_up_error(tmp_path: Path, world: SimWorld) -> None:
    policy = {"agent": {"sandbox": "bwrap"}}
    with flow_for(tmp_path, world, mode="mutate", policy=policy, start=False) as flow:
        flow.env.update(without_bwrap(tmp_path))
        with pytest.raises(DaemonError, match=r"agent\.sandbox is bwrap but bubblewrap"):
            flow.start()


def test_allow_unsandboxed_starts_and_is_shown_as_a_warning_everywhere(
    tmp_path: Path, world: SimWorld
) -> None:
    policy = {"agent": {"allow_unsandboxed": True}}
    with flow_for(tmp_path, world, mode="merge", policy=policy, start=False) as flow:
        flow.env.update(without_bwrap(tmp_path))
        daemon = flow.start()
        sandbox = daemon.status().sandbox
        assert sandbox is not None and (sandbox.requested, sandbox.mode) == ("auto", "none")
        assert sandbox.warnings[0].startswith("agent.allow_unsandboxed is true")
        with served(daemon) as url:
            state = httpx.get(f"{url}/api/v1/state", timeout=10).json()["daemon"]
            page = httpx.get(f"{url}/", timeout=10).text
            status = CliRunner().invoke(cli, ["status", "--url", url])
        assert state["rollout_mode"] == "merge"
        assert state["agent_sandbox"] == "none"
        assert "no-such-bwrap not found" in state["agent_sandbox_reason"]
        assert state["sandbox_warnings"] == list(sandbox.warnings)
        assert "agent sandbox: <b" in page
        assert '<span class="fail">agent.allow_unsandboxed is true' in page
        assert status.exit_code == 0, status.output
        assert "agent sandbox: none (auto: " in status.output
        assert "warning: agent.allow_unsandboxed is true" in status.output
        # The agents still work, unsandboxed: the flow reaches a pull request.
        flow.run_to_phase(flow.open_issue("Add a feature"), "waiting_for_checks")


def test_a_reload_into_merge_mode_without_a_sandbox_is_not_applied(
    tmp_path: Path, world: SimWorld
) -> None:
    with flow_for(tmp_path, world, mode="mutate", start=False) as flow:
        flow.env.update(without_bwrap(tmp_path))
        daemon = flow.start()
        sandbox = daemon.status().sandbox
        assert sandbox is not None and sandbox.mode == "none" and sandbox.warnings
        document = policy_document(tmp_path, world, flow.scenario_path, "merge", {})
        write_policy(flow.policy_path, document)
        daemon.reload_policy()
        daemon.tick()
        # The file was read (it is valid), but the daemon keeps the policy it runs.
        assert daemon.parts.repo_set.source.current.policy.rollout.mode.value == "merge"
        assert daemon.view.flow.rollout_mode.value == "mutate"


def test_by_default_agents_run_in_bubblewrap(tmp_path: Path, world: SimWorld) -> None:
    verdict = probe_bwrap()
    if not verdict.usable:
        pytest.skip(f"bubblewrap does not work here: {verdict.reason}")
    with flow_for(tmp_path, world, mode="merge") as flow:
        sandbox = flow.d.status().sandbox
        assert sandbox is not None
        assert (sandbox.requested, sandbox.mode, sandbox.warnings) == ("auto", "bwrap", ())
