"""The operator API over real HTTP: endpoints, envelope, 405s, auth, coalescing, readiness."""

from __future__ import annotations

import shutil
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from orchestrator.operator.render import header_lines
from tests.web.conftest import Site

TOKEN = "s3cret-api-token"


def test_state_lists_issues_with_live_fields(site_factory) -> None:  # type: ignore[no-untyped-def]
    site: Site = site_factory()
    body = httpx.get(f"{site.url}/api/v1/state").json()
    assert body["daemon"]["rollout_mode"] == "mutate" and body["daemon"]["running"] == 1
    issues = {i["number"]: i for i in body["issues"]}
    seven = issues[7]
    assert (seven["phase"], seven["pr_number"], seven["tracker_state"]) == (
        "waiting_for_checks",
        12,
        "In Review",
    )
    assert seven["gates"] == {
        "checks": "pending",
        "human_approval": "required",
        "mergeability": "pass",
        "head_match": "pass",
    }
    assert seven["next_action"] == "wait for checks on aaaaaaaa"
    assert seven["waiting_reason"] == "checks_pending"
    assert issues[9]["running_phase"] == "implementing"
    assert issues[9]["last_event"] == "tool_call: pytest"


def test_issue_timeline_and_not_found_envelope(site_factory) -> None:  # type: ignore[no-untyped-def]
    site: Site = site_factory()
    data = httpx.get(f"{site.url}/api/v1/issues/acme/app/7").json()
    assert [(e["from"], e["to"]) for e in data["phase_events"]] == [
        (None, "implementing"),
        ("implementing", "waiting_for_checks"),
    ]
    assert data["side_effects"][0]["status"] == "done"
    assert data["agent_runs"][0]["outcome"] == "completed"
    assert data["agent_runs"][0]["duration_s"] == 480.0
    refused = httpx.get(f"{site.url}/api/v1/issues/acme/app/9").json()["side_effects"]
    assert refused[0]["status"] == "refused_by_mode"
    missing = httpx.get(f"{site.url}/api/v1/issues/acme/app/99")
    assert missing.status_code == 404
    assert missing.json() == {
        "error": {"code": "issue_not_found", "message": "acme/app#99 is not tracked"}
    }
    unknown = httpx.get(f"{site.url}/api/v1/nothing")
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "not_found"


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("DELETE", "/api/v1/state"),
        ("GET", "/api/v1/refresh"),
        ("PUT", "/api/v1/brake"),
        ("POST", "/healthz"),
        ("POST", "/api/v1/issues/acme/app/7"),
        ("POST", "/"),
    ],
)
def test_other_methods_are_405(site_factory, method: str, path: str) -> None:  # type: ignore[no-untyped-def]
    site: Site = site_factory(TOKEN)
    response = httpx.request(
        method, f"{site.url}{path}", headers={"Authorization": f"Bearer {TOKEN}"}
    )
    assert response.status_code == 405
    assert response.json()["error"]["code"] == "method_not_allowed"
    assert "allow" in response.headers


def test_mutations_refused_without_a_configured_token(site_factory) -> None:  # type: ignore[no-untyped-def]
    site: Site = site_factory()
    response = httpx.post(f"{site.url}/api/v1/refresh")
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "token_not_configured"
    assert site.control.requests == 0
    assert httpx.get(f"{site.url}/api/v1/state").status_code == 200


def test_token_guards_reads_and_writes(site_factory) -> None:  # type: ignore[no-untyped-def]
    site: Site = site_factory(TOKEN)
    good = {"Authorization": f"Bearer {TOKEN}"}
    for path in ("/", "/api/v1/state", "/metrics", "/issues/acme/app/7"):
        assert httpx.get(f"{site.url}{path}").status_code == 401
        assert (
            httpx.get(f"{site.url}{path}", headers={"Authorization": "Bearer nope"}).status_code
            == 401
        )
        assert httpx.get(f"{site.url}{path}", headers=good).status_code == 200
    denied = httpx.post(f"{site.url}/api/v1/brake")
    assert denied.status_code == 401 and denied.json()["error"]["code"] == "unauthorized"
    assert not (site.tmp / "brake").exists()
    assert httpx.get(f"{site.url}/healthz").status_code == 200


def test_refresh_coalesces(site_factory) -> None:  # type: ignore[no-untyped-def]
    site: Site = site_factory(TOKEN)
    good = {"Authorization": f"Bearer {TOKEN}"}
    first = httpx.post(f"{site.url}/api/v1/refresh", headers=good)
    second = httpx.post(f"{site.url}/api/v1/refresh", headers=good)
    assert (first.status_code, first.json()) == (202, {"status": "queued"})
    assert (second.status_code, second.json()) == (202, {"status": "coalesced"})
    site.control.pending = False
    assert httpx.post(f"{site.url}/api/v1/refresh", headers=good).json()["status"] == "queued"


def test_brake_on_and_off(site_factory) -> None:  # type: ignore[no-untyped-def]
    site: Site = site_factory(TOKEN)
    good = {"Authorization": f"Bearer {TOKEN}"}
    assert httpx.post(f"{site.url}/api/v1/brake", headers=good).json() == {"brake": True}
    assert (site.tmp / "brake").exists()
    assert httpx.delete(f"{site.url}/api/v1/brake", headers=good).json() == {"brake": False}
    assert not (site.tmp / "brake").exists()


def test_readyz_follows_database_policy_and_ticks(site_factory) -> None:  # type: ignore[no-untyped-def]
    site: Site = site_factory()
    assert httpx.get(f"{site.url}/readyz").json() == {"status": "ready"}
    site.live.status = replace(
        site.live.status, last_tick_at=datetime.now(UTC) - timedelta(minutes=5)
    )
    stale = httpx.get(f"{site.url}/readyz")
    assert stale.status_code == 503 and "last tick is stale" in stale.json()["problems"][0]
    site.live.status = replace(
        site.live.status,
        last_tick_at=datetime.now(UTC),
        policy_error="WORKFLOW.md:3:1: agent: unknown key",
    )
    invalid = httpx.get(f"{site.url}/readyz").json()
    assert invalid["problems"] == ["policy invalid: WORKFLOW.md:3:1: agent: unknown key"]
    site.live.status = replace(site.live.status, policy_error=None)
    shutil.rmtree(site.tmp / "db")
    gone = httpx.get(f"{site.url}/readyz")
    assert gone.status_code == 503 and gone.json()["problems"][0].startswith("database unreachable")
    assert httpx.get(f"{site.url}/healthz").status_code == 200


def test_metrics_parse_as_prometheus_text(site_factory) -> None:  # type: ignore[no-untyped-def]
    site: Site = site_factory()
    text = httpx.get(f"{site.url}/metrics").text
    families = {f.name: f for f in text_string_to_metric_families(text)}
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for f in families.values()
        for s in f.samples
    }
    assert samples[("orchestrator_ticks_total", ())] == 42
    assert samples[("orchestrator_agent_tokens_total", (("kind", "input"),))] == 1000
    assert samples[("orchestrator_agent_tokens_total", (("kind", "cached_input"),))] == 400
    assert samples[("orchestrator_agent_tokens_total", (("kind", "output"),))] == 234
    assert samples[("orchestrator_agent_cost_usd_total", ())] == 0.25
    assert samples[("orchestrator_issues", (("phase", "waiting_for_checks"),))] == 1
    assert (
        samples[
            ("orchestrator_agent_runs_total", (("outcome", "completed"), ("phase", "implementing")))
        ]
        == 1
    )
    assert (
        samples[
            (
                "orchestrator_side_effects_total",
                (("kind", "merge_pr"), ("status", "refused_by_mode")),
            )
        ]
        == 1
    )
    assert samples[("orchestrator_github_budget_remaining", (("resource", "core"),))] == 4990
    assert samples[("orchestrator_running_agents", ())] == 1
    assert samples[("orchestrator_github_units_per_cycle", (("resource", "graphql"),))] == 4.0
    exhausted = ("orchestrator_github_budget_exhausted_in_seconds", (("resource", "graphql"),))
    assert samples[exhausted] == 100
    assert ("orchestrator_github_budget_exhausted_in_seconds", (("resource", "core"),)) not in (
        samples
    )
    assert samples[("orchestrator_passive_sweep", (("kind", "passive"),))] == 1500
    assert samples[("orchestrator_passive_sweep", (("kind", "read_this_pass"),))] == 300


def test_polling_cost_and_sweep_in_the_api_the_dashboard_and_status(site_factory) -> None:  # type: ignore[no-untyped-def]
    site: Site = site_factory()
    polling = httpx.get(f"{site.url}/api/v1/state").json()["daemon"]["polling"]
    assert polling["units_per_cycle"] == 5.0 and polling["units_per_issue"] == 0.0025
    assert polling["sweep"] == {
        "passive": 1500,
        "read_this_pass": 300,
        "spread_ticks": 10,
        "last_pass_ticks": 11,
        "behind": True,
    }
    graphql = next(b for b in polling["budgets"] if b["resource"] == "graphql")
    assert graphql["exhausted_at"] is not None
    page = httpx.get(f"{site.url}/").text
    assert "5.0 units per cycle (0.0025 per issue)" in page
    assert "graphql budget runs out at" in page
    assert "re-read 300/1500 this pass (a pass every 11 ticks)" in page and "behind" in page
    assert "catching up workpad comments to recover: 40 left" in page
    lines = header_lines(httpx.get(f"{site.url}/api/v1/state").json()["daemon"])
    assert "polling: 5.0 units per cycle (0.0025 per issue, 2000 issues)" in lines
    assert any(line.startswith("warning: the graphql budget runs out at") for line in lines)
    assert (
        "waiting pull requests: 300/1500 re-read this pass, a pass every 11 ticks "
        "(behind: the last tick ran out of time)"
    ) in lines


def test_dashboard_and_timeline_pages(site_factory) -> None:  # type: ignore[no-untyped-def]
    site: Site = site_factory()
    page = httpx.get(f"{site.url}/").text
    assert 'http-equiv="refresh"' in page
    assert "acme/app#7" in page and "Add &lt;b&gt;x&lt;/b&gt;" in page
    assert 'href="http://github.test/acme/app/pull/12"' in page
    # Snake-case values may break after their underscores (<wbr>) in the narrow table.
    text = page.replace("<wbr>", "")
    assert "waiting_for_checks" in text and "wait for checks on aaaaaaaa" in text
    timeline = httpx.get(f"{site.url}/issues/acme/app/7").text
    assert "Phase events" in timeline and "create_pr" in timeline
    assert httpx.get(f"{site.url}/issues/acme/app/99").status_code == 404
