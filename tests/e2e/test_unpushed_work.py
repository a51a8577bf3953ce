"""Commits a turn left unpushed (its daemon died between the commit and the push) are not lost.

A turn that commits and then dies leaves the commit in the workspace only.
The next attempt starts there; whatever it does, the commit is this issue's
work: pushed, never taken for someone else's push, never "no commit".
The scripted agent plays the death with ``exit`` after its commit; its next
attempt finds the work already done and commits nothing more.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import text
from structlog.testing import capture_logs

from orchestrator_sim.testing import SimWorld
from tests.support.idle import wait_idle

from .harness import default_scenario, flow_for

POLICY = {"agent": {"max_retry_backoff_ms": 1000}}


def dies_after_commit(phase_steps: list[dict[str, Any]]) -> dict[str, Any]:
    return {"steps": [*phase_steps, {"exit": 1}]}


def test_implementing_that_died_after_its_commit_is_pushed_by_the_next_attempt(
    tmp_path: Path, world: SimWorld
) -> None:
    scenario = default_scenario()
    scenario["phases"]["implementing"] = {
        "attempts": {
            "1": dies_after_commit(
                [
                    {"write": {"path": "src/feature.py", "content": "FEATURE = 1\n"}},
                    {"commit": "Add the feature"},
                ]
            ),
            # The work is already there: nothing to commit, only the description.
            "2": {"steps": [{"pr_description": "## Summary\n\nAdds the feature."}]},
        }
    }
    with flow_for(tmp_path, world, scenario=scenario, policy=POLICY) as flow:
        number = flow.open_issue()
        flow.run(lambda: bool(flow.pulls()), what="the pull request")
        [pull] = flow.pulls()
        runs = sorted(flow.d.db.runs.for_issue(1), key=lambda r: r.started_at)
        assert [r.outcome for r in runs] == ["failed", "completed"]
        committed = flow.rest("GET", f"/repos/{world.repo}/commits/{pull['head']['sha']}")
        assert committed["commit"]["message"].startswith("Add the feature")
        record = flow.record(number)
        assert record is not None and record.phase.value != "blocked"


def test_rework_that_died_after_its_commit_is_pushed_not_taken_for_a_foreign_push(
    tmp_path: Path, world: SimWorld
) -> None:
    scenario = default_scenario()
    fix = {"write": {"path": "src/feature.py", "content": "# fixed\n", "append": True}}
    summary = {
        "fix_summary": [{"check": "ci", "status": "fixed", "message": "Fixed.", "commit": "HEAD"}]
    }
    scenario["phases"]["rework"]["attempts"] = {
        "1": dies_after_commit([fix, {"commit": "Fix the failing check"}]),
        "2": {"steps": [summary]},
    }
    with flow_for(tmp_path, world, scenario=scenario, policy=POLICY) as flow:
        number = flow.open_issue()
        flow.run_to_phase(number, "waiting_for_checks")
        pr = flow.pr_number(number)
        first = flow.head(pr)
        flow.check(pr, "failure")
        flow.run_to_phase(number, "rework")
        flow.run(lambda: flow.head(pr) != first, what="the rework commit is pushed")
        flow.run_to_phase(number, "waiting_for_checks")
        pushed = flow.rest("GET", f"/repos/{world.repo}/commits/{flow.head(pr)}")
        assert pushed["commit"]["message"].startswith("Fix the failing check")
        comments = [c["body"] for c in flow.comments(number)]
        assert not [body for body in comments if "moved to" in body and "while the agent" in body]


def test_a_commit_lost_with_its_workspace_reruns_the_turn_instead_of_retrying_the_push(
    tmp_path: Path, world: SimWorld
) -> None:
    with flow_for(tmp_path, world, policy=POLICY) as flow:
        # The worker's push fails once; then the workspace (the only copy) disappears.
        world.control.add_fault(path="*git-receive-pack", action="error", status=500, count=1)
        number = flow.open_issue()
        flow.step()
        assert flow.pulls() == []
        [workspace] = list((tmp_path / "workspaces").glob("acme_widgets_1-*"))
        shutil.rmtree(workspace)
        flow.run(lambda: bool(flow.pulls()), what="the pull request of the re-run")
        runs = sorted(flow.d.db.runs.for_issue(1), key=lambda r: r.started_at)
        assert [r.phase for r in runs] == ["implementing", "implementing"]
        pushes = [e for e in flow.d.db.outbox.for_issue(1) if e.kind == "push_branch"]
        [lost] = [e for e in pushes if e.status == "failed"]
        assert "was never pushed and is lost: its workspace is gone" in lost.result["error"]
        # The worker's push (500), then one from the tick that found the loss: never again.
        assert lost.attempts == 2
        record = flow.record(number)
        assert record is not None and record.phase.value != "blocked"


def test_a_recorded_turn_whose_claim_was_left_open_is_not_run_again(
    tmp_path: Path, world: SimWorld
) -> None:
    with flow_for(tmp_path, world, policy=POLICY) as flow:
        flow.open_issue()
        flow.step()
        [run] = flow.d.db.runs.for_issue(1)
        record = flow.record(1)
        assert record is not None and record.last_outcome is not None
        assert record.last_outcome.run_id == run.run_id
        # As if the daemon had died between recording the turn and closing its claim.
        with flow.d.db.engine.begin() as conn:
            conn.execute(text("UPDATE turn_claims SET finished_at = NULL, owner = NULL"))
        with capture_logs() as logs:
            d = flow.d
            d.claim_ready()
            assert wait_idle(d, 30)
        assert [e["run_id"] for e in logs if e["event"] == "claim_already_recorded"] == [run.run_id]
        assert len(flow.d.db.runs.for_issue(1)) == 1
        assert flow.d.db.claims.open(world.repo) == []


def test_a_recorded_turn_is_not_run_again_after_a_holder_took_its_claim_over_and_died(
    tmp_path: Path, world: SimWorld
) -> None:
    """The holder that recorded the turn died before closing the claim; the next one took
    the claim over (a new run id) and died too. The turn is still done: an outcome finished
    after the turn was queued is the claim's, whoever recorded it."""
    with flow_for(tmp_path, world, policy=POLICY) as flow:
        flow.open_issue()
        flow.step()
        [run] = flow.d.db.runs.for_issue(1)
        with flow.d.db.engine.begin() as conn:
            conn.execute(
                text(
                    "UPDATE turn_claims SET finished_at = NULL, owner = NULL, "
                    "run_id = 'took-over-and-died'"
                )
            )
        with capture_logs() as logs:
            d = flow.d
            d.claim_ready()
            assert wait_idle(d, 30)
        assert [e["event"] for e in logs if e["event"] == "claim_already_recorded"] == [
            "claim_already_recorded"
        ]
        assert [r.run_id for r in flow.d.db.runs.for_issue(1)] == [run.run_id]
        assert flow.d.db.claims.open(world.repo) == []


def test_a_turn_recorded_by_a_replica_whose_clock_runs_ahead_does_not_stop_the_next_turn(
    tmp_path: Path, world: SimWorld
) -> None:
    """Whether a claim's turn is already recorded is judged by the claim the outcome was
    recorded under, never by time: an outcome stamped an hour ahead (its replica's clock
    runs fast) is not taken for the next turn's."""
    with flow_for(tmp_path, world, policy=POLICY) as flow:
        number = flow.open_issue()
        flow.step()
        row = flow.d.parts.records.get(flow.ref(number))
        assert row is not None and row.record.last_outcome is not None
        first = row.record.last_outcome
        assert first.claim_id is not None
        flow.d.parts.records.update(
            row.issue_id,
            lambda record: replace(
                record,
                last_outcome=replace(first, finished_at=first.finished_at + timedelta(hours=1)),
            ),
            now=datetime.now(UTC),
        )
        with capture_logs() as logs:
            flow.run(
                lambda: len(flow.d.db.runs.for_issue(1)) >= 2, max_ticks=10, what="the review turn"
            )
        assert not [e for e in logs if e["event"] == "claim_already_recorded"]
        record = flow.record(number)
        assert record is not None and record.last_outcome is not None
        assert record.last_outcome.claim_id not in (None, first.claim_id)


def test_a_turn_recorded_by_a_replica_whose_clock_runs_behind_moves_the_flow_once(
    tmp_path: Path, world: SimWorld
) -> None:
    """Whether an outcome belongs to the phase's current visit is judged by the visit it
    ran in, never by comparing clocks: turns stamped a minute behind the leader's clock
    move the flow once, and are not run again as if they had never been recorded."""
    with flow_for(tmp_path, world, policy=POLICY) as flow:

        def behind() -> datetime:
            return datetime.now(UTC) - timedelta(minutes=1)

        flow.d.parts.repo_set.first.parts.turns.clock = behind
        flow.d.parts.repo_set.agents.runner.clock = behind
        flow.to_waiting_for_human()
        runs = flow.d.db.runs.for_issue(1)
        assert sorted(r.phase for r in runs) == ["implementing", "reviewing"]


def test_a_commit_github_has_is_not_taken_for_lost_when_its_workspace_is_gone(
    tmp_path: Path, world: SimWorld
) -> None:
    # The worker's push reached GitHub but its answer was lost (as when the replica that
    # pushed died before recording it); the workspace is gone too. The push is done,
    # and the turn is not run again.
    with flow_for(tmp_path, world, policy=POLICY) as flow:
        world.control.add_fault(path="*git-receive-pack", action="lost_response", count=1)
        number = flow.open_issue()
        flow.step()
        assert flow.pulls() == []
        record = flow.record(number)
        assert record is not None and record.last_outcome is not None
        head = record.last_outcome.head_after
        branch = flow.branch(number)
        assert flow.rest("GET", f"/repos/{world.repo}/branches/{branch}")["commit"]["sha"] == head
        [workspace] = list((tmp_path / "workspaces").glob("acme_widgets_1-*"))
        shutil.rmtree(workspace)
        flow.run(lambda: bool(flow.pulls()), what="the pull request")
        assert [r.phase for r in flow.d.db.runs.for_issue(1)] == ["implementing"]
        pushes = [e for e in flow.d.db.outbox.for_issue(1) if e.kind == "push_branch"]
        assert [e.status for e in pushes] == ["done"]
        assert flow.pulls()[0]["head"]["sha"] == head
