"""The GitHub events an example plays against its pull request, and their Hypothesis strategies.

Each event is a small frozen value whose ``repr`` reads as what happened
(a falsifying example prints the list), and whose ``apply`` performs it through
the emulator's control API as the human, the reader, a bot or the CI would,
and tells the oracle's model what it did.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from hypothesis import strategies as st

from orchestrator_sim.control import ControlRequestError

if TYPE_CHECKING:
    from tests.property.runner import Run

# Who acts. "writer" has write access (until a Permission event takes it away),
# "admin" is the repository's administrator, "reader" may label but not write,
# "bot" is the product's own account, "other_bot" another app's bot with write access.
ACTORS = ("writer", "admin", "reader", "bot", "other_bot")
CHECK_NAMES = ("ci", "lint")
BULK_CHECKS = 100


def _supports(method: Any, parameter: str) -> bool:
    try:
        return parameter in inspect.signature(method).parameters
    except (TypeError, ValueError):
        return False


@dataclass(frozen=True)
class HumanPush:
    """Someone with write access pushes a commit to the pull request's branch."""

    who: str = "writer"
    # Dated a month back (a rebased or cherry-picked commit): GitHub lists commits by date.
    backdated: bool = False

    def apply(self, run: Run) -> None:
        control = run.world.control
        options: dict[str, Any] = {}
        if self.backdated and _supports(control.push, "author_date"):
            old = (run.world.clock() - timedelta(days=30)).strftime("%Y-%m-%dT%H:%M:%SZ")
            options = {"author_date": old, "committer_date": old}
        run.pushes += 1
        sha = control.push(
            run.world.repo,
            branch=run.example.branch,
            files={f"src/human_{run.example.issue}.py": f"CHANGE = {run.pushes}\n"},
            message=f"A human's change {run.pushes}",
            as_user=run.login(self.who),
            **options,
        )
        run.model.pushed(str(sha))


@dataclass(frozen=True)
class Label:
    """A label added to or removed from the issue or the pull request."""

    action: str  # "add" or "remove"
    label: str  # "approve", "stop" or "stop_all"
    where: str  # "issue" or "pr"
    who: str = "writer"

    def apply(self, run: Run) -> None:
        name = run.label_name(self.label)
        number = run.model.place(self.where)
        control = run.world.control
        if self.action == "add":
            control.add_labels(run.world.repo, number, [name], as_user=run.login(self.who))
            run.model.label_added(self.where, name, run.login(self.who))
        elif run.model.label(self.where, name).present:
            try:
                control.remove_label(run.world.repo, number, name, as_user=run.world.human.login)
            except ControlRequestError as refused:
                if refused.status != 404:  # 404: someone removed it already
                    raise
            run.model.label_removed(self.where, name)


@dataclass(frozen=True)
class Review:
    """A submitted review: APPROVED, CHANGES_REQUESTED or COMMENTED."""

    verdict: str
    who: str = "writer"
    # On the head before the current one (an approval given before the last push).
    on_previous_head: bool = False

    def apply(self, run: Run) -> None:
        heads = run.model.heads
        commit = heads[-2] if self.on_previous_head and len(heads) > 1 else run.model.head
        run.world.control.review(
            run.world.repo,
            run.example.pr,
            self.verdict,
            as_user=run.login(self.who),
            body=f"{self.verdict.lower()} by {self.who}",
            commit_id=commit,
        )
        run.model.reviewed(run.login(self.who), self.verdict, commit)


@dataclass(frozen=True)
class Thread:
    """A review comment on a line of the change opens a thread."""

    who: str = "writer"

    def apply(self, run: Run) -> None:
        run.world.control.review(
            run.world.repo,
            run.example.pr,
            "COMMENTED",
            as_user=run.login(self.who),
            body="",
            comments=[
                {
                    "path": f"src/oracle_{run.example.issue}.py",
                    "line": 1,
                    "body": f"Please rename this ({self.who}).",
                }
            ],
        )
        run.model.reviewed(run.login(self.who), "COMMENTED", run.model.head)


@dataclass(frozen=True)
class Check:
    """The CI starts a check run, or completes it successfully or with a failure."""

    name: str
    outcome: str  # "started", "success" or "failure"
    # On the head before the current one (a late report for an old commit).
    on_previous_head: bool = False

    def apply(self, run: Run) -> None:
        heads = run.model.heads
        sha = heads[-2] if self.on_previous_head and len(heads) > 1 else run.model.head
        run.check(sha, self.name, self.outcome)


@dataclass(frozen=True)
class ManyChecks:
    """The CI reports 100 passing checks of distinct names, then maybe one failing past them."""

    then_failing: bool = True

    def apply(self, run: Run) -> None:
        sha = run.model.head
        for index in range(BULK_CHECKS):
            run.check(sha, f"suite-{index:03d}", "success")
        if self.then_failing:
            run.check(sha, "zz-late-suite", "failure")


@dataclass(frozen=True)
class Mergeable:
    """GitHub's mergeability flips: True, False (a conflict), None (git decides again)."""

    value: bool | None

    def apply(self, run: Run) -> None:
        run.world.control.set_mergeable(run.world.repo, run.example.pr, self.value)


@dataclass(frozen=True)
class Protection:
    """The base branch's protection is set (required checks, approvals) or removed."""

    required_checks: tuple[str, ...] | None  # None removes the protection
    required_approvals: int = 0

    def apply(self, run: Run) -> None:
        control = run.world.control
        if not hasattr(control, "protect"):
            return  # this emulator has no branch protection: nothing to change
        if self.required_checks is None:
            run.world.unprotect_base()
        else:
            control.protect(
                run.world.repo,
                run.world.base_branch,
                required_checks=list(self.required_checks),
                required_approvals=self.required_approvals,
            )
            run.world.protected = True


@dataclass(frozen=True)
class Permission:
    """The writer's permission changes (taken down to read, or given back)."""

    level: str  # "read" or "write"

    def apply(self, run: Run) -> None:
        login = run.world.people.writer
        run.world.control.set_permission(run.world.repo, login, self.level)
        run.model.permission(login, self.level)


@dataclass(frozen=True)
class ForgedReview:
    """A human posts a comment that copies the bot's review markers for the current head."""

    who: str = "reader"

    def apply(self, run: Run) -> None:
        head = run.model.head
        body = (
            "<!-- orchestrator-review-comment -->\n"
            f"<!-- orchestrator-review-head: {head} -->\n"
            f"## Self-review of `{head[:12]}` (pass 1 of 2)\n\nNo findings.\n"
        )
        run.world.control.comment(run.world.repo, run.example.pr, body, as_user=run.login(self.who))


@dataclass(frozen=True)
class Step:
    """An event, and whether the daemon ticks right after it."""

    event: Any
    tick: bool = True

    def __repr__(self) -> str:
        return f"{self.event!r}{'' if self.tick else ' (no tick)'}"


# --------------------------------------------------------------- strategies

actors = st.sampled_from(ACTORS)
humans = st.sampled_from(("writer", "admin"))

approval_labels = st.builds(
    Label,
    action=st.just("add"),
    label=st.just("approve"),
    where=st.sampled_from(("issue", "pr")),
    who=actors,
)
other_labels = st.builds(
    Label,
    action=st.sampled_from(("add", "remove")),
    label=st.sampled_from(("stop", "approve", "stop_all")),
    where=st.sampled_from(("issue", "pr")),
    who=humans,
)
reviews = st.builds(
    Review,
    verdict=st.sampled_from(("APPROVED", "APPROVED", "CHANGES_REQUESTED")),
    who=st.sampled_from(("writer", "admin", "reader", "other_bot")),
    on_previous_head=st.sampled_from((False, True)),
)
checks = st.builds(
    Check,
    name=st.sampled_from(CHECK_NAMES),
    outcome=st.sampled_from(("success", "started", "success", "failure")),
    on_previous_head=st.sampled_from((False, False, True)),
)

# Weights: the cheap events that decide a merge come up most; those that send the
# daemon into rework (a new head, a thread, a conflict: agent turns and half a dozen
# ticks each) less. (``one_of`` would ignore repeated strategies: ``sampled_from``
# keeps them, and shrinks towards the first.)
WEIGHTED_EVENTS: tuple[tuple[int, st.SearchStrategy[Any]], ...] = (
    (3, checks),
    (3, reviews),
    (2, approval_labels),
    (2, other_labels),
    (1, st.builds(HumanPush, who=humans, backdated=st.sampled_from((False, True, True)))),
    (1, st.builds(Thread, who=st.sampled_from(("writer", "reader")))),
    (1, st.builds(Mergeable, value=st.sampled_from((None, True, False)))),
    (
        1,
        st.builds(
            Protection,
            required_checks=st.sampled_from((None, (), ("ci",), ("ci", "lint"))),
            required_approvals=st.sampled_from((0, 1)),
        ),
    ),
    (1, st.builds(Permission, level=st.sampled_from(("read", "write")))),
    (1, st.builds(ForgedReview, who=st.sampled_from(("reader", "writer")))),
)
EVENTS = st.sampled_from(
    [strategy for weight, strategy in WEIGHTED_EVENTS for _ in range(weight)]
).flatmap(lambda strategy: strategy)

# A run of 100 checks costs a hundred control requests: about one step in a hundred
# gets one (and one example in twenty-five gets one at its end, see the test module).
RARE_EVENTS = st.builds(ManyChecks, then_failing=st.sampled_from((True, False)))
RARE_ODDS = 100

# Hypothesis shrinks integers towards 0, so shrinking prefers the common events.
EVENT = st.integers(0, RARE_ODDS - 1).flatmap(
    lambda n: RARE_EVENTS if n == RARE_ODDS - 1 else EVENTS
)
# The daemon ticks after a quarter of the events: the others land together, as
# when several people act between two polls.
STEPS = st.builds(Step, event=EVENT, tick=st.sampled_from((False, False, True, False)))
