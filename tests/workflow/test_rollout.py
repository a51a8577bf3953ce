"""The rollout mode of one issue: labels may lower the policy's mode, never raise it.

The policy's ``rollout`` keys reach the domain's one rule through ``flow_policy``.
"""

from __future__ import annotations

import pytest

from orchestrator.domain.phases import RolloutMode
from orchestrator.domain.rollout import effective_mode
from orchestrator.workflow import Policy, flow_policy
from orchestrator.workflow.schema import RolloutSettings

OBSERVE, MUTATE, MERGE = RolloutMode.OBSERVE, RolloutMode.MUTATE, RolloutMode.MERGE

CASES = [
    ("no label keeps the mode", MERGE, [], MERGE),
    ("unrelated labels keep the mode", MUTATE, ["bug", "orchestrator"], MUTATE),
    ("observe label lowers merge", MERGE, ["orchestrator:observe"], OBSERVE),
    ("observe label lowers mutate", MUTATE, ["orchestrator:observe"], OBSERVE),
    ("mutate label lowers merge", MERGE, ["orchestrator:mutate"], MUTATE),
    ("mutate label never raises observe", OBSERVE, ["orchestrator:mutate"], OBSERVE),
    ("observe label under observe", OBSERVE, ["orchestrator:observe"], OBSERVE),
    ("mutate label under mutate", MUTATE, ["orchestrator:mutate"], MUTATE),
    (
        "both labels: the lowest wins",
        MERGE,
        ["orchestrator:mutate", "orchestrator:observe"],
        OBSERVE,
    ),
    ("labels compare without case", MERGE, ["Orchestrator:Observe"], OBSERVE),
]


def effective_rollout_mode(policy: Policy, labels: list[str]) -> RolloutMode:
    return effective_mode(flow_policy(policy), labels)


@pytest.mark.parametrize(
    ("policy_mode", "labels", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_effective_rollout_mode(
    policy_mode: RolloutMode, labels: list[str], expected: RolloutMode
) -> None:
    policy = Policy(rollout=RolloutSettings(mode=policy_mode))
    assert effective_rollout_mode(policy, labels) is expected


def test_the_label_names_are_policy_keys() -> None:
    policy = Policy(
        rollout=RolloutSettings(mode=MERGE, observe_label="hold", mutate_label="no-merge")
    )
    assert effective_rollout_mode(policy, ["orchestrator:observe"]) is MERGE
    assert effective_rollout_mode(policy, ["no-merge"]) is MUTATE
    assert effective_rollout_mode(policy, ["hold"]) is OBSERVE
