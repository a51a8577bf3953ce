"""The dashboard in headless Chromium: the table, its fields, and timeline pages."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

from tests.web.browser import browser_page
from tests.web.conftest import FINISHED, Site, populate_finished

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


# Where the screenshots are kept after the run too, for a person to look at.
SCREENSHOT_DIR = Path(tempfile.gettempdir()) / "orchestrator-screenshots"
LAPTOP_WIDTH = 1280


def _fits(page: Any) -> None:
    """No horizontal scroll, and nothing wider than the body between its margins."""
    assert page.evaluate("document.documentElement.scrollWidth") <= LAPTOP_WIDTH
    overflow = page.evaluate(
        "(() => { const edge = document.body.getBoundingClientRect().right;"
        " return [...document.querySelectorAll('table, pre, .workpad, dl')]"
        ".filter(e => e.getBoundingClientRect().right > edge + 1)"
        ".map(e => e.tagName + ' ' + Math.round(e.getBoundingClientRect().right)); })()"
    )
    assert overflow == []


def _shoot(page: Any, name: str, shots: Path) -> Path:
    path = shots / name
    page.screenshot(path=str(path), full_page=True)
    SCREENSHOT_DIR.mkdir(exist_ok=True)
    shutil.copyfile(path, SCREENSHOT_DIR / name)
    return path


def test_dashboard_and_a_long_timeline_fit_a_laptop_screen(site_factory, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    site: Site = site_factory()
    populate_finished(site.db)
    shots = tmp_path / "screenshots"
    shots.mkdir()
    with browser_page(width=LAPTOP_WIDTH) as page:
        page.goto(site.url + "/")
        _fits(page)
        done = page.locator(f"tr[id='acme/app#{FINISHED}']")
        assert done.locator("td.tracker").inner_text() == "Done"
        gates = done.locator("td.gates").inner_text()
        assert gates.startswith("merged #21") and "pending" not in gates
        _shoot(page, "dashboard-1280.png", shots)

        page.click(f"text=acme/app#{FINISHED}")
        page.wait_for_url(f"**/issues/acme/app/{FINISHED}")
        _fits(page)
        # Forty workpad rewrites take six lines; the raw records stay folded away.
        assert page.locator("tr.effect").count() == 11
        assert page.locator("tr.effect", has_text="\u00d7 15").count() == 1
        assert not page.locator("details.raw pre").first.is_visible()
        assert "__type__" not in page.locator("body").inner_text()
        workpad = page.locator(".workpad").inner_text()
        assert "Phase: done" in workpad and "last_merge_commit_sha" in workpad
        run = page.locator("tr.run").first.inner_text()
        assert "replica-a" in run and "failed" in run and "2 min 00 s" in run
        _shoot(page, "timeline-1280.png", shots)
        # Opening the raw records and a long result keeps the page within the screen.
        for summary in page.locator("details > summary").all():
            summary.click()
        _fits(page)
        _shoot(page, "timeline-1280-open.png", shots)
    for name in ("dashboard-1280.png", "timeline-1280.png", "timeline-1280-open.png"):
        assert (shots / name).stat().st_size > 10_000
        assert (SCREENSHOT_DIR / name).is_file()
