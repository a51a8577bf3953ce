"""A Linear issue driven to a merged pull request: issues in Linear, code on GitHub.

One emulator serves both: GitHub's API at its root and Linear's GraphQL at
``/linear/graphql``. The daemon reads the Linear issue, the scripted agent
implements it, the runtime pushes the branch and opens the pull request on
GitHub (its body links the Linear issue), keeps one workpad comment on the
Linear issue, links the pull request as its attachment, merges on green checks
and moves the Linear issue to Done. The stop label on a Linear issue stops every
write for it, as on GitHub.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from orchestrator.domain.workpad import is_workpad_comment
from orchestrator.sim.linear.client import LinearControl
from orchestrator.sim.testing import SimWorld
from tests.e2e.harness import REPO_STOP_LABEL, STOP_LABEL, Flow, default_scenario, flow_for
from tests.e2e.test_kill_switches import wait_until

LINEAR_KEY = "lin_api_bot"
TEAM = "ENG"
STATES = [
    {"name": "Backlog", "type": "backlog"},
    {"name": "Todo", "type": "unstarted"},
    {"name": "In Progress", "type": "started"},
    {"name": "In Review", "type": "started"},
    {"name": "Rework", "type": "started"},
    {"name": "Merging", "type": "started"},
    {"name": "Blocked", "type": "started"},
    {"name": "Done", "type": "completed"},
    {"name": "Canceled", "type": "canceled"},
]


@pytest.fixture
def linear(world: SimWorld) -> LinearControl:
    control = LinearControl(world.url)
    control.create_user("bot", LINEAR_KEY, git_username="bot")
    control.create_user("alice")
    control.create_team(TEAM, "Engineering", states=STATES)
    control.create_label(STOP_LABEL)
    control.create_label(REPO_STOP_LABEL)
    return control


def _policy(linear: LinearControl) -> dict[str, Any]:
    return {
        "tracker": {
            "kind": "linear",
            "endpoint": linear.graphql_url,
            "github_endpoint": "$E2E_ENDPOINT",
            "api_key": LINEAR_KEY,
            "team_key": TEAM,
            "active_states": ["Todo", "In Progress", "In Review", "Rework", "Merging"],
            "terminal_states": ["Done", "Canceled"],
        },
        "review": {"enabled": False},
        "merge": {"mode": "auto", "require_human_approval": False},
    }


@pytest.fixture
def flow(tmp_path: Path, world: SimWorld, linear: LinearControl) -> Iterator[Flow]:
    with flow_for(tmp_path, world, policy=_policy(linear)) as running:
        yield running


def _workpads(linear: LinearControl, identifier: str) -> list[dict[str, Any]]:
    return [c for c in linear.issue(identifier)["comments"] if is_workpad_comment(c["body"])]


def _pull_for(flow: Flow, identifier: str, number: int) -> dict[str, Any]:
    pulls = [p for p in flow.pulls() if p["head"]["ref"] == flow.branch(number)]
    assert len(pulls) == 1, [p["head"]["ref"] for p in flow.pulls()]
    return pulls[0]


def test_a_linear_issue_ends_done_with_one_workpad_and_one_pr_attachment(
    flow: Flow, linear: LinearControl
) -> None:
    issue = linear.create_issue(TEAM, "Add the feature", state="Todo")
    identifier = str(issue["identifier"])
    number = int(identifier.rpartition("-")[2])
    flow.run_to_phase(number, "waiting_for_checks")

    pull = _pull_for(flow, identifier, number)
    body = pull["body"] or ""
    assert linear.issue(identifier)["url"] in body
    assert f"Closes #{number}" not in body
    flow.check(pull["number"], "success")
    flow.run_to_phase(number, "done")

    assert flow.pull(pull["number"])["merged"] is True
    found = linear.issue(identifier)
    assert found["state"] == "Done"
    assert len(_workpads(linear, identifier)) == 1
    assert [a["url"] for a in found["attachments"]] == [pull["html_url"]]
    # Linear's issue got no GitHub issue: nothing was written to a GitHub issue #number.
    assert not [c for c in flow.comments(pull["number"]) if is_workpad_comment(c["body"])]


def test_the_stop_label_on_the_linear_issue_keeps_it_untouched_until_taken_off(
    flow: Flow, linear: LinearControl
) -> None:
    issue = linear.create_issue(TEAM, "Add the feature", state="Todo", labels=[STOP_LABEL])
    identifier = str(issue["identifier"])
    number = int(identifier.rpartition("-")[2])
    flow.idle_ticks(4)
    assert linear.issue(identifier)["comments"] == []
    assert linear.issue(identifier)["attachments"] == []
    assert linear.issue(identifier)["state"] == "Todo"
    assert flow.pulls() == []

    # Taken off, the issue goes on: the workpad appears on the Linear issue.
    linear.remove_label(identifier, STOP_LABEL)
    flow.run(lambda: len(_workpads(linear, identifier)) == 1, what="the workpad")
    assert flow.phase(number) is not None


def test_the_stop_label_during_a_turn_cancels_it_and_stops_every_write(
    tmp_path: Path, world: SimWorld, linear: LinearControl
) -> None:
    scenario = default_scenario()
    scenario["steps"] = [
        {"session": "auto"},
        {"events": {"count": 400, "interval_ms": 25}},
        *scenario["steps"][1:],
    ]
    with flow_for(tmp_path, world, scenario=scenario, policy=_policy(linear)) as flow:
        issue = linear.create_issue(TEAM, "Add the feature", state="Todo")
        identifier = str(issue["identifier"])
        number = int(identifier.rpartition("-")[2])
        flow.d.tick()
        wait_until(lambda: any(turn.last_event for turn in flow.d.pool.turns()))
        linear_writes = len(linear.writes())
        github_writes = len(flow.bot_writes())
        linear.add_labels(identifier, STOP_LABEL)
        flow.d.tick()
        assert flow.d.wait_idle(20)
        flow.idle_ticks(4)

        row = flow.d.records.get(flow.ref(number))
        assert row is not None
        assert [run.outcome for run in flow.d.db.runs.for_issue(row.issue_id)] == ["cancelled"]
        assert flow.phase(number) == "blocked"
        assert row.record.waiting_reason is not None
        assert row.record.waiting_reason.value == "kill_switch_active"
        assert len(linear.writes()) == linear_writes
        assert len(flow.bot_writes()) == github_writes
        assert flow.pulls() == []


def test_a_stop_label_added_after_the_snapshot_is_seen_by_the_gate(
    flow: Flow, linear: LinearControl
) -> None:
    issue = linear.create_issue(TEAM, "Add the feature", state="Todo")
    identifier = str(issue["identifier"])
    number = int(identifier.rpartition("-")[2])
    flow.step()  # the implementing turn ran and its worker pushed; the PR comes next tick
    linear_writes = len(linear.writes())
    assert linear_writes > 0  # the workpad and the state In Progress
    github_writes = len(flow.bot_writes())
    builder = flow.d.parts.builder
    original = builder.build

    def build_then_label(*args: Any, **kwargs: Any) -> Any:
        gathered = original(*args, **kwargs)
        # A human adds the stop label in Linear between the snapshot and the writes.
        linear.add_labels(identifier, STOP_LABEL)
        return gathered

    builder.build = build_then_label  # type: ignore[method-assign]
    flow.d.switches.max_age_s = 0.0
    flow.step()

    row = flow.d.records.get(flow.ref(number))
    assert row is not None
    refused = [
        e for e in flow.d.db.outbox.for_issue(row.issue_id) if e.status == "refused_by_kill_switch"
    ]
    assert "create_pr" in {e.kind for e in refused}
    assert all("stop label" in (e.result or {}).get("reason", "") for e in refused)
    assert len(linear.writes()) == linear_writes
    assert len(flow.bot_writes()) == github_writes
    assert flow.pulls() == []


def test_the_repo_wide_stop_label_on_a_linear_issue_stops_every_write(
    flow: Flow, linear: LinearControl
) -> None:
    linear.create_issue(TEAM, "Stop everything", state="Backlog", labels=[REPO_STOP_LABEL])
    issue = linear.create_issue(TEAM, "Add the feature", state="Todo")
    identifier = str(issue["identifier"])
    flow.idle_ticks(4)
    assert linear.issue(identifier)["comments"] == []
    assert flow.pulls() == []
