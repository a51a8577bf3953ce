"""docs/workflow.md documents every key with its type, default and environment override."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from orchestrator.workflow.catalog import settings
from orchestrator.workflow.display import format_value
from orchestrator.workflow.prompt import (
    CONTEXT_FIELDS,
    ISSUE_FIELDS,
    PROMPT_VARIABLES,
    WORKSPACE_FIELDS,
)

DOC = Path(__file__).resolve().parents[2] / "docs" / "workflow.md"


def section_rows(text: str, section: str) -> dict[str, str]:
    """The reference table rows of one section, by key."""
    match = re.search(rf"^### `{section}`\n(.*?)(?=^##)", text, re.M | re.S)
    assert match is not None, f"no reference section for {section}"
    rows = {}
    for line in match.group(1).split("\n"):
        key = re.match(r"^\| `([^`]+)` \|", line)
        if key:
            rows[key.group(1)] = line
    return rows


@pytest.mark.parametrize("path", list(settings()))
def test_every_key_has_a_reference_row(path: str) -> None:
    spec = settings()[path]
    rows = section_rows(DOC.read_text(encoding="utf-8"), spec.section)
    row = rows.get(path.split(".", 1)[1])
    assert row is not None, f"{path} is not documented"
    cells = [cell.strip() for cell in row.strip("|").split(" | ")]
    default = "`null`" if spec.default is None else f"`{format_value(spec.default)}`"
    assert cells[2] == default
    assert cells[3] == f"`{spec.env_name}`"
    assert cells[4] == spec.doc


def test_no_documented_key_is_unknown() -> None:
    text = DOC.read_text(encoding="utf-8")
    documented = {
        f"{section}.{key}"
        for section in {spec.section for spec in settings().values()}
        for key in section_rows(text, section)
    }
    assert documented == set(settings())


def test_the_prompt_variables_are_documented() -> None:
    text = DOC.read_text(encoding="utf-8")
    for name in (*PROMPT_VARIABLES, *ISSUE_FIELDS, *WORKSPACE_FIELDS, *CONTEXT_FIELDS):
        assert f"`{name}`" in text, name
    for topic in (
        "## Reloading",
        "merge disabled by rollout mode",
        "request_reload()",
        "PolicyError",
    ):
        assert topic in text
