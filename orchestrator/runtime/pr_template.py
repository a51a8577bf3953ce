"""The repository's pull request template, read from the base branch for its headings.

GitHub fills a new pull request from ``pull_request_template.md`` in
``.github/``, the repository root or ``docs/`` (any case, ``.md`` or
``.txt``), and offers the files of ``.github/PULL_REQUEST_TEMPLATE/`` as a
choice. The runtime reads the first of those, in that order (from the
directory, the first file by name), as committed on the base branch: the agent's
own edits in its workspace never change what is enforced. The headings found
are restored in the description when the agent leaves them out
(:func:`orchestrator.domain.pr_body.restore_template_headings`).
"""

from __future__ import annotations

import re
from dataclasses import replace

from orchestrator.agent import Workspace
from orchestrator.agent.errors import AgentLayerError
from orchestrator.agent.git import run_git
from orchestrator.domain.pr_body import headings
from orchestrator.domain.results import PRDescription
from orchestrator.domain.snapshot import AgentOutcome
from orchestrator.logs import error_fields, get_logger

log = get_logger(__name__)

MAX_HEADINGS = 30
MAX_TEMPLATE_BYTES = 64_000
_TIMEOUT_S = 30.0
_SINGLE = re.compile(r"^(?:(\.github|docs)/)?pull_request_template(?:\.md|\.txt)?$", re.I)
_CHOICE = re.compile(r"^\.github/pull_request_template/[^/]+\.(?:md|txt)$", re.I)
_PLACE_ORDER = {".github": 0, "": 1, "docs": 2}


def template_path(names: list[str]) -> str | None:
    """Which of the repository's file ``names`` is its pull request template, if any."""
    singles = []
    for name in names:
        match = _SINGLE.match(name)
        if match is not None:
            singles.append((_PLACE_ORDER[(match.group(1) or "").lower()], name))
    if singles:
        return min(singles)[1]
    choices = sorted(name for name in names if _CHOICE.match(name))
    return choices[0] if choices else None


def with_pr_template(
    outcome: AgentOutcome, workspace: Workspace, base_branch: str, env: dict[str, str]
) -> AgentOutcome:
    """The outcome with the template's heading lines, when the agent wrote a description."""
    if not isinstance(outcome.pr_description, PRDescription):
        return outcome
    ref = f"refs/remotes/origin/{base_branch}"
    try:
        listing = run_git(
            ["ls-tree", "-r", "--name-only", "--full-tree", ref, "--", ".github", "docs"],
            cwd=workspace.path,
            timeout_s=_TIMEOUT_S,
            env=env,
            check=False,
        ).splitlines()
        listing += run_git(
            ["ls-tree", "--name-only", "--full-tree", ref],
            cwd=workspace.path,
            timeout_s=_TIMEOUT_S,
            env=env,
            check=False,
        ).splitlines()
        path = template_path(listing)
        if path is None:
            return outcome
        text = run_git(
            ["cat-file", "blob", f"{ref}:{path}"],
            cwd=workspace.path,
            timeout_s=_TIMEOUT_S,
            env=env,
        )
    except AgentLayerError as error:
        log.warning("pr_template_unreadable", **error_fields(error))
        return outcome
    found = headings(text[:MAX_TEMPLATE_BYTES])[:MAX_HEADINGS]
    return replace(outcome, pr_template=tuple(f"{marker} {title}" for marker, title in found))
