"""The merge queue and auto-merge at work: merge groups, their checks, and merges.

`MergeQueue.settle` runs at each request boundary (before every GitHub API
request and after every control step), so the queue moves only when the state
or the emulator's clock has moved: deterministic under a manual clock. For
each base with a ``merge_queue`` rule it

1. drops entries whose pull request closed or whose head moved;
2. builds a merge group for each of the first ``max_entries_to_build``
   entries: a branch ``gh-readonly-queue/{base}/pr-{n}-{parent}`` from the
   parent (the base head, or the group of the entry ahead) with the pull
   request merged in by the rule's ``merge_method``; a group whose parent
   changed is rebuilt, and the emulated CI reports the repository's
   ``merge_group_checks`` on it;
3. reads the required checks (branch protection's and the rulesets') on each
   group commit: all passing makes the entry ``MERGEABLE``, one failing or
   none reported within ``check_response_timeout_minutes`` makes it
   ``UNMERGEABLE`` and removes it (the pull request stays open; the groups
   behind it are rebuilt without it);
4. merges the leading ``MERGEABLE`` entries (at most ``max_entries_to_merge``,
   waiting up to ``min_entries_to_merge_wait_minutes`` for
   ``min_entries_to_merge``): the base fast-forwards to the last group's
   commit and each pull request is merged by ``github-merge-queue[bot]`` with
   its own group commit as merge commit.

Grouping is ALLGREEN whatever the rule says (HEADGREEN would let a failing
entry merge with a passing one behind it: the emulator is stricter). Auto-merge
requests merge (or, on a queue branch, enter the queue) once nothing blocks.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from orchestrator.logs import get_logger
from orchestrator_sim import gitmerge
from orchestrator_sim.clock import parse_time
from orchestrator_sim.errors import SimError
from orchestrator_sim.gitstore import GitError, MergeConflict
from orchestrator_sim.records import CHECK_CONCLUSIONS, Repo, User
from orchestrator_sim.records_rules import MERGE_QUEUE_BOT, QueueEntry, RulesetRule
from orchestrator_sim.rulesets import rule_int
from orchestrator_sim.state_queue import MERGEABLE_NOW, queue_method

if TYPE_CHECKING:
    from orchestrator_sim.emulator import Emulator

log = get_logger(__name__)

GROUP_PREFIX = "gh-readonly-queue/"
# Enough passes for every entry of a busy queue to settle in one call.
_MAX_PASSES = 64


class MergeQueue:
    """Moves one emulator's merge queues and auto-merge requests along."""

    def __init__(self, emulator: Emulator) -> None:
        self.emulator = emulator

    def busy(self) -> bool:
        """Whether any queue, auto-merge or retired group waits (a cheap read, no lock)."""
        state = self.emulator.state
        return bool(state.retired_groups) or any(
            repo.merge_queue or repo.auto_merges for repo in list(state.repos.values())
        )

    def settle(self) -> None:
        """Act on everything the queues and auto-merges can act on now."""
        state = self.emulator.state
        with state.lock:
            busy = [repo for repo in state.repos.values() if repo.merge_queue or repo.auto_merges]
            if not busy and not state.retired_groups:
                return
            for repo in busy:
                try:
                    for _ in range(_MAX_PASSES):
                        if not self._pass(repo):
                            break
                except (GitError, SimError) as exc:
                    # One broken repository must not break every request of the emulator.
                    log.warning("sim_merge_queue_failed", repo=repo.full_name, error=str(exc))
            self._delete_retired()

    def _pass(self, repo: Repo) -> bool:
        """One step on each queue of ``repo`` and its auto-merges; whether anything changed."""
        changed = False
        for base in sorted({entry.base_ref for entry in repo.merge_queue}):
            changed = self._step(repo, base) or changed
            self._delete_retired()
        return self._auto_merges(repo) or changed

    # ------------------------------------------------------------------ queue

    def _bot(self) -> User:
        state = self.emulator.state
        return state.find_user(MERGE_QUEUE_BOT) or state.add_user(MERGE_QUEUE_BOT, bot=True)

    def _step(self, repo: Repo, base: str) -> bool:
        state = self.emulator.state
        entries = state.queue_entries(repo, base)
        rule = state.queue_rule(repo, base)
        base_sha = repo.branches.get(base)
        bot = self._bot().login
        for entry in entries:
            pr = repo.pulls[entry.number]
            gone = pr.merged or repo.issues[entry.number].state != "open"
            moved = pr.head_sha != entry.head_sha or pr.base_ref != entry.base_ref
            if rule is None or base_sha is None or gone or moved:
                state.drop_entry(repo, entry, bot)
                return True
        if rule is None or base_sha is None:
            return False
        changed = self._build(repo, rule, entries, base_sha)
        if changed is None:
            return True
        building = entries[: max(1, rule_int(rule, "max_entries_to_build", 5))]
        for entry in building:
            verdict = self._verdict(repo, rule, entry)
            if verdict == "UNMERGEABLE":
                state.drop_entry(repo, entry, bot)
                return True
            state.set_entry_state(entry, verdict)
        ready = []
        for entry in building[: max(1, rule_int(rule, "max_entries_to_merge", 5))]:
            if entry.state != "MERGEABLE":
                break
            ready.append(entry)
        if ready and self._enough(rule, entries, len(ready)):
            self._merge(repo, base, base_sha, ready)
            return True
        return changed

    def _build(
        self, repo: Repo, rule: RulesetRule, entries: list[QueueEntry], base_sha: str
    ) -> bool | None:
        """(Re)build the groups that are missing or stale; None when an entry was dropped."""
        state = self.emulator.state
        limit = max(1, rule_int(rule, "max_entries_to_build", 5))
        changed = False
        parent = base_sha
        for index, entry in enumerate(entries):
            if index >= limit:
                if entry.group_ref is not None:
                    state.record_group(repo, entry, None, None, None)
                    changed = True
                continue
            stale = entry.group_sha is None or entry.group_parent != parent
            if stale or repo.branches.get(entry.group_ref or "") != entry.group_sha:
                if entry.group_ref is not None:
                    state.record_group(repo, entry, None, None, None)
                    self._delete_retired()
                if not self._build_group(repo, entry, parent, queue_method(rule)):
                    state.drop_entry(repo, entry, self._bot().login)
                    return None
                changed = True
            parent = entry.group_sha or parent
        return changed

    def _build_group(self, repo: Repo, entry: QueueEntry, parent: str, method: str) -> bool:
        """The merge group of ``entry`` on ``parent``; False when the pull request conflicts."""
        emulator = self.emulator
        state = emulator.state
        path = emulator.repo_path(repo)
        pr = repo.pulls[entry.number]
        ref = f"{GROUP_PREFIX}{entry.base_ref}/pr-{entry.number}-{parent}"
        # A branch of that name left by an earlier group (or a build that failed) goes first.
        leftover = emulator.git.resolve(path, f"refs/heads/{ref}")
        if leftover is not None:
            emulator.git.set_ref(path, ref, None, leftover)
        emulator.git.set_ref(path, ref, parent, None)
        enqueuer = state.user(entry.enqueuer)
        try:
            sha = gitmerge.merge(
                emulator.git,
                path,
                base_branch=ref,
                head_sha=pr.head_sha,
                method=method,
                message=emulator.merge_message(repo, pr, method),
                committer=emulator.identity(enqueuer),
                moment=emulator.clock(),
            )
        except MergeConflict:
            emulator.git.set_ref(path, ref, None, parent)
            return False
        except GitError:
            emulator.git.set_ref(path, ref, None, parent)
            raise
        state.set_branch(repo, ref, sha)
        state.record_group(repo, entry, ref, sha, parent)
        for name, result in sorted(repo.merge_group_checks.items()):
            done = result in CHECK_CONCLUSIONS
            status = "completed" if done else result
            state.set_check_run(repo, sha, name, status, conclusion=result if done else None)
        log.info("sim_merge_group_built", repo=repo.full_name, pull=entry.number, ref=ref)
        return True

    def required_checks(self, repo: Repo, base: str) -> list[str]:
        """The check names a merge into ``base`` needs: protection's and the rulesets'."""
        state = self.emulator.state
        names: list[str] = []
        protection = state.protection(repo, base)
        if protection is not None:
            names.extend(protection.required_checks)
        for _ruleset, rule in state.branch_rules(repo, base):
            contexts = rule.parameters.get("required_status_checks")
            if rule.type == "required_status_checks" and isinstance(contexts, list):
                names.extend(contexts)
        return list(dict.fromkeys(names))

    def _verdict(self, repo: Repo, rule: RulesetRule, entry: QueueEntry) -> str:
        """MERGEABLE, AWAITING_CHECKS or UNMERGEABLE for a built group."""
        state = self.emulator.state
        if entry.group_sha is None:
            return "QUEUED"
        problems = [
            state.check_problem(repo, entry.group_sha, name)
            for name in self.required_checks(repo, entry.base_ref)
        ]
        if "failing" in problems:
            return "UNMERGEABLE"
        if not any(problems):
            return "MERGEABLE"
        timeout = timedelta(minutes=rule_int(rule, "check_response_timeout_minutes", 60))
        if entry.built_at and self.emulator.clock() >= parse_time(entry.built_at) + timeout:
            return "UNMERGEABLE"
        return "AWAITING_CHECKS"

    def _enough(self, rule: RulesetRule, entries: list[QueueEntry], ready: int) -> bool:
        """Whether ``ready`` entries may merge now, or must wait for a bigger group."""
        if ready >= rule_int(rule, "min_entries_to_merge", 1):
            return True
        wait = timedelta(minutes=rule_int(rule, "min_entries_to_merge_wait_minutes", 5))
        return self.emulator.clock() >= parse_time(entries[0].enqueued_at) + wait

    def _merge(self, repo: Repo, base: str, base_sha: str, ready: list[QueueEntry]) -> None:
        """Fast-forward ``base`` to the last ready group and mark each pull request merged."""
        emulator = self.emulator
        state = emulator.state
        bot = self._bot().login
        head = ready[-1].group_sha or base_sha
        emulator.git.set_ref(emulator.repo_path(repo), base, head, base_sha)
        state.set_branch(repo, base, head, bot)
        for entry in ready:
            state.finish_entry(repo, entry)
            state.record_merge(repo, entry.number, bot, entry.group_sha or head, entry.group_parent)
            if base == repo.default_branch and entry.group_parent and entry.group_sha:
                emulator.close_by_commits(repo, entry.group_parent, entry.group_sha, entry.enqueuer)
            log.info("sim_merge_queue_merged", repo=repo.full_name, pull=entry.number, sha=head)

    def _delete_retired(self) -> None:
        """Delete the merge-group branches of entries that left the queue."""
        emulator = self.emulator
        state = emulator.state
        while state.retired_groups:
            repo, ref = state.retired_groups.pop()
            sha = repo.branches.get(ref)
            if sha is None:
                continue
            try:
                emulator.git.set_ref(emulator.repo_path(repo), ref, None, sha)
            except GitError as exc:
                log.warning("sim_merge_group_delete_failed", ref=ref, error=str(exc))
            state.set_branch(repo, ref, None)

    # ------------------------------------------------------------- auto-merge

    def _auto_merges(self, repo: Repo) -> bool:
        """Merge (or queue) each auto-merge pull request that nothing blocks any more."""
        state = self.emulator.state
        changed = False
        for number, request in list(repo.auto_merges.items()):
            pr = repo.pulls[number]
            if pr.merged or repo.issues[number].state != "open":
                state.forget_auto_merge(repo, number)
                changed = True
                continue
            rule = state.queue_rule(repo, pr.base_ref)
            if rule is not None:
                actor = request.enabled_by
                if state.merge_problem(repo, pr, actor, queue_method(rule)) is None:
                    state.enqueue(repo, pr, actor)
                    changed = True
                continue
            if state.mergeable_state(repo, pr) not in MERGEABLE_NOW:
                continue
            try:
                self.emulator.merge_pull(
                    repo,
                    number,
                    request.enabled_by,
                    sha=pr.head_sha,
                    method=request.merge_method,
                    title=request.commit_headline,
                    message=request.commit_body,
                )
            except SimError as exc:
                # A merge nothing but the request itself blocks (its method, say) never will.
                log.warning(
                    "sim_auto_merge_refused", repo=repo.full_name, pull=number, error=str(exc)
                )
                state.disable_auto_merge(repo, pr, request.enabled_by)
            else:
                state.forget_auto_merge(repo, number)
            changed = True
        return changed
