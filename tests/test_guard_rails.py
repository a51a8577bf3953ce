"""The guard rails on module sizes and ruff's ceilings: each ratchet holds, on real files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.guard_rails import (
    CONFIG,
    Allowance,
    ConfigError,
    GuardRails,
    SizeRules,
    ceiling_problems,
    load,
    main,
    module_lengths,
    size_problems,
)

ROOT = Path(__file__).resolve().parents[1]


def write_module(root: Path, name: str, lines: int) -> None:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"x_{n} = {n}\n" for n in range(lines)))


def rules(**allow: tuple[int, str]) -> SizeRules:
    return SizeRules(
        limit=450,
        exclude=("build",),
        allow={name: Allowance(ceiling, reason) for name, (ceiling, reason) in allow.items()},
    )


def rails(max_complexity: int = 20, max_args: int = 8) -> GuardRails:
    return GuardRails(
        sizes=rules(),
        ceilings={"max-complexity": max_complexity, "max-args": max_args},
        per_file_ignores=("tests/**",),
    )


def pyproject(**lint: Any) -> dict[str, Any]:
    settings: dict[str, Any] = {
        "select": ["E", "PL", "C901"],
        "ignore": ["PLR0911"],
        "per-file-ignores": {"tests/**": ["PLR"]},
        "mccabe": {"max-complexity": 20},
        "pylint": {"max-args": 8},
    }
    settings.update(lint)
    return {"tool": {"ruff": {"lint": settings}}}


GOOD_CONFIG = """
[ruff]
max-complexity = 20
max-args = 8
per-file-ignores = ["tests/**"]

[module-sizes]
limit = 450
exclude = ["build"]

[module-sizes.allow]
"pkg/big.py" = { lines = 500, reason = "to split" }
"""

GOOD_PYPROJECT = """
[tool.ruff.lint]
select = ["E", "PL", "C901"]
[tool.ruff.lint.mccabe]
max-complexity = 20
[tool.ruff.lint.pylint]
max-args = 8
"""


def test_a_module_at_the_limit_passes_and_one_line_more_fails(tmp_path: Path) -> None:
    write_module(tmp_path, "pkg/at_limit.py", 450)
    write_module(tmp_path, "pkg/over.py", 451)

    assert size_problems(tmp_path, rules(), CONFIG) == [
        "pkg/over.py: 451 lines, over the 450-line limit: split it "
        "(generated code or data may be listed in .ci/guard-rails.toml with a reason)"
    ]


def test_an_allow_listed_module_may_reach_its_ceiling_but_not_pass_it(tmp_path: Path) -> None:
    write_module(tmp_path, "pkg/big.py", 500)
    write_module(tmp_path, "pkg/grown.py", 501)

    problems = size_problems(
        tmp_path, rules(**{"pkg/big.py": (500, "to split"), "pkg/grown.py": (500, "data")})
    )

    assert problems == [
        "pkg/grown.py: 501 lines, over its ceiling of 500 in .ci/guard-rails.toml (data): "
        "the ceiling only goes down; split the module"
    ]


def test_an_entry_whose_module_shrank_to_the_limit_must_be_removed(tmp_path: Path) -> None:
    write_module(tmp_path, "pkg/split.py", 450)

    assert size_problems(tmp_path, rules(**{"pkg/split.py": (600, "to split")})) == [
        "pkg/split.py: 450 lines, within the 450-line limit: "
        "remove its entry from .ci/guard-rails.toml"
    ]


def test_an_entry_whose_module_went_away_must_be_removed(tmp_path: Path) -> None:
    assert size_problems(tmp_path, rules(**{"pkg/moved.py": (600, "to split")})) == [
        "pkg/moved.py: no such module: remove its entry from .ci/guard-rails.toml"
    ]


def test_hidden_cache_and_excluded_folders_are_not_scanned(tmp_path: Path) -> None:
    for skipped in (".venv/lib/big.py", "pkg/__pycache__/big.py", "build/lib/big.py"):
        write_module(tmp_path, skipped, 900)
    write_module(tmp_path, "pkg/build/kept.py", 3)
    write_module(tmp_path, "top.py", 2)

    assert list(module_lengths(tmp_path, ("build",))) == [("pkg/build/kept.py", 3), ("top.py", 2)]


def test_lines_are_counted_like_wc_plus_an_unterminated_last_line(tmp_path: Path) -> None:
    (tmp_path / "crlf.py").write_bytes(b"a = 1\r\nb = 2\r\nc = 3")
    (tmp_path / "empty.py").write_bytes(b"")

    assert dict(module_lengths(tmp_path)) == {"crlf.py": 3, "empty.py": 0}


def test_load_reads_limit_exclusions_allow_list_and_ceilings(tmp_path: Path) -> None:
    config = tmp_path / "guard-rails.toml"
    config.write_text(GOOD_CONFIG)

    loaded = load(config)

    assert loaded.sizes == SizeRules(
        limit=450, exclude=("build",), allow={"pkg/big.py": Allowance(500, "to split")}
    )
    assert loaded.ceilings == {"max-complexity": 20, "max-args": 8}
    assert loaded.per_file_ignores == ("tests/**",)


@pytest.mark.parametrize(
    ("broken", "message"),
    [
        (
            ('reason = "to split"', 'reason = "big"'),
            "module-sizes.allow.'pkg/big.py' reason 'big' is not one of data, generated, to split",
        ),
        (
            ("lines = 500, ", ""),
            "module-sizes.allow.'pkg/big.py' must be { lines = N, reason = \"...\" }",
        ),
        (
            ("lines = 500", 'lines = "500"'),
            "module-sizes.allow.'pkg/big.py'.lines must be a positive integer, not '500'",
        ),
        (("limit = 450", "limit = 0"), "module-sizes.limit must be a positive integer, not 0"),
        (
            ("max-args = 8", "max-args = true"),
            "ruff.max-args must be a positive integer, not True",
        ),
        (
            ('exclude = ["build"]', 'exclude = "build"'),
            "module-sizes.exclude must be a list of strings, not 'build'",
        ),
        (("[module-sizes.allow]", "[module-sizes.allowed]"), "[module-sizes.allow] is missing"),
        (("[ruff]", "[ruff"), "guard-rails.toml: "),
    ],
)
def test_a_malformed_config_names_the_file_and_the_key(
    tmp_path: Path, broken: tuple[str, str], message: str
) -> None:
    config = tmp_path / "guard-rails.toml"
    config.write_text(GOOD_CONFIG.replace(*broken))

    with pytest.raises(ConfigError) as raised:
        load(config)

    assert str(raised.value).startswith(f"{config}: ")
    assert message in str(raised.value)


def test_ceilings_at_their_recorded_values_pass() -> None:
    assert ceiling_problems(pyproject(), rails()) == []


def test_a_ceiling_raised_above_the_recorded_value_fails() -> None:
    raised = pyproject(mccabe={"max-complexity": 21}, pylint={"max-args": 9})

    assert ceiling_problems(raised, rails(), CONFIG) == [
        "pyproject.toml [tool.ruff.lint.mccabe] max-complexity = 21 is above the recorded "
        "ceiling of 20 in .ci/guard-rails.toml: the ceiling only goes down; simplify the code "
        "instead",
        "pyproject.toml [tool.ruff.lint.pylint] max-args = 9 is above the recorded ceiling of "
        "8 in .ci/guard-rails.toml: the ceiling only goes down; simplify the code instead",
    ]


def test_a_lowered_ceiling_asks_for_the_record_to_follow_so_it_stays_down() -> None:
    assert ceiling_problems(pyproject(mccabe={"max-complexity": 12}), rails(), CONFIG) == [
        "pyproject.toml [tool.ruff.lint.mccabe] max-complexity = 12 is below the recorded "
        "ceiling of 20: lower ruff.max-complexity in .ci/guard-rails.toml to 12 too, so it "
        "stays down"
    ]


def test_an_unset_ceiling_fails() -> None:
    assert ceiling_problems(pyproject(pylint={}), rails()) == [
        "pyproject.toml [tool.ruff.lint.pylint] max-args is not set: set it to 8"
    ]


def test_switching_a_rule_off_fails() -> None:
    problems = ceiling_problems(pyproject(select=["E", "PL"], ignore=["PLR09"]), rails())

    assert problems == [
        "pyproject.toml [tool.ruff.lint] select does not select C901",
        "pyproject.toml [tool.ruff.lint] ignore switches PLR0913 off",
    ]


def test_a_rule_selected_through_extend_select_or_all_counts() -> None:
    assert ceiling_problems(pyproject(select=["PL"], **{"extend-select": ["C90"]}), rails()) == []
    assert ceiling_problems(pyproject(select=["ALL"]), rails()) == []


def test_only_the_listed_patterns_may_ignore_the_rules() -> None:
    dodged = pyproject(**{"per-file-ignores": {"tests/**": ["PLR"], "pkg/hard.py": ["C"]}})

    assert ceiling_problems(dodged, rails(), CONFIG) == [
        "pyproject.toml [tool.ruff.lint.per-file-ignores] 'pkg/hard.py' ignores C901; only "
        "tests/** may (.ci/guard-rails.toml ruff.per-file-ignores)"
    ]


def test_main_prints_each_problem_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / ".ci").mkdir()
    (tmp_path / ".ci/guard-rails.toml").write_text(GOOD_CONFIG)
    (tmp_path / "pyproject.toml").write_text(GOOD_PYPROJECT.replace("= 20", "= 30"))
    write_module(tmp_path, "pkg/big.py", 501)

    assert main(tmp_path) == 1

    assert capsys.readouterr().err.splitlines() == [
        "pkg/big.py: 501 lines, over its ceiling of 500 in .ci/guard-rails.toml (to split): "
        "the ceiling only goes down; split the module",
        "pyproject.toml [tool.ruff.lint.mccabe] max-complexity = 30 is above the recorded "
        "ceiling of 20 in .ci/guard-rails.toml: the ceiling only goes down; simplify the code "
        "instead",
        "guard rails: 2 problem(s)",
    ]


def test_main_passes_a_tree_within_its_rails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / ".ci").mkdir()
    (tmp_path / ".ci/guard-rails.toml").write_text(GOOD_CONFIG)
    (tmp_path / "pyproject.toml").write_text(GOOD_PYPROJECT)
    write_module(tmp_path, "pkg/big.py", 480)

    assert main(tmp_path) == 0
    assert capsys.readouterr().err == ""


def test_main_reports_a_missing_config_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(tmp_path) == 1
    assert capsys.readouterr().err.startswith(f"guard rails: {tmp_path / CONFIG}: ")


def test_the_repository_keeps_its_guard_rails(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(ROOT) == 0, capsys.readouterr().err
