"""The pull request body rules: closing keywords, template headings, people's edits."""

from __future__ import annotations

from orchestrator.domain.pr_body import (
    EMPTY_SECTION_NOTE,
    closes_tracked,
    drop_foreign_closing,
    merge_human_edits,
    restore_template_headings,
)
from orchestrator.turns.pr_template import template_path

REPO = "acme/widgets"


def test_the_tracked_issue_is_matched_as_a_whole_reference() -> None:
    assert not closes_tracked("Closes #12", REPO, 1)
    assert closes_tracked("closes #1.", REPO, 1)
    assert closes_tracked("Fixes: acme/widgets#1", REPO, 1)
    assert closes_tracked("Resolved https://github.com/acme/widgets/issues/1", REPO, 1)
    assert not closes_tracked("Fixes other/repo#1", REPO, 1)
    assert not closes_tracked("See #1", REPO, 1)
    assert not closes_tracked("prefixes #1", REPO, 1)


def test_closing_keywords_for_other_issues_lose_their_keyword() -> None:
    text = "Closes #999, fixes #12 and Fixes #1.\nResolves other/repo#1; see #5."
    body = drop_foreign_closing(text, REPO, 1)
    assert body.text == "Refs #999, Refs #12 and Fixes #1.\nRefs other/repo#1; see #5."
    assert len(body.notes) == 3
    assert body.notes[0] == (
        "dropped the closing keyword of 'Closes #999': only #1 may be closed by this PR"
    )


def test_missing_template_headings_are_restored_empty() -> None:
    template = ("## Summary", "## Testing", "## Risk")
    body = restore_template_headings("## Summary\n\nAdds it.\n\n### testing\n\nok", template)
    assert body.text.endswith(f"## Risk\n\n{EMPTY_SECTION_NOTE}")
    assert body.notes == ("restored the template heading '## Risk', left empty",)
    assert restore_template_headings("## Summary", ()).text == "## Summary"
    # A heading inside a code block does not count.
    fenced = restore_template_headings("```\n## Risk\n```", ("## Risk",))
    assert fenced.notes


def test_a_persons_edits_are_kept_section_by_section() -> None:
    last = "Intro.\n\n## Summary\n\nOld summary.\n\n## Testing\n\nOld tests.\n\n## Risk\n\nLow."
    current = (
        "Intro.\n\n## Summary\n\nOld summary.\n\n## Testing\n\nRan it by hand too.\n\n"
        "## Reviewer notes\n\nCheck the cache."
    )
    new = "Intro.\n\n## Summary\n\nNew summary.\n\n## Testing\n\nNew tests.\n\n## Risk\n\nLow."
    merged = merge_human_edits(last, current, new)
    assert merged.text == (
        "Intro.\n\n## Summary\n\nNew summary.\n\n## Testing\n\nRan it by hand too.\n\n"
        "## Reviewer notes\n\nCheck the cache."
    )
    assert merged.notes == (
        "kept a person's edit of 'testing'",
        "kept the removal of 'risk'",
        "kept the section 'reviewer notes' a person added",
    )
    assert merge_human_edits(last, last, new).text == new


def test_the_template_is_found_where_github_looks() -> None:
    assert template_path(["README.md", "docs/PULL_REQUEST_TEMPLATE.md"]) == (
        "docs/PULL_REQUEST_TEMPLATE.md"
    )
    assert (
        template_path([".github/pull_request_template.md", "pull_request_template.md"])
        == ".github/pull_request_template.md"
    )
    assert template_path(
        [".github/PULL_REQUEST_TEMPLATE/b.md", ".github/PULL_REQUEST_TEMPLATE/a.md"]
    ) == (".github/PULL_REQUEST_TEMPLATE/a.md")
    assert template_path(["src/pull_request_template.md"]) is None
