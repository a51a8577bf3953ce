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

import json
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from orchestrator.domain.workpad import is_workpad_comment
from orchestrator_sim.linear.client import LinearControl
from orchestrator_sim.testing import SimWorld
from tests.e2e.harness import (
    REPO_STOP_LABEL,
    SIM_AGENT,
    STOP_LABEL,
    Flow,
    agent_home,
    default_scenario,
    flow_for,
    write_scenario,
)
from tests.e2e.test_kill_switches import wait_until
from tests.sim.gitops import git
from tests.support.idle import wait_idle

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


def test_a_lost_database_is_rebuilt_from_the_linear_workpad(
    flow: Flow, linear: LinearControl
) -> None:
    issue = linear.create_issue(TEAM, "Add the feature", state="Todo")
    identifier = str(issue["identifier"])
    number = int(identifier.rpartition("-")[2])
    flow.run_to_phase(number, "waiting_for_checks")
    pull = _pull_for(flow, identifier, number)

    flow.wipe_database()
    flow.step()
    record = flow.record(number)
    assert record is not None and record.phase.value == "waiting_for_checks"
    assert record.workpad.pr is not None and record.workpad.pr.number == pull["number"]

    flow.check(pull["number"], "success")
    flow.run_to_phase(number, "done")
    found = linear.issue(identifier)
    assert found["state"] == "Done"
    assert len(_workpads(linear, identifier)) == 1
    assert [a["url"] for a in found["attachments"]] == [pull["html_url"]]
    assert len(flow.pulls()) == 1
    # No agent turn ran again after the loss: the recovered phase went on from there.
    row = flow.d.parts.records.get(flow.ref(number))
    assert row is not None
    assert flow.d.db.runs.for_issue(row.issue_id) == []


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
        wait_until(lambda: any(turn.last_event for turn in flow.d.parts.pool.turns()))
        linear_writes = len(linear.writes())
        github_writes = len(flow.bot_writes())
        linear.add_labels(identifier, STOP_LABEL)
        flow.d.tick()
        assert wait_idle(flow.d, 20)
        flow.idle_ticks(4)

        row = flow.d.parts.records.get(flow.ref(number))
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
    github_writes = len(flow.bot_writes())
    builder = flow.d.parts.repo_set.first.parts.builder
    original = builder.build

    def build_then_label(*args: Any, **kwargs: Any) -> Any:
        gathered = original(*args, **kwargs)
        # A human adds the stop label in Linear between the snapshot and the writes.
        linear.add_labels(identifier, STOP_LABEL)
        return gathered

    builder.build = build_then_label  # type: ignore[method-assign]
    flow.d.parts.switches.max_age_s = 0.0
    flow.step()

    row = flow.d.parts.records.get(flow.ref(number))
    assert row is not None
    refused = [
        e for e in flow.d.db.outbox.for_issue(row.issue_id) if e.status == "refused_by_kill_switch"
    ]
    assert "create_pr" in {e.kind for e in refused}
    assert all("stop label" in (e.result or {}).get("reason", "") for e in refused)
    assert len(linear.writes()) == linear_writes
    assert linear.issue(identifier)["attachments"] == []
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


# ------------------------------------------------------- Symphony's own file

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "symphony"
ROOT = Path(__file__).resolve().parents[2]
# The repository Symphony's after_create hook clones.
SYMPHONY_UPSTREAM = "https://github.com/openai/symphony"


def _symphony_policy(tmp: Path, world: SimWorld, linear: LinearControl, scenario: Path) -> Path:
    """Symphony's elixir WORKFLOW.md as written, pointed at the emulators: the Linear and
    GitHub addresses and keys, this machine's folders, and the scripted agent speaking
    Codex's app-server protocol as ``codex.command``. The file leaves the rollout mode at
    its default (observe) and the merge to a person (``merge.mode`` disabled): to reach a
    merge the test sets ``rollout.mode: merge`` and ``merge.mode: auto``. Its approval is
    its own: a person moves the issue to Merging. Its hooks run as written (see
    `_symphony_upstream`)."""
    text = (FIXTURE / "symphony-elixir.WORKFLOW.md").read_text(encoding="utf-8")
    _, front, prompt = text.split("---\n", 2)
    yaml = YAML(typ="safe")
    document: dict[str, Any] = yaml.load(front)
    document["tracker"].update(
        {
            "endpoint": linear.graphql_url,
            "api_key": LINEAR_KEY,
            "repo": world.repo,
            "github_endpoint": "$E2E_ENDPOINT",
            "token": "$E2E_TOKEN",
        }
    )
    document["polling"]["interval_ms"] = 1000
    document["workspace"]["root"] = str(tmp / "workspaces")
    document["codex"]["command"] = (
        f"{SIM_AGENT} --scenario {shlex.quote(str(scenario))} --protocol app-server"
    )
    document["agent"].update({"home": str(agent_home(tmp)), "env": {"PYTHONPATH": str(ROOT)}})
    document.update(
        {
            "rollout": {"mode": "merge", "kill_switch_file": str(tmp / "STOP")},
            "merge": {"mode": "auto"},
            "database": {"url": f"sqlite:///{tmp / 'orchestrator.db'}"},
        }
    )
    path = tmp / "WORKFLOW.md"
    path.write_text(f"---\n{json.dumps(document, indent=2)}\n---\n{prompt}", encoding="utf-8")
    return path


def _symphony_upstream(tmp: Path, world: SimWorld) -> None:
    """Where the unchanged ``after_create`` hook's ``git clone --depth 1
    https://github.com/openai/symphony .`` lands without the internet: a local repository
    with an ``elixir/`` project, named in the agents' home's git configuration as
    ``url.<it>.insteadOf`` that address, as an operator points git at a mirror. It sits in
    the agents' home, the one folder of this test the sandbox lets hooks read. No
    credential is involved; ``mise`` is not installed here, so the hook's
    ``command -v mise`` guard skips its step, and ``before_remove`` (``cd elixir && mise
    exec ...``) fails and is logged, as a failing ``before_remove`` is."""
    home = agent_home(tmp)
    env = world.git_env(tmp)
    source = tmp / "symphony-source"
    (source / "elixir").mkdir(parents=True)
    (source / "elixir" / "mix.exs").write_text("defmodule Symphony.MixProject do\nend\n")
    git("init", "-q", "-b", "main", str(source), env=env)
    git("add", ".", cwd=source, env=env)
    git("commit", "-q", "-m", "Symphony", cwd=source, env=env)
    mirror = home / "mirrors" / "symphony.git"
    git("clone", "-q", "--bare", str(source), str(mirror), env=env)
    (home / ".gitconfig").write_text(
        f'[url "{mirror.as_uri()}"]\n\tinsteadOf = {SYMPHONY_UPSTREAM}\n', encoding="utf-8"
    )


def _symphony_people(linear: LinearControl) -> None:
    linear.create_user("gus", guest=True)
    linear.create_user("deploy", app=True)


def _cloned_by_the_hook(tmp: Path) -> list[Path]:
    return sorted((tmp / "workspaces").glob("*/elixir/mix.exs"))


def test_symphonys_elixir_workflow_takes_a_linear_issue_to_a_merged_pull_request(
    tmp_path: Path, world: SimWorld, linear: LinearControl
) -> None:
    slug = "symphony-0c79b11b75ea"
    linear.create_project("Symphony", slug_id=slug)
    _symphony_people(linear)
    scenario = write_scenario(tmp_path, default_scenario())
    policy = _symphony_policy(tmp_path, world, linear, scenario)
    _symphony_upstream(tmp_path, world)
    world.control.protect(world.repo, "main", required_checks=["ci"], enforce_admins=True)
    env = {"E2E_ENDPOINT": world.url, "E2E_TOKEN": world.bot.token}
    issue = linear.create_issue(TEAM, "Add the feature", state="Todo", project=slug)
    linear.create_issue(TEAM, "Another project's issue", state="Todo")
    identifier = str(issue["identifier"])
    number = int(identifier.rpartition("-")[2])
    flow = Flow(world, tmp_path, policy, scenario, env)
    flow.start()
    try:
        flow.run_to_phase(number, "waiting_for_checks")
        # after_create cloned "Symphony" into the empty workspace; its files stayed.
        assert len(_cloned_by_the_hook(tmp_path)) == 1
        pull = _pull_for(flow, identifier, number)
        flow.check(pull["number"], "success")
        flow.run_to_phase(number, "waiting_for_human")

        # (a) Ready, and nothing merges until a person approves.
        flow.idle_ticks(3)
        assert not flow.pull(pull["number"])["merged"]
        # (b) The daemon's own moves are its API key's user's, and so is a move to Merging
        # made with that key (by the daemon or by an agent holding it): no approval.
        moves = [(e["actor"], e["to_state"]) for e in linear.history(identifier)]
        assert ("bot", "In Review") in moves
        assert all(actor == "bot" for actor, state in moves if state)
        # (c) Nor does a guest's, an app user's or an automation's move.
        for who in ("bot", "gus", "deploy", None):
            linear.set_state(identifier, "In Review")
            flow.wait_past_head(number)
            linear.set_state(identifier, "Merging", as_user=who)
            flow.idle_ticks(3)
            assert not flow.pull(pull["number"])["merged"], who
            assert flow.phase(number) == "waiting_for_human", who

        # (d) A member moves it to Merging: the daemon merges and the issue ends Done.
        linear.set_state(identifier, "In Review")
        flow.wait_past_head(number)
        linear.set_state(identifier, "Merging", as_user="alice")
        flow.run_to_phase(number, "done")
        row = flow.d.parts.records.get(flow.ref(number))
        assert row is not None
        runs = flow.d.db.runs.for_issue(row.issue_id)
        merges = [e for e in flow.d.db.outbox.for_issue(row.issue_id) if e.kind == "merge_pr"]
        # Only the project's issue was taken.
        assert flow.d.parts.records.get(flow.ref(number + 1)) is None
    finally:
        flow.stop()

    assert flow.pull(pull["number"])["merged"] is True
    assert [list(e.payload["approvers"]) for e in merges] == [["linear:alice"]]
    found = linear.issue(identifier)
    assert found["state"] == "Done"
    assert len(_workpads(linear, identifier)) == 1
    assert [a["url"] for a in found["attachments"]] == [pull["html_url"]]
    # The app-server preset ran the turn, with Symphony's prompt about the Linear ticket.
    assert runs[0].session_id == f"sim-thread-{runs[0].run_id}"
    assert f"You are working on a Linear ticket `{identifier}`" in (runs[0].prompt or "")
