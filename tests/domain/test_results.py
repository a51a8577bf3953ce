"""The result-file parsers: typed values for good files, located errors for bad ones."""

from __future__ import annotations

import json

import pytest

from orchestrator.domain.agent_files.errors import (
    GITHUB_BODY_LIMIT,
    HeadMismatch,
    ResultError,
    ResultErrorKind,
)
from orchestrator.domain.agent_files.fix_summary import (
    FixStatus,
    FixSummary,
    FixTargetKind,
    parse_fix_summary,
)
from orchestrator.domain.agent_files.questions import (
    BlockedQuestion,
    PRDescription,
    parse_blocked,
    parse_pr_description,
)
from orchestrator.domain.agent_files.review import Review, Severity, parse_review
from orchestrator.domain.phases import WaitingReason

HEAD = "0123456789abcdef0123456789abcdef01234567"

GOOD_REVIEW = f"""<!-- orchestrator-review-head: {HEAD} -->
# Self-review

Checked the pagination change and its tests.

### F1 [P1] Last page is dropped
- location: app/pages.py:120
- summary: The loop stops one page early.
- why_it_matters: Users never see the
  final results page.
- suggested_fix: Compare with `<=` and add a test with an exact multiple.

### F2 [p3] Naming
- summary: `x` is vague.
- why_it_matters: Readers must guess.
- suggested_fix: Rename to `page_count`.
"""


def test_review_parses_findings_and_continuation_lines() -> None:
    review = parse_review(GOOD_REVIEW, expected_head=HEAD.upper())
    assert isinstance(review, Review)
    assert review.head_sha == HEAD
    assert [f.id for f in review.findings] == ["F1", "F2"]
    first = review.findings[0]
    assert first.severity is Severity.P1
    assert first.location == "app/pages.py:120"
    assert first.why_it_matters == "Users never see the\nfinal results page."
    assert review.findings[1].severity is Severity.P3
    assert review.overview.startswith("# Self-review")


def test_review_with_no_findings_is_a_clean_review() -> None:
    review = parse_review(f"<!-- orchestrator-review-head: {HEAD} -->\nNo findings.\n")
    assert isinstance(review, Review)
    assert review.findings == ()


def test_review_accepts_crlf_and_a_byte_order_mark() -> None:
    review = parse_review("\ufeff" + GOOD_REVIEW.replace("\n", "\r\n"))
    assert isinstance(review, Review)
    assert len(review.findings) == 2


def test_head_mismatch_is_its_own_error() -> None:
    other = "f" * 40
    error = parse_review(GOOD_REVIEW, expected_head=other)
    assert isinstance(error, HeadMismatch)
    assert error.kind is ResultErrorKind.HEAD_MISMATCH
    assert (error.expected, error.found) == (other, HEAD)
    assert str(error).startswith("review.md:1: head: review is for 0123456789ab")


def _review_error(text: str) -> ResultError:
    result = parse_review(text)
    assert isinstance(result, ResultError), result
    return result


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("empty", "", "review.md: file is empty"),
        ("no head line", "### F1 [P1] x\n", "review.md:1: first line must be"),
        (
            "short sha",
            "<!-- orchestrator-review-head: abc123 -->\n",
            "review.md:1: head: 'abc123' is not a 40-character",
        ),
        (
            "missing field",
            f"<!-- orchestrator-review-head: {HEAD} -->\n### F2 [P1] T\n- summary: s\n"
            "- suggested_fix: f\n",
            "review.md:2: finding F2: missing field why_it_matters",
        ),
        (
            "bad severity",
            f"<!-- orchestrator-review-head: {HEAD} -->\n### F1 [P9] T\n",
            "review.md:2: finding F1: severity 'P9' is not one of P0, P1, P2, P3",
        ),
        (
            "bad id",
            f"<!-- orchestrator-review-head: {HEAD} -->\n### X1 [P1] T\n",
            "review.md:2: finding X1: finding id must be F followed by a number",
        ),
        (
            "duplicate id",
            f"<!-- orchestrator-review-head: {HEAD} -->\n### F1 [P1] T\n- summary: s\n"
            "- why_it_matters: w\n- suggested_fix: f\n### F1 [P2] U\n",
            "review.md:6: finding F1: duplicate finding id (first used on line 2)",
        ),
        (
            "unknown field",
            f"<!-- orchestrator-review-head: {HEAD} -->\n### F1 [P1] T\n- sumary: s\n",
            "review.md:3: finding F1: unknown field 'sumary'",
        ),
        (
            "stray text",
            f"<!-- orchestrator-review-head: {HEAD} -->\n### F1 [P1] T\nloose words\n",
            "review.md:3: finding F1: unexpected text",
        ),
        (
            "missing title",
            f"<!-- orchestrator-review-head: {HEAD} -->\n### F1 [P1]\n",
            "review.md:2: finding F1: missing title",
        ),
        (
            "field twice",
            f"<!-- orchestrator-review-head: {HEAD} -->\n### F1 [P1] T\n- summary: a\n"
            "- summary: b\n",
            "review.md:4: finding F1: field summary given twice",
        ),
    ],
)
def test_review_errors_are_located(name: str, text: str, expected: str) -> None:
    assert str(_review_error(text)).startswith(expected), name


def test_review_over_the_size_limit_is_refused() -> None:
    error = parse_review(GOOD_REVIEW, max_bytes=100)
    assert isinstance(error, ResultError)
    assert error.kind is ResultErrorKind.TOO_LARGE


def test_headings_inside_a_code_block_of_the_overview_are_not_findings() -> None:
    text = f"<!-- orchestrator-review-head: {HEAD} -->\n```\n### F1 [P1] quoted\n```\n"
    review = parse_review(text)
    assert isinstance(review, Review)
    assert review.findings == ()


def _summary(entries: list[dict[str, object]]) -> str:
    return json.dumps({"entries": entries})


def test_fix_summary_parses_every_status() -> None:
    text = _summary(
        [
            {"thread": "PRRT_1", "status": "fixed", "message": "done", "commit": "ABCDEF1"},
            {"check": "ci/lint", "status": "skipped", "message": "flaky"},
            {"finding": "F2", "status": "dismissed", "message": "no", "evidence": "spec 4.1"},
            {"thread": 77, "status": "uncertain", "message": "?", "evidence": "both work"},
        ]
    )
    summary = parse_fix_summary(text)
    assert isinstance(summary, FixSummary)
    assert [e.status for e in summary.entries] == list(FixStatus)
    assert summary.entries[0].commit == "abcdef1"
    assert summary.for_target(FixTargetKind.THREAD, "77") is summary.entries[3]
    assert summary.for_target(FixTargetKind.CHECK, "ci/lint") is summary.entries[1]
    assert summary.for_target(FixTargetKind.THREAD, "nope") is None


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("empty", "  ", "fix-summary.json: file is empty"),
        ("bad json", '{"entries": [\n}', "fix-summary.json:2: invalid JSON"),
        ("not an object", "[]", "fix-summary.json:1: top level must be a JSON object"),
        ("no entries", "{}", "fix-summary.json: entries: missing field entries"),
        ("unknown top key", '{"entries": [], "x": 1}', "fix-summary.json: x: unknown key"),
        ("entries not a list", '{"entries": {}}', "fix-summary.json: entries: must be a list"),
        (
            "no target",
            _summary([{"status": "fixed", "message": "m"}]),
            "fix-summary.json: entries[0]: needs exactly one of",
        ),
        (
            "two targets",
            _summary([{"thread": "a", "check": "b", "status": "fixed", "message": "m"}]),
            "fix-summary.json: entries[0]: needs exactly one of",
        ),
        (
            "bad status",
            _summary([{"thread": "a", "status": "done", "message": "m"}]),
            "fix-summary.json: entries[0].status: 'done' is not one of",
        ),
        (
            "dismissed without evidence",
            _summary([{"thread": "a", "status": "dismissed", "message": "m"}]),
            "fix-summary.json: entries[0].evidence: status dismissed needs evidence",
        ),
        (
            "uncertain with blank evidence",
            _summary([{"thread": "a", "status": "uncertain", "message": "m", "evidence": " "}]),
            "fix-summary.json: entries[0].evidence: status uncertain needs evidence",
        ),
        (
            "missing message",
            _summary([{"thread": "a", "status": "fixed"}]),
            "fix-summary.json: entries[0].message: missing field message",
        ),
        (
            "commit on skipped",
            _summary([{"thread": "a", "status": "skipped", "message": "m", "commit": "abcdef1"}]),
            "fix-summary.json: entries[0].commit: only a fixed entry may name a commit",
        ),
        (
            "bad commit",
            _summary([{"thread": "a", "status": "fixed", "message": "m", "commit": "xyz"}]),
            "fix-summary.json: entries[0].commit: 'xyz' is not a hexadecimal commit",
        ),
        (
            "unknown entry field",
            _summary([{"thread": "a", "status": "fixed", "message": "m", "evidense": "e"}]),
            "fix-summary.json: entries[0].evidense: unknown field",
        ),
        (
            "duplicate target",
            _summary(
                [
                    {"thread": "a", "status": "fixed", "message": "m"},
                    {"thread": "a", "status": "skipped", "message": "m"},
                ]
            ),
            "fix-summary.json: entries[1]: second entry for thread 'a'",
        ),
        ("deep nesting", "[" * 100_000, "fix-summary.json"),
    ],
)
def test_fix_summary_errors_are_located(name: str, text: str, expected: str) -> None:
    result = parse_fix_summary(text)
    assert isinstance(result, ResultError), name
    assert str(result).startswith(expected), str(result)


def test_blocked_question_with_reason_marker() -> None:
    question = parse_blocked(
        "<!-- orchestrator-blocked-reason: missing_auth -->\n## Need a deploy token\n\nWhich one?"
    )
    assert isinstance(question, BlockedQuestion)
    assert question.reason is WaitingReason.MISSING_AUTH
    assert question.summary == "Need a deploy token"
    assert question.text.endswith("Which one?")


def test_blocked_question_defaults_to_missing_context() -> None:
    question = parse_blocked("Should the API return 404 or 410 for deleted items?")
    assert isinstance(question, BlockedQuestion)
    assert question.reason is WaitingReason.MISSING_CONTEXT


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("\n \n", "blocked.md: file is empty"),
        ("<!-- orchestrator-blocked-reason: missing_auth -->\n", "blocked.md: the question is"),
        (
            "<!-- orchestrator-blocked-reason: kill_switch_active -->\nq",
            "blocked.md:1: reason: 'kill_switch_active' is not one of",
        ),
        ("x" * 40_000, "blocked.md: the question is 40000 characters"),
    ],
)
def test_blocked_errors(text: str, expected: str) -> None:
    result = parse_blocked(text)
    assert isinstance(result, ResultError)
    assert str(result).startswith(expected), str(result)


def test_pr_description_is_trimmed_and_limited() -> None:
    description = parse_pr_description("\n## Summary\r\nAdds paging.\n\n")
    assert description == PRDescription(body="## Summary\nAdds paging.")
    too_long = parse_pr_description("x" * (GITHUB_BODY_LIMIT + 1), max_bytes=10**6)
    assert isinstance(too_long, ResultError)
    assert too_long.kind is ResultErrorKind.TOO_LARGE
    assert "65536" in str(too_long)
    empty = parse_pr_description("   ")
    assert isinstance(empty, ResultError)
    assert str(empty) == "pr-description.md: file is empty"


def test_nul_bytes_are_refused() -> None:
    result = parse_pr_description("abc\x00def")
    assert isinstance(result, ResultError)
    assert result.kind is ResultErrorKind.SYNTAX


def test_error_text_format() -> None:
    error = ResultError("review.md", 3, "finding F2", "missing field why_it_matters")
    assert str(error) == "review.md:3: finding F2: missing field why_it_matters"
    assert str(ResultError("x.json", None, None, "bad")) == "x.json: bad"
