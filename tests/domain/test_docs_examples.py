"""The examples in docs/domain.md are real: each one parses with the code it documents."""

from __future__ import annotations

import re
from pathlib import Path

from orchestrator.domain.agent_files.fix_summary import FixStatus, FixSummary, parse_fix_summary
from orchestrator.domain.agent_files.questions import BlockedQuestion, parse_blocked
from orchestrator.domain.agent_files.review import Review, Severity, parse_review
from orchestrator.domain.phases import Phase, WaitingReason
from orchestrator.domain.workpad import WorkpadStatus, parse_workpad
from tests.domain.builders import NOW

DOC = Path(__file__).resolve().parents[2] / "docs" / "domain.md"


def _blocks(language: str, fence: str = "```") -> list[str]:
    pattern = re.compile(rf"^{fence}{language}\n(.*?)^{fence}$", re.MULTILINE | re.DOTALL)
    return pattern.findall(DOC.read_text(encoding="utf-8"))


def test_the_review_example_parses() -> None:
    [text] = [b for b in _blocks("markdown") if b.startswith("<!-- orchestrator-review-head")]
    review = parse_review(text)
    assert isinstance(review, Review), review
    assert [(f.id, f.severity) for f in review.findings] == [
        ("F1", Severity.P1),
        ("F2", Severity.P3),
    ]


def test_the_fix_summary_example_parses() -> None:
    [text] = _blocks("json")
    summary = parse_fix_summary(text)
    assert isinstance(summary, FixSummary), summary
    assert {e.status for e in summary.entries} == set(FixStatus)


def test_the_blocked_example_parses() -> None:
    [text] = [b for b in _blocks("markdown") if b.startswith("<!-- orchestrator-blocked-reason")]
    question = parse_blocked(text)
    assert isinstance(question, BlockedQuestion), question
    assert question.reason is WaitingReason.MISSING_CONTEXT


def test_the_workpad_example_parses() -> None:
    [text] = _blocks("markdown", fence="````")
    parsed = parse_workpad(text, now=NOW)
    assert parsed.status is WorkpadStatus.PARSED, parsed.problem
    assert parsed.record.phase is Phase.WAITING_FOR_CHECKS
    assert parsed.record.pr is not None and parsed.record.pr.number == 123
