"""Reading result files: size limits, unsafe files, and a specific error for every bad field."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from orchestrator.agent.result_files import (
    ResultFile,
    clear_outputs,
    read_file_limited,
    read_results,
)
from orchestrator.domain.agent_files.errors import HeadMismatch, ResultError, ResultErrorKind

HEAD = "a" * 40
OTHER = "b" * 40

FINDING = """### F1 [P1] Off by one
- summary: The loop skips the last item.
- why_it_matters: Data is lost.
- suggested_fix: Use <= instead of <.
"""


def review(body: str = FINDING, head: str = HEAD) -> str:
    return f"<!-- orchestrator-review-head: {head} -->\n\n{body}"


def only_error(result_dir: Path) -> ResultError:
    results = read_results(result_dir, expected_head=HEAD, max_bytes=100_000)
    assert len(results.errors) == 1, results.errors
    return results.errors[0]


@pytest.fixture
def result_dir(tmp_path: Path) -> Path:
    path = tmp_path / ".orchestrator"
    path.mkdir()
    return path


def test_nothing_written_is_not_an_error(result_dir: Path) -> None:
    results = read_results(result_dir, expected_head=HEAD, max_bytes=1000)
    assert results.ok
    assert results.present == frozenset()


def test_valid_files_are_parsed(result_dir: Path) -> None:
    (result_dir / "review.md").write_text(review())
    (result_dir / "fix-summary.json").write_text(
        json.dumps(
            {
                "entries": [
                    {"thread": "T1", "status": "fixed", "message": "done", "commit": HEAD},
                    {"check": "lint", "status": "dismissed", "message": "no", "evidence": "spec"},
                ]
            }
        )
    )
    (result_dir / "pr-description.md").write_text("## Summary\nThings.\n")
    (result_dir / "blocked.md").write_text(
        "<!-- orchestrator-blocked-reason: missing_auth -->\nPlease grant access to the registry.\n"
    )
    results = read_results(result_dir, expected_head=HEAD, max_bytes=100_000)
    assert results.ok, results.errors
    assert results.present == set(ResultFile)
    assert results.review is not None and results.review.findings[0].id == "F1"
    assert results.fix_summary is not None and len(results.fix_summary.entries) == 2
    assert results.blocked is not None and results.blocked.reason.value == "missing_auth"
    assert results.pr_description is not None


@pytest.mark.parametrize(
    ("text", "line", "field", "message"),
    [
        ("", None, None, "file is empty"),
        ("no head line\n", 1, None, "first line must be"),
        (review(head="12345"), 1, "head", "not a 40-character"),
        (review(head=OTHER), 1, "head", "review is for bbbbbbbbbbbb but the current head"),
        (review(FINDING.replace("[P1]", "[P7]")), 3, "finding F1", "severity 'P7'"),
        (review(FINDING.replace("### F1", "### X1")), 3, "finding X1", "finding id must be"),
        (review(FINDING.replace("Off by one", "")), 3, "finding F1", "missing title"),
        (
            review(FINDING.replace("- summary: The loop skips the last item.\n", "")),
            3,
            "finding F1",
            "missing field summary",
        ),
        (
            review(FINDING.replace("- why_it_matters: Data is lost.\n", "")),
            3,
            "finding F1",
            "missing field why_it_matters",
        ),
        (
            review(FINDING.replace("- suggested_fix: Use <= instead of <.\n", "")),
            3,
            "finding F1",
            "missing field suggested_fix",
        ),
        (review(FINDING + "- colour: red\n"), 7, "finding F1", "unknown field 'colour'"),
        (review(FINDING + FINDING), 7, "finding F1", "duplicate finding id"),
        (review(FINDING + "stray text\n"), 7, "finding F1", "unexpected text"),
    ],
)
def test_review_errors_are_specific(
    result_dir: Path, text: str, line: int | None, field: str | None, message: str
) -> None:
    (result_dir / "review.md").write_text(text)
    error = only_error(result_dir)
    assert error.file == "review.md"
    assert error.line == line
    assert error.field == field
    assert message in error.message


def test_a_review_of_another_head_names_both(result_dir: Path) -> None:
    (result_dir / "review.md").write_text(review(head=OTHER))
    error = only_error(result_dir)
    assert isinstance(error, HeadMismatch)
    assert (error.expected, error.found) == (HEAD, OTHER)
    assert error.kind is ResultErrorKind.HEAD_MISMATCH


def _entry(**fields: object) -> str:
    base: dict[str, object] = {"thread": "T1", "status": "fixed", "message": "done"}
    base.update(fields)
    return json.dumps({"entries": [{k: v for k, v in base.items() if v is not None}]})


@pytest.mark.parametrize(
    ("text", "field", "message"),
    [
        ("", None, "file is empty"),
        ("{nope", None, "invalid JSON"),
        ("[]", None, "top level must be a JSON object"),
        ("{}", "entries", "missing field entries"),
        ('{"entries": {}}', "entries", "must be a list"),
        ('{"entries": [], "extra": 1}', "extra", "unknown key"),
        ('{"entries": [3]}', "entries[0]", "must be an object"),
        (_entry(thread=None), "entries[0]", "needs exactly one of"),
        (_entry(check="ci"), "entries[0]", "needs exactly one of"),
        (_entry(thread=""), "entries[0].thread", "non-empty string"),
        (_entry(status=None), "entries[0].status", "missing field status"),
        (_entry(status="done"), "entries[0].status", "'done' is not one of"),
        (_entry(message=None), "entries[0].message", "missing field message"),
        (_entry(message=""), "entries[0].message", "must not be empty"),
        (_entry(message=5), "entries[0].message", "must be a string"),
        (_entry(status="dismissed"), "entries[0].evidence", "status dismissed needs evidence"),
        (_entry(status="uncertain"), "entries[0].evidence", "status uncertain needs evidence"),
        (_entry(commit="xyz"), "entries[0].commit", "not a hexadecimal commit SHA"),
        (
            _entry(status="skipped", commit=HEAD),
            "entries[0].commit",
            "only a fixed entry may name a commit",
        ),
        (_entry(colour="red"), "entries[0].colour", "unknown field"),
    ],
)
def test_fix_summary_errors_are_specific(
    result_dir: Path, text: str, field: str | None, message: str
) -> None:
    (result_dir / "fix-summary.json").write_text(text)
    error = only_error(result_dir)
    assert error.file == "fix-summary.json"
    assert error.field == field
    assert message in error.message


def test_a_duplicate_fix_entry_is_an_error(result_dir: Path) -> None:
    entry = {"thread": "T1", "status": "fixed", "message": "done"}
    (result_dir / "fix-summary.json").write_text(json.dumps({"entries": [entry, entry]}))
    error = only_error(result_dir)
    assert error.field == "entries[1]"
    assert "second entry" in error.message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "file is empty"),
        ("<!-- orchestrator-blocked-reason: bored -->\nWhy?\n", "'bored' is not one of"),
        ("<!-- orchestrator-blocked-reason: missing_context -->\n\n", "the question is empty"),
    ],
)
def test_blocked_errors_are_specific(result_dir: Path, text: str, message: str) -> None:
    (result_dir / "blocked.md").write_text(text)
    error = only_error(result_dir)
    assert error.file == "blocked.md"
    assert message in error.message


def test_an_empty_pr_description_is_an_error(result_dir: Path) -> None:
    (result_dir / "pr-description.md").write_text("  \n\n")
    error = only_error(result_dir)
    assert error.file == "pr-description.md"
    assert "file is empty" in error.message


@pytest.mark.parametrize("name", [f.value for f in ResultFile])
def test_oversized_files_are_refused_before_parsing(result_dir: Path, name: str) -> None:
    (result_dir / name).write_bytes(b"x" * 5000)
    results = read_results(result_dir, expected_head=HEAD, max_bytes=4096)
    (error,) = results.errors
    assert error.file == name
    assert error.kind is ResultErrorKind.TOO_LARGE
    assert "5000 bytes, more than the limit of 4096" in error.message


def test_a_link_to_a_file_outside_is_refused(result_dir: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text(review())
    (result_dir / "review.md").symlink_to(secret)
    error = only_error(result_dir)
    assert "symbolic link" in error.message


def test_a_fifo_is_refused_without_blocking(result_dir: Path) -> None:
    os.mkfifo(result_dir / "blocked.md")
    error = only_error(result_dir)
    assert error.file == "blocked.md"
    assert "not a regular file" in error.message


def test_a_directory_in_place_of_a_file_is_refused(result_dir: Path) -> None:
    (result_dir / "pr-description.md").mkdir()
    error = only_error(result_dir)
    assert "not a regular file" in error.message


def test_invalid_utf8_is_refused_with_its_line(result_dir: Path) -> None:
    (result_dir / "pr-description.md").write_bytes(b"line one\nline \xff two\n")
    error = only_error(result_dir)
    assert error.line == 2
    assert "not valid UTF-8" in error.message


def test_missing_required_files_are_errors(result_dir: Path) -> None:
    results = read_results(
        result_dir,
        expected_head=HEAD,
        max_bytes=1000,
        required=frozenset({ResultFile.REVIEW, ResultFile.FIX_SUMMARY}),
    )
    assert sorted(e.file for e in results.errors) == ["fix-summary.json", "review.md"]


def test_every_bad_file_is_reported_at_once(result_dir: Path) -> None:
    (result_dir / "review.md").write_text("nonsense")
    (result_dir / "fix-summary.json").write_text("{")
    (result_dir / "pr-description.md").write_text("Good description")
    results = read_results(result_dir, expected_head=HEAD, max_bytes=1000)
    assert sorted(e.file for e in results.errors) == ["fix-summary.json", "review.md"]
    assert results.pr_description is not None


def test_read_file_limited_returns_none_for_absent_files(tmp_path: Path) -> None:
    assert read_file_limited(tmp_path / "nope.md", name="nope.md", max_bytes=10) is None


def test_clear_outputs_removes_only_result_files(result_dir: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("keep")
    (result_dir / "review.md").write_text("old")
    (result_dir / "blocked.md").symlink_to(outside)
    (result_dir / "fix-summary.json").mkdir()
    (result_dir / "context.json").write_text("{}")
    clear_outputs(result_dir)
    assert sorted(p.name for p in result_dir.iterdir()) == ["context.json"]
    assert outside.read_text() == "keep"
