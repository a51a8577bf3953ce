"""Bring an issue's workspace up to the pull request's head before a turn.

Someone may have pushed to the pull request branch since the agent last worked
(a human's fix, a rebase button). The agent must start from that head, or it
would review or fix code that is no longer the pull request. The remote head
is fetched through the repository's mirror (the only place the credential is
used) and the local branch is fast-forwarded to it.

A local branch that went its own way holds commits no pull request has: work
of an earlier turn that was never pushed and was done again elsewhere (its
replica died and the turn ran again on another one), or that a push by
someone else replaced. The pull request is what the turn is about, so the
branch is reset to its head (``workspace_reset`` names the commit left
behind). Local commits that only add to the head (a turn's commit not pushed
yet) are kept. A head that cannot be fetched fails the turn: an agent never
reviews or fixes code that is not the pull request's.
"""

from __future__ import annotations

from dataclasses import replace

from orchestrator.agent import RepoSource, Workspace, WorkspaceManager
from orchestrator.agent.errors import WorkspaceError
from orchestrator.agent.head import HeadSnapshot
from orchestrator.domain.snapshot import AgentOutcome
from orchestrator.logs import get_logger
from orchestrator.turns.job import TurnJob

log = get_logger(__name__)

# The workspace's own refs offered as what it already has (so the bundle stays small).
_KNOWN_LIMIT = 20


def sync_to_head(
    workspaces: WorkspaceManager,
    workspace: Workspace,
    source: RepoSource,
    head_sha: str,
    discard: str | None = None,
) -> None:
    """Bring the workspace's branch to ``head_sha``, or past it with commits of its own.

    Commits up to ``discard`` (a discarded turn's head) are never kept: a
    branch holding it is reset to ``head_sha``. Raises :class:`WorkspaceError`
    when ``head_sha`` cannot be fetched.

    The workspace is the agent's: every git command on it runs through
    :class:`~orchestrator.agent.workspace_git.WorkspaceGit`, in the agent's
    sandbox, and the pull request's commits reach it as a bundle the daemon
    makes from its mirror, never by a fetch in the workspace (a fetch would
    run what the workspace's config names, such as ``core.alternateRefsCommand``
    or ``remote.<url>.uploadpack``).
    """
    git = workspaces.git
    path = workspace.path
    local = git.run(path, "rev-parse", "--verify", "HEAD")
    if local == head_sha:
        return
    if not git.ok(path, "cat-file", "-e", f"{head_sha}^{{commit}}"):
        _bring_commit(workspaces, workspace, source, head_sha, local)
    if not git.ok(path, "cat-file", "-e", f"{head_sha}^{{commit}}"):
        log.warning("workspace_sync_missing", head=head_sha)
        raise WorkspaceError(
            f"the pull request's head {head_sha[:12]} is not on its branch {workspace.branch} "
            "(pushed over since the turn was planned?); the turn runs again from the new head"
        )
    keeps_discarded = discard is not None and git.ok(
        path, "merge-base", "--is-ancestor", discard, local
    )
    if git.ok(path, "merge-base", "--is-ancestor", head_sha, local) and not keeps_discarded:
        # The workspace already holds the head and more (commits not pushed yet).
        return
    # Updating the work tree would run the clean/smudge filters the workspace's config
    # names: each one is switched off (and the command runs in the agent's sandbox).
    if git.ok(path, "merge-base", "--is-ancestor", local, head_sha):
        git.run(path, "merge", "--ff-only", "--quiet", head_sha, work_tree=True)
        log.info("workspace_synced", previous=local, head=head_sha)
    else:
        git.run(path, "reset", "--hard", "--quiet", head_sha, work_tree=True)
        log.warning("workspace_reset", left_behind=local, head=head_sha)
    git.run(path, "update-ref", f"refs/remotes/origin/{workspace.branch}", head_sha)


def _bring_commit(
    workspaces: WorkspaceManager,
    workspace: Workspace,
    source: RepoSource,
    head_sha: str,
    local: str,
) -> None:
    """Put ``head_sha`` and its history into the workspace's objects, from the mirror.

    The mirror fetches the branch; a bundle of the head (without the history
    the workspace says it has) is unbundled in the workspace. A head the remote
    branch no longer has is left missing (the caller says so).
    """
    git = workspaces.git
    path = workspace.path
    listed = git.line(
        path,
        "for-each-ref",
        f"--count={_KNOWN_LIMIT}",
        "--format=%(objectname)",
        f"refs/remotes/origin/{workspace.branch}",
        f"refs/remotes/origin/{workspace.base_branch}",
        "refs/heads/",
    )
    known = [local, *listed.split()]
    with workspaces.mirrors.locked(source) as mirror:
        workspaces.mirrors.update(source, branches=[workspace.branch])
        if not workspaces.mirrors.has_commit(mirror, head_sha):
            return
        with workspaces.mirrors.bundle_of(mirror, head_sha, known=known) as bundle:
            try:
                with bundle.open("rb") as stream:
                    git.import_bundle(path, stream)
            except WorkspaceError:
                # The workspace lacks what it said it had: the whole history instead.
                with (
                    workspaces.mirrors.bundle_of(mirror, head_sha, known=()) as whole,
                    whole.open("rb") as stream,
                ):
                    git.import_bundle(path, stream)


def adopt_unpushed_work(
    outcome: AgentOutcome, job: TurnJob, workspace: Workspace, before: HeadSnapshot
) -> AgentOutcome:
    """Count commits an interrupted earlier turn left unpushed as this turn's own.

    The turn's starting point becomes the last pushed commit when the
    workspace's HEAD descends from it: the pull request's head, or, before
    there is one, the point where the branch left the base branch it is
    compared with. Ancestry is checked by commit id, so nothing the agent wrote
    in the workspace can make a foreign commit pass for a pushed one; the push
    itself checks the branch again (:meth:`MirrorStore.push_branch`).
    """
    started = outcome.head_before
    if started is None:
        return outcome
    # The record's head is the freshest known push (a crash recovery may have confirmed
    # one after the turn was planned); the pull request's head as planned comes next.
    recorded = job.record.workpad.pr.head_sha if job.record.workpad.pr is not None else None
    planned = job.pr.head_sha if job.pr is not None else None
    candidates = [sha for sha in (recorded, planned) if sha]
    if not candidates and before.ahead and before.compared_to is not None:
        candidates = [_git_line(job, workspace, "merge-base", started, before.compared_to)]
    if started in candidates:
        # The turn started from a pushed head: the one recorded, or the pull request's as
        # planned (the turn was brought up to someone else's push), which may descend from it.
        return outcome
    for pushed in candidates:
        if _git_ok(job, workspace, "merge-base", "--is-ancestor", pushed, started):
            log.info("unpushed_work_adopted", pushed=pushed, workspace_head=started)
            return replace(outcome, head_before=pushed)
    return outcome


def _git_line(job: TurnJob, workspace: Workspace, *args: str) -> str:
    return job.agents.workspaces.git.line(workspace.path, *args)


def _git_ok(job: TurnJob, workspace: Workspace, *args: str) -> bool:
    return job.agents.workspaces.git.ok(workspace.path, *args)
