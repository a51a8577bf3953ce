"""An approval covers only the head it was given on: stale labels are withdrawn, heads dated."""

from __future__ import annotations

from datetime import timedelta

from orchestrator.domain.actions import SideEffectKind
from orchestrator.domain.phases import Phase, RolloutMode
from orchestrator.domain.snapshot import HeadSighting, LabelAction, LabelEvent
from tests.domain.builders import (
    APPROVAL,
    HEAD_A,
    HEAD_B,
    HEAD_PUSHED,
    HUMAN,
    NOW,
    OWNED,
    approved_issue,
    checks,
    effects_of,
    make_issue,
    make_item,
    make_policy,
    make_pr,
    make_snapshot,
    observes,
    run_plan,
)


def test_a_label_given_before_the_head_moved_is_removed_and_a_new_approval_asked() -> None:
    item = make_item(
        Phase.WAITING_FOR_HUMAN,
        issue=approved_issue(),
        pr=make_pr(HEAD_B, checks=checks(HEAD_B), updated_at=NOW),
        head_seen=HeadSighting(HEAD_A, HEAD_PUSHED),
    )
    found = effects_of(run_plan(make_snapshot(item)))
    removals = [
        e
        for e in found
        if e.kind is SideEffectKind.SET_LABELS and "stale-approval" in e.idempotency_key
    ]
    assert [(e.payload.remove, e.payload.on_number) for e in removals] == [((APPROVAL,), 1)]
    asks = [e for e in found if e.kind is SideEffectKind.POST_COMMENT]
    assert len(asks) == 1 and HEAD_B[:12] in str(asks[0].payload.body)
    assert asks[0].idempotency_key.endswith(f"approval-withdrawn:{HEAD_B}")


def test_a_stale_label_on_the_pull_request_is_removed_there() -> None:
    event = LabelEvent(APPROVAL, LabelAction.ADDED, HUMAN, HEAD_PUSHED - timedelta(minutes=1))
    item = make_item(
        Phase.WAITING_FOR_HUMAN,
        pr=make_pr(labels=frozenset({APPROVAL}), label_events=(event,)),
    )
    removals = [
        e
        for e in effects_of(run_plan(make_snapshot(item)))
        if e.kind is SideEffectKind.SET_LABELS and "stale-approval" in e.idempotency_key
    ]
    assert [e.payload.on_number for e in removals] == [10]


def test_a_label_given_after_the_head_is_kept() -> None:
    item = make_item(Phase.WAITING_FOR_HUMAN, issue=approved_issue())
    keys = [e.idempotency_key for e in effects_of(run_plan(make_snapshot(item)))]
    assert not any("stale-approval" in key or "approval-withdrawn" in key for key in keys)


def test_a_label_without_a_readable_history_is_never_removed() -> None:
    item = make_item(
        Phase.WAITING_FOR_HUMAN,
        issue=make_issue(labels=OWNED | {APPROVAL}),
        pr=make_pr(updated_at=NOW),
    )
    keys = [e.idempotency_key for e in effects_of(run_plan(make_snapshot(item)))]
    assert not any("stale-approval" in key for key in keys)


def test_stale_labels_are_left_alone_in_observe_mode() -> None:
    item = make_item(Phase.WAITING_FOR_HUMAN, issue=approved_issue(), pr=make_pr(updated_at=NOW))
    actions = run_plan(make_snapshot(item), make_policy(rollout_mode=RolloutMode.OBSERVE))
    assert all(e.kind is SideEffectKind.UPSERT_WORKPAD for e in effects_of(actions))


def test_the_observation_keeps_the_first_sighting_of_a_head() -> None:
    seen = HeadSighting(HEAD_A, HEAD_PUSHED)
    same = make_item(Phase.WAITING_FOR_HUMAN, pr=make_pr(updated_at=NOW), head_seen=seen)
    assert observes(run_plan(make_snapshot(same)))[0].head_seen == seen
    moved = make_item(
        Phase.WAITING_FOR_HUMAN,
        pr=make_pr(HEAD_B, checks=checks(HEAD_B), updated_at=NOW),
        head_seen=seen,
    )
    assert observes(run_plan(make_snapshot(moved)))[0].head_seen == HeadSighting(HEAD_B, NOW)
