"""The issue page and the dashboard row of an issue with a long life, as HTML and JSON."""

from __future__ import annotations

import re
from html import unescape

import httpx

from orchestrator.web.views.issue import fold_side_effects, observation_lines
from tests.web.conftest import (
    FINISHED,
    FINISHED_HEAD,
    LONG_ERROR,
    MERGE_COMMIT,
    NOW,
    Site,
    populate_finished,
)


def _effect(kind: str, minute: int, status: str = "done", mode: str = "merge") -> dict[str, object]:
    at = NOW.replace(minute=minute).isoformat()
    return {
        "kind": kind,
        "key": f"acme/app#1:{kind}:{minute}",
        "status": status,
        "rollout_mode": mode,
        "attempts": 1,
        "result": {},
        "created_at": at,
        "updated_at": at,
    }


def test_consecutive_workpad_updates_fold_into_one_line_with_count_and_times() -> None:
    effects = [
        _effect("create_pr", 1),
        _effect("upsert_workpad", 2),
        _effect("upsert_workpad", 3),
        _effect("upsert_workpad", 4),
        _effect("upsert_workpad", 5, status="failed"),
        _effect("upsert_workpad", 6),
        _effect("set_labels", 7),
        _effect("set_labels", 8),
        _effect("upsert_workpad", 9),
    ]
    folded = fold_side_effects(effects)
    assert [(e["kind"], e["status"], e["count"]) for e in folded] == [
        ("create_pr", "done", 1),
        ("upsert_workpad", "done", 3),
        ("upsert_workpad", "failed", 1),
        ("upsert_workpad", "done", 1),
        # Only workpad rewrites fold: two label writes are two decisions.
        ("set_labels", "done", 1),
        ("set_labels", "done", 1),
        ("upsert_workpad", "done", 1),
    ]
    three = folded[1]
    assert three["first_at"] == effects[1]["created_at"]
    assert three["last_at"] == effects[3]["created_at"]
    assert three["key"] == effects[3]["key"] and three["attempts"] == 3


def test_the_observation_reads_as_lines_without_codec_fields() -> None:
    lines = observation_lines(
        {
            "__type__": "Observation",
            "last_observed_at": "2026-11-25T06:15:49+00:00",
            "next_intended_action": "merge",
            "rollout_mode": "merge",
            "gates": {"__type__": "x", "checks": "pass", "mergeability": "pending"},
        }
    )
    assert lines == [
        ("next action", "merge"),
        ("last observed", "2026-11-25T06:15:49+00:00"),
        ("rollout mode", "merge"),
        ("gates", "checks pass, mergeability pending"),
    ]


def _outside_details(html: str) -> str:
    return re.sub(r"<details.*?</details>", "", html, flags=re.S)


def test_the_issue_page_is_readable_and_keeps_the_raw_records_folded(site_factory) -> None:  # type: ignore[no-untyped-def]
    site: Site = site_factory()
    populate_finished(site.db)
    html = httpx.get(f"{site.url}/issues/acme/app/{FINISHED}").text
    visible = _outside_details(html)
    # The workpad as the comment on GitHub shows it, the observation as lines.
    assert "<h3>Orchestrator Workpad</h3>" in html
    assert "<b>Phase:</b> <code>done</code>" in html
    assert "last_merge_commit_sha: &quot;" + MERGE_COMMIT in html
    assert "<dt>next action</dt><dd>nothing: done</dd>" in html
    assert "__type__" not in visible and "__type__" in html
    assert html.count("<details") >= 2
    # Forty workpad rewrites (and a failed one): six lines, three of them folded.
    rows = re.findall(r'<tr class="effect">.*?</tr>', html, flags=re.S)
    counts = [int(c) for c in re.findall(r"&times; (\d+)</span>", html)]
    assert counts == [12, 15, 11]
    assert len(rows) == 11
    assert sum(1 for r in rows if "upsert_workpad" in r) == 6
    assert any("failed" in r and "upsert_workpad" in r for r in rows)
    # The long PR body is cut in the table, whole under details.
    assert "More words about it. " * 3 in unescape(html)
    create = next(r for r in rows if "create_pr" in r)
    assert "<details" in create and "&hellip;" in create
    # Agent runs: the replica, why each ended, how long, the tokens.
    runs = re.findall(r'<tr class="run">.*?</tr>', html, flags=re.S)
    assert len(runs) == 2
    assert "replica-a" in runs[0] and "failed" in runs[0] and "2 min 00 s" in runs[0]
    assert "agent exited with code 1" in runs[0] and LONG_ERROR in unescape(runs[0])
    assert "replica-b" in runs[1] and "completed" in runs[1] and "5 min 30 s" in runs[1]
    assert "123,456" in runs[1] and "80,000 cached" in runs[1] and "$1.5000" in runs[1]
    # The summary: merged, with the pull request and the merge commit.
    assert 'href="http://github.test/acme/app/pull/21"' in visible
    assert f'href="http://github.test/acme/app/commit/{MERGE_COMMIT}"' in visible
    assert f'title="{FINISHED_HEAD}"' in visible


def test_the_timeline_api_gives_the_rendered_workpad_and_run_exit_reasons(site_factory) -> None:  # type: ignore[no-untyped-def]
    site: Site = site_factory()
    populate_finished(site.db)
    data = httpx.get(f"{site.url}/api/v1/issues/acme/app/{FINISHED}").json()
    assert data["workpad_comment"].startswith("<!-- orchestrator-workpad -->\n## Orchestrator")
    assert data["issue"]["merge"] == {
        "state": "merged",
        "pr_number": 21,
        "commit_sha": MERGE_COMMIT,
    }
    first, second = data["agent_runs"]
    assert first["replica_id"] == "replica-a"
    assert first["exit_reason"].startswith("failed: agent exited with code 1: Traceback")
    assert second["exit_reason"] == "completed" and second["duration_s"] == 330.0
    assert len(data["side_effects"]) == 46


def test_a_finished_issue_shows_its_merge_not_its_gates(site_factory) -> None:  # type: ignore[no-untyped-def]
    site: Site = site_factory()
    populate_finished(site.db)
    state = httpx.get(f"{site.url}/api/v1/state").json()
    done = next(i for i in state["issues"] if i["number"] == FINISHED)
    assert done["gates"] == {} and done["tracker_state"] == "Done"
    assert done["merge"] == {"state": "merged", "pr_number": 21, "commit_sha": MERGE_COMMIT}
    waiting = next(i for i in state["issues"] if i["number"] == 7)
    assert waiting["merge"] is None and waiting["gates"]["checks"] == "pending"
    html = httpx.get(f"{site.url}/").text
    row = re.search(rf'<tr id="acme/app#{FINISHED}">.*?</tr>', html, flags=re.S)
    assert row is not None
    cells = row.group(0)
    assert "merge:" not in cells and "pending" not in cells
    assert "merged" in cells and "#21" in cells and MERGE_COMMIT[:8] in cells
