"""The issue's branch is named from its title once, when the daemon claims it."""

from __future__ import annotations

from pathlib import Path

from orchestrator_sim.testing import SimWorld

from .harness import flow_for


def test_the_branch_is_named_from_the_title_at_the_claim_and_survives_a_title_edit(
    tmp_path: Path, world: SimWorld
) -> None:
    with flow_for(tmp_path, world) as flow:
        number = flow.open_issue("Add a widget: the ÜBER fast one!")
        flow.step()  # claim and the implementing turn
        branch = flow.branch(number)
        assert branch == f"orchestrator/{number}-add-a-widget-the-uber-fast-one"

        flow.rest("PATCH", f"/repos/{world.repo}/issues/{number}", {"title": "Something else"})
        flow.run_to_phase(number, "waiting_for_checks")

        assert flow.branch(number) == branch
        (pull,) = flow.pulls()
        assert pull["head"]["ref"] == branch
        names = [b["name"] for b in flow.rest("GET", f"/repos/{world.repo}/branches")]
        assert sorted(names) == sorted(["main", branch]), names
