"""What a merge into a protected branch still lacks, in GitHub's own words.

`RequirementsState.merge_blocker` walks a branch's rules in the order GitHub
reports them: change requests, approvals (counted from writers), code
owners' approvals (CODEOWNERS on the base branch, `orchestrator_sim.codeowners`),
an approval of the last push by someone other than its pusher, resolved
conversations, successful deployments, then status checks, which with
``strict`` only count on a head that contains the base's tip. The answer is a
`Blocker`: the message a refused merge carries and the merge state the pull
request shows meanwhile (``blocked``, or ``behind`` when its head is out of
date under strict checks).
"""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator_sim import codeowners
from orchestrator_sim.clock import Clock
from orchestrator_sim.records import BranchProtection, PullRequest, Repo, Review
from orchestrator_sim.state_protection import ProtectionState

# Check-run conclusions that satisfy a required check, as on GitHub.
_PASSING_CONCLUSIONS = frozenset({"success", "neutral", "skipped"})

CHANGES_REQUESTED = "Changes have been requested."
LAST_PUSH = "New changes require approval from someone other than the last pusher."
CONVERSATIONS = "A conversation must be resolved before this pull request can be merged."

# How many answers worked out from git (never changing for the same commits) are kept.
_GIT_ANSWERS = 512


@dataclass(frozen=True, slots=True)
class Blocker:
    """Why a merge is refused: GitHub's message, and REST's ``mergeable_state`` meanwhile."""

    message: str
    state: str = "blocked"


def approvals_text(count: int) -> str:
    """GitHub's refusal when fewer than ``count`` writers approved."""
    reviews = "approving review is" if count == 1 else "approving reviews are"
    return f"At least {count} {reviews} required by reviewers with write access."


def _or_list(names: list[str]) -> str:
    """``a``, ``a and/or b``, ``a, b and/or c``: how GitHub lists code owners to wait on."""
    if len(names) == 1:
        return names[0]
    return ", ".join(names[:-1]) + " and/or " + names[-1]


def asks_reviews(rules: BranchProtection) -> bool:
    """Whether protection ``rules`` ask for reviews at all (approvals, owners, last push)."""
    return bool(
        rules.required_approvals
        or rules.require_code_owner_reviews
        or rules.require_last_push_approval
    )


class RequirementsState(ProtectionState):
    """The first protection rule a pull request's merge breaks, and its review decision."""

    def __init__(self, clock: Clock | None = None) -> None:
        super().__init__(clock)
        # Answers about commits (is one behind, which files it owns) never change: keep them.
        self._git_answers: dict[tuple[str, int, str, str], object] = {}

    def _remember(self, key: tuple[str, int, str, str], value: object) -> None:
        if len(self._git_answers) >= _GIT_ANSWERS:
            self._git_answers.clear()
        self._git_answers[key] = value

    # -------------------------------------------------------------- reviews

    def review_decision(self, repo: Repo, pr: PullRequest) -> str | None:
        """GitHub's reviewDecision; when the base branch asks for reviews, APPROVED only once
        every review rule is met (approvals from writers, code owners, the last push)."""
        rules = self.protection(repo, pr.base_ref)
        if rules is None or not asks_reviews(rules):
            return super().review_decision(repo, pr)
        with self.lock:
            if self.writer_requested_changes(repo, pr.number):
                return "CHANGES_REQUESTED"
            if self._review_problem(repo, pr, rules) is None:
                return "APPROVED"
            return "REVIEW_REQUIRED"

    def _review_problem(self, repo: Repo, pr: PullRequest, rules: BranchProtection) -> str | None:
        return self.review_problem(
            repo,
            pr,
            approvals=rules.required_approvals,
            code_owners=rules.require_code_owner_reviews,
            last_push=rules.require_last_push_approval,
        )

    def review_problem(
        self, repo: Repo, pr: PullRequest, *, approvals: int, code_owners: bool, last_push: bool
    ) -> str | None:
        """GitHub's message for the first review rule unmet, None when all are: ``approvals``
        from writers, a code owner's approval of each owned file, an approval of the last
        push by someone else (protection's rules, and a ruleset's ``pull_request`` rule)."""
        with self.lock:
            reviews = self.writer_approval_reviews(repo, pr.number)
            if len(reviews) < approvals:
                return approvals_text(approvals)
            if code_owners:
                missing = self.missing_code_owners(repo, pr, reviews)
                if missing:
                    return f"Waiting on code owner review from {_or_list(missing)}."
            if last_push and not self._last_push_approved(repo, pr, reviews):
                return LAST_PUSH
            return None

    def last_pusher(self, repo: Repo, pr: PullRequest) -> str:
        """Who pushed the head last (the author when the emulator never saw the push)."""
        with self.lock:
            return repo.pushers.get(pr.head_ref) or repo.issues[pr.number].author

    def _last_push_approved(self, repo: Repo, pr: PullRequest, approvals: list[Review]) -> bool:
        """An approval of the current head by someone other than whoever pushed it."""
        pusher = self.login_key(self.last_pusher(repo, pr))
        return any(
            review.commit_id == pr.head_sha and self.login_key(review.author) != pusher
            for review in approvals
        )

    # ---------------------------------------------------------- code owners

    def code_owned_paths(self, repo: Repo, pr: PullRequest) -> list[tuple[str, tuple[str, ...]]]:
        """Each changed file with owners, and those owners, per the base branch's CODEOWNERS."""
        git = self.git
        base_sha = repo.branches.get(pr.base_ref)
        if git is None or base_sha is None:
            return []
        key = ("owners", repo.id, base_sha, pr.head_sha)
        with self.lock:
            known = self._git_answers.get(key)
        if isinstance(known, list):
            return known
        text = None
        for location in codeowners.LOCATIONS:
            text = git.file_at(repo, base_sha, location)
            if text is not None:
                break
        owned: list[tuple[str, tuple[str, ...]]] = []
        if text is not None:
            rules = codeowners.parse(text)
            for path in git.changed_paths(repo, base_sha, pr.head_sha):
                owners = codeowners.owners_of(rules, path)
                if owners:
                    owned.append((path, owners))
        with self.lock:
            self._remember(key, owned)
        return owned

    def missing_code_owners(
        self, repo: Repo, pr: PullRequest, approvals: list[Review]
    ) -> list[str]:
        """The owners (as GitHub names them) of changed files no owner approved yet.

        A file whose only owner is the pull request's author needs no owner's review.
        """
        author = self.login_key(repo.issues[pr.number].author)
        approvers = {self.login_key(review.author) for review in approvals} - {author}
        missing: set[str] = set()
        for _path, owners in self.code_owned_paths(repo, pr):
            if all(self._is_owner(owner, author) for owner in owners):
                continue
            if not any(self._is_owner(owner, login) for owner in owners for login in approvers):
                missing.update(codeowners.owner_name(owner) for owner in owners)
        return sorted(missing, key=str.lower)

    def _is_owner(self, owner: str, login: str) -> bool:
        """Whether account ``login`` (a login key) is, or is in, ``owner``."""
        if not owner.startswith("@"):
            account = self.find_user(login)
            return bool(account and account.email and account.email.lower() == owner.lower())
        name = owner[1:]
        if "/" in name:
            members = self.team_members(name) or []
            return login in {self.login_key(member) for member in members}
        return self.login_key(name) == login

    # ----------------------------------------------------------- the merge

    def behind(self, repo: Repo, pr: PullRequest) -> bool:
        """Whether the head lacks the base branch's tip (GitHub's BEHIND)."""
        git = self.git
        base_sha = repo.branches.get(pr.base_ref)
        if git is None or base_sha is None:
            return False
        key = ("behind", repo.id, base_sha, pr.head_sha)
        with self.lock:
            known = self._git_answers.get(key)
        if isinstance(known, bool):
            return known
        answer = not git.is_ancestor(repo, base_sha, pr.head_sha)
        with self.lock:
            self._remember(key, answer)
        return answer

    def merge_blocker(
        self, repo: Repo, pr: PullRequest, actor: str | None = None, *, via_queue: bool = False
    ) -> Blocker | None:
        """Why protection refuses the merge now, None when nothing does.

        With ``actor``, an administrator passes unless the rules enforce admins.
        ``via_queue`` is the merge queue's merge, of a group built on the base's
        tip: up to date by construction, so ``strict`` asks nothing more of it.
        """
        with self.lock:
            rules = repo.protections.get(pr.base_ref)
            if rules is None:
                return None
            if (
                actor is not None
                and not rules.enforce_admins
                and self.has_permission(repo, actor, "admin")
            ):
                return None
            if asks_reviews(rules):
                if self.writer_requested_changes(repo, pr.number):
                    return Blocker(CHANGES_REQUESTED)
                problem = self._review_problem(repo, pr, rules)
                if problem is not None:
                    return Blocker(problem)
            if rules.required_conversation_resolution and any(
                not thread.resolved for thread in self.pull_threads(repo, pr.number)
            ):
                return Blocker(CONVERSATIONS)
            for environment in rules.required_deployments:
                if not self.deployed(repo, pr.head_sha, environment):
                    return Blocker(f'Required deployment "{environment}" has not succeeded.')
            if rules.strict and not via_queue and self.behind(repo, pr):
                # Checks count only on an up-to-date head: every required one is expected.
                expected = [(name, "expected") for name in rules.required_checks]
                return Blocker(checks_message(expected, len(expected)), "behind")
            problems = [
                (name, problem)
                for name in rules.required_checks
                if (problem := self.check_problem(repo, pr.head_sha, name)) is not None
            ]
            if problems:
                return Blocker(checks_message(problems, len(rules.required_checks)))
            return None

    def protection_problem(
        self, repo: Repo, pr: PullRequest, actor: str | None = None, *, via_queue: bool = False
    ) -> str | None:
        """GitHub's message for the first protection rule the merge breaks, None when none."""
        blocker = self.merge_blocker(repo, pr, actor, via_queue=via_queue)
        return blocker.message if blocker is not None else None

    def check_problem(self, repo: Repo, sha: str, name: str) -> str | None:
        """``expected`` or ``failing`` for a required check ``name`` on ``sha``, None when it
        passed (shared by protection, rulesets, pushes and merge groups)."""
        with self.lock:
            return self._check_problem(repo, sha, name)

    def _check_problem(self, repo: Repo, sha: str, name: str) -> str | None:
        runs = [r for r in self.check_runs_for(repo, sha) if r.name == name]
        statuses = [s for s in self.latest_statuses(repo, sha) if s.context == name]
        if not runs and not statuses:
            return "expected"
        failed = any(
            r.status == "completed" and r.conclusion not in _PASSING_CONCLUSIONS for r in runs
        ) or any(s.state in ("failure", "error") for s in statuses)
        if failed:
            return "failing"
        if any(r.status != "completed" for r in runs) or any(
            s.state == "pending" for s in statuses
        ):
            return "expected"
        return None


def checks_message(problems: list[tuple[str, str]], total: int) -> str:
    """GitHub's words for required checks that failed or are still expected."""
    failing = [name for name, problem in problems if problem == "failing"]
    if failing:
        return f'Required status check "{failing[0]}" is failing.'
    if len(problems) == 1:
        return f'Required status check "{problems[0][0]}" is expected.'
    return f"{len(problems)} of {total} required status checks are expected."
