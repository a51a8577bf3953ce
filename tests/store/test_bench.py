"""The store benchmark runs end to end and prints its figures (their values are not judged)."""

from __future__ import annotations

import pytest

from benchmarks import store as store_bench


def test_store_bench_prints_every_figure(capsys: pytest.CaptureFixture[str]) -> None:
    assert store_bench.main(["--issues", "40", "--runs", "2"]) == 0

    out = capsys.readouterr().out
    for figure in (
        "40 issues, 80 cache entries",
        "RecordStore.load, nothing changed (2 runs)",
        "RecordStore.load, 1% changed by another (2 runs)",
        "HttpCache.get_many x 40, cold",
        "HttpCache.warm() at start-up",
        "HttpCache.put_many x",
        "poller cache reads x 40 PRs, warm",
        "memory held by 40 loaded records",
    ):
        assert figure in out, figure
