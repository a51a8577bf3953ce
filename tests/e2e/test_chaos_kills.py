"""Thirty-odd seeded SIGKILLs of a real ``orchestrator run`` during a ten-issue flow.

The seed (``CHAOS_SEED``, a fixed default otherwise) decides the kill plan:
each kill lands either a random time into a daemon life, or in the window
right after an agent's local commit in implementing or in rework (the agent
marks the commit, then lingers before its turn ends and the daemon pushes).
The seed also decides which issues' agents commit on every run and which find
their work already done on a re-run, which issues' first head fails CI (so
they go through rework), and how long CI takes. The daemon is started again at
once after every kill. The test plays the humans: it approves issues waiting
for a human, paced so that the last approval comes after the last kill (the
flow cannot end before the kills do). The daemon's timing still varies from
run to run; every failure message names the seed.

In the end every issue is merged, none was ever blocked, nothing was
duplicated (one pull request, one workpad comment and one review comment per
issue, one merge each), and no scripted agent outlived a daemon: after every
restart's recovery, the agents of the killed life are gone, and none is left
once the last daemon stopped.
"""

from __future__ import annotations

import os
import random
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from orchestrator.store import migrate
from orchestrator_sim.testing import SimWorld

from .chaos import (
    CiPlayer,
    DaemonLives,
    Store,
    agent_processes,
    commit_markers,
    daemon_lives,
    evidence,
    issue_of_branch,
    still_alive,
    write_agents,
)
from .harness import (
    APPROVAL_LABEL,
    OWNER_LABEL,
    Flow,
    agent_home,
    policy_document,
    write_policy,
)

ISSUES = 10
SEED = int(os.environ.get("CHAOS_SEED", "1604"))
KILLS = max(30, int(os.environ.get("CHAOS_KILLS", "32")))
# How long an agent lingers after its commit: the window a kill aims at.
WINDOW_MS = 1000
# A timed kill lands this many seconds into a daemon life (start-up included).
LIFE_S = (0.3, 3.5)
# CI reports on a new head this many seconds after the test first sees it.
CI_LATENCY_S = (0.5, 4.0)
# A kill aimed at a commit window waits this long for one, then kills anyway
# (at once when no issue is where a commit can still come from).
WINDOW_WAIT_S = 12.0
COMMITTING = frozenset({"implementing", "reviewing", "rework", "waiting_for_checks"})
# After the last kill, the flow has this long to finish.
FINISH_S = 150.0
POLL_S = 0.05


IDEMPOTENT = "idempotent"
APPENDING = "appending"


@dataclass(frozen=True)
class PlannedKill:
    """A kill ``delay_s`` into a life, or at a commit window of ``phase`` in it.

    A window kill waits for a commit of an issue whose agent is ``kind``; after
    half of ``WINDOW_WAIT_S`` any issue's commit in ``phase`` does.
    """

    delay_s: float
    phase: str | None = None
    kind: str | None = None


@dataclass
class Kill:
    """What one kill hit."""

    life: int
    planned: PlannedKill
    at_s: float
    window: tuple[str, int, str] | None = None  # phase, issue, run id
    kind: str | None = None  # of the window's agent
    run_open: bool = False

    def describe(self) -> str:
        if self.window is None:
            missed = " (no commit window came)" if self.planned.phase else ""
            return f"life {self.life}: {self.at_s:.2f}s in{missed}"
        phase, number, run_id = self.window
        where = "while its run was open" if self.run_open else "after its run ended"
        return (
            f"life {self.life}: {self.at_s:.2f}s in, after a commit in {phase} of #{number} "
            f"({self.kind} agent) {where}, run {run_id}"
        )


def kill_plan(rng: random.Random, count: int) -> list[PlannedKill]:
    """Random times; ten kills aim at commit windows, implementing early, rework later.

    Implementing commits come in the first seconds of the flow; rework commits
    once pull requests have failed CI. Each phase gets window kills for both
    kinds of agent.
    """
    plan = [PlannedKill(round(rng.uniform(*LIFE_S), 2)) for _ in range(count)]
    early = rng.sample(range(1, count // 4), 4)
    late = rng.sample(range(count // 4, (2 * count) // 3), 6)
    for positions, phase in ((early, "implementing"), (late, "rework")):
        for index, position in enumerate(positions):
            kind = IDEMPOTENT if index % 2 else APPENDING
            plan[position] = PlannedKill(plan[position].delay_s, phase, kind)
    return plan


class Chaos:
    """The run: the daemon and its kills, the humans and CI around it, and the problems found."""

    def __init__(
        self,
        flow: Flow,
        daemon: DaemonLives,
        store: Store,
        ci: CiPlayer,
        seed: int,
        idempotent: set[int],
    ) -> None:
        self.flow = flow
        self.daemon = daemon
        self.store = store
        self.ci = ci
        self.seed = seed
        self.idempotent = idempotent
        self.workspaces = daemon.workspaces
        self.home = agent_home(flow.tmp)
        self.kills: list[Kill] = []
        self.seen_markers: set[str] = set()
        # Agents of killed lives, to be gone once the next life has started.
        self.orphans: dict[int, int] = {}
        self.waiting_since: dict[int, float] = {}
        self.approved: list[int] = []
        self.problems: list[str] = []

    def fail(self, message: str) -> None:
        pytest.fail(f"{message}\n{self.report()}", pytrace=False)

    def report(self) -> str:
        kills = "\n".join(f"  {k.describe()}" for k in self.kills)
        return (
            f"seed={self.seed} (CHAOS_SEED); logs in {self.flow.tmp}/daemon-LIFE.log; "
            f"{len(self.kills)} kills:\n{kills}"
        )

    # ----------------------------------------------------- humans and CI

    def tend(self) -> dict[int, str]:
        """Play CI and the approvals; stop at once when an issue is blocked."""
        phases = self.store.phases()
        blocked = sorted(n for n, phase in phases.items() if phase == "blocked")
        if blocked:
            details = "\n".join(evidence(self.store, self.daemon, n) for n in blocked)
            self.fail(f"issue(s) {blocked} blocked in life {self.daemon.lives}\n{details}")
        self.ci.play(self.flow.pulls())
        self.approve(phases)
        return phases

    def approve(self, phases: dict[int, str]) -> None:
        """Approve issues waiting for a human, paced so the last one waits for the last kill.

        The approval label counts only when added in a later second than the head
        was first seen; the daemon saw it before it asked for a human.
        """
        now = time.monotonic()
        allowed = ISSUES * len(self.kills) // KILLS
        for number, phase in sorted(phases.items()):
            if phase != "waiting_for_human" or number in self.approved:
                continue
            since = self.waiting_since.setdefault(number, now)
            if now - since >= 1.2 and len(self.approved) < allowed:
                self.flow.world.control.add_labels(
                    self.flow.world.repo, number, [APPROVAL_LABEL], as_user=self.flow.human.login
                )
                self.approved.append(number)

    def all_done(self, phases: dict[int, str]) -> bool:
        return len(phases) == ISSUES and set(phases.values()) == {"done"}

    # ------------------------------------------------------------- kills

    def check_orphans(self) -> None:
        """Once a life has started (recovery and orphan sweep over), no earlier agent runs."""
        if not self.orphans or not self.daemon.started():
            return
        left = still_alive(self.orphans)
        if left:
            ended = self.daemon.events("agent_orphans_ended", lives=[self.daemon.lives])
            self.problems.append(
                f"agents of a killed daemon still run after life {self.daemon.lives} started: "
                f"pids {sorted(left)}; agent_orphans_ended: {ended}"
            )
        self.orphans = {}

    def kind(self, number: int) -> str:
        return IDEMPOTENT if number in self.idempotent else APPENDING

    def agents(self) -> dict[int, int]:
        return agent_processes(self.workspaces, self.home)

    def kill(self, planned: PlannedKill, window: tuple[str, int, str] | None) -> None:
        run_open = window is not None and self.store.open_run(window[2])
        at = time.monotonic() - self.daemon.started_at
        self.daemon.kill()
        kind = self.kind(window[1]) if window is not None else None
        self.kills.append(Kill(self.daemon.lives, planned, at, window, kind, run_open))
        # The killed life's agents: gone at once or swept by the next life's start.
        self.orphans.update(self.agents())
        self.daemon.start()

    def new_window(self, phase: str, kinds: set[str]) -> tuple[str, int, str] | None:
        """A commit in ``phase`` by one of ``kinds`` of agent marked since the last look."""
        for run_id, (marked_phase, number) in commit_markers(self.workspaces).items():
            if run_id in self.seen_markers:
                continue
            if marked_phase == phase and self.kind(number) in kinds:
                self.seen_markers.add(run_id)
                return (marked_phase, number, run_id)
        return None

    def live(self, planned: PlannedKill) -> None:
        """Run one life until its planned kill."""
        started = self.daemon.started_at
        # Windows opened before this life are not this kill's.
        self.seen_markers.update(commit_markers(self.workspaces))
        tended = 0.0
        phases: dict[int, str] = {}
        while True:
            if not self.daemon.alive:
                self.fail(f"the daemon exited by itself in life {self.daemon.lives}")
            self.check_orphans()
            elapsed = time.monotonic() - started
            if planned.phase is None:
                if elapsed >= planned.delay_s:
                    self.kill(planned, None)
                    return
            else:
                kinds = {str(planned.kind)}
                if elapsed >= WINDOW_WAIT_S / 2:
                    kinds = {IDEMPOTENT, APPENDING}
                window = self.new_window(planned.phase, kinds)
                hopeless = bool(phases) and not COMMITTING & set(phases.values())
                if window is not None or elapsed >= WINDOW_WAIT_S or hopeless:
                    self.kill(planned, window)
                    return
            if time.monotonic() - tended > 0.5:
                tended = time.monotonic()
                phases = self.tend()
                if self.all_done(phases):
                    self.fail(f"every issue was done before kill {len(self.kills) + 1}")
            time.sleep(POLL_S)

    def finish(self) -> None:
        """Let the last life run the flow to its end."""
        deadline = time.monotonic() + FINISH_S
        while time.monotonic() < deadline:
            if not self.daemon.alive:
                self.fail(f"the daemon exited by itself in life {self.daemon.lives}")
            self.check_orphans()
            phases = self.tend()
            if self.all_done(phases):
                return
            time.sleep(0.5)
        stuck = [n for n, phase in sorted(phases.items()) if phase != "done"]
        details = "\n".join(evidence(self.store, self.daemon, n) for n in stuck)
        self.fail(
            f"not every issue was done {FINISH_S:g} s after the last kill: {phases}\n{details}"
        )


@pytest.mark.slow
@pytest.mark.parametrize(
    "backend", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]
)
def test_seeded_sigkills_during_ten_issues_still_merge_each_once(
    tmp_path: Path, world: SimWorld, backend: str, request: pytest.FixtureRequest
) -> None:
    seed = SEED
    rng = random.Random(seed)
    numbers = [
        world.control.create_issue(
            world.repo,
            f"Feature {i}",
            as_user=world.human.login,
            body="Please add the feature.",
            labels=[OWNER_LABEL],
        )
        for i in range(1, ISSUES + 1)
    ]
    idempotent = set(rng.sample(numbers, ISSUES // 2))
    appending = [n for n in numbers if n not in idempotent]
    # Most issues go through rework, from both kinds of agent.
    fail_first = set(rng.sample(sorted(idempotent), 4)) | set(rng.sample(appending, 4))
    plan = kill_plan(rng, KILLS)
    ci = CiPlayer(world, fail_first, random.Random(rng.random()), CI_LATENCY_S)

    command = write_agents(agent_home(tmp_path), idempotent, numbers, WINDOW_MS)
    database = {"url": f"sqlite:///{tmp_path / 'orchestrator.db'}"}
    if backend == "postgresql":
        pg_url = str(request.getfixturevalue("pg_url"))
        migrate.upgrade(pg_url)
        database = {"url": pg_url}
    document = policy_document(
        tmp_path,
        world,
        agent_home(tmp_path) / "scenarios",
        "merge",
        {
            "polling": {"interval_ms": 300},
            # Without a sandbox the agent's shell is all a parent death signal ends:
            # what it started is left to the registry of the daemon's next start.
            "agent": {"command": command, "sandbox": "none"},
            "database": database,
        },
    )
    policy_path = write_policy(tmp_path / "WORKFLOW.md", document)
    env = {"E2E_ENDPOINT": world.url, "E2E_TOKEN": world.bot.token}
    flow = Flow(world, tmp_path, policy_path, agent_home(tmp_path), env)
    # As on a real repository: the base branch requires the check.
    world.control.protect(
        world.repo, "main", required_checks=["ci"], dismiss_stale_reviews=True, enforce_admins=True
    )
    store = Store(database["url"])
    began = time.monotonic()
    try:
        with daemon_lives(flow, database["url"]) as daemon:
            chaos = Chaos(flow, daemon, store, ci, seed, idempotent)
            daemon.start()
            for planned in plan:
                chaos.live(planned)
            chaos_s = time.monotonic() - began
            chaos.finish()
            chaos.check_orphans()
            status = daemon.stop()
            left = chaos.agents()
            if status != 0:
                chaos.problems.append(f"the last daemon stopped with status {status}")
            if left:
                chaos.problems.append(
                    f"agent processes alive after the last daemon stopped: {left}"
                )
            check_outcome(chaos, numbers)
            print_summary(chaos, fail_first, chaos_s, time.monotonic() - began)
            if chaos.problems:
                chaos.fail("\n".join(chaos.problems))
    finally:
        store.close()


def check_outcome(chaos: Chaos, numbers: list[int]) -> None:
    """Merged once each, never blocked, nothing duplicated; kills in the windows that matter."""
    flow, store, problems = chaos.flow, chaos.store, chaos.problems
    blocked = sorted({int(row.number) for row in store.phase_events() if row.to_phase == "blocked"})
    for number in blocked:
        problems.append(f"issue #{number} was blocked\n{evidence(store, chaos.daemon, number)}")
    pulls = flow.pulls()
    by_issue = Counter(issue_of_branch(str(p["head"]["ref"])) for p in pulls)
    for number in numbers:
        if by_issue[number] != 1:
            problems.append(f"issue #{number} has {by_issue[number]} pull requests")
        if flow.issue(number)["state"] != "closed":
            problems.append(f"issue #{number} is not closed")
        workpads = len(flow.workpads(number))
        if workpads != 1:
            problems.append(f"issue #{number} has {workpads} workpad comments")
    merges = Counter(
        str(w["path"])
        for w in flow.bot_writes()
        if str(w["path"]).endswith("/merge") and w["status"] == 200
    )
    for pull in pulls:
        pr = int(pull["number"])
        if not flow.pull(pr)["merged"]:
            problems.append(f"pull request #{pr} is not merged")
        reviews = flow.review_comments(pr)
        heads = Counter(
            line
            for c in reviews
            for line in c["body"].splitlines()
            if "orchestrator-review-head" in line
        )
        if len(reviews) != 1 or any(n > 1 for n in heads.values()):
            problems.append(f"pull request #{pr} has {len(reviews)} review comments: {dict(heads)}")
        merged = sum(n for path, n in merges.items() if path.endswith(f"/pulls/{pr}/merge"))
        if merged != 1:
            problems.append(f"pull request #{pr} was merged {merged} times")
    hits = [k for k in chaos.kills if k.window and k.run_open]
    for phase in ("implementing", "rework"):
        if not [k for k in hits if k.window and k.window[0] == phase]:
            problems.append(f"no kill landed in a commit window of {phase}")
    for kind in (IDEMPOTENT, APPENDING):
        if not [k for k in hits if k.kind == kind]:
            problems.append(f"no kill landed in a commit window of an {kind} agent")


def print_summary(chaos: Chaos, fail_first: set[int], chaos_s: float, total_s: float) -> None:
    windows = Counter(f"{k.window[0]}/{k.kind}" for k in chaos.kills if k.window and k.run_open)
    adopted = len(chaos.daemon.events("unpushed_work_adopted"))
    # Not a failure by itself: a turn whose outcome was recorded, run again from its claim.
    already = {str(e.get("run_id")) for e in chaos.daemon.events("claim_already_recorded")}
    rerun = [
        e
        for e in chaos.daemon.events("claim_taken_over")
        if chaos.store.run_outcome(str(e.get("previous_run_id"))) == "completed"
        and str(e.get("previous_run_id")) not in already
    ]
    swept = chaos.daemon.events("agent_orphans_ended")
    print(
        f"\nchaos seed={chaos.seed}: {len(chaos.kills)} kills in {chaos_s:.0f} s, "
        f"all done after {total_s:.0f} s; idempotent agents {sorted(chaos.idempotent)}, "
        f"failing first head {sorted(fail_first)}; kills in commit windows {dict(windows)}; "
        f"unpushed_work_adopted {adopted}; recorded turns run again {len(rerun)}; "
        f"orphan sweeps {len(swept)} "
        f"({sum(int(e.get('count', 0)) for e in swept)} processes)\n{chaos.report()}"
    )
