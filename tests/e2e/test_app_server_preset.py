"""The ``codex-app-server`` preset takes a labelled issue to an open pull request.

The daemon runs with ``agent.preset: codex-app-server`` and, as its command, the
scripted agent speaking Codex's app-server JSON-RPC (``orchestrator sim agent
--protocol app-server``): the preset's client does the handshake, starts a thread
in the workspace, sends the prompt as a turn and reads the notifications while the
scripted turn commits and writes the pull request description.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from orchestrator_sim.testing import SimWorld

from .harness import SIM_AGENT, agent_home, default_scenario, flow_for

ROOT = Path(__file__).resolve().parents[2]


def test_the_app_server_preset_opens_a_pull_request(tmp_path: Path, world: SimWorld) -> None:
    scenario = agent_home(tmp_path) / "scenario.json"
    policy = {
        "agent": {
            "preset": "codex-app-server",
            "command": f"{SIM_AGENT} --scenario {shlex.quote(str(scenario))} --protocol app-server",
            # The scripted agent of this checkout (the agent's environment drops PYTHONPATH).
            "env": {"PYTHONPATH": str(ROOT)},
        },
        "review": {"enabled": False},
    }
    with flow_for(tmp_path, world, scenario=default_scenario(), policy=policy) as flow:
        number = flow.open_issue("Add the feature")
        flow.run_to_phase(number, "waiting_for_checks")
        pr = flow.pr_number(number)
        pull = flow.pull(pr)
        runs = flow.d.db.runs.for_issue(1)

    assert pull["state"] == "open"
    assert pull["body"].startswith("## Summary\n\nAdds the feature.")
    assert f"Closes #{number}" in pull["body"]
    commits = flow.rest("GET", f"/repos/{world.repo}/pulls/{pr}/commits")
    assert [c["commit"]["message"] for c in commits] == ["Add the feature"]
    (run,) = runs
    assert run.outcome == "completed", run.error
    assert run.session_id == f"sim-thread-{run.run_id}"
    assert (run.input_tokens, run.output_tokens) == (100, 20)
    # The prompt went in the turn/start request: the scripted turn saw the daemon's prompt.
    assert run.prompt
