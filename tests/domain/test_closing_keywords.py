"""Closing keywords: every form that may close an issue on GitHub, and the commit text of a merge.

One row per form. The tracked issue is acme/widgets#5; acme/gadgets is another
repository of the same owner (under ``tracker.repos`` it may be tracked too: a
reference to it is still foreign). The Enterprise host is ``ghe.example.com``.
"""

from __future__ import annotations

import pytest

from orchestrator.domain.agent_files.errors import GITHUB_BODY_LIMIT
from orchestrator.domain.policy import MergeMethod
from orchestrator.domain.pr_body import (
    TITLE_LIMIT,
    ClosingScope,
    CommitText,
    closes_tracked,
    drop_foreign_closing,
    foreign_closing,
    merge_commit_text,
)

REPO = "acme/widgets"
GHE = "https://ghe.example.com"
SCOPE = ClosingScope(REPO, 5, GHE)
NBSP = "\u00a0"

FOREIGN = [
    ("plain", "Closes acme/gadgets#1", "Refs acme/gadgets#1"),
    ("same repository, other number", "fixes #12", "Refs #12"),
    ("prefix of the tracked number", "Fixes #55", "Refs #55"),
    ("colon", "Resolved: acme/gadgets#1", "Refs: acme/gadgets#1"),
    ("upper case", "CLOSES ACME/GADGETS#1", "Refs ACME/GADGETS#1"),
    ("bold keyword", "**Closes** acme/gadgets#1", "**Refs** acme/gadgets#1"),
    ("bold phrase", "**Closes acme/gadgets#1**", "**Refs acme/gadgets#1**"),
    ("underscore emphasis", "_Fixes_ #3", "_Refs_ #3"),
    ("double underscore and colon", "__Resolves__: #4", "__Refs__: #4"),
    ("code mark", "`Closes` `#3`", "`Refs` `#3`"),
    ("strike through", "~~Fixes~~ #3", "~~Refs~~ #3"),
    ("html tag", "<b>Closes</b> #3", "<b>Refs</b> #3"),
    ("no-break space", f"Closes{NBSP}acme/gadgets#1", f"Refs{NBSP}acme/gadgets#1"),
    ("no-break space entity", "Closes&nbsp;#3", "Refs&nbsp;#3"),
    ("ideographic space", "Fixes\u3000#3", "Refs\u3000#3"),
    ("zero-width space", "Fixes\u200b#3", "Refs\u200b#3"),
    ("line break", "Closes\n#3", "Refs\n#3"),
    ("no space", "closes#3", "Refs#3"),
    ("GH- reference", "Fixes GH-7", "Refs GH-7"),
    (
        "github.com URL",
        "Fixes https://github.com/acme/gadgets/issues/1",
        "Refs https://github.com/acme/gadgets/issues/1",
    ),
    (
        "www.github.com URL",
        "Fixes https://www.github.com/acme/gadgets/issues/1",
        "Refs https://www.github.com/acme/gadgets/issues/1",
    ),
    (
        "http URL",
        "Fixes http://github.com/acme/gadgets/issues/1",
        "Refs http://github.com/acme/gadgets/issues/1",
    ),
    (
        "URL without a scheme",
        "Fixes github.com/acme/gadgets/issues/1",
        "Refs github.com/acme/gadgets/issues/1",
    ),
    (
        "pull request URL",
        "Closes https://github.com/acme/gadgets/pull/2",
        "Refs https://github.com/acme/gadgets/pull/2",
    ),
    (
        "Enterprise host URL",
        "Resolves https://ghe.example.com/acme/gadgets/issues/1",
        "Refs https://ghe.example.com/acme/gadgets/issues/1",
    ),
    (
        "Enterprise host URL to the tracked repository, other number",
        "Closes https://GHE.example.com/acme/widgets/issues/6",
        "Refs https://GHE.example.com/acme/widgets/issues/6",
    ),
    ("inside a title", "Fix #3 crash", "Refs #3 crash"),
]

TRACKED = [
    ("bare number", "Closes #5"),
    ("own repository", "closes acme/widgets#5."),
    ("own repository, other case", "Fixes: ACME/Widgets#5"),
    ("bold", "**Resolves** #5"),
    ("no-break space", f"Closes{NBSP}#5"),
    ("GH- reference", "Fixes GH-5"),
    ("github.com URL", "Resolved https://github.com/acme/widgets/issues/5"),
    ("Enterprise URL", "Closes ghe.example.com/acme/widgets/issues/5"),
]

NOT_CLOSING = [
    ("no keyword", "See #1"),
    ("inside a longer word", "prefixes #1 and unfixed #2"),
    ("a word between", "Fixes issue #3"),
    ("another host", "Closes https://example.org/acme/gadgets/issues/1"),
    ("a path deeper than an issue", "Closes acme/gadgets/issues#1/x"),
    ("reference words", "Refs acme/gadgets#1, relates to #2"),
]


@pytest.mark.parametrize(("form", "text", "neutral"), FOREIGN, ids=[f[0] for f in FOREIGN])
def test_a_closing_keyword_for_another_issue_is_found_and_loses_its_keyword(
    form: str, text: str, neutral: str
) -> None:
    assert SCOPE.foreign(text), form
    assert SCOPE.honest(text).text == neutral
    # Dropping is complete: nothing closing is left to find.
    assert not SCOPE.foreign(neutral)
    assert not closes_tracked(text, REPO, 5, web_base=GHE)


@pytest.mark.parametrize(("form", "text"), TRACKED, ids=[t[0] for t in TRACKED])
def test_the_tracked_issue_may_be_closed_in_every_form(form: str, text: str) -> None:
    assert closes_tracked(text, REPO, 5, web_base=GHE), form
    assert SCOPE.foreign(text) == ()
    assert SCOPE.honest(text).text == text


@pytest.mark.parametrize(("form", "text"), NOT_CLOSING, ids=[n[0] for n in NOT_CLOSING])
def test_text_that_closes_nothing_is_left_alone(form: str, text: str) -> None:
    assert SCOPE.foreign(text) == (), form
    assert SCOPE.honest(text).text == text


def test_an_enterprise_url_counts_only_on_its_own_server() -> None:
    text = "Closes https://ghe.example.com/acme/gadgets/issues/1"
    assert foreign_closing(text, REPO, 5) == ()
    assert foreign_closing(text, REPO, 5, web_base=GHE) == (
        "Closes https://ghe.example.com/acme/gadgets/issues/1",
    )
    # An emulator's address, port and all.
    local = "Fixes http://127.0.0.1:8123/acme/gadgets/issues/1"
    assert foreign_closing(local, REPO, 5, web_base="http://127.0.0.1:8123")
    assert not foreign_closing(local, REPO, 5, web_base="http://127.0.0.1:9999")


def test_another_tracked_repository_is_still_foreign() -> None:
    # Under tracker.repos both repositories are tracked; acme/gadgets#1 is another issue.
    assert foreign_closing("Closes acme/gadgets#1", REPO, 5) == ("Closes acme/gadgets#1",)
    assert foreign_closing("Closes acme/gadgets#5", REPO, 5) == ("Closes acme/gadgets#5",)


def test_without_a_tracked_number_every_closing_keyword_is_foreign() -> None:
    body = drop_foreign_closing("Fixes #5 and closes acme/widgets#5", REPO, None)
    assert body.text == "Refs #5 and Refs acme/widgets#5"
    assert body.notes[0] == (
        "dropped the closing keyword of 'Fixes #5': no issue may be closed by this PR"
    )


def test_a_pathological_text_is_read_quickly() -> None:
    text = ("Closes " + " " * 60 + "*" * 60) * 2000 + "#1"
    assert SCOPE.foreign(text) == ()


def test_a_squash_says_the_title_and_body_with_no_closing_keyword() -> None:
    commit = merge_commit_text(
        MergeMethod.SQUASH,
        pr_number=12,
        pr_title="Fix #3 crash\nin two lines",
        pr_body=f"**Closes** acme/gadgets#1\nCloses{NBSP}#4\n\nCloses #5",
        head_label="acme/orchestrator/issue-5",
        scope=SCOPE,
    )
    # Even the tracked issue's keyword: the runtime closes it after the confirmed merge.
    assert commit == CommitText(
        "Refs #3 crash in two lines (#12)",
        f"**Refs** acme/gadgets#1\nRefs{NBSP}#4\n\nRefs #5",
    )


def test_a_merge_commit_says_the_cleaned_title_and_a_rebase_nothing() -> None:
    commit = merge_commit_text(
        MergeMethod.MERGE,
        pr_number=12,
        pr_title="Resolves acme/gadgets#1 and fixes #5",
        pr_body="Closes #5",
        head_label="acme/orchestrator/issue-5",
        scope=SCOPE,
    )
    assert commit == CommitText(
        "Merge pull request #12 from acme/orchestrator/issue-5",
        "Refs acme/gadgets#1 and Refs #5",
    )
    rebase = merge_commit_text(
        MergeMethod.REBASE,
        pr_number=12,
        pr_title="Resolves acme/gadgets#1",
        pr_body="",
        head_label="acme/x",
        scope=SCOPE,
    )
    assert rebase is None


def test_the_commit_text_stays_within_github_limits() -> None:
    commit = merge_commit_text(
        MergeMethod.SQUASH,
        pr_number=1,
        pr_title="t" * 1000,
        pr_body="b" * (GITHUB_BODY_LIMIT + 10),
        head_label="acme/x",
        scope=SCOPE,
    )
    assert commit is not None
    assert commit.title == "t" * TITLE_LIMIT + " (#1)"
    assert len(commit.message) == GITHUB_BODY_LIMIT
