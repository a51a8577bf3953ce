"""The Linear polling benchmark runs end to end at a tiny size (its figures are not asserted)."""

from __future__ import annotations

import pytest

from benchmarks import linear_budget


def test_the_bench_prints_each_kind_of_poll_at_twenty_issues(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert linear_budget.main(["--issues", "20", "--quiet", "2", "--changing", "2"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("  ")]
    assert [line.split(":")[0].strip() for line in lines] == [
        "first read",
        "quiet poll (mean of 2)",
        "poll after 1 edited (mean of 2)",
    ]
    assert "requests" in lines[0] and "complexity points" in lines[0]
    # A quiet poll is the one small probe; the budgets' shares are printed beside it.
    assert lines[1].split(": ", 1)[1].startswith("1 request ")
    assert "of the request budget" in lines[1] and "of the complexity budget" in lines[1]


def test_the_bench_refuses_a_size_it_cannot_measure() -> None:
    with pytest.raises(SystemExit):
        linear_budget.main(["--issues", "1"])
