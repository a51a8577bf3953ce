"""An operator follows one issue through a real ``orchestrator run`` by its log keys alone.

The daemon runs as its own process with ``--log-format json`` against the
emulator and the scripted agent, from the label to the merge; its whole log is
then read back and held to the stable keys: ``issue`` is ``owner/repo#N`` on
every line about an issue, ``repo`` is ``owner/name``, every line names the
replica, and each write is one ``side_effect`` line.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from orchestrator.logs import read_json_log
from orchestrator_sim.testing import SimWorld

from .harness import Flow, default_scenario, policy_document, write_policy, write_scenario

REPLICA = "replica-logs"
ISSUE_SHAPE = re.compile(r"^[\w.-]+/[\w.-]+#\d+$")
REPO_SHAPE = re.compile(r"^[\w.-]+/[\w.-]+$")


def run_to_merge(flow: Flow, world: SimWorld, number: int, log: Path) -> None:
    """Start the daemon, keep CI green until the issue's pull request is merged, stop it."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
        "HOME": str(flow.tmp),
        **flow.env,
    }
    greened: set[str] = set()
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "from orchestrator.cli import main; main()",
                "--log-format",
                "json",
                "run",
                str(flow.policy_path),
                "--port",
                "0",
                "--replica-id",
                REPLICA,
            ],
            env=env,
            cwd=flow.tmp,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + 120
            while flow.issue(number)["state"] != "closed":
                assert proc.poll() is None, log.read_text()[-3000:]
                assert time.monotonic() < deadline, "the issue was never merged and closed"
                for pr in flow.pulls():
                    head = str(pr["head"]["sha"])
                    if pr["state"] == "open" and head not in greened:
                        world.control.check_run(
                            world.repo, sha=head, name="ci", conclusion="success"
                        )
                        greened.add(head)
                time.sleep(0.1)
            # The closing tick's own lines are written before the next one starts.
            time.sleep(1.0)
            proc.terminate()
            assert proc.wait(30) == 0, log.read_text()[-3000:]
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)


@pytest.mark.slow
def test_one_issue_is_followed_from_label_to_merge_by_its_issue_key(
    tmp_path: Path, world: SimWorld
) -> None:
    scenario_path = write_scenario(tmp_path, default_scenario())
    document = policy_document(
        tmp_path,
        world,
        scenario_path,
        "merge",
        {"polling": {"interval_ms": 250}, "merge": {"require_human_approval": False}},
    )
    policy_path = write_policy(tmp_path / "WORKFLOW.md", document)
    env = {"E2E_ENDPOINT": world.url, "E2E_TOKEN": world.bot.token}
    flow = Flow(world, tmp_path, policy_path, scenario_path, env)
    number = flow.open_issue()
    log = tmp_path / "daemon.log"
    run_to_merge(flow, world, number, log)

    lines = read_json_log(log)
    key = f"{world.repo}#{number}"
    trail = [line for line in lines if line.get("issue") == key]
    events = [str(line["event"]) for line in trail]
    writes = {str(line["kind"]) for line in trail if line["event"] == "side_effect"}

    # Filtering on the issue finds every step, in order.
    steps = ["dispatch", "turn_claimed", "agent_start", "agent_exit", "turn_recorded"]
    assert all(step in events for step in steps), events
    assert [e for e in events if e in steps][: len(steps)] == steps, events
    assert {"create_pr", "merge_pr", "close_issue"} <= writes, writes
    assert events.index("dispatch") < events.index("side_effect")
    assert [line for line in trail if line["event"] == "side_effect"][-1]["kind"] in (
        "merge_pr",
        "close_issue",
        "upsert_workpad",
        "set_labels",
    )

    # The dispatch names the phase the issue is in.
    dispatches = [line for line in trail if line["event"] == "dispatch"]
    assert all(line.get("phase") for line in dispatches), dispatches

    # Every line names the replica: the daemon's, the web server's, the scheduler's.
    assert lines and all(line.get("replica") == REPLICA for line in lines), [
        line for line in lines if line.get("replica") != REPLICA
    ][:5]
    assert any(str(line.get("logger", "")).startswith("uvicorn") for line in lines)

    # No issue is a bare number, no repository a URL.
    issues = {line["issue"] for line in lines if "issue" in line}
    assert all(isinstance(v, str) and ISSUE_SHAPE.match(v) for v in issues), issues
    repos = {line["repo"] for line in lines if "repo" in line}
    assert all(isinstance(v, str) and REPO_SHAPE.match(v) for v in repos), repos

    # Each write is logged once: one line per idempotency key, none from the gateway,
    # and as many lines as GitHub saw writes.
    effects = [line for line in lines if line["event"] == "side_effect"]
    keys = [str(line["key"]) for line in effects]
    assert len(keys) == len(set(keys)), keys
    assert all(line["logger"] == "orchestrator.effects.gate" for line in effects)
    assert all({"kind", "issue", "outcome", "mode", "key"} <= line.keys() for line in effects), (
        effects
    )
    assert all(line["outcome"] == "done" for line in effects)
    bot = [w for w in world.control.writes() if w["login"] == world.bot.login]
    created = [w for w in bot if w["method"] == "POST" and str(w["path"]).endswith("/pulls")]
    merged = [w for w in bot if w["method"] == "PUT" and str(w["path"]).endswith("/merge")]
    assert [w["status"] for w in created] == [201]
    assert [w["status"] for w in merged] == [200]
    assert [line["kind"] for line in effects].count("create_pr") == 1
    assert [line["kind"] for line in effects].count("merge_pr") == 1
    assert next(line for line in effects if line["kind"] == "create_pr").get("pr") == int(
        flow.pulls()[0]["number"]
    )
