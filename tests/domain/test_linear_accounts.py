"""A policy names a Linear user by id or email, and matches the user on that field alone."""

from __future__ import annotations

import pytest

from orchestrator.domain.linear_accounts import is_email, is_linear_user_id, names_linear_user

ALICE_ID = "0f8fad5b-d9cb-469f-a165-70867728950e"
MALLORY_ID = "7c9e6679-7425-40de-944b-e07fc1f90ae7"


@pytest.mark.parametrize(
    ("entries", "user_id", "email", "named"),
    [
        (["alice@example.com"], ALICE_ID, "alice@example.com", True),
        (["Alice@Example.COM"], ALICE_ID, "alice@EXAMPLE.com", True),
        ([ALICE_ID], ALICE_ID, "alice@example.com", True),
        ([ALICE_ID.upper()], ALICE_ID, None, True),
        (["alice@example.com"], MALLORY_ID, "mallory@example.com", False),
        ([ALICE_ID], MALLORY_ID, "mallory@example.com", False),
        # A name is no identity: the entry matches neither the id nor the email field.
        (["alice"], MALLORY_ID, "mallory@example.com", False),
        (["Alice Liddell"], MALLORY_ID, "mallory@example.com", False),
        # An email entry never matches an id, an id entry never an email.
        ([MALLORY_ID], ALICE_ID, MALLORY_ID, False),
        (["alice@example.com"], "alice@example.com", None, False),
        # No email in the answer: only the id can match.
        (["alice@example.com"], ALICE_ID, None, False),
        ([], ALICE_ID, "alice@example.com", False),
    ],
    ids=[
        "email",
        "email_any_case",
        "id",
        "id_any_case",
        "other_users_email",
        "other_users_id",
        "display_name",
        "full_name",
        "id_entry_vs_email_field",
        "email_entry_vs_id_field",
        "no_email",
        "no_entries",
    ],
)
def test_names_linear_user(
    entries: list[str], user_id: str, email: str | None, named: bool
) -> None:
    assert names_linear_user(entries, user_id, email) is named


@pytest.mark.parametrize(
    ("entry", "email", "user_id"),
    [
        ("alice@example.com", True, False),
        (" Alice@Example.com ", True, False),
        (ALICE_ID, False, True),
        (ALICE_ID.upper(), False, True),
        ("alice", False, False),
        ("Alice Liddell", False, False),
        ("alice @example.com", False, False),
        ("a@b@c", False, False),
        ("0f8fad5b-d9cb-469f-a165", False, False),
    ],
)
def test_the_shapes_of_an_entry(entry: str, email: bool, user_id: bool) -> None:
    assert (is_email(entry), is_linear_user_id(entry)) == (email, user_id)
