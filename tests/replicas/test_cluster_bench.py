"""The cluster benchmark runs end to end and prints its figures (their values are not judged)."""

from __future__ import annotations

import pytest

from benchmarks import cluster as cluster_bench


@pytest.mark.slow
def test_cluster_bench_prints_takeover_and_polling_cost(
    pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # pg_url decides whether PostgreSQL is here; the bench makes its own databases on that server.
    assert cluster_bench.main(["--runs", "1", "--issues", "1"]) == 0

    out = capsys.readouterr().out
    assert "takeover (SIGKILL of the leader" in out
    assert "run 1:" in out
    assert "1 replica(s):" in out
    assert "2 replica(s):" in out
    assert "2 replicas / 1: requests x" in out


def test_cluster_bench_without_postgres_says_how_to_get_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(cluster_bench.PG_SERVER_ENV, raising=False)

    assert cluster_bench.main([]) == 0

    assert "make bench" in capsys.readouterr().out
