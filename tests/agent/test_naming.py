"""Workspace keys and branch names: safe, stable, distinct, and accepted by git."""

from __future__ import annotations

import re
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.agent.naming import (
    BRANCH_LIMIT,
    branch_name,
    is_valid_branch_name,
    title_slug,
    workspace_key,
)

SAFE_KEY = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]*-[0-9a-f]{12}$")


def git_accepts_branch(name: str) -> bool:
    done = subprocess.run(
        ["git", "check-ref-format", "--branch", name], capture_output=True, check=False, cwd="/"
    )
    return done.returncode == 0


@pytest.mark.parametrize(
    "identifier",
    [
        "../../etc/passwd",
        "/etc/passwd",
        "/",
        ".",
        "..",
        "",
        "acme/widgets#7",
        "Ünïcødé/рабочий#12 ☃",
        "x" * 500,
        "-rf",
        "a\x00b",
        "..hidden",
        "tab\tand\nnewline",
    ],
)
def test_workspace_key_is_one_safe_path_component(identifier: str) -> None:
    key = workspace_key(identifier)
    assert SAFE_KEY.match(key), key
    assert "/" not in key and key not in (".", "..")
    assert len(key) <= 48 + 1 + 12


def test_workspace_key_is_stable() -> None:
    assert workspace_key("acme/widgets#7") == workspace_key("acme/widgets#7")
    assert workspace_key("acme/widgets#7").startswith("acme_widgets_7-")


def test_identifiers_that_sanitize_to_the_same_text_get_distinct_keys() -> None:
    same_text = ["acme/widgets#7", "acme_widgets_7", "acme?widgets!7", "acme widgets 7"]
    keys = {workspace_key(i) for i in same_text}
    assert len(keys) == len(same_text)
    assert {k.rsplit("-", 1)[0] for k in keys} == {"acme_widgets_7"}


def test_long_identifiers_with_a_common_prefix_stay_distinct() -> None:
    a = "x" * 500 + "a"
    b = "x" * 500 + "b"
    assert workspace_key(a) != workspace_key(b)


@settings(max_examples=200, deadline=None, database=None)
@given(st.text())
def test_any_identifier_gives_a_safe_key(identifier: str) -> None:
    key = workspace_key(identifier)
    assert SAFE_KEY.match(key)


@pytest.mark.parametrize(
    ("title", "slug"),
    [
        ("Add a widget", "add-a-widget"),
        ("Fix: crash on  startup!!", "fix-crash-on-startup"),
        ("Crème brûlée über alles", "creme-brulee-uber-alles"),
        ("日本語のタイトル", ""),
        ("../../etc/passwd", "etc-passwd"),
        ("refs/heads/main.lock", "refs-heads-main-lock"),
        ("", ""),
    ],
)
def test_title_slug(title: str, slug: str) -> None:
    assert title_slug(title) == slug


def test_branch_name_from_prefix_number_and_title() -> None:
    assert branch_name("orchestrator/", 7, "Add a widget") == "orchestrator/7-add-a-widget"
    assert branch_name("agent-", 12, "日本語") == "agent-12"


def test_branch_name_of_a_500_character_title_is_bounded_and_valid() -> None:
    name = branch_name("orchestrator/", 123, "word " * 100)
    assert len(name) <= BRANCH_LIMIT
    assert git_accepts_branch(name)


def test_branch_name_rejects_a_prefix_git_would_refuse() -> None:
    with pytest.raises(ValueError, match="prefix"):
        branch_name("bad..prefix/", 1, "title")


@settings(max_examples=60, deadline=None, database=None)
@given(prefix=st.sampled_from(["orchestrator/", "agent-", "bot/issue-", ""]), title=st.text())
def test_generated_branch_names_are_accepted_by_git(prefix: str, title: str) -> None:
    name = branch_name(prefix, 42, title)
    assert git_accepts_branch(name), name


@settings(max_examples=150, deadline=None, database=None)
@given(st.text(alphabet=st.sampled_from(list("ab./-_@{}~^:?*[\\ \t.lock")), max_size=12))
def test_names_the_validator_accepts_are_accepted_by_git(name: str) -> None:
    if is_valid_branch_name(name):
        assert git_accepts_branch(name), name


@pytest.mark.parametrize(
    "name",
    [
        "",
        "-x",
        "a..b",
        "a b",
        "a~b",
        "a^b",
        "a:b",
        "a?b",
        "a*b",
        "a[b",
        "a\\b",
        "a@{b",
        "/a",
        "a/",
        "a//b",
        "a.",
        "a/.b",
        "a.lock",
        "a/b.lock/c",
    ],
)
def test_validator_refuses_what_git_refuses(name: str) -> None:
    assert not is_valid_branch_name(name)
    assert not git_accepts_branch(name)


@pytest.mark.parametrize("name", ["@", "HEAD"])
def test_validator_refuses_names_git_treats_as_shortcuts(name: str) -> None:
    assert not is_valid_branch_name(name)
