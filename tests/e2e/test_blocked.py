"""An agent's question blocks the issue, is posted once, and a human's reply resumes the flow."""

from __future__ import annotations

import json
import time
from pathlib import Path

from orchestrator_sim.testing import SimWorld

from .harness import default_scenario, flow_for

QUESTION = "Should deleted items answer 404 or 410?"


def test_an_agent_question_is_posted_once_and_a_reply_resumes(
    tmp_path: Path, world: SimWorld
) -> None:
    scenario = {"steps": [{"blocked": {"question": QUESTION, "reason": "missing_context"}}]}
    with flow_for(tmp_path, world, scenario=scenario) as flow:
        number = flow.open_issue()
        flow.run_to_phase(number, "blocked")
        flow.idle_ticks(2)

        record = flow.record(number)
        assert record is not None and record.waiting_reason is not None
        assert record.waiting_reason.value == "missing_context"
        questions = flow.bot_comments(number, "<!-- orchestrator-blocked-question -->")
        assert len(questions) == 1
        assert QUESTION in questions[0]["body"]
        assert flow.pulls() == []

        flow.scenario_path.write_text(json.dumps(default_scenario()))
        # GitHub stamps comments in whole seconds: reply in a later second than the block.
        time.sleep(1.0)
        world.control.comment(world.repo, number, "Answer 410, please.", as_user=flow.human.login)
        flow.run_to_phase(number, "implementing")
        flow.step()  # the implementing turn, with the reply in its context
        workspaces = tmp_path / "workspaces"
        context_files = list(workspaces.glob("acme_widgets_1-*/.orchestrator/context.json"))
        context = json.loads(context_files[0].read_text())
        assert [reply["body"] for reply in context["human_replies"]] == ["Answer 410, please."]
        assert context["expected"] == ["pr-description.md"]

        flow.run_to_phase(number, "waiting_for_checks")
        assert len(flow.bot_comments(number, "<!-- orchestrator-blocked-question -->")) == 1
        assert len(flow.pulls()) == 1
