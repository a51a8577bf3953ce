"""`orchestrator demo` runs to three merged pull requests, and its metrics move."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from orchestrator_sim.demo.run import Demo

pytestmark = pytest.mark.slow


def test_the_demo_command_merges_three_pull_requests(tmp_path: Path) -> None:
    # As installed from a wheel: without the test contracts (`make contracts`).
    without_contracts = {
        **os.environ,
        "ORCHESTRATOR_GRAPHQL_SCHEMA": str(tmp_path / "no-contracts" / "schema.json"),
    }
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from orchestrator.cli import main; main()",
            "demo",
            "--timeout",
            "150",
            "--dir",
            str(tmp_path / "demo"),
        ],
        capture_output=True,
        text=True,
        timeout=240,
        stdin=subprocess.DEVNULL,
        env=without_contracts,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "make contracts" not in done.stdout + done.stderr
    assert "graphql_schema" not in done.stdout + done.stderr
    out = done.stdout
    assert "dashboard: http://127.0.0.1:" in out
    assert "merged and closed: 3 of 3 issues" in out
    assert "pull requests: 3" in out
    assert "rework cycles: 1" in out
    assert "waiting_for_checks -> rework  (checks failing: tests)" in out
    assert out.count("merging -> done") == 3


def _samples(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = httpx.get(f"{url}/metrics", timeout=10).text
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_metrics_move_during_the_demo(tmp_path: Path) -> None:
    run = Demo(tmp_path / "demo", port=0, say=lambda line: None)
    try:
        url = run.start()
        assert url is not None
        before = _samples(url)
        deadline = time.monotonic() + 150
        while not run.finished():
            assert time.monotonic() < deadline, "the demo did not finish"
            time.sleep(0.2)
        after = _samples(url)
    finally:
        run.stop()
    assert after[("orchestrator_ticks_total", ())] > before.get(("orchestrator_ticks_total", ()), 0)
    # 3 implementing + 3 reviewing + 1 rework (CI failed once) + 1 review of the fix.
    assert after[("orchestrator_dispatches_total", ())] >= 8
    assert after[("orchestrator_issues", (("phase", "done"),))] == 3
    assert (
        after[("orchestrator_side_effects_total", (("kind", "merge_pr"), ("status", "done")))] == 3
    )
    assert after[("orchestrator_github_units_spent_total", ())] > 0
    outcomes = {k: v for k, v in after.items() if k[0] == "orchestrator_agent_runs_total"}
    assert sum(outcomes.values()) >= 7
