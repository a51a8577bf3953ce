"""A question the agent asks blocks a Linear issue; a trusted person's reply on Linear resumes it.

The daemon posts the question as a comment on the Linear issue. A comment by an
active member (not a guest, not an app user, not the API key's own user)
written after the issue was blocked resumes the flow, and its text reaches the
next turn as a trusted reply; anyone else's words reach it only as untrusted
context.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from orchestrator_sim.linear.client import LinearControl
from orchestrator_sim.testing import SimWorld
from tests.e2e.harness import default_scenario, flow_for
from tests.e2e.test_linear_approval import _policy, linear_people
from tests.e2e.test_linear_flow import TEAM

QUESTION = "Should deleted items answer 404 or 410?"
MARKER = "<!-- orchestrator-blocked-question -->"


@pytest.fixture
def linear(world: SimWorld) -> LinearControl:
    return linear_people(world)


def _questions(linear: LinearControl, identifier: str) -> list[dict[str, Any]]:
    return [c for c in linear.issue(identifier)["comments"] if MARKER in c["body"]]


def test_a_members_reply_on_the_linear_issue_resumes_it_and_reaches_the_agent(
    tmp_path: Path, world: SimWorld, linear: LinearControl
) -> None:
    scenario = {"steps": [{"blocked": {"question": QUESTION, "reason": "missing_context"}}]}
    with flow_for(tmp_path, world, scenario=scenario, policy=_policy(linear)) as flow:
        identifier = str(linear.create_issue(TEAM, "Add the feature", state="Todo")["identifier"])
        number = int(identifier.rpartition("-")[2])
        flow.run_to_phase(number, "blocked")
        flow.idle_ticks(2)
        (question,) = _questions(linear, identifier)
        assert QUESTION in question["body"] and question["user"] == "bot"

        flow.scenario_path.write_text(json.dumps(default_scenario()))
        # Linear's times are compared by the second: reply in a later one than the block.
        time.sleep(1.0)
        # The key's own user (the daemon, or an agent holding the key), a guest and an app
        # user write: nobody who may answer.
        for who in ("bot", "gus", "deploy"):
            linear.comment(identifier, who, f"{who} thinks 404.")
        flow.idle_ticks(3)
        assert flow.phase(number) == "blocked"

        linear.comment(identifier, "alice", "Answer 410, please.")
        flow.run_to_phase(number, "implementing")
        flow.step()  # the implementing turn, with the replies in its context
        context_files = list((tmp_path / "workspaces").glob("*/.orchestrator/context.json"))
        context = json.loads(context_files[0].read_text())
        assert [r["body"] for r in context["human_replies"]] == ["Answer 410, please."]
        assert context["human_replies"][0]["author"] == "linear:alice"
        # The guest's words are context marked untrusted; the key's own and the app's
        # comments are not people's replies at all.
        assert [r["body"] for r in context["untrusted_replies"]] == ["gus thinks 404."]

        flow.run_to_phase(number, "waiting_for_checks")
        assert len(_questions(linear, identifier)) == 1
