"""One account, two spellings: REST's ``slug[bot]`` and GraphQL's ``slug`` are the daemon."""

from __future__ import annotations

import pytest

from orchestrator.domain.accounts import account_key, is_bot_login, same_account
from orchestrator.domain.approval import qualifies_as_human
from orchestrator.domain.snapshot import Actor
from orchestrator.domain.trust import is_self


@pytest.mark.parametrize(
    ("login", "other", "same"),
    [
        ("orchestrator-app[bot]", "orchestrator-app", True),
        ("Orchestrator-App", "orchestrator-app[bot]", True),
        ("machine-user", "MACHINE-USER", True),
        ("orchestrator-app[bot]", "other-app[bot]", False),
        ("alice", None, False),
        (None, None, False),
        ("", "", False),
    ],
    ids=["rest_and_graphql", "case", "user", "other_app", "unknown", "none", "empty"],
)
def test_same_account(login: str | None, other: str | None, same: bool) -> None:
    assert same_account(login, other) is same


def test_account_key_drops_the_bot_suffix_and_case() -> None:
    assert account_key("Orchestrator-App[bot]") == "orchestrator-app"


def test_bot_by_type_or_rest_login() -> None:
    assert is_bot_login("dependabot[bot]")
    assert is_bot_login("copilot", "Bot")
    assert not is_bot_login("alice", "User")


@pytest.mark.parametrize(
    "actor",
    [
        # The daemon's own App as GraphQL names it, even if it looked like a writer.
        Actor("orchestrator-app", is_bot=False, can_write=True),
        Actor("orchestrator-app[bot]", is_bot=True, can_write=True),
        # Another App's bot with write access.
        Actor("helper-app", is_bot=True, can_write=True),
    ],
    ids=["self_graphql_spelling", "self_rest_spelling", "other_app"],
)
def test_an_app_bot_is_never_a_human_approver(actor: Actor) -> None:
    assert not qualifies_as_human(actor, "orchestrator-app[bot]")


def test_the_daemon_recognises_itself_in_either_spelling() -> None:
    assert is_self(Actor("orchestrator-app", is_bot=True, can_write=False), "orchestrator-app[bot]")
    assert not is_self(Actor("alice", is_bot=False, can_write=True), "orchestrator-app[bot]")
