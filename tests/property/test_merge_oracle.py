"""Every merge the daemon makes is one an independent oracle allows, whatever GitHub does.

Hypothesis plays random sequences of GitHub events against one pull request
(tests/property/events.py): pushes by humans (some dated in the past) and by the
daemon's own rework, approval labels and reviews by writers, readers and bots,
approvals of an older head, check runs started, passing and failing (on the head
or on the head before it, and in a few examples a failing one past 100 passing
contexts), review threads by writers and readers, stop labels on the issue and
the pull request, the repository stop label, branch protection set and removed
(when the emulator has it), mergeability flips, a writer losing write access,
forged self-review comments, and, at the merge itself, a stop label or a push
landing while the daemon is mid-tick. After each event the real daemon ticks (or
not), against the real emulator over HTTP, with a small scripted agent doing the
review and rework turns; each example ends with ticks until nothing moves.

The oracle (tests/property/oracle.py) keeps its own model from the events it
applied and from what the emulator reports, never from the daemon's database,
and checks every merge: the merged SHA is the head at the merge, its checks are
green on exactly that SHA (past the 100th context too), the bot posted a
self-review of exactly that SHA before the merge, a human writer approved
exactly that SHA (review on that commit, or the approval label added while it
was the head) with no writer's change request outstanding, and no stop switch
was set when the merge was called. Merging is never required (liveness is not
the property); at most one merge and one pull request are.

``ORACLE_EXAMPLES`` sets the number of examples (500 by default, what
``make test`` runs); ``ORACLE_SEED`` picks another deterministic sequence;
``ORACLE_SHRINK_SECONDS`` bounds the shrinking of a failure (60 by default).
Run with ``-s`` to see the time taken.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import structlog
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from tests.property.events import (
    STEPS,
    Check,
    Label,
    ManyChecks,
    Permission,
    Review,
    Step,
)
from tests.property.oracle import Model
from tests.property.runner import Run
from tests.property.world import (
    APPROVAL_LABEL,
    REPO_STOP_LABEL,
    STOP_LABEL,
    OracleWorld,
    oracle_world,
    scratch_dir,
)

MAX_EXAMPLES = int(os.environ.get("ORACLE_EXAMPLES", "500"))
SEED = int(os.environ.get("ORACLE_SEED", "20251124"))
SHRINK_SECONDS = int(os.environ.get("ORACLE_SHRINK_SECONDS", "60"))
MAX_STEPS = 4


@dataclass(frozen=True)
class Scenario:
    """One example: how the pull request starts, what happens to it, and any race at the merge."""

    steps: tuple[Step, ...]
    # The self-review of the first head is already posted (else the daemon's first turn does it).
    first_head_reviewed: bool = True
    # The CI already passed on the first head (it ran on the implementing push).
    first_head_green: bool = False
    # The agent's rework commits carry a date a month back.
    backdated_rework: bool = False
    # None, "stop" or "push": what lands mid-tick when the issue is about to merge.
    race: str | None = None
    # After the steps, the CI reports 100 passing checks on the head, then maybe a failing one.
    late_checks: str | None = None  # None, "pass" or "fail"
    # Then a writer approves whatever the head is, with CI green on it ("review", "label"),
    # and in "demoted" loses write access once the daemon saw the approval, and in
    # "pending" another check is still running on it; or nothing ("none"). Most
    # examples end where a merge is possible.
    finale: str = "review"

    def finale_steps(self) -> tuple[Step, ...]:
        late: tuple[Step, ...] = ()
        if self.late_checks is not None:
            late = (Step(ManyChecks(then_failing=self.late_checks == "fail"), tick=False),)
        if self.finale == "none":
            return late
        ci = Step(Check("ci", "success"), tick=False)
        if self.finale == "label":
            return (*late, ci, Step(Label("add", "approve", "issue", who="writer"), tick=False))
        approve = Step(Review("APPROVED", who="writer"), tick=self.finale == "demoted")
        if self.finale == "demoted":
            return (*late, ci, approve, Step(Permission("read"), tick=False))
        if self.finale == "pending":
            return (*late, ci, Step(Check("lint", "started"), tick=False), approve)
        return (*late, ci, approve)

    def all_steps(self) -> tuple[Step, ...]:
        return self.steps + self.finale_steps()

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:  # Hypothesis's printer
        printer.text(repr(self))

    def __repr__(self) -> str:
        steps = "".join(f"\n    {i + 1}. {s!r}" for i, s in enumerate(self.all_steps()))
        return (
            f"Scenario(first_head_reviewed={self.first_head_reviewed}, "
            f"first_head_green={self.first_head_green}, "
            f"backdated_rework={self.backdated_rework}, race={self.race!r}, "
            f"late_checks={self.late_checks!r}, finale={self.finale!r}, steps:{steps}\n)"
        )


# Hypothesis shrinks towards the first choice of each sampled_from: the plain case.
SCENARIOS = st.builds(
    Scenario,
    steps=st.lists(STEPS, min_size=1, max_size=MAX_STEPS).map(tuple),
    first_head_reviewed=st.sampled_from((True,) * 15 + (False,)),
    first_head_green=st.sampled_from((False, True, True)),
    backdated_rework=st.sampled_from((False, False, False, True)),
    race=st.integers(0, 39).map({38: "stop", 39: "push"}.get),
    late_checks=st.integers(0, 24).map({23: "pass", 24: "fail"}.get),
    finale=st.sampled_from(("review", "label", "review", "label", "demoted", "pending", "none")),
)


@dataclass
class Stats:
    """What the module's examples did, printed at its end (``-s`` shows it)."""

    examples: int = 0
    merges: int = 0
    started: float = 0.0


STATS = Stats()


def _quiet_logs() -> dict[str, Any]:
    """Only warnings from the daemon: thousands of ticks of info lines cost real time."""
    before = structlog.get_config()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    return before


def _shrink_for_at_most(seconds: int) -> None:
    """Bound how long Hypothesis shrinks a failure (its own bound is five minutes)."""
    try:
        from hypothesis.internal.conjecture import engine
    except ImportError:
        return
    if hasattr(engine, "MAX_SHRINKING_SECONDS"):
        engine.MAX_SHRINKING_SECONDS = seconds


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OracleWorld]:
    before = _quiet_logs()
    _shrink_for_at_most(SHRINK_SECONDS)
    try:
        with (
            scratch_dir(tmp_path_factory.mktemp("oracle")) as tmp,
            oracle_world(tmp) as running,
        ):
            STATS.started = time.perf_counter()
            yield running
            _report(running)
            # An oracle that judged nothing proves nothing: many examples end approved,
            # so a run without a single merge means the daemon never got that far.
            if STATS.examples >= 50 and STATS.merges == 0:
                pytest.fail(
                    f"the daemon merged nothing in {STATS.examples} examples: the oracle judged "
                    f"no merge (failed ticks: {running.failed_ticks}, rate-limit deferrals: "
                    f"{running.daemon.parts.poller.stats.rate_limit_deferrals})"
                )
    finally:
        structlog.configure(**before)


def _report(world: OracleWorld) -> None:
    """The time taken, and whether ticks stayed as fast as examples piled up."""
    total = time.perf_counter() - STATS.started
    quiet = world.quiet_tick_seconds
    fifth = max(1, len(quiet) // 5)

    def mean_ms(values: list[float]) -> float:
        return sum(values) / len(values) * 1000 if values else 0.0

    print(
        f"\nmerge oracle: {STATS.examples} examples in {total:.1f} s "
        f"({total / max(1, STATS.examples) * 1000:.0f} ms each), {STATS.merges} merges judged; "
        f"{len(world.tick_seconds)} ticks of {mean_ms(world.tick_seconds):.0f} ms; a tick with "
        f"nothing to do took {mean_ms(quiet[:fifth]):.0f} ms in the first fifth of the run and "
        f"{mean_ms(quiet[-fifth:]):.0f} ms in the last; failed ticks {world.failed_ticks}, "
        f"rate-limit deferrals {world.daemon.parts.poller.stats.rate_limit_deferrals}"
    )


def play(world: OracleWorld, scenario: Scenario) -> Run:
    """Seed a pull request, apply the scenario's events with ticks, then tick until quiet."""
    example = world.seed(
        reviewed=scenario.first_head_reviewed, backdate_rework=scenario.backdated_rework
    )
    people = world.people
    model = Model(
        repo=world.repo,
        issue=example.issue,
        pr=example.pr,
        bot_login=world.bot.login,
        humans={people.writer: "write", world.human.login: "admin", people.reader: "triage"},
        bots=frozenset({people.other_bot}),
        approval_label=APPROVAL_LABEL,
        stop_label=STOP_LABEL,
        repo_stop_label=REPO_STOP_LABEL,
        head=example.first_head,
    )
    run = Run(world=world, example=example, model=model, race=scenario.race)
    try:
        if scenario.first_head_green:
            run.check(example.first_head, "ci", "success")
        for number, step in enumerate(scenario.all_steps(), start=1):
            if run.model.merges:
                # Merged already: what the rest would do to a closed pull request is moot.
                run.log.append(f"events from {number} on were not applied: merged before")
                break
            world.clock.step()
            step.event.apply(run)
            if step.tick:
                run.tick()
        if not run.model.merges:
            run.settle()
    finally:
        world.retire(example)
    return run


@pytest.mark.slow
# Hundreds of examples take minutes; pytest's default of 300 s per test would cut them short.
@pytest.mark.timeout(1800)
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    derandomize=False,
    database=None,
    print_blob=False,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
@seed(SEED)
@given(scenario=SCENARIOS)
def test_every_merge_has_green_checks_a_self_review_and_an_approval_of_its_head(
    world: OracleWorld, scenario: Scenario
) -> None:
    run = play(world, scenario)
    STATS.examples += 1
    STATS.merges += len(run.model.merges)
    run.verdict(list(scenario.all_steps()))
