"""The `server` keys that decide who the web server answers: metrics_token and allowed_hosts."""

from __future__ import annotations

import pytest

from orchestrator.logs import REDACTED, redact_text
from orchestrator.workflow.display import effective_policy_lines
from orchestrator.workflow.prompt import policy_variables
from tests.workflow.conftest import ENV, check


def test_metrics_token_is_a_secret_read_through_a_reference() -> None:
    secret = "metrics-scrape-secret-4321"
    result = check(
        "---\ntracker:\n  repo: acme/widgets\nserver:\n  metrics_token: $METRICS_TOKEN\n---\n",
        env={**ENV, "METRICS_TOKEN": secret},
    )
    assert result.workflow is not None, result.problems
    assert result.workflow.policy.server.metrics_token == secret
    assert redact_text(f"token={secret}") == f"token={REDACTED}"
    shown = "\n".join(effective_policy_lines(result.workflow))
    assert secret not in shown and "$METRICS_TOKEN (set)" in shown
    server = policy_variables(result.workflow.policy)["server"]
    assert isinstance(server, dict) and "metrics_token" not in server and "port" in server


def test_an_unset_metrics_token_variable_is_named() -> None:
    result = check(
        "---\ntracker:\n  repo: acme/widgets\nserver:\n  metrics_token: $METRICS_TOKEN\n---\n"
    )
    assert [str(e) for e in result.errors] == [
        "WORKFLOW.md:5:3: server.metrics_token: environment variable METRICS_TOKEN is not set"
    ]


def test_allowed_hosts_takes_names_and_addresses() -> None:
    result = check(
        "---\ntracker:\n  repo: acme/widgets\nserver:\n  allowed_hosts:\n"
        "    - orchestrator.example.com\n    - 10.0.0.5\n    - '[::1]'\n    - '*'\n---\n"
    )
    assert result.workflow is not None, result.problems
    assert result.workflow.policy.server.allowed_hosts == (
        "orchestrator.example.com",
        "10.0.0.5",
        "[::1]",
        "*",
    )


@pytest.mark.parametrize(
    "entry", ["https://orchestrator.example.com", "orchestrator.example.com:8080", "a b", "x/y"]
)
def test_allowed_hosts_refuses_what_is_not_a_host_name(entry: str) -> None:
    result = check(
        f"---\ntracker:\n  repo: acme/widgets\nserver:\n  allowed_hosts: ['{entry}']\n---\n"
    )
    assert [str(e) for e in result.errors] == [
        f"WORKFLOW.md:5:19: server.allowed_hosts[0]: {entry!r} is not a host name: write the "
        "name alone (orchestrator.example.com, no scheme, port or path), or * for any host"
    ]


def test_a_star_without_a_token_is_a_warning() -> None:
    open_door = check("---\ntracker:\n  repo: acme/widgets\nserver:\n  allowed_hosts: ['*']\n---\n")
    assert [str(w) for w in open_door.warnings] == [
        "WORKFLOW.md:5:3: server.allowed_hosts: warning: * answers any Host header without "
        "server.token: a web page can read the dashboard and API through DNS rebinding"
    ]
    guarded = check(
        "---\ntracker:\n  repo: acme/widgets\nserver:\n  allowed_hosts: ['*']\n"
        "  token: $DASH\n---\n",
        env={**ENV, "DASH": "dashboard-token-1234"},
    )
    assert guarded.workflow is not None and not guarded.warnings
