"""GitHub's "Update branch": the base branch brought into a pull request's head.

REST ``PUT .../pulls/{n}/update-branch``, GraphQL ``updatePullRequestBranch``
and the control API share `update_branch`. It writes a merge commit of the
base into the head (or replays the head's commits onto the base) in the bare
repository and moves the head branch, so the pull request follows it as
after any push by the person who asked: mergeability is unknown for the
mergeability delay, checks have to run on the new head, stale approvals are
dismissed when the base branch asks for it, and that person becomes the last
pusher. Refusals are GitHub's 422s; a pull request in the merge queue cannot be
updated (dequeue it first).
"""

from __future__ import annotations

from orchestrator.logs import get_logger
from orchestrator_sim import gitmerge
from orchestrator_sim.emulator import Emulator
from orchestrator_sim.errors import Unprocessable
from orchestrator_sim.gitstore import GitError, MergeConflict
from orchestrator_sim.records import Repo

log = get_logger(__name__)

HEAD_MISMATCH = "expected head sha didn't match current head ref."
NO_NEW_COMMITS = "There are no new commits on the base branch."
CONFLICT = "merge conflict between base and head"
CLOSED = "Cannot update the branch of a closed pull request."
# GitHub's words (GH006) for a push to the head of a pull request in the merge queue.
QUEUED = (
    "Branches that are queued for merging cannot be updated. "
    "To modify this branch, dequeue the associated pull request."
)


def update_branch(
    emulator: Emulator,
    repo: Repo,
    number: int,
    actor: str,
    *,
    expected_head_sha: str | None = None,
    method: str = "merge",
) -> str:
    """Bring the base into pull request ``number``'s head as ``actor``; return the new head.

    422 when the pull request is closed, in the merge queue, ``expected_head_sha``
    is not its head, the head already contains the base's tip, or the two conflict.
    """
    if method not in gitmerge.UPDATE_METHODS:
        raise Unprocessable.field("PullRequest", "update_method", message="merge or rebase")
    state = emulator.state
    # Held throughout, as a merge holds it: nobody sees the head half moved.
    with state.lock:
        pr = state.pull(repo, number)
        user = state.user(actor)
        if pr.merged or state.issue(repo, number).state != "open":
            raise Unprocessable(CLOSED)
        if state.queue_entry(repo, number) is not None:
            raise Unprocessable(QUEUED)
        if expected_head_sha is not None and expected_head_sha != pr.head_sha:
            raise Unprocessable(HEAD_MISMATCH)
        base_sha = repo.branches.get(pr.base_ref)
        if base_sha is None or not state.behind(repo, pr):
            raise Unprocessable(NO_NEW_COMMITS)
        try:
            new_sha = gitmerge.update_head(
                emulator.git,
                emulator.repo_path(repo),
                head_branch=pr.head_ref,
                head_sha=pr.head_sha,
                base_sha=base_sha,
                method=method,
                message=f"Merge branch '{pr.base_ref}' into {pr.head_ref}",
                author=emulator.identity(user),
                moment=emulator.clock(),
            )
        except MergeConflict as exc:
            raise Unprocessable(CONFLICT) from exc
        except GitError as exc:
            # The branch moved in git before the state saw it: the head the caller meant is gone.
            raise Unprocessable(HEAD_MISMATCH) from exc
        state.set_branch(repo, pr.head_ref, new_sha, user.login)
    log.info("sim_pull_branch_updated", repo=repo.full_name, pull=number, method=method)
    return new_sha
