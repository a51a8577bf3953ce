"""Recovery: from the workpad comment when the database forgot, and of intents a crash left open."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import update

from orchestrator.store.models import SideEffect
from orchestrator_sim.testing import SimWorld, running_world
from tests.e2e.harness import flow_for


@pytest.fixture
def world(tmp_path: Path) -> Iterator[SimWorld]:
    with running_world(tmp_path / "sim") as running:
        yield running


def forget_database(tmp: Path) -> None:
    for name in ("orchestrator.db", "orchestrator.db-wal", "orchestrator.db-shm"):
        (tmp / name).unlink(missing_ok=True)


def test_an_empty_database_recovers_issues_from_their_workpad(
    tmp_path: Path, world: SimWorld
) -> None:
    with flow_for(tmp_path, world) as flow:
        number = flow.open_issue()
        flow.run_to_phase(number, "waiting_for_checks")
        pr = flow.pr_number(number)
        reviewed = flow.record(number).workpad.review.last_reviewed_head_sha  # type: ignore[union-attr]
        flow.stop()
        forget_database(tmp_path)
        flow.start()
        flow.step()

        record = flow.record(number)
        assert record is not None
        assert record.phase.value == "waiting_for_checks"
        assert record.workpad.pr is not None and record.workpad.pr.number == pr
        assert record.workpad.review.last_reviewed_head_sha == reviewed
        flow.check(pr, "success")
        flow.run_to_phase(number, "waiting_for_human")
        flow.approve(number)
        flow.run_to_phase(number, "done")
        assert len(flow.pulls()) == 1
        assert len(flow.workpads(number)) == 1
        assert len(flow.review_comments(pr)) == 1


def test_an_untrusted_workpad_blocks_the_issue_and_keeps_its_text(
    tmp_path: Path, world: SimWorld
) -> None:
    with flow_for(tmp_path, world, start=False) as flow:
        number = flow.open_issue()
        broken = (
            "<!-- orchestrator-workpad -->\n## Orchestrator Workpad\n\n"
            "```yaml\norchestrator:\n  phase: [unclosed\n```\n"
        )
        gh = world.github()  # the bot wrote this comment in an earlier life
        gh.requester.requestJson(
            "POST", f"/repos/{world.repo}/issues/{number}/comments", input={"body": broken}
        )
        flow.start()
        flow.idle_ticks(3)

        record = flow.record(number)
        assert record is not None and record.phase.value == "blocked"
        assert record.waiting_reason is not None
        assert record.waiting_reason.value == "metadata_recovery_required"
        workpads = flow.workpads(number)
        assert len(workpads) == 1
        body = workpads[0]["body"]
        assert "phase: blocked" in body
        assert "Recovery note" in body and "phase: [unclosed" in body
        assert flow.d.db.runs.for_issue(1) == []
        assert flow.pulls() == []


def test_intents_left_open_are_checked_on_github_never_repeated(
    tmp_path: Path, world: SimWorld
) -> None:
    with flow_for(tmp_path, world) as flow:
        number = flow.open_issue()
        flow.run_to_phase(number, "waiting_for_checks")
        row = flow.d.parts.records.get(flow.ref(number))
        assert row is not None
        create_key = next(k for k in row.record.completed_effects if ":create_pr:" in k)
        db = flow.d.db
        # A crash right after GitHub created the pull request, before anything was recorded:
        with db.session() as session:
            session.execute(
                update(SideEffect)
                .where(SideEffect.idempotency_key == create_key)
                .values(status="intended", result=None)
            )
        flow.d.parts.records.update(
            row.issue_id,
            lambda r: replace(
                r,
                completed_effects=r.completed_effects - {create_key},
                workpad=replace(r.workpad, pr=None),
            ),
            now=datetime.now(UTC),
        )
        # ... and a comment that was about to be posted when the process died.
        ghost = f"{world.repo}#{number}:post_comment:blocked:ghost"
        db.outbox.intend(
            ghost,
            kind="post_comment",
            payload={"body": "never sent"},
            issue_id=row.issue_id,
            rollout_mode="merge",
            now=datetime.now(UTC),
        )
        flow.restart()

        recovery = flow.d.recovery
        assert recovery is not None
        assert (recovery.confirmed, recovery.unconfirmed) == (1, 1)
        record = flow.record(number)
        assert record is not None and record.workpad.pr is not None
        assert create_key in record.completed_effects
        assert flow.d.db.outbox.get(create_key).status == "done"  # type: ignore[union-attr]
        assert flow.d.db.outbox.get(ghost).status == "failed"  # type: ignore[union-attr]
        flow.check(record.workpad.pr.number, "success")
        flow.run_to_phase(number, "waiting_for_human")
        assert len(flow.pulls()) == 1
        assert not [c for c in flow.comments(number) if "never sent" in c["body"]]
