"""Rules of the ``pr`` section: the review comment marker and branch names."""

from __future__ import annotations

import re
from collections.abc import Iterator

from orchestrator.workflow.problems import Problem
from orchestrator.workflow.rules.context import RuleContext
from orchestrator.workflow.schema import ReviewCommentMode

_REF_FORBIDDEN = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]")


def _valid_branch(name: str) -> bool:
    if _REF_FORBIDDEN.search(name) or ".." in name or "@{" in name or "//" in name:
        return False
    if name.startswith(("-", "/")) or name.endswith(("/", ".", ".lock")):
        return False
    return all(part and not part.startswith(".") for part in name.split("/"))


def check_pr(ctx: RuleContext) -> Iterator[Problem]:
    """The review comment can be found again and branch names are valid."""
    pr = ctx.policy.pr
    if pr.review_comment_mode is ReviewCommentMode.UPSERT and pr.review_comment_marker is None:
        yield ctx.error(
            "pr.review_comment_marker",
            "pr.review_comment_mode upsert needs a marker to find its comment again",
        )
    marker = pr.review_comment_marker
    if marker is not None and not (marker.startswith("<!--") and marker.endswith("-->")):
        yield ctx.warning(
            "pr.review_comment_marker",
            "is visible in the comment; an HTML comment such as <!-- orchestrator-review --> "
            "stays hidden",
        )
    if not _valid_branch(f"{pr.branch_prefix}1-x"):
        yield ctx.error(
            "pr.branch_prefix",
            f"{pr.branch_prefix!r} does not make valid git branch names (no spaces, '..', '~', "
            "'^', ':', '?', '*', '[', '\\', leading '-' or '.')",
        )
    if not _valid_branch(pr.base_branch):
        yield ctx.error("pr.base_branch", f"{pr.base_branch!r} is not a valid git branch name")
