"""Approval in Linear read from the issue's history, through the emulator over HTTP.

Team ENG has Symphony's states (``Human Review``, then ``Merging``); ``bot`` holds
the API key, ``alice`` and ``carol`` are members, ``gus`` a guest and ``deploy``
an app user. ENG-1 starts in Todo.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from orchestrator.domain.policy import ApprovalSource, FlowPolicy, MergePolicy
from orchestrator.domain.snapshot import IssueRef, LabelAction
from orchestrator.tracker.base import TrackerSettings
from orchestrator.tracker.linear import LinearScope, LinearTracker
from orchestrator.tracker.linear_approval import (
    MAX_HISTORY_PAGES,
    LinearApproval,
    linear_approval,
    read_evidence,
)
from orchestrator.tracker.linear_bridge import LinearIssues
from orchestrator.tracker.linear_client import LinearClient, LinearError
from orchestrator.tracker.linear_people import NOBODY, is_linear_login
from orchestrator.tracker.linear_queries import DOCUMENTS
from orchestrator_sim.clock import ManualClock
from orchestrator_sim.linear.client import LinearControl
from orchestrator_sim.server import SimServer
from tests.sim.linear_world import BOT_KEY, LinearWorld

REPO = "acme/widgets"
ISSUE_1 = IssueRef(REPO, 1)
FLOW = FlowPolicy(merge=MergePolicy(approval_states=("Merging",), approval_label="lgtm"))
APPROVAL = linear_approval(FLOW)
MERGING = "state:merging"
STATES = [
    {"name": "Backlog", "type": "backlog"},
    {"name": "Todo", "type": "unstarted"},
    {"name": "In Progress", "type": "started"},
    {"name": "Human Review", "type": "started"},
    {"name": "Merging", "type": "started"},
    {"name": "Done", "type": "completed"},
]


@contextmanager
def symphony_workspace(state_dir: Path) -> Iterator[LinearWorld]:
    """The workspace of the module docstring, served over HTTP."""
    clock = ManualClock()
    with SimServer(state_dir, clock=clock) as server:
        control = LinearControl(server.url)
        control.create_user("bot", BOT_KEY, git_username="bot")
        control.create_user("alice")
        control.create_user("carol", email="carol@example.com")
        control.create_user("gus", guest=True)
        control.create_user("deploy", app=True)
        control.create_team("ENG", "Engineering", states=STATES)
        control.create_label("lgtm")
        control.create_label("noise")
        control.create_issue("ENG", "Fix the login page", state="Todo")
        clock.advance(60)
        yield LinearWorld(server, clock, control)


@pytest.fixture
def world(tmp_path: Path) -> Iterator[LinearWorld]:
    with symphony_workspace(tmp_path / "sim") as found:
        yield found


def bridge_for(world: LinearWorld) -> LinearIssues:
    """A bridge of the team ENG, polled once, its viewer known."""
    return _bridge(world)


def _bridge(world: LinearWorld) -> LinearIssues:
    client = LinearClient(world.control.graphql_url, BOT_KEY)
    tracker = LinearTracker(
        client,
        TrackerSettings(repo=REPO, active_states=frozenset({"Todo", "Merging"})),
        LinearScope(team_key="ENG"),
    )
    bridge = LinearIssues(tracker, REPO)
    bridge.fetch_candidates()
    tracker.viewer_id()
    return bridge


def _moved(world: LinearWorld, who: str | None, state: str = "Merging") -> None:
    world.clock.advance(2)
    world.control.set_state("ENG-1", state, as_user=who)


def test_a_members_move_into_the_approval_state_is_a_trusted_addition_of_its_label(
    world: LinearWorld,
) -> None:
    _moved(world, "alice")
    moved_at = world.control.history("ENG-1")[-1]["created_at"]
    evidence = _bridge(world).approval(ISSUE_1, APPROVAL)
    assert (evidence.state, evidence.labels, evidence.complete) == (
        "Merging",
        frozenset({MERGING}),
        True,
    )
    (event,) = evidence.events
    assert (event.label, event.action) == (MERGING, LabelAction.ADDED)
    assert (event.actor.login, event.actor.can_write, event.actor.is_bot) == (
        "linear:alice",
        True,
        False,
    )
    assert is_linear_login(event.actor.login)
    # Linear's milliseconds are cut to GitHub's whole seconds.
    assert event.at == datetime.fromisoformat(moved_at.replace("Z", "+00:00")).replace(
        microsecond=0
    )


@pytest.mark.parametrize(
    ("who", "login", "is_bot"),
    [
        ("bot", "linear:bot", False),  # the API key's own user: the daemon, or its agent
        ("gus", "linear:gus", False),  # a guest
        ("deploy", "linear:deploy", True),  # an app (integration) user
        (None, NOBODY, True),  # an automation: no actor at all
    ],
)
def test_the_daemons_a_guests_an_apps_and_an_automations_moves_are_not_trusted(
    world: LinearWorld, who: str | None, login: str, is_bot: bool
) -> None:
    _moved(world, who)
    (event,) = _bridge(world).approval(ISSUE_1, APPROVAL).events
    assert (event.actor.login, event.actor.can_write, event.actor.is_bot) == (login, False, is_bot)


def test_the_daemons_own_mutation_is_never_trusted(world: LinearWorld) -> None:
    states = world.data(DOCUMENTS["TeamStates"], {"teamKey": "ENG"})["workflowStates"]["nodes"]
    merging = next(s["id"] for s in states if s["name"] == "Merging")
    issue_id = world.control.issue("ENG-1")["id"]
    world.data(DOCUMENTS["SetState"], {"id": issue_id, "stateId": merging})
    (event,) = _bridge(world).approval(ISSUE_1, APPROVAL).events
    assert (event.actor.login, event.actor.can_write) == ("linear:bot", False)


def test_a_suspended_members_move_no_longer_counts(world: LinearWorld) -> None:
    _moved(world, "alice")
    bridge = _bridge(world)
    assert bridge.approval(ISSUE_1, APPROVAL).events[0].actor.can_write
    world.control.update_user("alice", active=False)
    # Suspending a user does not touch the issue: only a fresh read sees it.
    assert bridge.approval(ISSUE_1, APPROVAL).events[0].actor.can_write
    assert not bridge.approval(ISSUE_1, APPROVAL, fresh=True).events[0].actor.can_write


def _user_id(world: LinearWorld, display_name: str) -> str:
    users = world.control.summary()["users"]
    return str(next(u["id"] for u in users if u["name"] == display_name))


def test_the_approvers_list_narrows_who_is_trusted_by_email_or_id(world: LinearWorld) -> None:
    _moved(world, "alice")
    only_carol = linear_approval(FLOW, ["Carol@Example.com"])
    bridge = _bridge(world)
    assert not bridge.approval(ISSUE_1, only_carol).events[0].actor.can_write
    _moved(world, None, "Todo")
    _moved(world, "carol")
    bridge.fetch_candidates()
    assert bridge.approval(ISSUE_1, only_carol).events[0].actor.can_write
    by_id = linear_approval(FLOW, [_user_id(world, "carol").upper()])
    assert bridge.approval(ISSUE_1, by_id).events[0].actor.login == "linear:carol"
    assert bridge.approval(ISSUE_1, by_id).events[0].actor.can_write
    # A display name or a full name names nobody, the user's own included.
    by_name = linear_approval(FLOW, ["carol"])
    assert not bridge.approval(ISSUE_1, by_name).events[0].actor.can_write


@pytest.mark.parametrize(
    ("renamed", "approvers"),
    [
        ({"full_name": "carol"}, ["carol"]),
        ({"full_name": "carol@example.com"}, ["carol@example.com"]),
        ({"name": "carol@example.com"}, ["carol@example.com"]),
        ({"full_name": "CAROL_ID", "name": "carol-2"}, ["CAROL_ID"]),
    ],
    ids=["full_name_as_name", "full_name_as_email", "display_name_as_email", "names_as_id"],
)
def test_a_member_who_takes_an_approvers_name_or_email_as_her_names_approves_nothing(
    world: LinearWorld, renamed: dict[str, str], approvers: list[str]
) -> None:
    carol, alice = _user_id(world, "carol"), _user_id(world, "alice")
    wanted = {key: value.replace("CAROL_ID", carol) for key, value in renamed.items()}
    world.control.update_user(alice, **wanted)
    _moved(world, alice)
    approval = linear_approval(FLOW, [a.replace("CAROL_ID", carol) for a in approvers])
    (event,) = _bridge(world).approval(ISSUE_1, approval).events
    assert not event.actor.can_write


def test_only_the_latest_move_into_the_state_counts(world: LinearWorld) -> None:
    _moved(world, "alice")
    _moved(world, "bot", "Human Review")
    _moved(world, "bot")
    evidence = _bridge(world).approval(ISSUE_1, APPROVAL)
    assert [(e.label, e.actor.login) for e in evidence.events] == [(MERGING, "linear:bot")]


def test_an_issue_outside_the_approval_state_shows_no_approval(world: LinearWorld) -> None:
    _moved(world, "alice")
    _moved(world, "alice", "Human Review")
    evidence = _bridge(world).approval(ISSUE_1, APPROVAL)
    assert (evidence.labels, evidence.events, evidence.complete) == (frozenset(), (), True)


def test_an_approval_label_counts_by_its_latest_addition(world: LinearWorld) -> None:
    world.control.add_labels("ENG-1", "lgtm", as_user="alice")
    bridge = _bridge(world)
    evidence = bridge.approval(ISSUE_1, APPROVAL)
    assert [(e.label, e.actor.login, e.actor.can_write) for e in evidence.events] == [
        ("lgtm", "linear:alice", True)
    ]
    world.clock.advance(2)
    world.control.remove_label("ENG-1", "lgtm", as_user="alice")
    world.control.add_labels("ENG-1", "lgtm", "noise", as_user="gus")
    bridge.fetch_candidates()
    evidence = bridge.approval(ISSUE_1, APPROVAL)
    assert [(e.label, e.actor.login, e.actor.can_write) for e in evidence.events] == [
        ("lgtm", "linear:gus", False)
    ]
    # A label that is no approval label is never evidence.
    assert evidence.labels == {"lgtm"}


def _churn(world: LinearWorld, times: int) -> None:
    """Other changes after the approval: an automation adds and removes a label."""
    for _ in range(times):
        for change in (world.control.add_labels, world.control.remove_label):
            world.clock.advance(0.01)
            change("ENG-1", "noise")


def test_the_history_is_read_page_by_page_and_no_further_than_the_limit(
    world: LinearWorld,
) -> None:
    _moved(world, "alice")
    # A page and a half of other changes after the approval: found on the second page.
    _churn(world, 20)
    bridge = _bridge(world)
    before = bridge.linear.client.requests
    evidence = bridge.approval(ISSUE_1, APPROVAL)
    assert bridge.linear.client.requests - before == 2
    assert evidence.complete and evidence.events[0].actor.login == "linear:alice"
    # Older than the pages read: no evidence, so no approval.
    _churn(world, MAX_HISTORY_PAGES * 25 // 2)
    bridge.fetch_candidates()
    before = bridge.linear.client.requests
    evidence = bridge.approval(ISSUE_1, APPROVAL)
    assert bridge.linear.client.requests - before == MAX_HISTORY_PAGES
    assert (evidence.labels, evidence.events, evidence.complete) == (
        frozenset({MERGING}),
        (),
        False,
    )


def test_the_history_is_read_again_only_once_the_issue_changed(world: LinearWorld) -> None:
    _moved(world, "alice")
    bridge = _bridge(world)
    client = bridge.linear.client
    bridge.approval(ISSUE_1, APPROVAL)
    before = client.requests
    bridge.approval(ISSUE_1, APPROVAL)
    assert client.requests == before
    # Another policy's approval is another question.
    bridge.approval(ISSUE_1, linear_approval(FLOW, ["carol"]))
    assert client.requests == before + 1
    _moved(world, "carol", "Todo")
    bridge.fetch_candidates()
    before = client.requests
    assert bridge.approval(ISSUE_1, APPROVAL).events == ()
    assert client.requests == before + 1


def test_the_approval_states_come_from_the_policy() -> None:
    approval = linear_approval(FLOW, ["Alice@example.com"])
    assert approval == LinearApproval(
        states={"Merging": MERGING},
        labels=frozenset({"lgtm"}),
        approvers=frozenset({"alice@example.com"}),
    )
    assert approval.shown("Merging", ["lgtm", "other"]) == {MERGING, "lgtm"}
    assert approval.shown("Todo", ["other"]) == frozenset()
    by_review = MergePolicy(approval_states=(), approval_source=ApprovalSource.REVIEW)
    assert not linear_approval(FlowPolicy(merge=by_review)).enabled


# --------------------------------------------------------- malformed answers


class CannedLinear(LinearClient):
    """A client that answers every request with one canned ``data`` (Linear never sends a
    malformed answer on purpose; the emulator cannot either)."""

    def __init__(self, data: dict[str, Any]) -> None:
        super().__init__("http://127.0.0.1:9/graphql", "lin_api_canned")
        self.data = data

    def execute(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return self.data


def _answer(*entries: dict[str, Any]) -> dict[str, Any]:
    return {
        "issue": {
            "id": "i1",
            "updatedAt": "2026-01-01T00:00:00.000Z",
            "state": {"id": "s1", "name": "Merging"},
            "labels": {"nodes": []},
            "history": {
                "nodes": list(entries),
                "pageInfo": {"hasNextPage": False, "endCursor": None},
            },
        }
    }


GOOD_ACTOR = {
    "id": "u1",
    "name": "Alice",
    "displayName": "alice",
    "email": "alice@example.com",
    "active": True,
    "guest": False,
    "app": False,
}


@pytest.mark.parametrize(
    ("entry", "where"),
    [
        ({"id": "h1", "createdAt": "yesterday", "toState": {"name": "Merging"}}, "createdAt"),
        ({"id": "h1", "createdAt": "2026-01-01T00:00:00", "toState": {"name": "Merging"}}, "zone"),
        ({"id": "h1", "createdAt": 5, "toState": {"name": "Merging"}}, "nodes[0].createdAt"),
        ({"id": "h1", "toState": {"name": 7}}, "nodes[0].toState.name"),
        (
            {
                "id": "h1",
                "createdAt": "2026-01-01T00:00:00.000Z",
                "toState": {"name": "Merging"},
                "actor": {**GOOD_ACTOR, "guest": "no"},
            },
            "nodes[0].actor.guest",
        ),
        ({"id": "h1", "addedLabels": [{"id": "l"}]}, "nodes[0].addedLabels[0].name"),
        ("not an entry", "nodes[0]"),
    ],
)
def test_a_malformed_history_answer_is_an_error_naming_the_field(entry: Any, where: str) -> None:
    client = CannedLinear(_answer(entry))
    approval = linear_approval(FLOW)
    with pytest.raises(LinearError) as raised:
        read_evidence(client, "ENG-1", "viewer", approval)
    assert raised.value.code == "BAD_ANSWER"
    assert raised.value.operation == "IssueHistory"
    assert where in raised.value.message


def test_a_missing_issue_or_page_info_is_an_error_too() -> None:
    for data, where in (
        ({"issue": None}, "data.issue"),
        ({"issue": {**_answer()["issue"], "history": {"nodes": []}}}, "issue.history.pageInfo"),
    ):
        with pytest.raises(LinearError, match=where.replace(".", r"\.")):
            read_evidence(CannedLinear(data), "ENG-1", "viewer", APPROVAL)
