"""Agent-written JSON is parsed with bounds: each crossing is a located ResultError, not a crash.

Python's parser alone raises ``ValueError`` on an integer of more than 4300
digits and ``RecursionError`` on deep nesting; neither may escape.
"""

from __future__ import annotations

import json
import time

import pytest

from orchestrator.domain.agent_files.errors import ResultError, ResultErrorKind
from orchestrator.domain.agent_files.fix_summary import (
    MAX_ENTRIES,
    MAX_TARGET_CHARS,
    MAX_TEXT_CHARS,
    FixSummary,
    parse_fix_summary,
)
from orchestrator.domain.agent_files.review import parse_review
from orchestrator.domain.bounded_json import (
    DEFAULT_MAX_DEPTH,
    JsonLimitError,
    JsonSyntaxError,
    load_bounded,
)

BIG = "9" * 5000


def entry(**fields: object) -> dict[str, object]:
    return {"thread": "T1", "status": "fixed", "message": "Done.", **fields}


def error_of(text: str) -> ResultError:
    result = parse_fix_summary(text, max_bytes=1 << 20)
    assert isinstance(result, ResultError), result
    return result


def test_a_5000_digit_integer_is_a_located_error() -> None:
    text = '{\n  "entries": [\n    {"thread": ' + BIG + ', "status": "fixed"}\n  ]\n}'
    error = error_of(text)
    assert error.file == "fix-summary.json"
    assert error.line == 3
    assert error.field == "entries[0].thread"
    assert error.message == "integer has 5000 digits, more than 18"
    assert error.kind is ResultErrorKind.INVALID_VALUE
    assert BIG not in str(error)


def test_a_negative_huge_integer_anywhere_is_located_too() -> None:
    error = error_of('{"entries": [], "x": {"y": [1, -' + BIG + "]}}")
    assert error.field == "x.y[1]"
    assert "5000 digits" in error.message


def test_an_eighteen_digit_id_is_still_accepted() -> None:
    result = parse_fix_summary(json.dumps({"entries": [entry(thread=123456789012345678)]}))
    assert isinstance(result, FixSummary)
    assert result.entries[0].target == "123456789012345678"


def test_ten_thousand_levels_of_nesting_is_a_located_error_not_a_recursion_error() -> None:
    text = '{"entries": [\n' + "[" * 10_000 + "]" * 10_000 + "\n]}"
    started = time.monotonic()
    error = error_of(text)
    assert time.monotonic() - started < 2
    assert error.line == 2
    assert error.message == "nested deeper than 32 levels of arrays and objects"
    assert error.kind is ResultErrorKind.INVALID_VALUE


def test_brackets_inside_strings_do_not_count_as_nesting() -> None:
    message = '[{"\\"' * 200
    result = parse_fix_summary(json.dumps({"entries": [entry(message=message)]}))
    assert isinstance(result, FixSummary)


def test_the_depth_limit_is_exact() -> None:
    assert load_bounded("[" * DEFAULT_MAX_DEPTH + "]" * DEFAULT_MAX_DEPTH) is not None
    with pytest.raises(JsonLimitError):
        load_bounded("[" * (DEFAULT_MAX_DEPTH + 1) + "]" * (DEFAULT_MAX_DEPTH + 1))


@pytest.mark.parametrize(
    ("literal", "message"),
    [
        ("NaN", "NaN is not a JSON number"),
        ("-Infinity", "-Infinity is not a JSON number"),
        ("1e999", "number is too large to be finite"),
        ("0." + "1" * 60, "number is 62 characters long"),
    ],
)
def test_numbers_that_are_not_plain_finite_values_are_refused(literal: str, message: str) -> None:
    error = error_of('{"entries": [{"thread": "T1", "status": ' + literal + "}]}")
    assert error.field == "entries[0].status"
    assert error.message == message


def test_syntax_errors_keep_their_line() -> None:
    error = error_of('{"entries": [\n\n  {"thread": }\n]}')
    assert error.line == 3
    assert error.kind is ResultErrorKind.SYNTAX
    with pytest.raises(JsonSyntaxError):
        load_bounded("{")


def test_too_many_entries_are_refused() -> None:
    entries = [entry(thread=f"T{i}") for i in range(MAX_ENTRIES + 1)]
    error = error_of(json.dumps({"entries": entries}))
    assert error.field == "entries"
    assert error.kind is ResultErrorKind.TOO_LARGE


@pytest.mark.parametrize(
    ("fields", "where", "limit"),
    [
        ({"message": "m" * (MAX_TEXT_CHARS + 1)}, "entries[0].message", MAX_TEXT_CHARS),
        (
            {"status": "dismissed", "evidence": "e" * (MAX_TEXT_CHARS + 1)},
            "entries[0].evidence",
            MAX_TEXT_CHARS,
        ),
        ({"thread": "t" * (MAX_TARGET_CHARS + 1)}, "entries[0].thread", MAX_TARGET_CHARS),
    ],
)
def test_long_text_fields_are_refused(fields: dict[str, object], where: str, limit: int) -> None:
    error = error_of(json.dumps({"entries": [entry(**fields)]}))
    assert error.field == where
    assert error.message == f"{limit + 1} characters, more than the limit of {limit}"


def test_a_huge_bad_value_is_not_echoed_whole() -> None:
    error = error_of(json.dumps({"entries": [entry(status="x" * 100_000)]}))
    assert error.field == "entries[0].status"
    assert len(str(error)) < 200
    review = parse_review(f"<!-- orchestrator-review-head: {'z' * 100_000} -->\n")
    assert isinstance(review, ResultError)
    assert len(str(review)) < 200
