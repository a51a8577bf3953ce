"""The sessions of running agents and hooks, kept on disk so a daemon's next life can end them.

Agents and hooks run in sessions of their own, so nothing ties them to the
daemon's life: a daemon killed with SIGKILL used to leave them running,
unattended. Two things close that:

- :func:`orchestrator.agent.process.spawn` starts every program with a parent
  death signal (SIGKILL when the daemon thread that started it dies), which
  ends the session's leader but not the processes it started;
- a :class:`ProcessRegistry` in the daemon's state directory holds one small
  JSON file per running agent or hook: the leader's pid (also its process
  group and session id), its start time, a random tag put in its environment,
  and which daemon process started it. The file goes when the session is
  gone. Before the program starts, a *pending* file (pid 0) holds its tag
  alone: a daemon killed between the start and the recording still leaves a
  way to find what it started. :meth:`ProcessRegistry.end_orphans`, run
  before a daemon starts agents, ends what a dead daemon's files still point at.

A pid alone is never trusted: a process counts as the recorded leader only
with the recorded start time (field 22 of ``/proc/PID/stat``, clock ticks since
boot), files of another boot are dropped unread, and files whose daemon is
still alive (another replica on this host, or this very process) are left alone.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

from orchestrator.logs import get_logger

log = get_logger(__name__)

# Inside the daemon's state directory.
REGISTRY_DIR = "agents"
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


# ------------------------------------------------------------- the registry


class TrackedGroup:
    """A program about to be started under the registry: its tag now, its entry once started."""

    def __init__(self, registry: ProcessRegistry, kind: str, label: str) -> None:
        self.registry = registry
        self.kind = kind
        self.label = label
        self.tag = secrets.token_hex(16)
        self.entry: GroupEntry | None = None
        self._pending: GroupEntry | None = None

    def environment(self, env: Mapping[str, str]) -> dict[str, str]:
        """``env`` with the tag every descendant inherits."""
        return {**env, TAG_ENV: self.tag}

    def starting(self) -> None:
        """Record the tag before the program starts (never raises: a failure is logged)."""
        self._pending = self.registry.record_pending(tag=self.tag, kind=self.kind, label=self.label)

    def started(self, pid: int) -> None:
        """Record the new session led by ``pid`` (never raises: a failure is logged)."""
        self.entry = self.registry.record(pid, tag=self.tag, kind=self.kind, label=self.label)
        if self.entry is not None:
            self._forget_pending()

    def ended(self) -> None:
        """Forget the session: call once no process of it is left."""
        if self.entry is not None:
            self.registry.remove(self.entry)
            self.entry = None
        self._forget_pending()

    def _forget_pending(self) -> None:
        if self._pending is not None:
            self.registry.remove(self._pending)
            self._pending = None


class ProcessRegistry:
    """One JSON file per running agent or hook session in ``folder``; see the module doc."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._boot = boot_id()
        me = read_process(os.getpid())
        self._owner = (me.pid, me.start_time) if me is not None else None

    def track(self, kind: str, label: str) -> TrackedGroup:
        """A program to record when it starts: ``kind`` is agent or hook, ``label`` says which."""
        return TrackedGroup(self, kind, label)

    def record_pending(self, *, tag: str, kind: str, label: str) -> GroupEntry | None:
        """Write the entry of a program about to start: its tag only (pid 0)."""
        if self._owner is None or not self._boot:
            return None
        return self._write(0, 0, tag=tag, kind=kind, label=label)

    def record(self, pid: int, *, tag: str, kind: str, label: str) -> GroupEntry | None:
        """Write the entry of the session ``pid`` leads, atomically; None when it could not.

        Where ``/proc`` tells no start times or boot id, nothing is recorded.
        """
        leader = read_process(pid)
        if self._owner is None or not self._boot or leader is None:
            return None
        return self._write(pid, leader.start_time, tag=tag, kind=kind, label=label)

    def _write(
        self, pid: int, start_time: int, *, tag: str, kind: str, label: str
    ) -> GroupEntry | None:
        assert self._owner is not None
        entry = GroupEntry(
            pid=pid,
            start_time=start_time,
            tag=tag,
            kind=kind,
            label=label,
            owner_pid=self._owner[0],
            owner_start_time=self._owner[1],
            boot_id=self._boot,
        )
        path = self.folder / entry.file_name
        temporary = self.folder / f".{entry.file_name}.tmp"
        try:
            self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(entry.to_json())
            # No fsync: what must survive is a killed daemon, not a lost machine (a
            # reboot ends every process anyway); the rename keeps readers from half a file.
            os.replace(temporary, path)
        except OSError as error:
            log.warning("agent_registry_write_failed", file=str(path), error=str(error))
            with contextlib.suppress(OSError):
                temporary.unlink()
            return None
        return entry

    def remove(self, entry: GroupEntry) -> None:
        path = self.folder / entry.file_name
        try:
            path.unlink(missing_ok=True)
        except OSError as error:
            log.warning("agent_registry_remove_failed", file=str(path), error=str(error))

    def entries(self) -> tuple[list[GroupEntry], list[Path]]:
        """The entries on disk, and the files that are not entries (removed, with a warning)."""
        found: list[GroupEntry] = []
        corrupt: list[Path] = []
        try:
            names = sorted(os.listdir(self.folder))
        except FileNotFoundError:
            return found, corrupt
        except OSError as error:
            log.warning("agent_registry_unreadable", folder=str(self.folder), error=str(error))
            return found, corrupt
        for name in names:
            # A daemon killed while writing leaves a temporary file; nothing points at it.
            if not name.endswith(".json"):
                continue
            path = self.folder / name
            try:
                found.append(GroupEntry.from_json(path.read_text(encoding="utf-8")))
            except (OSError, UnicodeDecodeError, ValueError, TypeError) as error:
                log.warning("agent_registry_entry_corrupt", file=str(path), error=str(error))
                corrupt.append(path)
                with contextlib.suppress(OSError):
                    path.unlink()
        return found, corrupt

    def end_orphans(
        self, *, grace_s: float = ORPHAN_GRACE_S, settle_s: float = KILL_SETTLE_S
    ) -> OrphanReport:
        """End what dead daemons' agents and hooks left running; remove their entries.

        For each entry whose daemon is gone: SIGTERM (and SIGCONT) to every
        process of its session, up to ``grace_s`` to exit, then SIGKILL until
        none is left or ``settle_s`` passed. Logs ``agent_orphans_ended`` when
        it signalled anything. Never raises.
        """
        entries, corrupt = self.entries()
        if not entries:
            return OrphanReport(corrupt=tuple(corrupt))
        plan = self._plan(entries)
        gone = list(plan.drop)
        ended: set[int] = set()
        survivors: frozenset[int] = frozenset()
        if plan.end:
            ended, survivors = self._end(plan, grace_s=grace_s, settle_s=settle_s)
            left = self._plan(plan.end).end
            gone += [entry for entry in plan.end if entry not in left]
        for entry in gone:
            self.remove(entry)
        report = OrphanReport(
            ended=tuple(sorted(ended)),
            survivors=tuple(sorted(survivors)),
            removed=len(gone),
            kept=len(entries) - len(gone),
            corrupt=tuple(corrupt),
        )
        if ended:
            log.warning(
                "agent_orphans_ended",
                count=len(ended),
                pids=list(report.ended),
                entries=[f"{entry.kind}:{entry.label}" for entry in plan.end],
                survivors=list(report.survivors),
            )
        return report

    def _plan(self, entries: Iterable[GroupEntry]) -> SweepPlan:
        table = process_table(tags=True)
        return plan_sweep(entries, table, boot=self._boot, protected=lineage(os.getpid(), table))

    def _end(
        self, plan: SweepPlan, *, grace_s: float, settle_s: float
    ) -> tuple[set[int], frozenset[int]]:
        """Signal the plan's targets; returns every pid signalled and those still alive."""
        entries = list(plan.end)
        targets = plan.targets
        ended = set(targets)
        for sig in (signal.SIGTERM, signal.SIGCONT):
            _signal_all(targets, sig)
        deadline = time.monotonic() + grace_s
        while targets and time.monotonic() < deadline:
            time.sleep(_POLL_S)
            targets = self._plan(entries).targets
        deadline = time.monotonic() + settle_s
        while targets:
            # Processes forked during the grace period are in the fresh plan too.
            ended |= targets
            _signal_all(targets, signal.SIGKILL)
            if time.monotonic() >= deadline:
                break
            time.sleep(_POLL_S)
            targets = self._plan(entries).targets
        return ended, targets


def _signal_all(pids: Iterable[int], sig: signal.Signals) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)
