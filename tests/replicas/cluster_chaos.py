"""The pieces of the cluster chaos test: replica lives, the seeded fault plan, and the audit.

A :class:`ReplicaLives` is one replica id whose ``orchestrator run`` processes
follow one another, each with a JSON log of its own, so every logged event is
known to come from one process. A :class:`FaultPlan` is drawn from a seeded
``random.Random``. The audit reads the logs back as :class:`Event` rows and
checks that every push and merge was made under a claim or a lease the logs
show was held, and that every push and merge GitHub recorded is one of them.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from random import Random
from typing import Any

from orchestrator.logs import read_json_log
from orchestrator_sim.clock import parse_time
from tests.e2e.harness import Flow

ORCHESTRATOR = str(Path(sys.executable).parent / "orchestrator")


SKEWED_CLOCK = Path(__file__).parent / "skewed_clock"


def skewed_env(skew_s: int) -> dict[str, str]:
    """The environment that sets a daemon's wall clock ``skew_s`` seconds off.

    Only the wall clock moves (``time.time()``, ``datetime.now()``, the log's
    timestamps); the monotonic clock, which timeouts use, is left alone. See
    ``skewed_clock/sitecustomize.py``.
    """
    return {"PYTHONPATH": str(SKEWED_CLOCK), "CLOCK_SKEW_S": str(skew_s)} if skew_s else {}


# ------------------------------------------------------------------ replicas


@dataclass
class Life:
    """One process of a replica: when it ran, its log, and what ended it."""

    replica: str
    number: int
    log: Path
    proc: subprocess.Popen[bytes]
    started: float = field(default_factory=time.time)
    ended: float | None = None
    # The signal the test sent ("SIGKILL", "SIGTERM"), None while not signalled.
    signalled: str | None = None
    signalled_at: float | None = None
    # How far the process's wall clock (and so its log's timestamps) is off.
    skew_s: int = 0

    @property
    def name(self) -> str:
        return f"{self.replica}#{self.number}"


class ReplicaLives:
    """One replica id, started again under the same id after each kill."""

    def __init__(
        self,
        name: str,
        argv: list[str],
        env: dict[str, str],
        log_dir: Path,
        *,
        skew_s: int = 0,
    ) -> None:
        self.name = name
        self.argv = argv
        self.env = env
        self.log_dir = log_dir
        self.lives: list[Life] = []
        self.skew_s = skew_s

    @property
    def current(self) -> Life | None:
        return self.lives[-1] if self.lives else None

    @property
    def running(self) -> bool:
        """A process is up and was not signalled."""
        life = self.current
        return life is not None and life.ended is None and life.signalled is None

    def start(self) -> Life:
        number = len(self.lives) + 1
        log = self.log_dir / f"{self.name}.{number}.log"
        with log.open("ab") as out:
            proc = subprocess.Popen(
                [
                    ORCHESTRATOR,
                    "--log-format",
                    "json",
                    *self.argv,
                    "--replica-id",
                    self.name,
                ],
                env={
                    "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                    "PYTHONFAULTHANDLER": "1",
                    "ORCHESTRATOR_WORKSPACE__ROOT": str(self.log_dir / f"workspaces-{self.name}"),
                    **self.env,
                    **skewed_env(self.skew_s),
                },
                stdout=out,
                stderr=out,
                start_new_session=True,
            )
        life = Life(self.name, number, log, proc, skew_s=self.skew_s)
        self.lives.append(life)
        return life

    def signal(self, sig: signal.Signals) -> Life:
        life = self.current
        assert life is not None and life.ended is None
        life.proc.send_signal(sig)
        life.signalled, life.signalled_at = sig.name, time.time()
        return life

    def reap(self) -> Life | None:
        """The current life, when its process has just been seen gone."""
        life = self.current
        if life is None or life.ended is not None or life.proc.poll() is None:
            return None
        life.ended = time.time()
        return life

    def dump_stacks(self, max_lines: int = 200) -> str:
        """End the current process with SIGABRT; the Python stacks of its threads, as printed.

        The processes run with ``PYTHONFAULTHANDLER=1``, so the interpreter prints
        every thread's stack to the log on SIGABRT: where a stuck daemon waits.
        """
        life = self.current
        if life is None or life.proc.poll() is not None:
            return ""
        life.proc.send_signal(signal.SIGABRT)
        try:
            life.proc.wait(10)
        except subprocess.TimeoutExpired:
            life.proc.kill()
            life.proc.wait(10)
        self.reap()
        text = life.log.read_text(encoding="utf-8", errors="replace")
        dump = text[text.rfind("Fatal Python error") :].splitlines()[:max_lines]
        return f"{life.name}:\n    " + "\n    ".join(dump)

    def kill_now(self) -> None:
        life = self.current
        if life is not None and life.proc.poll() is None:
            life.proc.kill()
            life.proc.wait(10)

    def stop(self, timeout_s: float = 30.0) -> int | None:
        """SIGTERM the current process and wait for it; its exit status (None: it hung)."""
        life = self.current
        if life is None or life.proc.poll() is not None:
            return None if life is None else life.proc.returncode
        self.signal(signal.SIGTERM)
        try:
            return life.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            return None
        finally:
            self.reap()


class GreenChecks:
    """Plays the CI: a successful ``ci`` check on the head of every open pull request, once."""

    def __init__(self, flow: Flow) -> None:
        self.flow = flow
        self.greened: set[str] = set()

    def __call__(self) -> None:
        world = self.flow.world
        for pull in self.flow.pulls():
            head = str(pull["head"]["sha"])
            if pull["state"] == "open" and head not in self.greened:
                world.control.check_run(world.repo, sha=head, name="ci", conclusion="success")
                self.greened.add(head)


# ------------------------------------------------------------------ faults


@dataclass(frozen=True)
class Kill:
    """Send ``signal`` to ``target`` (a replica id, or whoever leads then) at ``at_s``."""

    at_s: float
    signal: signal.Signals
    target: str
    restart_after_s: float


@dataclass(frozen=True)
class FaultPlan:
    """The kills, the one database outage and the one skewed clock of a run.

    Times are in seconds from the start; ``skewed`` runs with its wall clock
    ``skew_s`` seconds off (ahead or behind) in every life.
    """

    kills: tuple[Kill, ...]
    outage_at_s: float
    outage_s: float
    skewed: str
    skew_s: int

    @classmethod
    def draw(
        cls, rng: Random, replicas: Sequence[str], *, kills: int, window_s: tuple[float, float]
    ) -> FaultPlan:
        """Kills spread over ``window_s``, one to a slot; the leader is hit by each signal.

        The outage starts between 10 and 20 s and lasts 5 to 10 s. No kill falls
        in the 4 s before it, so every replica is up when the database goes away.
        """
        outage_at, outage_s = round(rng.uniform(10.0, 20.0), 1), round(rng.uniform(5.0, 10.0), 1)
        start, end = window_s
        aims = [("leader", signal.SIGKILL), ("leader", signal.SIGTERM)]
        aims += [
            (rng.choice(["leader", *replicas]), rng.choice([signal.SIGKILL, signal.SIGTERM]))
            for _ in range(kills - len(aims))
        ]
        rng.shuffle(aims)
        slot = (end - start) / kills
        planned = []
        for i, (target, sig) in enumerate(aims):
            at = start + i * slot + rng.uniform(0, 0.8 * slot)
            while outage_at - 4.0 <= at < outage_at:
                at = start + i * slot + rng.uniform(0, 0.8 * slot)
            restart_after_s = round(rng.uniform(0.5, 3.0), 1)
            planned.append(Kill(round(at, 1), sig, target, restart_after_s))
        skewed, skew_s = rng.choice(list(replicas)), rng.choice([30, -30])
        return cls(tuple(planned), outage_at, outage_s, skewed, skew_s)

    @property
    def outage_end_s(self) -> float:
        return self.outage_at_s + self.outage_s

    def describe(self) -> str:
        kills = ", ".join(
            f"{k.signal.name} {k.target} at {k.at_s:g}s (back {k.restart_after_s:g}s later)"
            for k in self.kills
        )
        return (
            f"kills: {kills}; outage at {self.outage_at_s:g}s for {self.outage_s:g}s; "
            f"{self.skewed}'s clock {self.skew_s:+d} s"
        )


# ------------------------------------------------------------------ the logs


@dataclass(frozen=True)
class Event:
    """One logged event of one replica life."""

    at: datetime
    life: str
    replica: str
    name: str
    fields: dict[str, Any]

    def __str__(self) -> str:
        shown = {k: v for k, v in self.fields.items() if k not in ("event", "timestamp", "repo")}
        return f"{self.at.isoformat(timespec='milliseconds')} {self.life} {self.name} {shown}"


def read_events(lives: Sequence[Life]) -> list[Event]:
    """Every JSON event of these lives, in time order (a line cut by SIGKILL is skipped).

    The timestamps of a life whose clock was skewed are set right.
    """
    found = []
    for life in lives:
        for entry in read_json_log(life.log):
            found.append(
                Event(
                    at=datetime.fromisoformat(entry["timestamp"]) - timedelta(seconds=life.skew_s),
                    life=life.name,
                    replica=life.replica,
                    name=str(entry.get("event")),
                    fields=entry,
                )
            )
    return sorted(found, key=lambda e: e.at)


def has_started(life: Life) -> bool:
    """The life got through start-up (``daemon_started``)."""
    return any(e.name == "daemon_started" for e in read_events([life]))


def issue_of_key(key: str) -> int:
    """The issue number of an idempotency key ``owner/repo#12:kind:target``."""
    match = re.search(r"#(\d+):", key)
    assert match is not None, key
    return int(match.group(1))


def issue_number(value: object) -> int | None:
    """The number of a logged ``issue`` (``owner/repo#12``; a bare number is read too)."""
    if value is None:
        return None
    match = re.search(r"(\d+)$", str(value))
    assert match is not None, value
    return int(match.group(1))


def _issue(event: Event) -> int | None:
    return issue_number(event.fields.get("issue"))


def leader_at(events: Sequence[Event], write: Event) -> Event | None:
    """The ``leadership_taken`` that made ``write``'s life the leader when it logged it.

    That is the life's last ``leadership_taken`` before the write, followed by no
    ``leadership_lost`` of that life and by no ``leadership_taken`` of any other
    life (the lease's epoch grows whenever it changes hands).
    """
    taken: Event | None = None
    for event in events:
        if event.at > write.at:
            break
        if event.name == "leadership_taken":
            taken = event if event.life == write.life else None
        elif event.name == "leadership_lost" and event.life == write.life:
            taken = None
    return taken


def claim_at(events: Sequence[Event], write: Event, issue: int) -> Event | None:
    """The ``turn_claimed`` of ``issue`` by ``write``'s life that still held when it logged.

    The claim of the run the write names (the worker's context carries its
    run id), else the life's last claim of the issue; it holds when no
    ``claim_lost`` of that run and no claim of the issue by any other life
    (``turn_claimed``, ``claim_taken_over``) came between.
    """
    run_id = write.fields.get("run_id")
    claim: Event | None = None
    for event in events:
        if event.at > write.at:
            break
        if event.name in ("turn_claimed", "claim_taken_over") and _issue(event) == issue:
            mine = event.life == write.life and (run_id is None or event.fields["run_id"] == run_id)
            if event.name == "turn_claimed" and mine:
                claim = event
            elif event.life != write.life:
                claim = None
        elif (
            event.name == "claim_lost"
            and claim is not None
            and event.life == write.life
            and event.fields.get("run_id") == claim.fields["run_id"]
        ):
            claim = None
    return claim


def push_issue(event: Event) -> int:
    """The issue a push was for: ``branch_published`` names it ``owner/repo#12``, a
    ``push_branch`` side effect in its key."""
    if event.name == "branch_published":
        match = re.search(r"#(\d+)$", str(event.fields["issue"]))
        assert match is not None, event
        return int(match.group(1))
    return issue_of_key(str(event.fields["key"]))


def is_push(event: Event) -> bool:
    """A push: the workspace's ``branch_published`` (logged right after the git push
    returned), or its ``push_branch`` side effect (logged once the outbox has it)."""
    return event.name == "branch_published" or (
        event.name == "side_effect" and event.fields.get("kind") == "push_branch"
    )


def is_merge(event: Event) -> bool:
    return event.name == "side_effect" and event.fields.get("kind") == "merge_pr"


@dataclass
class FencingAudit:
    """Every logged push and merge, with what allowed it; the ones nothing allowed."""

    pushes_under_claim: int = 0
    pushes_under_lease: int = 0
    merges: int = 0
    unfenced: list[str] = field(default_factory=list)

    def check_push(self, events: Sequence[Event], push: Event, issue: int) -> None:
        """Check one push; counted once, by its ``branch_published`` (or its kill)."""
        counted = push.name != "side_effect"
        if claim_at(events, push, issue) is not None:
            self.pushes_under_claim += counted
        elif leader_at(events, push) is not None:
            self.pushes_under_lease += counted
        else:
            self.unfenced.append(f"push of #{issue} without its claim or the lease: {push}")


def audit_fencing(events: Sequence[Event]) -> FencingAudit:
    """Check each logged push and merge against the claims and leases the logs show.

    A push is allowed when its life held the issue's turn claim (see
    :func:`claim_at`) or led the repository (:func:`leader_at`: the leader's
    tick pushes what a turn's own push left undone); a merge only when it led.
    """
    audit = FencingAudit()
    for event in events:
        if is_push(event):
            audit.check_push(events, event, push_issue(event))
        elif is_merge(event):
            audit.merges += 1
            if leader_at(events, event) is None:
                issue = issue_of_key(str(event.fields["key"]))
                audit.unfenced.append(f"merge of #{issue} while not leading: {event}")
    return audit


def write_cut_by_kill(events: Sequence[Event], life: Life, kind: str) -> Event | None:
    """The push or merge a SIGKILLed life was making when it died, as an event at its death.

    A push: its last turn recorded with a commit, when neither the push's
    ``branch_published`` nor a ``turn_pushed`` or ``turn_result_discarded`` of
    that run followed. A merge: its last move of an issue to ``merging``, when
    neither that issue's ``merge_pr`` side effect nor another move of it
    followed. In both cases the process died between the write and its log line.
    """
    if life.signalled != "SIGKILL" or life.signalled_at is None:
        return None
    pending: Event | None = None
    for event in events:
        if event.life != life.name:
            continue
        if kind == "push" and event.name == "turn_recorded" and event.fields.get("committed"):
            pending = event
        elif kind == "merge" and event.name == "phase_transition":
            pending = event if event.fields.get("to_phase") == "merging" else None
        elif pending is None or event.fields.get("issue") != pending.fields["issue"]:
            continue
        elif kind == "push" and event.fields.get("run_id") == pending.fields["run_id"]:
            if event.name in ("turn_pushed", "turn_result_discarded") or is_push(event):
                pending = None
        elif kind == "merge" and is_merge(event):
            pending = None
    if pending is None:
        return None
    died = datetime.fromtimestamp(life.signalled_at, tz=UTC)
    return Event(died, life.name, life.replica, f"killed_mid_{kind}", dict(pending.fields))


@dataclass
class WriteJoin:
    """GitHub's record of the bot's pushes and merges, joined with what the replicas logged."""

    matched: int = 0
    # Writes whose process was SIGKILLed before it could log them (each audited at its death).
    cut_by_kill: list[str] = field(default_factory=list)
    unlogged: list[str] = field(default_factory=list)


def join_writes(
    writes: Sequence[dict[str, Any]],
    events: Sequence[Event],
    lives: Sequence[Life],
    audit: FencingAudit,
    *,
    bot: str,
    issue_of_pr: dict[int, int],
    slack_s: float = 4.0,
) -> WriteJoin:
    """Match the bot's pushes and merges in GitHub's write log with logged ones.

    GitHub stamps a write in whole seconds and a replica logs a push
    (``branch_published``) or a merge (its ``side_effect``) right after it
    succeeded, so a write at second ``w`` is matched with a logged one of the
    same kind (and, for a merge, the same issue) in ``[w, w + 1 + slack_s)``,
    each at most once, earliest first. A write left over is explained only by a
    process SIGKILLed in that window in the middle of such a write
    (:func:`write_cut_by_kill`), and that write goes through the audit at the
    moment of the kill. Any other is unlogged: no audit covered it.
    """
    logged = {
        "push": [e for e in events if e.name == "branch_published"],
        "merge": [e for e in events if is_merge(e)],
    }
    cut = {
        kind: {life.name: write_cut_by_kill(events, life, kind) for life in lives}
        for kind in ("push", "merge")
    }
    used: set[int] = set()
    join = WriteJoin()
    for write in sorted(writes, key=lambda w: str(w["time"])):
        path = str(write["path"])
        if write["login"] != bot or int(write["status"]) >= 300:
            continue
        merged = re.fullmatch(r"/repos/[^/]+/[^/]+/pulls/(\d+)/merge", path)
        if path.endswith("/git-receive-pack"):
            kind, issue = "push", None
        elif merged is not None and write["method"] == "PUT":
            kind, issue = "merge", issue_of_pr.get(int(merged.group(1)))
        else:
            continue
        second = parse_time(str(write["time"]))
        window = (second, second + timedelta(seconds=1 + slack_s))

        def fits(event: Event, window: tuple[datetime, datetime] = window) -> bool:
            return window[0] <= event.at < window[1]

        match = next(
            (
                e
                for e in logged[kind]
                if id(e) not in used
                and fits(e)
                and (issue is None or issue_of_key(str(e.fields["key"])) == issue)
            ),
            None,
        )
        if match is not None:
            used.add(id(match))
            join.matched += 1
            continue
        killed = next(
            (
                e
                for e in cut[kind].values()
                if e is not None
                and fits(e)
                and (issue is None or issue_number(e.fields["issue"]) == issue)
            ),
            None,
        )
        if killed is None:
            join.unlogged.append(f"{write['method']} {path} at {write['time']} (issue {issue})")
            continue
        del cut[kind][killed.life]
        number = issue_number(killed.fields["issue"])
        assert number is not None, killed
        issue = number
        if kind == "push":
            audit.check_push(events, killed, issue)
        elif leader_at(events, killed) is None:
            audit.unfenced.append(f"merge of #{issue} while not leading: {killed}")
        join.cut_by_kill.append(
            f"{kind} of #{issue} by {killed.life}, killed at {killed.at:%H:%M:%S.%f}"
        )
    return join


# ------------------------------------------------------------------ progress


@dataclass(frozen=True)
class IssueState:
    """What the test samples of one issue: a change in any of it is progress."""

    phase: str
    runs_started: int
    runs_ended: int
    # Side effects recorded for the issue, and their attempts.
    writes: int
    # Turn claims of the issue, and how many of them are still open (dispatched, not over).
    claims: int = 0
    open_claims: int = 0
    # A failed turn's retry is not due yet: the issue waits by design.
    backing_off: bool = False

    @property
    def running(self) -> bool:
        """A turn of its own is dispatched or running: it holds an agent slot."""
        return self.open_claims > 0 or self.runs_started > self.runs_ended


@dataclass(frozen=True)
class Wait:
    """One issue waiting, with an agent slot free, in one unchanged state."""

    number: int
    began: datetime
    # The last sample that still saw it waiting.
    seen_until: datetime
    state: IssueState
    # Ticks that ran wholly between the two (see ProgressWatch.worst).
    ticks: int = 0

    def describe(self) -> str:
        took = (self.seen_until - self.began).total_seconds()
        return f"#{self.number} {self.ticks} ticks ({took:.1f} s) in {self.state.phase}"


@dataclass
class ProgressWatch:
    """The longest an unfinished issue went without progress while it could have had some.

    Fed samples of every issue's :class:`IssueState` (see :meth:`sample`). An
    issue is waiting while it is not done, runs no agent turn of its own (none
    claimed, none started), no retry backoff holds it and an agent slot is free;
    a wait ends when its state changes or it stops waiting. Waits are measured in
    the leader's ticks that ran wholly within them, not in seconds: a machine
    slowed down by other work slows the ticks down too.
    """

    slots: int
    last: dict[int, IssueState] = field(default_factory=dict)
    since: dict[int, datetime] = field(default_factory=dict)
    # (issue, when its wait began) -> the wait as last seen.
    waits: dict[tuple[int, datetime], Wait] = field(default_factory=dict)

    def sample(self, states: dict[int, IssueState], at: datetime) -> None:
        running = sum(state.running for state in states.values())
        for number, state in states.items():
            waiting = (
                state.phase != "done"
                and not state.running
                and not state.backing_off
                and running < self.slots
            )
            if not waiting or self.last.get(number) != state:
                self.since.pop(number, None)
            if waiting:
                began = self.since.setdefault(number, at)
                self.waits[(number, began)] = Wait(number, began, at, state)
            self.last[number] = state

    def measured(self, ticks: list[tuple[datetime, datetime]]) -> list[Wait]:
        """Every wait with the ticks (start, end) that ran wholly within it, longest first."""
        found = [
            replace(
                wait,
                ticks=sum(
                    1 for start, end in ticks if wait.began <= start and end <= wait.seen_until
                ),
            )
            for wait in self.waits.values()
        ]
        return sorted(found, key=lambda wait: -wait.ticks)

    def worst(self, ticks: list[tuple[datetime, datetime]]) -> Wait | None:
        """The wait that spanned the most ticks (None: none waited)."""
        measured = self.measured(ticks)
        return measured[0] if measured else None

    def describe(self, ticks: list[tuple[datetime, datetime]]) -> str:
        """The longest wait of each issue."""
        longest: dict[int, Wait] = {}
        for wait in self.measured(ticks):
            longest.setdefault(wait.number, wait)
        return ", ".join(wait.describe() for wait in longest.values())
