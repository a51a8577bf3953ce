"""``$VAR`` references and secrets: resolution, errors naming the variable, redaction."""

from __future__ import annotations

import pytest

from orchestrator.logs import REDACTED, redact_text
from orchestrator.workflow.references import UnsetReference, resolve
from tests.workflow.conftest import ENV, check

RESOLVE = [
    ("plain text", "main", {}, "main", ()),
    ("whole reference", "$A", {"A": "x"}, "x", ("A",)),
    ("braced whole reference", "${A}", {"A": "x"}, "x", ("A",)),
    ("reference inside text", "${DIR}/ws", {"DIR": "/srv"}, "/srv/ws", ("DIR",)),
    ("two references", "${A}-${B}", {"A": "1", "B": "2"}, "1-2", ("A", "B")),
    ("a bare dollar stays", "costs $5", {}, "costs $5", ()),
    ("an unbraced name inside text stays", "a $HOME b", {}, "a $HOME b", ()),
    ("double dollar is a literal dollar", "$$A", {"A": "x"}, "$A", ()),
    ("escaped braces", "$${A}", {"A": "x"}, "${A}", ()),
]


@pytest.mark.parametrize(
    ("text", "env", "value", "variables"),
    [row[1:] for row in RESOLVE],
    ids=[row[0] for row in RESOLVE],
)
def test_resolve(text: str, env: dict[str, str], value: str, variables: tuple[str, ...]) -> None:
    resolved = resolve(text, env)
    assert (resolved.value, resolved.variables) == (value, variables)


@pytest.mark.parametrize(
    ("text", "env", "message"),
    [
        ("$MISSING", {}, "environment variable MISSING is not set"),
        ("${EMPTY}", {"EMPTY": ""}, "environment variable EMPTY is set but empty"),
        ("x/${MISSING}/y", {}, "environment variable MISSING is not set"),
    ],
)
def test_unset_references_name_the_variable(text: str, env: dict[str, str], message: str) -> None:
    with pytest.raises(UnsetReference) as raised:
        resolve(text, env)
    assert str(raised.value) == message


def test_shell_text_keeps_its_variables_for_the_shell() -> None:
    result = check(
        "---\ntracker:\n  repo: acme/widgets\nhooks:\n  before_run: echo $HOME ${UNSET_HERE}\n"
        "agent:\n  preset: command\n  command: $AGENT_BIN --json\n---\n"
    )
    assert result.workflow is not None, result.problems
    assert result.workflow.policy.hooks.before_run == "echo $HOME ${UNSET_HERE}"
    assert result.workflow.policy.agent.command == "$AGENT_BIN --json"


def test_a_referenced_number_is_parsed() -> None:
    result = check(
        "---\ntracker:\n  repo: acme/widgets\nserver:\n  port: $PORT\n---\n",
        env={**ENV, "PORT": "9100"},
    )
    assert result.workflow is not None, result.problems
    assert result.workflow.policy.server.port == 9100
    assert str(result.workflow.origins["server.port"]) == "file WORKFLOW.md:5:3 via $PORT"


def test_secrets_are_registered_for_redaction() -> None:
    token = "plain-secret-for-the-tracker-1234"
    dashboard = "dashboard-secret-5678"
    api_key = "model-key-9012"
    result = check(
        "---\ntracker:\n  repo: acme/widgets\nserver:\n  token: $DASH\n"
        "agent:\n  env:\n    MODEL_KEY: $MODEL_KEY\n---\n",
        env={"GITHUB_TOKEN": token, "DASH": dashboard, "MODEL_KEY": api_key},
    )
    assert result.workflow is not None, result.problems
    for secret in (token, dashboard, api_key):
        assert redact_text(f"value={secret}!") == f"value={REDACTED}!"


def test_a_literal_token_is_a_warning_and_still_redacted() -> None:
    literal = "literal-token-written-in-the-file"
    result = check(f"---\ntracker:\n  repo: acme/widgets\n  token: {literal}\n---\n", env={})
    assert result.workflow is not None, result.problems
    assert [str(w) for w in result.warnings] == [
        "WORKFLOW.md:4:3: tracker.token: warning: the token is written in the file; "
        "use a $VAR reference"
    ]
    assert redact_text(literal) == REDACTED


def test_a_bad_secret_value_is_not_echoed() -> None:
    result = check("---\ntracker:\n  repo: acme/widgets\n  token: 8675309123\n---\n")
    assert [str(e) for e in result.errors] == [
        "WORKFLOW.md:4:3: tracker.token: expected a string, got a number"
    ]
