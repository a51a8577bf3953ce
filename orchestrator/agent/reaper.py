"""Finding and ending the processes that dead daemons' agents and hooks left running.

The sweep reads ``/proc`` once into a table, decides for each recorded
session (:class:`GroupEntry`) whether its daemon still lives, which live
processes are its orphans, or whether the entry can go (:func:`plan_sweep`,
pure), then signals the orphans (:func:`end_sessions`).

A pid alone is never trusted: a process counts as the recorded leader only
with the recorded start time (field 22 of ``/proc/PID/stat``, clock ticks since
boot), files of another boot are dropped unread, and files whose daemon is
still alive (another replica on this host, or this very process) are left alone.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

# Every tracked program and whatever it starts inherit this variable: it finds
# descendants that left the session (``setsid``), unless they cleared their environment.
TAG_ENV = "ORCHESTRATOR_PROCESS_TAG"
# How long orphans get after SIGTERM, then how long the kernel gets after SIGKILL.
ORPHAN_GRACE_S = 2.0
KILL_SETTLE_S = 5.0
_POLL_S = 0.05
_DEAD_STATES = frozenset({"Z", "X", "x"})
_PROC = Path("/proc")
_BOOT_ID = _PROC / "sys" / "kernel" / "random" / "boot_id"
_TAG_PREFIX = TAG_ENV.encode() + b"="
_INT_FIELDS = ("pid", "start_time", "owner_pid", "owner_start_time")
_STR_FIELDS = ("tag", "kind", "label", "boot_id")


# ------------------------------------------------------------------- /proc


@dataclass(frozen=True)
class ProcessInfo:
    """One process as ``/proc`` shows it; ``tag`` only when its environment was read."""

    pid: int
    ppid: int
    pgid: int
    sid: int
    start_time: int
    state: str
    tag: str | None = None

    @property
    def alive(self) -> bool:
        """Running or sleeping, not a zombie waiting to be reaped."""
        return self.state not in _DEAD_STATES


def parse_stat(pid: int, text: str) -> ProcessInfo | None:
    """A ``/proc/PID/stat`` line as a :class:`ProcessInfo` (None when malformed)."""
    # The command name is in parentheses and may itself contain spaces or ')'.
    fields = text[text.rfind(")") + 2 :].split()
    # fields[0] is field 3 of proc(5) (state); the start time is field 22.
    if len(fields) < 20:
        return None
    try:
        return ProcessInfo(
            pid=pid,
            ppid=int(fields[1]),
            pgid=int(fields[2]),
            sid=int(fields[3]),
            start_time=int(fields[19]),
            state=fields[0],
        )
    except ValueError:
        return None


def read_process(pid: int) -> ProcessInfo | None:
    """The process ``pid`` now, or None when there is none."""
    try:
        return parse_stat(pid, (_PROC / str(pid) / "stat").read_text())
    except OSError:
        return None


def read_tag(pid: int) -> str | None:
    """The registry tag in the environment ``pid`` started with (None: none, or unreadable)."""
    try:
        environ = (_PROC / str(pid) / "environ").read_bytes()
    except OSError:
        return None
    for item in environ.split(b"\0"):
        if item.startswith(_TAG_PREFIX):
            return item[len(_TAG_PREFIX) :].decode("ascii", "replace")
    return None


def process_table(*, tags: bool = False) -> dict[int, ProcessInfo]:
    """Every process of ``/proc`` by pid; with ``tags``, their environment's tag too."""
    table: dict[int, ProcessInfo] = {}
    try:
        names = os.listdir(_PROC)
    except OSError:
        return table
    for name in names:
        if not name.isdigit():
            continue
        info = read_process(int(name))
        if info is None:
            continue
        if tags:
            info = ProcessInfo(**{**asdict(info), "tag": read_tag(info.pid)})
        table[info.pid] = info
    return table


def boot_id() -> str:
    """This boot's id: start times count from the boot, so they compare only within one."""
    try:
        return _BOOT_ID.read_text().strip()
    except OSError:
        return ""


# ------------------------------------------------------------ the entries


@dataclass(frozen=True)
class GroupEntry:
    """One recorded session: its leader (pid = group id = session id), its tag, its daemon."""

    pid: int
    start_time: int
    tag: str
    kind: str
    label: str
    owner_pid: int
    owner_start_time: int
    boot_id: str

    @property
    def pending(self) -> bool:
        """Written before the program started: only its tag is known."""
        return self.pid == 0

    @property
    def file_name(self) -> str:
        if self.pending:
            return f"pending-{self.tag}.json"
        # With the start time, a recycled pid never overwrites an older entry.
        return f"{self.pid}-{self.start_time}.json"

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> GroupEntry:
        """Raises ValueError unless ``text`` is an entry with every field of the right type."""
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        for name in _INT_FIELDS:
            if type(data.get(name)) is not int:
                raise ValueError(f"{name} is missing or not a whole number")
        for name in _STR_FIELDS:
            if not isinstance(data.get(name), str):
                raise ValueError(f"{name} is missing or not a string")
        entry = cls(**{name: data[name] for name in (*_INT_FIELDS, *_STR_FIELDS)})
        if entry.pending:
            if entry.start_time != 0 or len(entry.tag) < 16:
                raise ValueError("a pending entry has start time 0 and a tag")
        elif entry.pid <= 1:
            raise ValueError(f"pid {entry.pid} is not an agent's")
        return entry


def owner_alive(entry: GroupEntry, table: Mapping[int, ProcessInfo]) -> bool:
    """Whether the daemon process that recorded ``entry`` still runs (same pid, same start)."""
    owner = table.get(entry.owner_pid)
    return owner is not None and owner.alive and owner.start_time == entry.owner_start_time


def orphans_of(entry: GroupEntry, table: Mapping[int, ProcessInfo]) -> frozenset[int]:
    """The live processes that belong to ``entry``'s session, its leader included.

    A process carrying the entry's tag always belongs. Otherwise it must be in
    the leader's process group or session and have started no earlier than the
    leader; when the leader's pid is held by a process with another start time,
    the pid was recycled and its group is someone else's. A dead leader's number
    stays reserved (Linux does not hand out a pid that is still some group's or
    session's id), so live members of that group or session are the leader's.
    """
    if entry.pending:
        # Nothing but the tag is known of a program recorded before it started.
        return frozenset(p.pid for p in table.values() if p.alive and p.tag == entry.tag)
    leader = table.get(entry.pid)
    recycled = leader is not None and leader.start_time != entry.start_time
    return frozenset(
        proc.pid
        for proc in table.values()
        if proc.alive
        and (
            proc.tag == entry.tag
            or (
                not recycled
                and entry.pid in (proc.pgid, proc.sid)
                and proc.start_time >= entry.start_time
            )
        )
    )


@dataclass(frozen=True)
class SweepPlan:
    """What to do with each entry: leave it to its live daemon, end its orphans, or drop it."""

    keep: tuple[GroupEntry, ...] = ()
    end: Mapping[GroupEntry, frozenset[int]] = field(default_factory=dict)
    drop: tuple[GroupEntry, ...] = ()

    @property
    def targets(self) -> frozenset[int]:
        return frozenset().union(*self.end.values())


def plan_sweep(
    entries: Iterable[GroupEntry],
    table: Mapping[int, ProcessInfo],
    *,
    boot: str,
    protected: frozenset[int],
) -> SweepPlan:
    """Decide each entry from one look at the processes; ``protected`` pids are never targets."""
    keep: list[GroupEntry] = []
    end: dict[GroupEntry, frozenset[int]] = {}
    drop: list[GroupEntry] = []
    for entry in entries:
        if entry.boot_id != boot:
            drop.append(entry)
        elif owner_alive(entry, table):
            keep.append(entry)
        elif targets := orphans_of(entry, table) - protected:
            end[entry] = targets
        else:
            drop.append(entry)
    return SweepPlan(keep=tuple(keep), end=end, drop=tuple(drop))


def lineage(pid: int, table: Mapping[int, ProcessInfo]) -> frozenset[int]:
    """``pid`` and its ancestors: a sweep never signals the daemon or what started it."""
    found: set[int] = set()
    current: int | None = pid
    while current is not None and current > 0 and current not in found:
        found.add(current)
        proc = table.get(current)
        current = proc.ppid if proc is not None else None
    return frozenset(found | {1})


@dataclass(frozen=True)
class OrphanReport:
    """What one sweep did: the processes it signalled, and the entries it removed or kept."""

    ended: tuple[int, ...] = ()
    survivors: tuple[int, ...] = ()
    removed: int = 0
    kept: int = 0
    corrupt: tuple[Path, ...] = ()


def plan_now(entries: Iterable[GroupEntry], *, boot: str) -> SweepPlan:
    """The sweep plan for ``entries`` from one fresh look at ``/proc`` (this process protected)."""
    table = process_table(tags=True)
    return plan_sweep(entries, table, boot=boot, protected=lineage(os.getpid(), table))


def end_sessions(
    plan: SweepPlan, *, boot: str, grace_s: float, settle_s: float
) -> tuple[set[int], frozenset[int]]:
    """Signal the plan's targets; returns every pid signalled and those still alive.

    SIGTERM (and SIGCONT) to every target, up to ``grace_s`` for them to exit,
    then SIGKILL to whatever is left (processes forked meanwhile included) until
    none is or ``settle_s`` passed.
    """
    entries = list(plan.end)
    targets = plan.targets
    ended = set(targets)
    for sig in (signal.SIGTERM, signal.SIGCONT):
        _signal_all(targets, sig)
    deadline = time.monotonic() + grace_s
    while targets and time.monotonic() < deadline:
        time.sleep(_POLL_S)
        targets = plan_now(entries, boot=boot).targets
    deadline = time.monotonic() + settle_s
    while targets:
        # Processes forked during the grace period are in the fresh plan too.
        ended |= targets
        _signal_all(targets, signal.SIGKILL)
        if time.monotonic() >= deadline:
            break
        time.sleep(_POLL_S)
        targets = plan_now(entries, boot=boot).targets
    return ended, targets


def _signal_all(pids: Iterable[int], sig: signal.Signals) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)
