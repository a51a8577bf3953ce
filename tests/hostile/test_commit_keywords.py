"""An agent's commit messages try to close an issue of another repository; nothing closes it.

The daemon tracks two repositories of one owner (``tracker.repos``), acme/widgets
and acme/gadgets, and works an issue of acme/widgets. The scripted agent writes
``Closes acme/gadgets#1`` (and the forms the body cleaning once missed: markdown
emphasis, a no-break space, a ``www.github.com`` URL, a URL on the configured
host) in its commits and its description. GitHub closes an issue named by a
closing keyword in any commit that reaches the default branch, in every
repository the merger can write, and so does the emulator.

- squash: the merge commit says the cleaned title and body, not the agent's
  commit messages; acme/gadgets#1 stays open.
- merge and rebase: the agent's commits would land as they are, so the push of
  a commit naming another issue is refused, a located failure of the turn whose
  reason reaches the next turn; the agent rewords the commit and the flow goes on
  to the merge, with nothing foreign on main.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from orchestrator_sim.closing import closing_references
from orchestrator_sim.testing import SimWorld, running_world
from tests.e2e.harness import Flow, agent_home, default_scenario, flow_for
from tests.e2e.test_several_repos import SECOND, add_repo

NBSP = "\u00a0"
REWORDED = "Add the feature\n\nRefs acme/gadgets#1"


@pytest.fixture
def world(tmp_path: Path) -> Iterator[SimWorld]:
    with running_world(tmp_path / "sim") as running:
        yield running


def foreign_forms(world: SimWorld) -> str:
    """Every way of naming acme/gadgets#1 with a closing keyword the test sends."""
    return (
        "Closes acme/gadgets#1\n"
        "**Closes** acme/gadgets#1\n"
        f"Fixes{NBSP}acme/gadgets#1\n"
        "Resolves https://www.github.com/acme/gadgets/issues/1\n"
        f"Closes {world.url}/acme/gadgets/issues/1"
    )


def main_messages(world: SimWorld) -> list[str]:
    """The message of every commit on acme/widgets' main, newest first."""
    owner, name = world.repo.split("/")
    path = world.server.emulator.git.path_for(owner, name)
    done = subprocess.run(
        ["git", "log", "--format=%B%x00", "main"],
        cwd=path,
        capture_output=True,
        text=True,
        check=True,
    )
    return [m.strip() for m in done.stdout.split("\0") if m.strip()]


def foreign_references(text: str, number: int) -> list[str]:
    """What ``text`` closes, read as the emulated GitHub reads it, except widgets#number."""
    return [
        f"{ref.repo or 'acme/widgets'}#{ref.number}"
        for ref in closing_references(text)
        if (ref.repo or "acme/widgets").lower() != "acme/widgets" or ref.number != number
    ]


def open_gadget(world: SimWorld) -> int:
    add_repo(world, SECOND)
    return world.control.create_issue(
        SECOND, "A gadget's bug", as_user=world.human.login, body="Someone else's issue."
    )


def gadget_state(flow: Flow, number: int) -> tuple[str, list[str]]:
    issue = flow.rest("GET", f"/repos/{SECOND}/issues/{number}")
    events = flow.rest("GET", f"/repos/{SECOND}/issues/{number}/events")
    return str(issue["state"]), [str(e["event"]) for e in events]


def merge_to_done(flow: Flow, number: int) -> int:
    pr = flow.checks_pass(number, max_ticks=60)
    flow.approve(number)
    flow.run_to_phase(number, "done")
    assert flow.pull(pr)["merged"]
    return pr


def policy(method: str) -> dict[str, Any]:
    return {
        "tracker": {"repos": [SECOND]},
        "merge": {"method": method},
        "agent": {"max_retry_backoff_ms": 1000},
        "orchestration": {"max_failed_attempts": 3},
    }


def test_a_squash_says_the_cleaned_description_and_closes_no_other_issue(
    tmp_path: Path, world: SimWorld
) -> None:
    gadget = open_gadget(world)
    scenario = default_scenario()
    scenario["steps"] = [
        {"session": "auto"},
        {"write": {"path": "src/feature.py", "content": "FEATURE = 1\n", "append": True}},
        {"commit": f"Add the feature\n\n{foreign_forms(world)}"},
        {"pr_description": f"## Summary\n\nAdds the feature.\n\n{foreign_forms(world)}"},
    ]
    with flow_for(tmp_path, world, scenario=scenario, policy=policy("squash")) as flow:
        number = flow.open_issue()
        pr = merge_to_done(flow, number)

        squash = main_messages(world)[0]
        assert squash.startswith(f"Add the feature (#{pr})")
        assert closing_references(squash) == [], "the squash closes nothing itself"
        assert f"Refs #{number}" in squash
        body = str(flow.pull(pr)["body"])
        assert foreign_references(body, number) == [] and "Refs acme/gadgets#1" in body
        assert gadget_state(flow, gadget) == ("open", [])
        assert flow.issue(number)["state"] == "closed"


@pytest.mark.parametrize("method", ["merge", "rebase"])
def test_a_commit_naming_another_issue_is_refused_until_the_agent_rewords_it(
    tmp_path: Path, world: SimWorld, method: str
) -> None:
    gadget = open_gadget(world)
    seen = agent_home(tmp_path) / "second-attempt-prompt.md"
    scenario = default_scenario()
    scenario["steps"] = [
        {"session": "auto"},
        {"write": {"path": "src/feature.py", "content": "FEATURE = 1\n", "append": True}},
        {"commit": f"Add the feature\n\n{foreign_forms(world)}"},
        {"pr_description": "## Summary\n\nAdds the feature."},
    ]
    scenario["phases"]["implementing"] = {
        "steps": scenario["steps"],
        "attempts": {
            "2": {
                "steps": [
                    {"session": "auto"},
                    {"save_prompt": str(seen)},
                    {"commit": {"message": REWORDED, "amend": True}},
                    {"pr_description": "## Summary\n\nAdds the feature."},
                ]
            }
        },
    }
    with flow_for(tmp_path, world, scenario=scenario, policy=policy(method)) as flow:
        number = flow.open_issue()
        flow.step()

        record = flow.record(number)
        assert record is not None and record.last_outcome is not None
        refused = record.last_outcome
        assert refused.kind.value == "push_refused" and record.attempt == 1
        assert refused.head_after is not None
        reason = refused.reason or ""
        assert f"refusing to push {refused.head_after[:12]}" in reason
        assert f"the commit {refused.head_after[:12]} says 'Closes acme/gadgets#1'" in reason
        assert "only acme/widgets#1 may be closed" in reason
        assert flow.pulls() == [], "nothing was pushed, no pull request opened"
        assert record.phase.value == "implementing"

        pr = merge_to_done(flow, number)
        assert reason in seen.read_text(), "the next turn was told why"
        for message in main_messages(world):
            assert foreign_references(message, number) == [], message
        assert "Refs acme/gadgets#1" in "\n".join(main_messages(world))
        assert gadget_state(flow, gadget) == ("open", [])
        assert flow.pull(pr)["merged"]
        runs = flow.d.db.runs.for_issue(1)
        assert [run.phase for run in runs].count("implementing") == 2
