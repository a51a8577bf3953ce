"""The dashboard groups its issues by repository when the daemon polls several."""

from __future__ import annotations

from orchestrator.web.pages.dashboard import dashboard
from orchestrator.web.views.dashboard import IssueRow, header

from .conftest import make_status


def row(repo: str, number: int) -> IssueRow:
    return IssueRow(
        repo=repo,
        number=number,
        title=f"Issue {number}",
        tracker_state="Todo",
        phase="implementing",
        phase_since="2026-01-01T00:00:00+00:00",
        rollout_mode="merge",
        ownership="pass",
        kill_switch="pass",
        pr_number=None,
        pr_head_sha=None,
        last_observed_at=None,
        next_action=None,
        waiting_reason=None,
        gates={},
        running_phase=None,
        running_since=None,
        running_elapsed_s=None,
        last_event=None,
        last_event_at=None,
        retry_due_at=None,
        rework_cycles=0,
    )


def test_issues_of_several_repositories_are_grouped_under_their_names() -> None:
    status = make_status(repos=("acme/widgets", "acme/gadgets"), stopped_repos=("acme/gadgets",))
    head = header(status, status.replica_id)
    rows = [row("acme/widgets", 1), row("acme/gadgets", 4), row("acme/widgets", 2)]
    page = dashboard(head, rows, "http://github.test")
    assert "repositories: acme/widgets, acme/gadgets" in page
    assert head.as_json()["repos"] == ("acme/widgets", "acme/gadgets")
    gadgets = page.index('id="repo-acme/gadgets"')
    widgets = page.index('id="repo-acme/widgets"')
    # Each heading, then its own issues: gadgets (by name first), then widgets.
    assert gadgets < page.index('id="acme/gadgets#4"') < widgets
    assert widgets < page.index('id="acme/widgets#1"') < page.index('id="acme/widgets#2"')
    gadgets_heading = page[gadgets:].split("</tr>")[0]
    assert (
        "(1 issue)" in gadgets_heading and "stopped by its repository-wide label" in gadgets_heading
    )
    widgets_heading = page[widgets:].split("</tr>")[0]
    assert "(2 issues)" in widgets_heading and "stopped" not in widgets_heading


def test_one_repository_has_no_heading() -> None:
    status = make_status()
    head = header(status, status.replica_id)
    page = dashboard(head, [row("acme/widgets", 1)], "http://github.test")
    assert 'class="repo"' not in page and 'id="acme/widgets#1"' in page
