"""The runner puts agents and hooks in the sandbox: a real turn, real bubblewrap, real processes."""

from __future__ import annotations

import os
import threading

import pytest

from orchestrator.agent import (
    AgentSettings,
    HookSettings,
    SandboxMode,
    SandboxSettings,
    TurnOutcome,
    TurnRequest,
)
from orchestrator.agent.hook_result import HookName
from orchestrator.agent.hooks import run_hook
from orchestrator.domain.phases import Phase

from .conftest import Harness
from .test_sandbox import processes_with, require_bwrap, sleep_token, wait_for

EVENT = """echo '{"type": "message", "text": "working"}'"""


@pytest.fixture
def sandbox(harness: Harness) -> SandboxSettings:
    require_bwrap()
    state = harness.tmp / "state"
    state.mkdir()
    (state / "orchestrator.db").write_text("the daemon's secret\n")
    return SandboxSettings(
        mode=SandboxMode.BWRAP,
        home_root=state / "agent-homes",
        workspace_root=harness.root,
        hidden=(state,),
    )


def agent(command: str, sandbox: SandboxSettings | None) -> AgentSettings:
    return AgentSettings(
        command=command,
        stall_timeout_ms=20_000,
        turn_timeout_ms=30_000,
        grace_period_ms=2_000,
        sandbox=sandbox,
    )


def test_an_agent_turn_runs_in_the_sandbox(harness: Harness, sandbox: SandboxSettings) -> None:
    workspace = harness.workspace()
    other = harness.workspace("acme/widgets#8", "Another")
    command = (
        f"cat {harness.tmp}/state/orchestrator.db > seen.txt 2>&1; "
        f"ls -A {harness.root} > listing.txt; "
        f"test -e /proc/{os.getpid()} && echo daemon-visible >> seen.txt; "
        'echo "$HOME" > home.txt; '
        f"{EVENT}"
    )
    settings = agent(command, sandbox)
    request = TurnRequest(workspace=workspace, prompt="go", phase=Phase.IMPLEMENTING, attempt=1)
    result = harness.runner(settings).run(request)
    assert result.outcome is TurnOutcome.COMPLETED, result.message
    seen = (workspace.path / "seen.txt").read_text()
    assert "secret" not in seen and "daemon-visible" not in seen
    assert (workspace.path / "listing.txt").read_text().split() == [workspace.key]
    assert other.path.name not in (workspace.path / "listing.txt").read_text()
    home = harness.tmp / "state" / "agent-homes" / workspace.key
    assert (workspace.path / "home.txt").read_text().strip() == str(home)


def test_a_cancelled_turn_takes_the_setsid_grandchild_along(
    harness: Harness, sandbox: SandboxSettings
) -> None:
    token = sleep_token()
    command = f"setsid sleep {token} </dev/null >/dev/null 2>&1 & {EVENT}; sleep 120"
    turn = harness.runner(agent(command, sandbox)).prepare(
        TurnRequest(workspace=harness.workspace(), prompt="go", phase=Phase.IMPLEMENTING, attempt=1)
    )
    outcome: list[TurnOutcome] = []
    thread = threading.Thread(target=lambda: outcome.append(turn.run().outcome))
    thread.start()
    try:
        assert wait_for(lambda: bool(processes_with(token)))
        turn.cancel("kill switch")
        thread.join(30)
    finally:
        for pid in processes_with(token):
            os.kill(pid, 9)
    assert outcome == [TurnOutcome.CANCELLED]
    assert wait_for(lambda: not processes_with(token), 5), "the setsid grandchild survived"


def test_a_finished_turn_takes_the_setsid_grandchild_along(
    harness: Harness, sandbox: SandboxSettings
) -> None:
    workspace = harness.workspace()
    request = TurnRequest(workspace=workspace, prompt="go", phase=Phase.IMPLEMENTING, attempt=1)
    boxed = sleep_token()
    command = f"setsid sleep {boxed} </dev/null >/dev/null 2>&1 & {EVENT}"
    result = harness.runner(agent(command, sandbox)).run(request)
    assert result.outcome is TurnOutcome.COMPLETED, result.message
    assert wait_for(lambda: not processes_with(boxed), 5), "the setsid grandchild survived"

    # Without the sandbox the same grandchild escapes the session sweep (docs/agent.md).
    loose = sleep_token()
    # The turn ends only once the grandchild has its own session (it is otherwise still in
    # the turn's process group, which the runner ends).
    started = workspace.path / "loose-started"
    command = (
        f"setsid sh -c 'touch {started}; exec sleep {loose}' </dev/null >/dev/null 2>&1 & "
        f"while [ ! -e {started} ]; do sleep 0.02; done; {EVENT}"
    )
    try:
        harness.runner(agent(command, None)).run(request)
        assert processes_with(loose)
    finally:
        for pid in processes_with(loose):
            os.kill(pid, 9)


def test_hooks_run_in_the_same_sandbox(harness: Harness, sandbox: SandboxSettings) -> None:
    workspace = harness.workspace()
    outside = harness.tmp / "outside.txt"
    outside.write_text("original\n")
    hooks = HookSettings(
        before_run=(
            f"cat {harness.tmp}/state/orchestrator.db > hook.txt 2>/dev/null || "
            f"echo hidden > hook.txt; echo changed > {outside} || true"
        ),
        sandbox=sandbox,
    )
    result = run_hook(HookName.BEFORE_RUN, hooks, cwd=workspace.path, env={"PATH": "/usr/bin:/bin"})
    assert result is not None and result.ok, result
    assert (workspace.path / "hook.txt").read_text() == "hidden\n"
    assert outside.read_text() == "original\n"


def test_an_after_create_run_first_works_in_the_sandbox(
    harness: Harness, sandbox: SandboxSettings
) -> None:
    # It runs in the staging folder under the workspace root, which the sandbox
    # hides: that folder alone comes back, writable.
    outside = harness.tmp / "outside.txt"
    outside.write_text("original\n")
    harness.hooks = HookSettings(
        after_create=f"echo made > made.txt; echo changed > {outside} || true",
        after_create_in_empty_dir=True,
        sandbox=sandbox,
    )
    workspace = harness.workspace()
    assert (workspace.path / "made.txt").read_text() == "made\n"
    assert (workspace.path / "README.md").read_text() == "# widgets\n"
    assert outside.read_text() == "original\n"
