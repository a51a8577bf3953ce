"""tracker.approvers with kind linear: an email or a user id, never a name a user chooses."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from orchestrator.cli import cli
from orchestrator.tracker.linear_approval import linear_approval
from orchestrator.workflow import flow_policy
from tests.workflow.conftest import ENV, check

LINEAR_ENV = {**ENV, "LINEAR_API_KEY": "lin_api_" + "K3y" * 8}
HEAD = "---\ntracker:\n  kind: linear\n  team_key: ENG\n"
ALICE_ID = "0f8fad5b-d9cb-469f-a165-70867728950e"
WHY = (
    "is neither an email nor a Linear user id: full names and display names are chosen by "
    "each user, so another member can take this one; name the user by email or by id (the "
    "UUID Linear's API shows as User.id)"
)


def test_emails_and_user_ids_are_accepted_as_they_are_written() -> None:
    text = HEAD + f"  approvers: [Alice@Example.com, {ALICE_ID.upper()}]\n---\n"
    result = check(text, env=LINEAR_ENV)
    assert result.problems == ()
    assert result.workflow is not None
    policy = result.workflow.policy
    approval = linear_approval(flow_policy(policy), policy.tracker.approvers)
    assert approval.approvers == {"alice@example.com", ALICE_ID}


def test_a_name_is_an_error_located_at_its_entry() -> None:
    text = HEAD + "  approvers:\n    - alice@example.com\n    - alice\n    - Alice Liddell\n---\n"
    result = check(text, env=LINEAR_ENV)
    assert result.workflow is None
    assert [str(p) for p in result.errors] == [
        f"WORKFLOW.md:7:7: tracker.approvers[1]: 'alice' {WHY}",
        f"WORKFLOW.md:8:7: tracker.approvers[2]: 'Alice Liddell' {WHY}",
    ]


def test_a_name_in_a_flow_list_is_located_at_its_column() -> None:
    result = check(HEAD + "  approvers: [carol@example.com, carol]\n---\n", env=LINEAR_ENV)
    assert [str(p) for p in result.errors] == [
        f"WORKFLOW.md:5:34: tracker.approvers[1]: 'carol' {WHY}"
    ]


@pytest.mark.parametrize("value", ['["alice"]', "alice"])
def test_a_name_from_the_environment_names_the_variable(value: str) -> None:
    env = {**LINEAR_ENV, "ORCHESTRATOR_TRACKER__APPROVERS": value}
    result = check(HEAD + "---\n", env=env)
    assert [str(p) for p in result.errors] == [
        f"env ORCHESTRATOR_TRACKER__APPROVERS: tracker.approvers[0]: 'alice' {WHY}"
    ]


def test_orchestrator_validate_refuses_the_policy(tmp_path: Path) -> None:
    path = tmp_path / "WORKFLOW.md"
    path.write_text(HEAD + "  approvers: [alice]\n---\n", encoding="utf-8")
    outcome = CliRunner().invoke(cli, ["validate", str(path)], env=LINEAR_ENV)
    assert outcome.exit_code != 0
    assert f"WORKFLOW.md:5:15: tracker.approvers[0]: 'alice' {WHY}" in outcome.output
