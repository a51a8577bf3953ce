"""Merge queue entries and auto-merge requests of the emulated GitHub.

This layer keeps the records and refuses what GitHub refuses when a pull
request is queued or set to auto-merge; `orchestrator_sim.merge_queue` (which
needs git) builds the merge groups, reads their checks and merges. A queued
pull request whose head moves or that closes leaves the queue; a push by an
account without write access cancels auto-merge, as GitHub documents.
"""

from __future__ import annotations

from orchestrator_sim.clock import Clock
from orchestrator_sim.errors import Conflict, NotAllowed, Unprocessable
from orchestrator_sim.records import PullRequest, Repo, make_node_id
from orchestrator_sim.records_rules import AutoMergeRequest, QueueEntry, RulesetRule
from orchestrator_sim.state_rulesets import RulesetsState

HEAD_MOVED = "Head branch was modified. Review and try the merge again."
UNKNOWN_MERGEABILITY = "Base branch was modified. Review and try the merge again."
AUTO_MERGE_OFF = "Auto merge is not allowed for this repository"
# The mergeStateStatus values in which GitHub merges at once instead of enabling auto-merge.
MERGEABLE_NOW = ("clean", "unstable", "has_hooks")


def queue_method(rule: RulesetRule) -> str:
    """The REST merge method (merge, squash, rebase) of a merge_queue rule."""
    return str(rule.parameters.get("merge_method", "MERGE")).lower()


class QueueState(RulesetsState):
    """Each base branch's merge queue and each pull request's auto-merge request.

    ``retired_groups`` collects the merge-group branches of entries that left
    the queue, for the queue engine to delete.
    """

    def __init__(self, clock: Clock | None = None) -> None:
        super().__init__(clock)
        self.retired_groups: list[tuple[Repo, str]] = []

    # ------------------------------------------------------------------ queue

    def queue_entries(self, repo: Repo, base: str) -> list[QueueEntry]:
        """The entries queued for ``base``, first to merge first."""
        with self.lock:
            return [entry for entry in repo.merge_queue if entry.base_ref == base]

    def queue_entry(self, repo: Repo, number: int) -> QueueEntry | None:
        with self.lock:
            for entry in repo.merge_queue:
                if entry.number == number:
                    return entry
            return None

    def queue_position(self, repo: Repo, entry: QueueEntry) -> int:
        """GitHub's ``position``: 1 for the entry that merges next."""
        with self.lock:
            return self.queue_entries(repo, entry.base_ref).index(entry) + 1

    def merge_problem(self, repo: Repo, pr: PullRequest, actor: str, method: str) -> str | None:
        """Why the merge queue could not merge the pull request as it stands: not open, a
        draft, mergeability unknown or conflicting, a method the repository (or a linear
        history) refuses, then protection and the rulesets (a queue rule aside; the
        queue's group is up to date with the base by construction)."""
        with self.lock:
            if pr.merged or repo.issues[pr.number].state != "open":
                return "Pull Request is not mergeable"
            if pr.draft:
                return "Pull Request is still a draft"
            mergeable = self.mergeable(repo, pr)
            if mergeable is None:
                return UNKNOWN_MERGEABILITY
            if not mergeable:
                return "Pull Request is not mergeable"
            return (
                self.method_refusal(repo, pr, method)
                or self.protection_problem(repo, pr, actor, via_queue=True)
                or self.ruleset_problem(repo, pr, actor, method, via_queue=True)
            )

    def enqueue(
        self,
        repo: Repo,
        pr: PullRequest,
        actor: str,
        *,
        expected_head: str | None = None,
        jump: bool = False,
    ) -> QueueEntry:
        """Add a pull request to its base's merge queue (at the front with ``jump``)."""
        with self.lock:
            rule = self.queue_rule(repo, pr.base_ref)
            if expected_head is not None and expected_head != pr.head_sha:
                raise Conflict(HEAD_MOVED)
            if rule is None:
                raise Unprocessable(f"Merge queue is not enabled on the {pr.base_ref} branch")
            if self.queue_entry(repo, pr.number) is not None:
                raise Unprocessable("Pull request is already in the merge queue")
            problem = self.merge_problem(repo, pr, actor, queue_method(rule))
            if problem is not None:
                raise NotAllowed(problem)
            ident = self.new_id()
            entry = QueueEntry(
                id=ident,
                node_id=make_node_id("MergeQueueEntry", ident),
                number=pr.number,
                base_ref=pr.base_ref,
                head_sha=pr.head_sha,
                enqueuer=self.user(actor).login,
                enqueued_at=self.now(),
                jump=jump,
            )
            if jump:
                at = next(
                    (i for i, e in enumerate(repo.merge_queue) if e.base_ref == pr.base_ref),
                    len(repo.merge_queue),
                )
                repo.merge_queue.insert(at, entry)
            else:
                repo.merge_queue.append(entry)
            repo.auto_merges.pop(pr.number, None)
            self._event(repo, repo.issues[pr.number], "added_to_merge_queue", entry.enqueuer)
            self._touch()
            return entry

    def dequeue(self, repo: Repo, number: int, actor: str) -> QueueEntry | None:
        """Take a pull request out of the merge queue; None when it was not queued."""
        with self.lock:
            entry = self.queue_entry(repo, number)
            if entry is not None:
                self.drop_entry(repo, entry, actor)
            return entry

    def drop_entry(self, repo: Repo, entry: QueueEntry, actor: str) -> None:
        """Remove an entry (its merge group branch is retired for deletion)."""
        with self.lock:
            repo.merge_queue.remove(entry)
            if entry.group_ref is not None:
                self.retired_groups.append((repo, entry.group_ref))
            self._event(repo, repo.issues[entry.number], "removed_from_merge_queue", actor)
            self._touch()

    def record_group(
        self, repo: Repo, entry: QueueEntry, ref: str | None, sha: str | None, parent: str | None
    ) -> None:
        """Note the merge group built for ``entry`` (all None: none is built any more; the
        old group's branch is retired)."""
        with self.lock:
            if entry.group_ref is not None and entry.group_ref != ref:
                self.retired_groups.append((repo, entry.group_ref))
            entry.group_ref, entry.group_sha, entry.group_parent = ref, sha, parent
            entry.built_at = self.now() if sha is not None else None
            entry.state = "AWAITING_CHECKS" if sha is not None else "QUEUED"
            self._touch()

    def set_entry_state(self, entry: QueueEntry, state: str) -> None:
        with self.lock:
            if entry.state != state:
                entry.state = state
                self._touch()

    def finish_entry(self, repo: Repo, entry: QueueEntry) -> None:
        """Take a merged entry out of the queue (its pull request records the merge)."""
        with self.lock:
            repo.merge_queue.remove(entry)
            if entry.group_ref is not None:
                self.retired_groups.append((repo, entry.group_ref))
            self._touch()

    # ------------------------------------------------------------- auto-merge

    def enable_auto_merge(
        self,
        repo: Repo,
        pr: PullRequest,
        actor: str,
        *,
        method: str,
        expected_head: str | None = None,
        headline: str | None = None,
        body: str | None = None,
        author_email: str | None = None,
    ) -> AutoMergeRequest | QueueEntry:
        """Set a pull request to merge once its base's rules pass.

        On a base with a merge queue, a pull request that can merge now is
        queued at once (the answer is its entry). Elsewhere GitHub refuses a
        pull request that can merge now (``Pull request Pull request is in
        clean status``): there is nothing to wait for.
        """
        with self.lock:
            if not repo.allow_auto_merge:
                raise Unprocessable(AUTO_MERGE_OFF)
            if expected_head is not None and expected_head != pr.head_sha:
                raise Conflict(HEAD_MOVED)
            if pr.merged or repo.issues[pr.number].state != "open":
                raise Unprocessable("Pull request Pull request is closed")
            if pr.draft:
                raise Unprocessable("Pull request Pull request is in draft status")
            status = self.mergeable_state(repo, pr)
            rule = self.queue_rule(repo, pr.base_ref)
            if rule is not None:
                if self.merge_problem(repo, pr, actor, queue_method(rule)) is None:
                    return self.enqueue(repo, pr, actor)
            elif status in MERGEABLE_NOW:
                raise Unprocessable(f"Pull request Pull request is in {status} status")
            elif (refusal := self.method_refusal(repo, pr, method)) is not None:
                # A method the repository refuses would never merge: refused now, not later.
                raise Unprocessable(refusal)
            request = AutoMergeRequest(
                number=pr.number,
                enabled_by=self.user(actor).login,
                enabled_at=self.now(),
                merge_method=method,
                head_sha=pr.head_sha,
                commit_headline=headline,
                commit_body=body,
                author_email=author_email,
            )
            repo.auto_merges[pr.number] = request
            self._event(repo, repo.issues[pr.number], "auto_merge_enabled", request.enabled_by)
            self._touch()
            return request

    def forget_auto_merge(self, repo: Repo, number: int) -> None:
        """Drop the request of a pull request that merged or closed."""
        with self.lock:
            if repo.auto_merges.pop(number, None) is not None:
                self._touch()

    def disable_auto_merge(self, repo: Repo, pr: PullRequest, actor: str) -> AutoMergeRequest:
        """Cancel a pull request's auto-merge; refused when none is set."""
        with self.lock:
            request = repo.auto_merges.pop(pr.number, None)
            if request is None:
                raise Unprocessable("Pull request auto merge is not enabled")
            self._event(repo, repo.issues[pr.number], "auto_merge_disabled", actor)
            self._touch()
            return request

    def _follow_head(self, repo: Repo, pr: PullRequest, sha: str, actor: str | None) -> None:
        """A push to a pull request's head: it leaves the merge queue, and its auto-merge
        is cancelled when the pusher cannot write to the repository."""
        super()._follow_head(repo, pr, sha, actor)
        pusher = actor or repo.issues[pr.number].author
        entry = self.queue_entry(repo, pr.number)
        if entry is not None and entry.head_sha != sha:
            self.drop_entry(repo, entry, pusher)
        if pr.number in repo.auto_merges and not self.has_permission(repo, pusher, "write"):
            repo.auto_merges.pop(pr.number)
            self._event(repo, repo.issues[pr.number], "auto_merge_disabled", pusher)
