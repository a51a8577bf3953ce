"""A human approves the merge in Linear: by moving the issue to Merging, or by a label.

The daemon runs a native Linear policy against the emulator (GitHub and Linear
on one clock): it reads who moved the issue into ``Merging`` from the issue's
history, counts only an active member who is not a guest, an app user or the
API key's own user, only after the pull request's head appeared, and re-reads
the history right before the merge.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from orchestrator_sim.linear.client import LinearControl
from orchestrator_sim.testing import SimWorld
from tests.e2e.harness import Flow, flow_for
from tests.e2e.test_linear_flow import LINEAR_KEY, STATES, TEAM

PHASES_BEFORE_MERGE = ("waiting_for_human", "waiting_for_checks", "ready_to_merge", "merging")


def linear_people(world: SimWorld) -> LinearControl:
    """The Linear workspace: the key's user ``bot``, members ``alice`` and ``carol``, the
    guest ``gus``, the app user ``deploy``, team ENG with Symphony's states."""
    control = LinearControl(world.url)
    control.create_user("bot", LINEAR_KEY, git_username="bot")
    control.create_user("alice")
    control.create_user("carol", email="carol@example.com")
    control.create_user("gus", guest=True)
    control.create_user("deploy", app=True)
    control.create_team(TEAM, "Engineering", states=STATES)
    control.create_label("lgtm")
    return control


@pytest.fixture
def linear(world: SimWorld) -> LinearControl:
    return linear_people(world)


def _policy(linear: LinearControl, **merge: Any) -> dict[str, Any]:
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
        # Approval by a human stays on, from the approval state Merging (the defaults).
        "merge": {"mode": "auto", **merge},
    }


@pytest.fixture
def flow(tmp_path: Path, world: SimWorld, linear: LinearControl) -> Iterator[Flow]:
    with flow_for(tmp_path, world, policy=_policy(linear)) as running:
        yield running


def _ready(flow: Flow, linear: LinearControl) -> tuple[str, int, int]:
    """An issue run to waiting_for_human with green checks: (identifier, number, PR)."""
    identifier = str(linear.create_issue(TEAM, "Add the feature", state="Todo")["identifier"])
    number = int(identifier.rpartition("-")[2])
    flow.run_to_phase(number, "waiting_for_checks")
    pr = flow.pr_number(number)
    flow.check(pr, "success")
    flow.run_to_phase(number, "waiting_for_human")
    return identifier, number, pr


def _move(flow: Flow, linear: LinearControl, identifier: str, who: str | None) -> None:
    """Move the issue to Merging as ``who``, after the head appeared (GitHub's seconds)."""
    flow.wait_past_head(int(identifier.rpartition("-")[2]))
    linear.set_state(identifier, "Merging", as_user=who)


def _merge_attempts(flow: Flow, number: int) -> list[Any]:
    row = flow.d.parts.records.get(flow.ref(number))
    assert row is not None
    return [e for e in flow.d.db.outbox.for_issue(row.issue_id) if e.kind == "merge_pr"]


def test_only_a_trusted_members_move_to_merging_approves_the_merge(
    flow: Flow, linear: LinearControl
) -> None:
    identifier, number, pr = _ready(flow, linear)
    flow.idle_ticks(3)
    assert not flow.pull(pr)["merged"]
    # The daemon moved the issue on its way here, as the API key's user.
    moves = [(e["actor"], e["to_state"]) for e in linear.history(identifier) if e["to_state"]]
    assert moves == [("bot", "In Progress"), ("bot", "In Review")]

    # The key's own user (the daemon, or an agent holding the key), a guest, an app user
    # and an automation each move it to Merging: none of them approves.
    for who in ("bot", "gus", "deploy", None):
        linear.set_state(identifier, "In Review")
        _move(flow, linear, identifier, who)
        flow.idle_ticks(3)
        assert not flow.pull(pr)["merged"], who
        assert flow.phase(number) == "waiting_for_human", who
        # A person's approval state is theirs: the daemon does not move the issue out of it.
        assert linear.issue(identifier)["state"] == "Merging", who
    assert _merge_attempts(flow, number) == []

    linear.set_state(identifier, "In Review")
    _move(flow, linear, identifier, "alice")
    flow.run_to_phase(number, "done")
    assert flow.pull(pr)["merged"] is True
    found = linear.issue(identifier)
    assert found["state"] == "Done"
    (merge,) = _merge_attempts(flow, number)
    assert list(merge.payload["approvers"]) == ["linear:alice"]
    assert list(merge.payload["approval_labels"]) == ["state:merging"]


def test_an_approval_given_before_a_push_is_withdrawn_in_linear_and_asked_again(
    flow: Flow, linear: LinearControl
) -> None:
    identifier, number, pr = _ready(flow, linear)
    _move(flow, linear, identifier, "alice")
    # A human pushes right after the approval, before the daemon saw either.
    new_head = flow.push_as_human(flow.pull(pr)["head"]["ref"])
    flow.check(pr, "success")
    flow.run(lambda: linear.issue(identifier)["state"] != "Merging", what="approval withdrawn")
    flow.run_to_phase(number, "waiting_for_human")
    flow.idle_ticks(3)
    assert not flow.pull(pr)["merged"]
    found = linear.issue(identifier)
    # Back to the state its phase shows, by the daemon; the question is asked on Linear.
    assert found["state"] == "In Review"
    assert linear.history(identifier)[-1]["actor"] == "bot"
    asks = [c for c in found["comments"] if "approve it again" in c["body"]]
    assert len(asks) == 1
    assert "(`Merging`)" in asks[0]["body"] and new_head[:12] in asks[0]["body"]

    _move(flow, linear, identifier, "alice")
    flow.run_to_phase(number, "done")
    assert flow.pull(pr)["merged"] is True
    assert [e.payload["head_sha"] for e in _merge_attempts(flow, number)] == [new_head]


def test_an_approver_suspended_right_before_the_merge_merges_nothing(
    flow: Flow, linear: LinearControl
) -> None:
    identifier, number, pr = _ready(flow, linear)
    builder = flow.d.parts.repo_set.first.parts.builder
    original = builder.build
    suspended: list[bool] = []

    def build_then_suspend(*args: Any, **kwargs: Any) -> Any:
        gathered = original(*args, **kwargs)
        if not suspended:
            # Alice's approval is in this snapshot; she is suspended before any write.
            linear.update_user("alice", active=False)
            suspended.append(True)
        return gathered

    _move(flow, linear, identifier, "alice")
    builder.build = build_then_suspend  # type: ignore[method-assign]
    flow.run(lambda: bool(_merge_attempts(flow, number)), what="a merge attempt")
    flow.idle_ticks(3)
    assert not flow.pull(pr)["merged"]
    attempts = _merge_attempts(flow, number)
    assert {e.status for e in attempts} == {"failed"}
    assert "linear:alice no longer approves on Linear" in str(attempts[0].result)
    assert flow.phase(number) in PHASES_BEFORE_MERGE

    linear.set_state(identifier, "In Review")
    _move(flow, linear, identifier, "carol")
    flow.run_to_phase(number, "done")
    assert flow.pull(pr)["merged"] is True


def test_an_approval_label_on_the_linear_issue_approves_when_a_trusted_member_adds_it(
    tmp_path: Path, world: SimWorld, linear: LinearControl
) -> None:
    policy = _policy(linear, approval_label="lgtm")
    policy["tracker"]["approvers"] = ["carol@example.com"]
    with flow_for(tmp_path, world, policy=policy) as flow:
        identifier, number, pr = _ready(flow, linear)
        flow.wait_past_head(number)
        # Alice is a member, but the policy trusts carol alone.
        linear.add_labels(identifier, "lgtm", as_user="alice")
        flow.idle_ticks(3)
        assert not flow.pull(pr)["merged"]
        linear.remove_label(identifier, "lgtm", as_user="alice")
        linear.add_labels(identifier, "lgtm", as_user="carol")
        flow.run_to_phase(number, "done")
        assert flow.pull(pr)["merged"] is True
        (merge,) = _merge_attempts(flow, number)
        assert list(merge.payload["approvers"]) == ["linear:carol"]
