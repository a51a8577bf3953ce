"""A Linear member takes an approver's name or email as her own names: she approves nothing.

Linear lets each user edit their full name and display name (``userUpdate``);
the full name is not unique, and a display name nobody holds today is free for
anyone. The real daemon runs a Linear policy whose ``tracker.approvers`` names
alice by email or by id. Mallory, a member with her own API key, renames
herself through Linear's API to alice's name, email or id, and moves the issue
to Merging: nothing is merged, and no merge is even attempted. Then alice moves
it: the pull request merges, with ``linear:alice`` recorded as its approver.

A policy that names an approver by a name is refused when it is loaded
(tests/workflow/test_linear_approvers.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from orchestrator_sim.linear.client import LinearControl, post_graphql
from orchestrator_sim.testing import SimWorld
from tests.e2e.harness import flow_for
from tests.e2e.test_linear_approval import _merge_attempts, _policy, _ready, linear_people

MALLORY_KEY = "lin_api_mallory"
ALICE_EMAIL = "alice@example.com"
RENAME = """
mutation Rename($input: UserUpdateInput!) {
  userUpdate(id: "me", input: $input) { success user { id name displayName email } }
}
"""


@pytest.fixture
def linear(world: SimWorld) -> LinearControl:
    """The e2e Linear workspace (bot, alice, carol, gus, deploy), and mallory, a member."""
    control = linear_people(world)
    control.create_user("mallory", MALLORY_KEY)
    return control


def _user(linear: LinearControl, display_name: str) -> dict[str, Any]:
    return next(u for u in linear.summary()["users"] if u["name"] == display_name)


def _rename_herself(linear: LinearControl, names: dict[str, str]) -> dict[str, Any]:
    """Mallory changes her own names with her own key, as Linear lets every member."""
    answer = post_graphql(linear.graphql_url, MALLORY_KEY, RENAME, {"input": names})
    assert answer.status == 200 and "errors" not in answer.body, answer.body
    user: dict[str, Any] = answer.body["data"]["userUpdate"]["user"]
    return user


@pytest.mark.parametrize(
    ("approver", "names"),
    [
        ("email", {"name": ALICE_EMAIL}),
        ("email", {"name": "alice", "displayName": ALICE_EMAIL}),
        ("id", {"name": "ALICE_ID", "displayName": "ALICE_ID"}),
    ],
    ids=["full_name_is_alices_email", "display_name_is_alices_email", "names_are_alices_id"],
)
def test_a_member_renamed_as_the_approver_approves_nothing(
    tmp_path: Path, world: SimWorld, linear: LinearControl, approver: str, names: dict[str, str]
) -> None:
    alice = _user(linear, "alice")
    assert alice["email"] == ALICE_EMAIL
    mallory_id = _user(linear, "mallory")["id"]
    policy = _policy(linear)
    policy["tracker"]["approvers"] = [alice[approver]]
    taken = {key: value.replace("ALICE_ID", alice["id"]) for key, value in names.items()}
    renamed = _rename_herself(linear, taken)
    assert renamed["id"] == mallory_id and renamed["email"] != ALICE_EMAIL
    with flow_for(tmp_path, world, policy=policy) as flow:
        identifier, number, pr = _ready(flow, linear)
        flow.wait_past_head(number)
        linear.set_state(identifier, "Merging", as_user=mallory_id)
        flow.idle_ticks(3)
        assert not flow.pull(pr)["merged"]
        assert flow.phase(number) == "waiting_for_human"
        assert _merge_attempts(flow, number) == []

        linear.set_state(identifier, "In Review", as_user=mallory_id)
        flow.wait_past_head(number)
        linear.set_state(identifier, "Merging", as_user=alice["id"])
        flow.run_to_phase(number, "done")
        assert flow.pull(pr)["merged"] is True
        (merge,) = _merge_attempts(flow, number)
        assert list(merge.payload["approvers"]) == ["linear:alice"]
