"""A stand-in for the daemon in tests/agent/test_orphans.py: one agent turn, then wait to be killed.

Run as ``python orphan_parent.py CONFIG``. CONFIG (JSON) names the workspace,
the registry folder, the log folder, the agent's command and, optionally, the
sandbox. Like the daemon, the turn runs in a thread of a pool through the real
runner, and the main thread only waits; the test kills this process with SIGKILL.
"""

from __future__ import annotations

import json
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from orchestrator.agent import (
    AgentEnvironment,
    AgentRunner,
    AgentSettings,
    HookSettings,
    SandboxMode,
    SandboxSettings,
    TurnRequest,
    Workspace,
)
from orchestrator.agent.registry import ProcessRegistry
from orchestrator.domain.phases import Phase


def main(config_path: str) -> None:
    config = json.loads(Path(config_path).read_text())
    sandbox = None
    if config.get("sandbox"):
        box = config["sandbox"]
        sandbox = SandboxSettings(
            mode=SandboxMode.BWRAP,
            home_root=Path(box["home_root"]),
            workspace_root=Path(box["workspace_root"]),
            hidden=tuple(Path(p) for p in box["hidden"]),
        )
    settings = AgentSettings(
        command=config["command"], stall_timeout_ms=0, turn_timeout_ms=0, sandbox=sandbox
    )
    runner = AgentRunner(
        settings,
        HookSettings(sandbox=sandbox),
        AgentEnvironment(settings),
        log_dir=Path(config["logs"]),
        registry=ProcessRegistry(Path(config["registry"])),
    )
    space = config["workspace"]
    workspace = Workspace(**{**space, "path": Path(space["path"])})
    request = TurnRequest(workspace=workspace, prompt="Wait.", phase=Phase.IMPLEMENTING)
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agent")
    pool.submit(runner.run, request)
    threading.Event().wait()


if __name__ == "__main__":
    main(sys.argv[1])
