"""Three replicas on PostgreSQL through seeded kills and a database outage: twelve issues, once.

Three ``orchestrator run`` processes (``r1``, ``r2``, ``r3``; a 5 s lease, 2 s
of grace, JSON logs, one log per process) share one PostgreSQL database
through a TCP relay, and run twelve issues, each appending to a file of its
own so no two branches conflict and a turn run again commits again; CI is
green on every head and no human approval is needed. The seed
(``CHAOS_SEED``, a fixed default otherwise; named in every failure message)
draws the faults:

- one PostgreSQL outage: the relay is cut for 5 to 10 s, starting between
  10 and 20 s in;
- six kills, one in each sixth of the first 40 s (none in the 4 s before the
  outage, so it finds every replica up), each a SIGKILL or a SIGTERM of a
  replica or of whoever leads at that moment (the leader gets at least one of
  each; a kill aimed at the leader waits up to 6 s for there to be one); the
  replica starts again under the same id 0.5 to 3 s after its process is gone
  (a start that would fall in the outage waits for its end: a daemon that
  cannot reach its database at start-up exits, by design, and one the
  outage caught in its start-up is started again once it is over).

- one replica runs with its wall clock 30 s ahead or behind in every life
  (``skewed_clock/sitecustomize.py``). Leases, claims and heartbeats are judged
  on the database's clock (``clock_timestamp()``), so the skew must change
  nothing; the audit below sets that replica's log timestamps right before it
  orders events.

The outage is what a PostgreSQL restart looks like to its clients: every open
connection is cut (the server rolls back what it had open) and new ones are
refused until it is over.

The daemons' timing still varies from run to run. In the end:

- every issue is done within 90 s of the last fault settling (the relay
  restored, every replica back and started); the phases of any that is not are
  printed;
- after the last fault settled, no unfinished issue went without progress (a
  new phase, an agent turn claimed, starting or ending, or a write to GitHub)
  through more than 3 whole ticks of the leader while an agent slot was free
  and no retry backoff held it (counted in ticks, not seconds: a machine slowed
  down by other work slows the ticks down too; a backoff is judged with the
  skewed replica's clock allowed for);
- every issue has exactly one pull request, merged by one merge, is closed,
  has one workpad comment, and at most one review comment per head;
- no two replicas ran agent turns of one issue at overlapping times, and no
  more turns ran than the faults explain (two per issue, and one per replica
  for each fault);
- no commit was declared lost (``turn_commits_lost``, its turn run again)
  while GitHub had it;
- no push or merge was made without a claim or a lease. Each push a process
  logged (``branch_published``, right after the git push returned, and its
  ``push_branch`` side effect) was made while that process held the issue's
  turn claim (its ``turn_claimed`` for the issue, for the run the line names,
  came before, with no ``claim_lost`` of that run and no claim of the issue by
  another process in between) or while it led; each ``merge_pr`` side effect
  while it led (its last ``leadership_taken`` came before, with no
  ``leadership_lost`` of its own and no ``leadership_taken`` of another
  process in between). Then GitHub's write log, which stamps each push and
  merge in whole seconds without naming the replica, is joined with those
  lines: each write is matched with one logged within seconds after it (a merge
  with one of the same issue). A write nobody logged is accepted only when a
  process was SIGKILLed within those seconds in the middle of it (a committed
  turn it had not logged pushed; an issue it had moved to ``merging`` and not
  logged merged), and that write is checked at the kill like the others. So
  no write escapes the check.

The relay passes on the end of a connection as the kernel would for a killed
process, so PostgreSQL rolls back what a killed replica had open.
"""

from __future__ import annotations

import os
import re
import time
from collections import defaultdict
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from random import Random
from typing import Any, NoReturn, cast

import pytest

from orchestrator.store import migrate
from orchestrator_sim.testing import SimWorld
from tests.e2e.harness import Flow, default_scenario, policy_document, write_policy, write_scenario
from tests.replicas.cluster_chaos import (
    Event,
    FaultPlan,
    GreenChecks,
    IssueState,
    Kill,
    Life,
    ProgressWatch,
    ReplicaLives,
    audit_fencing,
    has_started,
    join_writes,
    read_events,
)
from tests.replicas.relay import Relay, relayed
from tests.replicas.test_replicas import overlapping_runs, query

SEED = int(os.environ.get("CHAOS_SEED", "1616"))
ISSUES = 12
NAMES = ["r1", "r2", "r3"]
LEASE_S = 5
POLL_MS = 300
KILLS = 6
KILL_WINDOW_S = (3.0, 40.0)
# How long a kill aimed at the leader waits for there to be one (a takeover under way).
LEADER_WAIT_S = 6.0
SETTLE_DEADLINE_S = 90.0
STOP_WAIT_S = 30.0
# The faults are over well before this (the last kill at 40 s, the outage by 30 s).
FAULTS_DEADLINE_S = 120.0
BRANCH = re.compile(r"^orchestrator/(\d+)(?:-|$)")


class Chaos:
    """Plays the fault plan against the replicas and keeps what happened, for the report."""

    def __init__(
        self, plan: FaultPlan, rng: Random, replicas: dict[str, ReplicaLives], pg_url: str
    ) -> None:
        self.plan = plan
        self.pg_url = pg_url
        self.rng = rng
        self.replicas = replicas
        self.started = time.monotonic()
        self.pending = list(plan.kills)
        self.restarts: dict[str, float] = {}
        self.delays: dict[str, float] = {}
        self.outage = "before"
        self.cut_at: float | None = None
        self.restored_at: float | None = None
        self.happened: list[str] = []
        self.unexpected: list[str] = []

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def note(self, what: str) -> None:
        self.happened.append(f"{self.elapsed():6.1f}s {what}")

    @property
    def over(self) -> bool:
        stopping = any(r.current and r.current.ended is None for r in self.signalled())
        return not self.pending and not self.restarts and self.outage == "restored" and not stopping

    def signalled(self) -> list[ReplicaLives]:
        return [r for r in self.replicas.values() if r.current and r.current.signalled]

    def step(self, relay: Relay, leader: str | None) -> None:
        now = self.elapsed()
        self._reap(now)
        if self.outage == "before" and now >= self.plan.outage_at_s:
            relay.cut()
            self.outage, self.cut_at = "cut", time.time()
            self.note("database outage begins (relay cut)")
        elif self.outage == "cut" and now >= self.plan.outage_end_s:
            relay.restore()
            self.outage, self.restored_at = "restored", time.time()
            self.note("database outage ends (relay restored)")
        if self.pending and now >= self.pending[0].at_s and self._kill(self.pending[0], leader):
            self.pending.pop(0)
        for name, due in list(self.restarts.items()):
            if now >= due and self.outage != "cut":
                del self.restarts[name]
                life = self.replicas[name].start()
                self.note(f"start {life.name}")

    def _kill(self, kill: Kill, leader: str | None) -> bool:
        """Play one kill; False while a kill aimed at the leader waits for one."""
        up = [name for name, r in self.replicas.items() if r.running]
        waiting = self.elapsed() < kill.at_s + LEADER_WAIT_S
        if kill.target == "leader" and leader not in up and waiting:
            return False
        if not up:
            self.note(f"{kill.signal.name} {kill.target} skipped: no replica up")
            return True
        if kill.target == "leader" and leader in up:
            victim, why = leader, "the leader"
        elif kill.target in up:
            victim, why = kill.target, "as planned"
        else:
            victim = self.rng.choice(up)
            why = f"instead of {kill.target}" + (" (no leader)" if kill.target == "leader" else "")
        life = self.replicas[victim].signal(kill.signal)
        self.delays[victim] = kill.restart_after_s
        self.note(f"{kill.signal.name} {life.name} ({why})")
        return True

    def _reap(self, now: float) -> None:
        for name, replica in self.replicas.items():
            hung = replica.current
            if (
                hung is not None
                and hung.ended is None
                and hung.signalled_at is not None
                and time.time() - hung.signalled_at > STOP_WAIT_S
            ):
                sessions = sessions_report(self.pg_url)
                self.unexpected.append(
                    f"{hung.name} still up {STOP_WAIT_S:g} s after SIGTERM; database sessions "
                    f"then:\n{sessions}\nits threads:\n{replica.dump_stacks()}"
                )
                self.note(f"{hung.name} still up {STOP_WAIT_S:g} s after SIGTERM: SIGABRT")
                self.restarts[name] = now + 1.0
                continue
            life = replica.reap()
            if life is None:
                continue
            code = life.proc.returncode
            if life.signalled is None and self._refused_in_outage(life):
                # Start-up opens the database and stops when it cannot: by design.
                self.note(f"{life.name} could not start in the outage (exit {code})")
                self.restarts[name] = max(now, self.plan.outage_end_s) + 0.5
                continue
            if life.signalled is None:
                tail = life.log.read_text(errors="replace").splitlines()[-8:]
                self.unexpected.append(
                    f"{life.name} exited by itself with {code}; its log ends:\n    "
                    + "\n    ".join(line[:600] for line in tail)
                )
                self.note(f"{life.name} exited by itself ({code})")
                self.restarts[name] = now + 1.0
                continue
            self.note(f"{life.name} gone ({life.signalled}, exit {code})")
            due = now + self.delays.pop(name, 1.0)
            if self.outage == "cut":
                due = max(due, self.plan.outage_end_s + 0.5)
            self.restarts[name] = due

    def _refused_in_outage(self, life: Life) -> bool:
        """The life began before the outage ended and ended, not started, after it began."""
        if self.cut_at is None or life.started > (self.restored_at or life.started):
            return False
        return life.proc.returncode == 1 and not has_started(life)


def current_leader(pg_url: str, repo: str) -> str | None:
    rows = query(
        pg_url,
        f"SELECT owner FROM leases WHERE name = 'poll:{repo}' AND expires_at > clock_timestamp()",
    )
    return str(rows[0].owner) if rows else None


def sessions_report(pg_url: str) -> str:
    """The replicas' database sessions: those in a transaction one by one, and who blocks
    them; the idle ones counted per replica."""
    rows = query(
        pg_url,
        "SELECT pid, application_name AS replica, state, wait_event_type, wait_event, "
        "pg_blocking_pids(pid) AS blocked_by, xact_start IS NOT NULL AS in_xact, "
        "round(extract(epoch FROM clock_timestamp() - xact_start)::numeric, 1) AS xact_s, "
        "left(regexp_replace(query, '\\s+', ' ', 'g'), 240) AS query "
        "FROM pg_stat_activity WHERE datname = current_database() "
        "AND pid <> pg_backend_pid() ORDER BY xact_start NULLS LAST, application_name",
    )
    idle: dict[str, int] = defaultdict(int)
    lines = []
    for r in rows:
        if r.in_xact:
            lines.append(
                f"  pid {r.pid} {r.replica} {r.state} wait {r.wait_event_type}/{r.wait_event} "
                f"blocked by {r.blocked_by} in a transaction for {r.xact_s} s: {r.query}"
            )
        else:
            idle[r.replica] += 1
    counted = ", ".join(f"{replica or '?'} {n}" for replica, n in sorted(idle.items()))
    return "\n".join([*lines, f"  sessions not in a transaction: {counted or 'none'}"])


def issue_states(pg_url: str, skew_s: int) -> dict[int, IssueState]:
    """Each issue's state; an issue backs off while its retry is due, by any replica's clock."""
    rows = query(
        pg_url,
        "SELECT t.number, t.phase, "
        f"(t.retry_due_at IS NOT NULL AND t.retry_due_at > now() - interval '{abs(skew_s)} "
        "seconds') AS backing_off, "
        "(SELECT count(*) FROM agent_runs r WHERE r.issue_id = t.id) AS started, "
        "(SELECT count(r.ended_at) FROM agent_runs r WHERE r.issue_id = t.id) AS ended, "
        "(SELECT count(*) + coalesce(sum(e.attempts), 0) FROM side_effects e "
        "WHERE e.issue_id = t.id) AS writes, "
        "(SELECT count(*) FROM turn_claims c WHERE c.issue_id = t.id) AS claims, "
        "(SELECT count(*) FROM turn_claims c WHERE c.issue_id = t.id "
        "AND c.finished_at IS NULL) AS open_claims "
        "FROM tracked_issues t",
    )
    return {
        int(r.number): IssueState(
            str(r.phase),
            int(r.started),
            int(r.ended),
            int(r.writes),
            claims=int(r.claims),
            open_claims=int(r.open_claims),
            backing_off=bool(r.backing_off),
        )
        for r in rows
    }


def phases_report(pg_url: str) -> str:
    rows = query(
        pg_url,
        "SELECT t.number, t.phase, e.from_phase, e.to_phase, e.reason, e.actor, e.at "
        "FROM tracked_issues t LEFT JOIN phase_events e ON e.issue_id = t.id "
        "ORDER BY t.number, e.id",
    )
    lines: dict[int, list[str]] = defaultdict(list)
    for row in rows:
        if not lines[row.number]:
            lines[row.number].append(f"#{row.number} now {row.phase}:")
        if row.to_phase is not None:
            lines[row.number].append(
                f"    {row.at:%H:%M:%S.%f} {row.from_phase} -> {row.to_phase} "
                f"({row.reason}; {row.actor})"
            )
    return "\n".join(line for number in sorted(lines) for line in lines[number])


@pytest.mark.slow
def test_three_replicas_through_seeded_kills_and_an_outage_merge_every_issue_once(
    tmp_path: Path, world: SimWorld, pg_url: str
) -> None:
    began = time.monotonic()
    rng = Random(SEED)
    plan = FaultPlan.draw(rng, NAMES, kills=KILLS, window_s=KILL_WINDOW_S)
    tag = f"[CHAOS_SEED={SEED}]"
    migrate.upgrade(pg_url)
    scenario = default_scenario()
    # A file of each issue's own, appended to: a turn run again (after a kill) commits again.
    scenario["steps"][1] = {
        "write": {
            "path": "notes/${ORCHESTRATOR_BRANCH}.txt",
            "content": "A change.\n",
            "append": True,
        }
    }
    # Turns last long enough for kills and the outage to land in the middle of some.
    scenario["steps"].insert(1, {"sleep_ms": 2500})
    scenario["phases"]["reviewing"]["steps"].insert(0, {"sleep_ms": 1000})
    scenario_path = write_scenario(tmp_path, scenario)

    with relayed(pg_url) as (relay, relayed_url):
        document = policy_document(
            tmp_path,
            world,
            scenario_path,
            "merge",
            {
                "polling": {"interval_ms": POLL_MS},
                "agent": {"max_concurrent_agents": 1},
                "merge": {"require_human_approval": False},
                "database": {"url": relayed_url},
            },
        )
        policy_path = write_policy(tmp_path / "WORKFLOW.md", document)
        env = {"HOME": str(tmp_path), "E2E_ENDPOINT": world.url, "E2E_TOKEN": world.bot.token}
        flow = Flow(world, tmp_path, policy_path, scenario_path, env)
        argv = ["run", str(policy_path), "--port", "0"]
        argv += ["--lease-seconds", str(LEASE_S), "--grace-seconds", "2"]
        replicas = {
            # Each replica's sessions carry its name in pg_stat_activity (see sessions_report).
            name: ReplicaLives(
                name,
                [*argv, "--db", f"{relayed_url}?application_name={name}"],
                env,
                tmp_path,
                skew_s=plan.skew_s if name == plan.skewed else 0,
            )
            for name in NAMES
        }
        numbers = [flow.open_issue(f"Feature {i}") for i in range(ISSUES)]
        keep_ci_green = GreenChecks(flow)

        def done() -> int:
            rows = query(pg_url, "SELECT count(*) AS n FROM tracked_issues WHERE phase = 'done'")
            return int(rows[0].n)

        def lives() -> list[Life]:
            return [life for r in replicas.values() for life in r.lives]

        chaos = Chaos(plan, rng, replicas, pg_url)

        def context() -> str:
            return (
                f"{tag} plan: {plan.describe()}\nwhat happened:\n  "
                + "\n  ".join(chaos.happened)
                + f"\nphases:\n{phases_report(pg_url)}"
                + f"\ndatabase sessions:\n{sessions_report(pg_url)}"
            )

        def stuck(what: str) -> NoReturn:
            report = context()
            stacks = "\n".join(r.dump_stacks() for r in replicas.values())
            pytest.fail(f"{what}\n{report}\nthreads of the replicas still up:\n{stacks}")

        try:
            for replica in replicas.values():
                replica.start()
            chaos.started = time.monotonic()
            while not chaos.over:
                if chaos.elapsed() > FAULTS_DEADLINE_S:
                    stuck(f"the faults never settled\n{chaos.unexpected}")
                keep_ci_green()
                chaos.step(relay, current_leader(pg_url, world.repo))
                time.sleep(0.1)
            # The last fault has settled once every replica is back and started.
            deadline = time.monotonic() + 30
            while not all(r.current and has_started(r.current) for r in replicas.values()):
                if time.monotonic() > deadline:
                    stuck("a replica never started again")
                keep_ci_green()
                time.sleep(0.2)
            chaos.note("every fault settled")
            settled, settled_at = time.monotonic(), datetime.now(UTC)
            progress = ProgressWatch(slots=len(NAMES))
            while done() < ISSUES:
                progress.sample(issue_states(pg_url, plan.skew_s), datetime.now(UTC))
                chaos.step(relay, None)
                if time.monotonic() - settled > SETTLE_DEADLINE_S:
                    stuck(
                        f"{done()} of {ISSUES} issues done {SETTLE_DEADLINE_S:g} s after the "
                        "last fault settled"
                    )
                keep_ci_green()
                time.sleep(0.2)
            chaos.note("every issue done")
            assert not chaos.unexpected, "\n".join(
                ["replicas exited by themselves or hung:", *chaos.unexpected, context()]
            )
            exits = {name: replica.stop(STOP_WAIT_S) for name, replica in replicas.items()}
            if None in exits.values():
                stuck(f"still up {STOP_WAIT_S:g} s after the final SIGTERM: {exits}")
        finally:
            for replica in replicas.values():
                replica.kill_now()

    assert exits == dict.fromkeys(NAMES, 0), f"final SIGTERM: {exits}\n{context()}"
    # Waits are counted in whole ticks of the leader after the faults, each (start, end)
    # (a follow-up tick looks at the few issues the tick before it changed, no others).
    events = read_events(lives())
    ticks = [
        (e.at - timedelta(milliseconds=e.fields["duration_ms"]), e.at)
        for e in events
        if e.name == "tick" and e.fields.get("focus") is None and e.at > settled_at
    ]
    worst = progress.worst(ticks)
    assert worst is None or worst.ticks <= 3, (
        f"{worst.describe()} without progress after the last fault, with an agent slot free: "
        f"more than 3 ticks; waits: {progress.describe(ticks)}\n{context()}"
    )

    # GitHub: one pull request per issue, merged once; the issue closed; one workpad.
    pulls = flow.pulls()
    issue_of_pr: dict[int, int] = {}
    for pull in pulls:
        match = BRANCH.search(str(pull["head"]["ref"]))
        assert match is not None, f"{tag} unexpected branch {pull['head']['ref']}"
        issue_of_pr[int(pull["number"])] = int(match.group(1))
    per_issue = sorted(issue_of_pr.values())
    assert per_issue == sorted(numbers), f"pull requests per issue: {per_issue}\n{context()}"
    merges = [
        w for w in flow.bot_writes() if str(w["path"]).endswith("/merge") and w["status"] == 200
    ]
    assert len(merges) == ISSUES, f"{len(merges)} merges: {merges}\n{context()}"
    for pr_number, number in issue_of_pr.items():
        assert flow.pull(pr_number)["merged"], f"{tag} PR #{pr_number} not merged"
        assert flow.issue(number)["state"] == "closed", f"{tag} #{number} not closed"
        workpads = len(flow.workpads(number))
        assert workpads == 1, f"{tag} #{number} has {workpads} workpad comments\n{context()}"
        heads = [
            m.group(1)
            for c in flow.review_comments(pr_number)
            for m in [re.search(r"orchestrator-review-head: (\w+)", c["body"])]
            if m is not None
        ]
        assert heads and len(heads) == len(set(heads)), (
            f"{tag} PR #{pr_number} review comments per head: {heads}\n{context()}"
        )

    # No two replicas ran one issue's turns at overlapping times; every run was closed.
    runs = query(
        pg_url, "SELECT issue_id, replica_id, started_at, ended_at, outcome FROM agent_runs"
    )
    assert overlapping_runs(runs) == [], f"overlapping runs\n{context()}"
    assert all(run.ended_at is not None for run in runs), f"{tag} a run left open"
    # Two turns per issue; each fault may cost the turns then running (one per replica).
    most = 2 * ISSUES + len(NAMES) * (KILLS + 1)
    assert len(runs) <= most, f"{len(runs)} agent runs, more than the faults explain\n{context()}"

    # No push or merge without its claim or the lease, and none GitHub saw that was not logged.
    audit = audit_fencing(events)
    join = join_writes(
        world.control.writes(),
        events,
        lives(),
        audit,
        bot=world.bot.login,
        issue_of_pr=issue_of_pr,
    )
    assert not join.unlogged, "\n".join(
        [f"{tag} writes no replica logged:", *join.unlogged, context()]
    )
    assert not audit.unfenced, "\n".join([tag, *audit.unfenced, context()])

    # A commit is declared lost (and its turn run again) only when GitHub does not have it.
    gh = world.github(flow.human).requester
    lost = [e for e in events if e.name == "turn_commits_lost"]
    pushed = [
        e
        for e in lost
        if gh.requestJson("GET", f"/repos/{world.repo}/commits/{e.fields['head']}")[0] == 200
    ]
    assert not pushed, "\n".join(
        [f"{tag} commits declared lost that GitHub has:", *map(str, pushed), context()]
    )

    took = time.monotonic() - began
    print(
        f"\n{tag} {took:.0f} s; {plan.describe()}\n  "
        + "\n  ".join(chaos.happened)
        + f"\n  pushes under a claim {audit.pushes_under_claim}, under the lease "
        f"{audit.pushes_under_lease}, merges {audit.merges}; GitHub writes matched "
        f"{join.matched}, pushes cut by a kill {join.cut_by_kill or 0}; runs {len(runs)}, "
        f"interrupted {sum(r.outcome == 'interrupted' for r in runs)}\n  longest waits without "
        f"progress after the faults: {progress.describe(ticks) or 'none'}\n  "
        + ", ".join(f"{name} {count}" for name, count in sorted(tally(events).items()))
    )


def tally(events: list[Event]) -> dict[str, int]:
    """How often the events that tell of faults were logged."""
    names = (
        "leadership_taken",
        "leadership_lost",
        "claim_taken_over",
        "claim_lost",
        "claims_released",
        "turn_result_discarded",
        "side_effect_fenced",
        "database_unreachable",
        "database_reachable",
        "turn_held",
        "turn_applied",
        "runs_interrupted",
        "turn_crashed",
        "turn_job_failed",
        "tick_failed",
    )
    return {name: sum(e.name == name for e in events) for name in names}


# ------------------------------------------------------------ the audit's own rules

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def logged(at_s: float, life: str, name: str, **fields: Any) -> Event:
    replica, _ = life.split("#")
    return Event(T0 + timedelta(seconds=at_s), life, replica, name, fields)


def push(at_s: float, life: str, issue: int = 3, run_id: str | None = "a") -> Event:
    key = f"acme/widgets#{issue}:push_branch:abc"
    context = {"run_id": run_id} if run_id is not None else {}
    return logged(at_s, life, "side_effect", kind="push_branch", key=key, **context)


def published(at_s: float, life: str, issue: int = 3, run_id: str = "a") -> Event:
    branch = f"orchestrator/issue-{issue}"
    fields = {"issue": f"acme/widgets#{issue}", "branch": branch, "run_id": run_id}
    return logged(at_s, life, "branch_published", **fields)


def merge(at_s: float, life: str, issue: int = 3) -> Event:
    return logged(
        at_s, life, "side_effect", kind="merge_pr", key=f"acme/widgets#{issue}:merge_pr:5"
    )


def claimed(at_s: float, life: str, issue: int = 3, run_id: str = "a") -> Event:
    return logged(at_s, life, "turn_claimed", issue=issue, run_id=run_id)


def led(at_s: float, life: str, epoch: int) -> Event:
    return logged(at_s, life, "leadership_taken", epoch=epoch)


AUDIT_RULES = {
    "a push under its own claim": ([claimed(1, "r1#1"), push(2, "r1#1")], 0),
    "a push after another replica claimed the issue": (
        [claimed(1, "r1#1"), claimed(2, "r2#1", run_id="b"), push(3, "r1#1")],
        1,
    ),
    "a push after its claim was lost": (
        [claimed(1, "r1#1"), logged(2, "r1#1", "claim_lost", run_id="a"), push(3, "r1#1")],
        1,
    ),
    "a push under a claim of an earlier life": ([claimed(1, "r1#1"), push(3, "r1#2")], 1),
    "a push under another run's claim": ([claimed(1, "r1#1", run_id="b"), push(2, "r1#1")], 1),
    "a push of another issue": ([claimed(1, "r1#1", issue=4), push(2, "r1#1")], 1),
    "a branch published after another replica claimed the issue": (
        [claimed(1, "r1#1"), claimed(2, "r2#1", run_id="b"), published(3, "r1#1")],
        1,
    ),
    "a push by the leader of a turn's leftover": (
        [led(1, "r1#1", 1), push(2, "r1#1", run_id=None)],
        0,
    ),
    "a merge by the leader": ([led(1, "r2#1", 1), led(2, "r1#1", 2), merge(3, "r1#1")], 0),
    "a merge after another replica took the lease": (
        [led(1, "r1#1", 1), led(2, "r2#1", 2), merge(3, "r1#1")],
        1,
    ),
    "a merge after the lease was lost": (
        [led(1, "r1#1", 1), logged(2, "r1#1", "leadership_lost", epoch=1), merge(3, "r1#1")],
        1,
    ),
    "a merge under an earlier life's lease": ([led(1, "r1#1", 1), merge(3, "r1#2")], 1),
    "a merge by a replica holding only the claim": ([claimed(1, "r1#1"), merge(2, "r1#1")], 1),
}


@pytest.mark.parametrize("events, unfenced", AUDIT_RULES.values(), ids=AUDIT_RULES.keys())
def test_the_fencing_audit_flags_writes_made_without_their_claim_or_lease(
    events: list[Event], unfenced: int
) -> None:
    assert len(audit_fencing(events).unfenced) == unfenced


def killed(life: str, at_s: float) -> Life:
    replica, number = life.split("#")
    died = (T0 + timedelta(seconds=at_s)).timestamp()
    no_process = cast(Any, None)
    return Life(replica, int(number), Path("/dev/null"), no_process, 0.0, died, "SIGKILL", died)


def test_the_write_join_matches_github_writes_to_pushes_and_merges_logged_right_after() -> None:
    def write(path: str, at_s: int, method: str = "POST") -> dict[str, Any]:
        moment = (T0 + timedelta(seconds=at_s)).strftime("%Y-%m-%dT%H:%M:%SZ")
        return {"method": method, "path": path, "login": "bot", "time": moment, "status": 200}

    receive = "/acme/widgets.git/git-receive-pack"
    writes = [
        write(receive, 10),
        write(receive, 20),  # logged before GitHub saw it: not this write's push
        write("/repos/acme/widgets/pulls/7/merge", 30, "PUT"),
        write("/repos/acme/widgets/pulls/8/merge", 30, "PUT"),  # issue 4: none logged
        write("/repos/acme/widgets/issues/3/comments", 30),
        {**write(receive, 40), "login": "human"},
        write(receive, 50),  # r2#1 was killed right after it, its push logged by nobody
        write("/repos/acme/widgets/pulls/9/merge", 70, "PUT"),  # r3#1 killed as it merged
    ]
    events = [
        claimed(1, "r1#1"),
        published(10.4, "r1#1"),
        published(19.5, "r1#1"),
        merge(31.2, "r2#1", issue=3),
        claimed(45, "r2#1", issue=5, run_id="b"),
        logged(49, "r2#1", "turn_recorded", issue=5, run_id="b", committed=True),
        led(60, "r3#1", 2),
        logged(69, "r3#1", "phase_transition", issue=6, to_phase="merging"),
    ]
    audit = audit_fencing(events)
    lives = [killed("r1#1", 60), killed("r2#1", 50.3), killed("r3#1", 70.2)]
    issue_of_pr = {7: 3, 8: 4, 9: 6}
    join = join_writes(writes, events, lives, audit, bot="bot", issue_of_pr=issue_of_pr)
    assert join.matched == 2
    assert [line.split()[1] for line in join.unlogged] == [
        receive,
        "/repos/acme/widgets/pulls/8/merge",
    ]
    assert [line.split(" by ")[0] for line in join.cut_by_kill] == ["push of #5", "merge of #6"]
    # The merge by a replica that never led is flagged; the pushes held their claims.
    assert audit.pushes_under_claim == 3 and len(audit.unfenced) == 1


def test_progress_is_measured_in_ticks_that_ran_wholly_within_a_wait() -> None:
    watch = ProgressWatch(slots=1)
    waiting = IssueState("waiting_for_checks", 1, 1, 3)
    at = [T0 + timedelta(seconds=s) for s in range(8)]
    for moment in at[:6]:
        watch.sample({7: waiting}, moment)
    # A claimed turn holds the slot: no longer waiting, even before the run starts.
    watch.sample({7: replace(waiting, claims=1, open_claims=1)}, at[6])
    ticks = [(at[0], at[1]), (at[1], at[2]), (at[4], at[6]), (at[5], at[7])]
    worst = watch.worst(ticks)
    assert worst is not None and (worst.number, worst.ticks) == (7, 2)
    assert watch.describe(ticks) == "#7 2 ticks (5.0 s) in waiting_for_checks"


def test_an_issue_backing_off_before_a_retry_is_not_waiting() -> None:
    watch = ProgressWatch(slots=1)
    backing_off = IssueState("implementing", 3, 3, 14, claims=2, backing_off=True)
    at = [T0 + timedelta(seconds=s) for s in range(6)]
    for moment in at:
        watch.sample({1: backing_off}, moment)
    assert watch.worst([(at[0], at[1]), (at[2], at[3])]) is None
