"""Repository rulesets of the emulated GitHub: which rules apply to a branch, and to whom.

Rulesets add to branch protection: a merge must satisfy both. `ruleset_problem`
is the one question the merge path asks of them ("the first ruleset rule this
merge breaks"); `rules_for` is what a push is checked against. A ruleset
applies when it is ``active`` and its ref_name conditions select the branch;
``evaluate`` and ``disabled`` rulesets are stored and listed but never enforced.
Bypass actors pass: ``always`` and ``exempt`` for pushes and merges,
``pull_request`` for merges of pull requests only.
"""

from __future__ import annotations

from orchestrator_sim.errors import NotFound, Unprocessable
from orchestrator_sim.records import PullRequest, Repo, Review, make_node_id
from orchestrator_sim.records_rules import REPOSITORY_ROLE_IDS, BypassActor, Ruleset, RulesetRule
from orchestrator_sim.rulesets import RULES_DOCS, RulesetInput, rule_int, targets
from orchestrator_sim.state_pulls import PullsState
from orchestrator_sim.state_requirements import CHANGES_REQUESTED, asks_reviews, checks_message

QUEUE_REQUIRED = "Changes must be made through the merge queue"
OUT_OF_DATE = "Head branch is out of date. Review and try the merge again."


def _review_asks(rule: RulesetRule) -> tuple[int, bool, bool] | None:
    """What a ``pull_request`` rule asks of reviews: (approvals, a code owner's approval,
    an approval of the last push by someone else); None when it asks nothing."""
    if rule.type != "pull_request":
        return None
    count = rule_int(rule, "required_approving_review_count", 0)
    owners = rule.parameters.get("require_code_owner_review") is True
    last_push = rule.parameters.get("require_last_push_approval") is True
    return (count, owners, last_push) if count or owners or last_push else None


class RulesetsState(PullsState):
    """Rulesets per repository, what they require of merges, and who passes them."""

    # --------------------------------------------------------------- storage

    def create_ruleset(self, repo: Repo, data: RulesetInput) -> Ruleset:
        """Store a new ruleset (names are unique per repository)."""
        with self.lock:
            self._check_ruleset(repo, data, None)
            ident = self.new_id()
            now = self.now()
            ruleset = Ruleset(
                id=ident,
                node_id=make_node_id("RepositoryRuleset", ident),
                name=data.name,
                enforcement=data.enforcement,
                created_at=now,
                updated_at=now,
            )
            self._fill(ruleset, data)
            repo.rulesets[ident] = ruleset
            self._touch()
            return ruleset

    def update_ruleset(self, repo: Repo, ruleset_id: int, data: RulesetInput) -> Ruleset:
        """Replace a ruleset's settings (GitHub's PUT replaces what the body names)."""
        with self.lock:
            ruleset = self.ruleset(repo, ruleset_id)
            self._check_ruleset(repo, data, ruleset_id)
            ruleset.name = data.name
            ruleset.enforcement = data.enforcement
            ruleset.updated_at = self.now()
            self._fill(ruleset, data)
            self._touch()
            return ruleset

    def delete_ruleset(self, repo: Repo, ruleset_id: int) -> None:
        with self.lock:
            if repo.rulesets.pop(ruleset_id, None) is None:
                raise NotFound(f"ruleset {ruleset_id}")
            self._touch()

    def ruleset(self, repo: Repo, ruleset_id: int) -> Ruleset:
        return self._lookup(repo.rulesets, ruleset_id, f"ruleset {ruleset_id}")

    @staticmethod
    def _fill(ruleset: Ruleset, data: RulesetInput) -> None:
        ruleset.target = data.target
        ruleset.include = list(data.include)
        ruleset.exclude = list(data.exclude)
        ruleset.rules = list(data.rules)
        ruleset.bypass_actors = list(data.bypass_actors)

    def _check_ruleset(self, repo: Repo, data: RulesetInput, own_id: int | None) -> None:
        for other in repo.rulesets.values():
            if other.id != own_id and other.name.lower() == data.name.lower():
                raise Unprocessable(
                    f"Invalid request.\n\nName must be unique: {data.name}",
                    documentation_url=RULES_DOCS,
                )
        owner = self.find_user(repo.owner)
        for index, rule in enumerate(data.rules):
            where = f"/rules/{index}"
            if rule.type == "merge_queue" and not (owner and owner.organization):
                raise Unprocessable(
                    f"Invalid request.\n\nInvalid property {where}: a merge queue is only "
                    "available in repositories owned by an organization",
                    documentation_url=RULES_DOCS,
                )

    # ------------------------------------------------------------- targeting

    def branch_rulesets(
        self, repo: Repo, branch: str, *, active_only: bool = True
    ) -> list[Ruleset]:
        """The rulesets whose conditions select ``branch``, oldest first."""
        with self.lock:
            return [
                ruleset
                for ruleset in sorted(repo.rulesets.values(), key=lambda r: r.id)
                if (ruleset.enforcement == "active" or not active_only)
                and targets(ruleset.include, ruleset.exclude, branch, repo.default_branch)
            ]

    def branch_rules(self, repo: Repo, branch: str) -> list[tuple[Ruleset, RulesetRule]]:
        """Every active rule on ``branch`` with its ruleset (``GET .../rules/branches/{b}``)."""
        with self.lock:
            return [(rs, rule) for rs in self.branch_rulesets(repo, branch) for rule in rs.rules]

    def _bypasses(self, repo: Repo, actor: BypassActor, login: str, for_merge: bool) -> bool:
        if actor.bypass_mode == "pull_request" and not for_merge:
            return False
        user = self.find_user(login)
        if user is None:
            return False
        if actor.actor_type in ("User", "Integration"):
            # An App's id is its bot account's id.
            return actor.actor_id == user.id and (actor.actor_type == "User" or user.bot)
        if actor.actor_type == "RepositoryRole":
            role = REPOSITORY_ROLE_IDS.get(actor.actor_id or 0)
            return role is not None and self.has_permission(repo, login, role)
        if actor.actor_type == "OrganizationAdmin":
            return self.has_permission(repo, login, "admin")
        return False

    def bypasses(self, repo: Repo, ruleset: Ruleset, login: str | None, *, for_merge: bool) -> bool:
        """Whether ``login`` is one of the ruleset's bypass actors (for a push or a merge)."""
        if login is None:
            return False
        with self.lock:
            return any(
                self._bypasses(repo, actor, login, for_merge) for actor in ruleset.bypass_actors
            )

    def rules_for(
        self, repo: Repo, branch: str, login: str | None, *, for_merge: bool
    ) -> list[RulesetRule]:
        """The active rules on ``branch`` that bind ``login`` (bypassed rulesets left out)."""
        with self.lock:
            return [
                rule
                for ruleset in self.branch_rulesets(repo, branch)
                if not self.bypasses(repo, ruleset, login, for_merge=for_merge)
                for rule in ruleset.rules
            ]

    def queue_rule(self, repo: Repo, branch: str) -> RulesetRule | None:
        """The active ``merge_queue`` rule of ``branch`` (the first, if several), or None."""
        with self.lock:
            for _ruleset, rule in self.branch_rules(repo, branch):
                if rule.type == "merge_queue":
                    return rule
            return None

    # ---------------------------------------------------------------- merges

    def _review_rule_problem(self, repo: Repo, pr: PullRequest, rule: RulesetRule) -> str | None:
        """What a ``pull_request`` rule's review parameters still lack (protection's words),
        None when they ask nothing or are met."""
        asks = _review_asks(rule)
        if asks is None:
            return None
        if self.writer_requested_changes(repo, pr.number):
            return CHANGES_REQUESTED
        count, owners, last_push = asks
        return self.review_problem(
            repo, pr, approvals=count, code_owners=owners, last_push=last_push
        )

    def ruleset_problem(
        self,
        repo: Repo,
        pr: PullRequest,
        actor: str | None = None,
        method: str | None = None,
        *,
        via_queue: bool = False,
        ignore_queue: bool = False,
    ) -> str | None:
        """GitHub's message for the first ruleset rule this merge breaks, None when none.

        ``method`` (merge, squash, rebase) is checked against the rules that
        depend on it; ``via_queue`` is the merge queue's own merge, which a
        ``merge_queue`` rule allows and which is up to date by construction;
        ``ignore_queue`` asks what else than the queue stands in the way.
        """
        with self.lock:
            rules = self.rules_for(repo, pr.base_ref, actor, for_merge=True)
            queued = via_queue or ignore_queue
            if not queued and any(rule.type == "merge_queue" for rule in rules):
                return QUEUE_REQUIRED
            for rule in rules:
                problem = self._rule_problem(repo, pr, rule, method, via_queue)
                if problem is not None:
                    return problem
            return None

    def _rule_problem(
        self,
        repo: Repo,
        pr: PullRequest,
        rule: RulesetRule,
        method: str | None,
        via_queue: bool,
    ) -> str | None:
        parameters = rule.parameters
        if rule.type == "pull_request":
            allowed = parameters.get("allowed_merge_methods")
            if method is not None and isinstance(allowed, list) and method not in allowed:
                return f"Merge method {method} is not allowed on this branch."
            problem = self._review_rule_problem(repo, pr, rule)
            if problem is not None:
                return problem
            if parameters.get("required_review_thread_resolution") and any(
                not thread.resolved for thread in self.pull_threads(repo, pr.number)
            ):
                return "All comments must be resolved."
        if rule.type == "required_status_checks":
            return self._status_checks_problem(repo, pr, rule, via_queue)
        if rule.type == "required_linear_history" and (
            method == "merge" or (method is not None and self._has_merge_commits(repo, pr))
        ):
            return "This branch must not contain merge commits."
        if rule.type == "required_signatures" and (
            method == "rebase" or (method == "merge" and self._unsigned(repo, pr))
        ):
            return "Commits must have verified signatures."
        return None

    def _status_checks_problem(
        self, repo: Repo, pr: PullRequest, rule: RulesetRule, via_queue: bool
    ) -> str | None:
        names = rule.parameters.get("required_status_checks")
        contexts = names if isinstance(names, list) else []
        problems = [
            (name, problem)
            for name in contexts
            if (problem := self.check_problem(repo, pr.head_sha, name)) is not None
        ]
        if problems:
            return checks_message(problems, len(contexts))
        strict = rule.parameters.get("strict_required_status_checks_policy")
        if strict and contexts and not via_queue and self.behind(repo, pr):
            return OUT_OF_DATE
        return None

    def _has_merge_commits(self, repo: Repo, pr: PullRequest) -> bool:
        base = repo.branches.get(pr.base_ref)
        if base is None or self.git is None:
            return False
        return any(len(info.parents) > 1 for info in self.git.commits(repo, base, pr.head_sha))

    def _unsigned(self, repo: Repo, pr: PullRequest) -> bool:
        base = repo.branches.get(pr.base_ref)
        if base is None or self.git is None:
            return False
        git = self.git
        commits = git.commits(repo, base, pr.head_sha)
        return any(not git.is_signed(repo, info.sha) for info in commits)

    # ------------------------------------------------ what the pull request shows

    def mergeable_state(self, repo: Repo, pr: PullRequest) -> str:
        """Branch protection's answer, then the rulesets': ``blocked`` when either blocks
        the merge, else ``behind`` when either wants an up-to-date head (protection's
        ``strict``, a rule's ``strict_required_status_checks_policy``)."""
        with self.lock:
            state = super().mergeable_state(repo, pr)
            if state in ("unknown", "dirty", "draft", "blocked"):
                return state
            problem = self.ruleset_problem(repo, pr, ignore_queue=True)
            if problem is None:
                return state
            return "behind" if problem == OUT_OF_DATE else "blocked"

    def review_decision(self, repo: Repo, pr: PullRequest) -> str | None:
        """Branch protection's decision, and what the pull_request rules ask of reviews:
        APPROVED only once both are met."""
        decision = super().review_decision(repo, pr)
        with self.lock:
            rules = self.rules_for(repo, pr.base_ref, None, for_merge=True)
            asking = [rule for rule in rules if _review_asks(rule) is not None]
            if not asking:
                return decision
            protection = self.protection(repo, pr.base_ref)
            if protection is not None and asks_reviews(protection) and decision != "APPROVED":
                # Protection's own review rules are not met (or a writer asked for changes).
                return decision
            problems = [self._review_rule_problem(repo, pr, rule) for rule in asking]
            if CHANGES_REQUESTED in problems:
                return "CHANGES_REQUESTED"
            return "REVIEW_REQUIRED" if any(problems) else "APPROVED"

    def dismiss_stale_approvals(self, repo: Repo, pr: PullRequest, actor: str) -> list[Review]:
        """Branch protection's dismissals, and those of a pull_request rule with
        ``dismiss_stale_reviews_on_push``."""
        dismissed = super().dismiss_stale_approvals(repo, pr, actor)
        with self.lock:
            wanted = any(
                rule.type == "pull_request" and rule.parameters.get("dismiss_stale_reviews_on_push")
                for rule in self.rules_for(repo, pr.base_ref, None, for_merge=True)
            )
            if not wanted:
                return dismissed
            return dismissed + self.dismiss_approvals_of_other_heads(repo, pr, actor)
