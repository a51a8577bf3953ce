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
  before a daemon starts agents, ends what a dead daemon's files still point at
  (how, in :mod:`orchestrator.agent.reaper`).
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Mapping
from pathlib import Path

from orchestrator.agent.reaper import (
    KILL_SETTLE_S,
    ORPHAN_GRACE_S,
    TAG_ENV,
    GroupEntry,
    OrphanReport,
    boot_id,
    end_sessions,
    plan_now,
    read_process,
)
from orchestrator.logs import get_logger

log = get_logger(__name__)

# Inside the daemon's state directory.
REGISTRY_DIR = "agents"


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
        plan = plan_now(entries, boot=self._boot)
        gone = list(plan.drop)
        ended: set[int] = set()
        survivors: frozenset[int] = frozenset()
        if plan.end:
            ended, survivors = end_sessions(
                plan, boot=self._boot, grace_s=grace_s, settle_s=settle_s
            )
            left = plan_now(plan.end, boot=self._boot).end
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
