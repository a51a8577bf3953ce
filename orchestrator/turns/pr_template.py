"""The repository's pull request template, read from the base branch for its headings.

GitHub fills a new pull request from ``pull_request_template.md`` in
``.github/``, the repository root or ``docs/`` (any case, ``.md`` or
``.txt``), and offers the files of ``.github/PULL_REQUEST_TEMPLATE/`` as a
choice. The runtime reads the first of those, in that order (from the
directory, the first file by name), from the base branch in the repository's
mirror (the daemon's own copy, never the agent's workspace): the agent's edits
never change what is enforced. The headings found
are restored in the description when the agent leaves them out
(:func:`orchestrator.domain.pr_body.restore_template_headings`).
"""

from __future__ import annotations

import re
from dataclasses import replace

from orchestrator.agent import RepoSource
from orchestrator.agent.errors import AgentLayerError
from orchestrator.agent.git import run_git
from orchestrator.agent.mirror import MirrorStore
from orchestrator.domain.agent_files.questions import PRDescription
from orchestrator.domain.pr_body import headings
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
    outcome: AgentOutcome, mirrors: MirrorStore, source: RepoSource, base_branch: str
) -> AgentOutcome:
    """The outcome with the template's heading lines, when the agent wrote a description."""
    if not isinstance(outcome.pr_description, PRDescription):
        return outcome
    ref = f"refs/heads/{base_branch}"
    try:
        with mirrors.locked(source) as mirror:

            def git(*args: str, check: bool = True) -> str:
                return run_git(list(args), cwd=mirror, timeout_s=_TIMEOUT_S, check=check)

            listing = git(
                "ls-tree",
                "-r",
                "--name-only",
                "--full-tree",
                ref,
                "--",
                ".github",
                "docs",
                check=False,
            ).splitlines()
            listing += git("ls-tree", "--name-only", "--full-tree", ref, check=False).splitlines()
            path = template_path(listing)
            if path is None:
                return outcome
            text = git("cat-file", "blob", f"{ref}:{path}")
    except (AgentLayerError, OSError) as error:
        log.warning("pr_template_unreadable", **error_fields(error))
        return outcome
    found = headings(text[:MAX_TEMPLATE_BYTES])[:MAX_HEADINGS]
    return replace(outcome, pr_template=tuple(f"{marker} {title}" for marker, title in found))
