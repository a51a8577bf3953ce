"""CODEOWNERS read as GitHub reads it: pattern rules, last match wins, invalid lines skipped."""

from __future__ import annotations

import pytest

from orchestrator_sim import codeowners

RULES = """\
# Everything, unless a later line says otherwise
*                    @acme/everyone
*.js                 @js-owner
/build/out/          @build-owner
apps/                @apps-owner
docs/*               docs@example.com
**/logs              @logs-owner
/scripts/deploy.sh   @ops @acme/oncall   # two owners, a trailing comment
src/generated/
\\#notes              @hash-owner
!negated             @nobody
data/[ab].csv        @nobody
bad-owner            not an owner
"""


@pytest.mark.parametrize(
    ("path", "owners"),
    [
        ("README.md", ("@acme/everyone",)),
        ("web/app.js", ("@js-owner",)),
        ("app.js", ("@js-owner",)),
        ("build/out/today.txt", ("@build-owner",)),
        ("sub/build/out/today.txt", ("@acme/everyone",)),
        ("apps/x.py", ("@apps-owner",)),
        ("deep/apps/x.py", ("@apps-owner",)),
        ("docs/intro.md", ("docs@example.com",)),
        ("docs/guide/deep.md", ("@acme/everyone",)),
        ("service/logs/a.txt", ("@logs-owner",)),
        ("build/out/logs/a.txt", ("@logs-owner",)),
        ("scripts/deploy.sh", ("@ops", "@acme/oncall")),
        ("src/generated/code.py", ()),
        ("#notes", ("@hash-owner",)),
        ("negated", ("@acme/everyone",)),
        ("data/a.csv", ("@acme/everyone",)),
        ("bad-owner", ("@acme/everyone",)),
    ],
    ids=[
        "star_matches_all",
        "extension_anywhere",
        "extension_at_root",
        "anchored_directory",
        "anchored_directory_only_at_the_root",
        "directory_at_root",
        "directory_anywhere",
        "star_in_last_segment_matches_that_level",
        "star_in_last_segment_not_deeper",
        "double_star_directory",
        "the_last_matching_rule_wins",
        "several_owners",
        "no_owners_leaves_a_path_unowned",
        "escaped_hash",
        "negation_is_skipped",
        "ranges_are_skipped",
        "invalid_owner_skips_the_line",
    ],
)
def test_owners_of_a_path(path: str, owners: tuple[str, ...]) -> None:
    assert codeowners.owners_of(codeowners.parse(RULES), path) == owners


def test_a_path_no_rule_matches_has_no_owners() -> None:
    rules = codeowners.parse("/src/ @core\n")

    assert codeowners.owners_of(rules, "README.md") == ()
    assert codeowners.owners_of(rules, "lib/src/x.py") == ()
    assert codeowners.owners_of(rules, "src/x.py") == ("@core",)


def test_owner_names_are_given_without_the_at_sign() -> None:
    assert [codeowners.owner_name(o) for o in ("@alice", "@acme/core", "a@b.c")] == [
        "alice",
        "acme/core",
        "a@b.c",
    ]


def test_the_first_location_github_knows_comes_first() -> None:
    assert codeowners.LOCATIONS == (".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS")
