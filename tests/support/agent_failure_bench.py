"""Time from a labelled issue to ``blocked`` when a real CLI's model API fails (make bench).

For each CLI (Codex, Claude Code, Pi, installed by ``make agents``) and each
failure (401, 500, no network), the daemon runs on the emulator with the
preset as shipped against the model-API stand-in, with
``orchestration.max_failed_attempts: 2``, a 1 s backoff cap and a 30 s stall
limit, until the issue is blocked. It prints the measured wall time, each
turn's duration, the reason the workpad names, and what the default schedule
(5 attempts, backoffs of 10, 20, 40 and 80 s, a 300 s stall limit) would take
with the same turn durations. Figures only: nothing here passes or fails.

Run from the repository root: ``python -m tests.support.agent_failure_bench``.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from orchestrator.logs import configure_logging
from orchestrator_sim.testing import running_world
from tests.e2e.harness import agent_home, flow_for, merge_sections
from tests.e2e.test_real_agents import agent_policy
from tests.support import agent_clis
from tests.support.model_api import HttpError, ModelApi

FAILURES = ("401", "500", "no network")
DEFAULT_BACKOFFS_S = (10, 20, 40, 80)
DEFAULT_ATTEMPTS = 5
DEFAULT_STALL_S = 300.0
BENCH_STALL_S = 30.0


def _policy(cli: str, api: ModelApi, home: Path) -> dict[str, Any]:
    policy = agent_policy(cli, api, home)
    policy = merge_sections(
        policy,
        {
            "agent": {"max_retry_backoff_ms": 1_000, "stall_timeout_ms": int(BENCH_STALL_S * 1000)},
            "orchestration": {"max_failed_attempts": 2},
        },
    )
    return policy


def measure(cli: str, failure: str, folder: Path) -> dict[str, Any]:
    """One scenario: seconds to blocked, each turn's seconds, the reason."""
    home = agent_home(folder)
    home.mkdir(parents=True, exist_ok=True)
    status = {"401": 401, "500": 500}.get(failure)
    api = ModelApi.failing(HttpError(status)) if status else ModelApi()
    api.start()
    policy = _policy(cli, api, home)
    if status is None:
        api.stop()  # nothing listens: every connection is refused
    try:
        with running_world(folder / "sim") as world, flow_for(folder, world, policy=policy) as flow:
            started = time.monotonic()
            number = flow.open_issue("Add the feature")
            flow.run_to_phase(number, "blocked", max_ticks=400)
            elapsed = time.monotonic() - started
            runs = flow.d.db.runs.for_issue(1)
    finally:
        if status is not None:
            api.stop()
    turns = [(r.ended_at - r.started_at).total_seconds() for r in reversed(runs) if r.ended_at]
    reason = runs[0].error if runs else None
    return {"elapsed": elapsed, "turns": turns, "reason": reason}


def projected(turns: list[float], stalled: bool) -> float:
    """The same turns under the default schedule (a stalled turn lasts the default limit)."""
    typical = max(turns) if turns else 0.0
    if stalled:
        typical = typical - BENCH_STALL_S + DEFAULT_STALL_S
    return typical * DEFAULT_ATTEMPTS + sum(DEFAULT_BACKOFFS_S)


def main(argv: list[str] | None = None) -> int:
    del argv
    configure_logging(level="error", stream=sys.stderr)
    missing = [cli for cli in agent_clis.VERSIONS if not agent_clis.installed(cli)]
    if missing:
        print(f"skipped: {', '.join(missing)} not installed (run `make agents`)")
        return 0
    print(
        f"{'cli':<7} {'failure':<11} {'blocked after':>13}  {'turns (s)':<18} "
        f"{'default schedule':>16}  reason"
    )
    for cli in ("codex", "claude", "pi"):
        for failure in FAILURES:
            with tempfile.TemporaryDirectory(prefix="agent-bench-") as tmp:
                found = measure(cli, failure, Path(tmp))
            turns = found["turns"]
            reason = " ".join(str(found["reason"] or "").split())[:110]
            stalled = reason.startswith("stalled")
            print(
                f"{cli:<7} {failure:<11} {found['elapsed']:>11.1f} s  "
                f"{', '.join(f'{t:.1f}' for t in turns):<18} "
                f"{projected(turns, stalled):>14.0f} s  {reason}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
