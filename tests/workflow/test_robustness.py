"""Arbitrary input never crashes the loader: it yields a policy or located problems."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.workflow.problems import Problem
from tests.workflow.conftest import check

YAMLISH = st.text(
    alphabet=st.sampled_from(list("abc:_-[]{}&*!|>'\"#%@`$~ \t\n\r0123456789.,?<=")),
    max_size=120,
)
TEMPLATEISH = st.text(
    alphabet=st.sampled_from(list("{}%|:.'\" abcissuephatmoly_-=<>0123456789\n")),
    max_size=80,
)


def assert_outcome(text: str) -> None:
    result = check(text)
    if result.workflow is None:
        assert result.errors
    for problem in result.problems:
        assert isinstance(problem, Problem)
        assert str(problem).startswith(("WORKFLOW.md", "env ", "command line"))


@settings(max_examples=150, deadline=None, derandomize=True)
@given(YAMLISH)
def test_any_front_matter(front_matter: str) -> None:
    assert_outcome("---\n" + front_matter + "\n---\n")


@settings(max_examples=150, deadline=None, derandomize=True)
@given(YAMLISH)
def test_any_section_body(body: str) -> None:
    indented = "\n".join("  " + line for line in body.split("\n"))
    assert_outcome("---\ntracker:\n  repo: acme/widgets\nagent:\n" + indented + "\n---\n")


@settings(max_examples=150, deadline=None, derandomize=True)
@given(TEMPLATEISH)
def test_any_prompt(prompt: str) -> None:
    assert_outcome("---\ntracker:\n  repo: acme/widgets\n---\n" + prompt)


@settings(max_examples=100, deadline=None, derandomize=True)
@given(st.text(max_size=200))
def test_any_text(text: str) -> None:
    assert_outcome(text)
