"""The dashboard of a running daemon on the emulator, in headless Chromium."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from orchestrator_sim.demo.run import Demo
from orchestrator_sim.demo.world import REPO
from tests.web.browser import browser_page

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_live_dashboard_shows_issues_a_kill_switch_and_a_timeline(tmp_path: Path) -> None:
    run = Demo(tmp_path / "demo", port=0, say=lambda line: None)
    shots = tmp_path / "screenshots"
    shots.mkdir()
    try:
        url = run.start()
        assert url is not None
        stopped = run.world.issues[2]
        stop_label = run.daemon.view.policy.rollout.kill_switch_label
        with browser_page() as page:
            page.goto(url + "/")
            page.wait_for_selector(f"tr[id='{REPO}#{stopped}']", timeout=30_000)
            run.world.server.control.add_labels(
                REPO, stopped, [stop_label], as_user=run.world.human.login
            )
            deadline = time.monotonic() + 60
            while True:
                page.reload()
                row = page.locator(f"tr[id='{REPO}#{stopped}']").inner_text()
                if "kill_switch_active" in row:
                    break
                assert time.monotonic() < deadline, f"kill switch never shown: {row}"
                time.sleep(0.5)
            killswitch_cell = page.locator(f"tr[id='{REPO}#{stopped}'] td.killswitch")
            assert killswitch_cell.inner_text().strip() == "fail"
            other = page.locator(f"tr[id='{REPO}#{run.world.issues[0]}']").inner_text()
            assert "demo/widgets#" in other and "kill_switch_active" not in other
            header = page.locator(".hdr").inner_text()
            assert "rollout mode: merge" in header and "GitHub budget: core" in header
            page.screenshot(path=str(shots / "live-dashboard.png"), full_page=True)
            page.click(f"text={REPO}#{stopped}")
            page.wait_for_url(f"**/issues/{REPO}/{stopped}")
            assert "Phase events" in page.content() and "Agent runs" in page.content()
            page.screenshot(path=str(shots / "live-timeline.png"), full_page=True)
    finally:
        run.stop()
