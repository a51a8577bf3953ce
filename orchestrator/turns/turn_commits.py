"""The commits a rework turn made, read from its workspace as evidence for its "fixed" claims.

A thread the agent reports fixed is answered "Addressed" only when a commit of
the turn changes the file the thread is on (:func:`orchestrator.domain.review_decisions.prove_fix`).
This module reads that evidence through the workspace's git (in the agent's
sandbox, :mod:`orchestrator.agent.workspace_git`): the commits
between the turn's start and its final head, oldest first, each with which of
the threads' files it changes. The workspace is the agent's, so a failure to
read it is no evidence at all (an empty list), never a pass.
"""

from __future__ import annotations

from dataclasses import replace

from orchestrator.agent import Workspace
from orchestrator.agent.errors import AgentLayerError
from orchestrator.agent.workspace_git import WorkspaceGit
from orchestrator.domain.phases import Phase
from orchestrator.domain.snapshot import AgentOutcome, ReviewThread, TurnCommit
from orchestrator.logs import error_fields, get_logger

log = get_logger(__name__)

# Bounds of the evidence kept on the record: commits of one turn, and files looked at.
MAX_COMMITS = 200
MAX_PATHS = 300
_TIMEOUT_S = 60.0
_SEPARATOR = "\x00commit "


def with_turn_commits(
    outcome: AgentOutcome,
    threads: tuple[ReviewThread, ...],
    workspace: Workspace,
    git: WorkspaceGit,
) -> AgentOutcome:
    """The rework ``outcome`` with the commits it made and the thread files each changes."""
    if outcome.phase is not Phase.REWORK:
        return outcome
    if not outcome.committed or outcome.head_before is None or outcome.head_after is None:
        return replace(outcome, commits=())
    paths = sorted({t.path for t in threads if t.path and not t.is_resolved})[:MAX_PATHS]
    span = f"{outcome.head_before}..{outcome.head_after}"
    try:
        shas = _lines(git, workspace, "rev-list", "--reverse", f"--max-count={MAX_COMMITS}", span)
        touched = _touched(git, workspace, span, paths) if paths else {}
    except AgentLayerError as error:
        log.warning("turn_commits_unreadable", **error_fields(error))
        return replace(outcome, commits=())
    commits = tuple(TurnCommit(sha, tuple(sorted(touched.get(sha, ())))) for sha in shas)
    return replace(outcome, commits=commits)


def _lines(git: WorkspaceGit, workspace: Workspace, *args: str) -> list[str]:
    out = git.run(workspace.path, *args)
    return [line for line in out.splitlines() if line.strip()]


def _touched(
    git: WorkspaceGit, workspace: Workspace, span: str, paths: list[str]
) -> dict[str, set[str]]:
    """For each commit of ``span``, which of ``paths`` it adds, changes, deletes or renames."""
    out = git.run(
        workspace.path,
        "log",
        "--no-renames",
        "--no-merges",
        f"--max-count={MAX_COMMITS}",
        "--name-only",
        "--format=%x00commit %H",
        span,
        "--",
        *paths,
    )
    wanted = set(paths)
    touched: dict[str, set[str]] = {}
    for block in out.split(_SEPARATOR)[1:]:
        sha, _, names = block.partition("\n")
        touched[sha.strip()] = {n for n in names.splitlines() if n in wanted}
    return touched
