"""Headless Chromium for the browser tests: Debian's binary driven by Playwright."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


def chromium_path() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        message = "Debian's chromium is not installed (`make test` installs it)"
        if os.environ.get("ORCHESTRATOR_REQUIRE_BROWSER") or os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


@contextmanager
def browser_page(width: int = 1600, height: int = 900) -> Iterator[Any]:
    """A page in a fresh headless Chromium profile, its window ``width`` CSS pixels wide."""
    from playwright.sync_api import sync_playwright

    executable = chromium_path()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=executable,
            headless=True,
            args=CHROMIUM_ARGS,
        )
        try:
            yield browser.new_page(viewport={"width": width, "height": height})
        finally:
            browser.close()
