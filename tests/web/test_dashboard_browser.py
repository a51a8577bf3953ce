"""The dashboard in headless Chromium: the table, its fields, and a timeline page."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.web.browser import browser_page
from tests.web.conftest import Site

pytestmark = pytest.mark.browser


def test_dashboard_table_and_timeline_in_chromium(site_factory, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    site: Site = site_factory()
    shots = tmp_path / "screenshots"
    shots.mkdir()
    with browser_page() as page:
        page.goto(site.url + "/")
        row = page.locator("tr", has_text="acme/app#7")
        text = row.inner_text()
        for expected in (
            "In Review",
            "waiting_for_checks",
            "mutate",
            "#12",
            "aaaaaaaa",
            "wait for checks on aaaaaaaa",
            "checks_pending",
            "checks:pending",
        ):
            assert expected in text, expected
        running = page.locator("tr", has_text="acme/app#9").inner_text()
        assert "implementing" in running and "tool_call: pytest" in running
        header = page.locator(".hdr").inner_text()
        assert "rollout mode: mutate" in header and "core 4990/5000" in header
        page.screenshot(path=str(shots / "dashboard.png"), full_page=True)
        page.click("text=acme/app#7")
        page.wait_for_url("**/issues/acme/app/7")
        assert "Phase events" in page.content()
        assert page.locator("h1").inner_text().startswith("acme/app#7")
        page.screenshot(path=str(shots / "timeline.png"), full_page=True)
    assert (shots / "dashboard.png").stat().st_size > 10_000
