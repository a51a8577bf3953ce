"""The emulator's benchmark runs end to end on a small scale and prints every row."""

from __future__ import annotations

import pytest

from benchmarks import emulator


def test_the_benchmark_prints_each_route_at_each_size(capsys: pytest.CaptureFixture[str]) -> None:
    emulator.main(["--seconds", "0.05", "--scale", "120,250", "--route-seconds", "0.05"])
    printed = capsys.readouterr().out
    assert "GET /user, 1 client" in printed
    for label in (
        "GET /repos/{o}/{r}/pulls/{n}",
        "GET /repos/{o}/{r}/issues/{n}",
        "per_page=100 200, first read",
        "per_page=100 200, unchanged",
        "per_page=100 304",
        "GET /repos/{o}/{r}/issues/{n}/comments",
        "GET /repos/{o}/{r}/pulls/{n}/reviews",
        "GET /repos/{o}/{r}/commits/{sha}/check-runs",
        "PullRequestFingerprints (100)",
        "PullRequestStates (10)",
        "PRs/s",
    ):
        assert label in printed
    assert "acme/scale-250: 250 issues" in printed
