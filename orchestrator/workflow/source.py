"""The live policy of a daemon: load once, re-check at tick boundaries, keep the last good one.

:class:`PolicySource` refuses to start without a valid policy (it raises
:class:`PolicyError`), so a tick never runs without one. Each :meth:`refresh`
costs one ``stat`` when nothing changed; a changed file is hashed and, when its
content differs, checked in full. A valid change replaces the policy for the
next tick; an invalid one keeps the previous policy and records the located
errors for the dashboard and the logs.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path

from orchestrator.logs import get_logger
from orchestrator.workflow.loader import (
    Workflow,
    check_bytes,
    digest_of,
    display_name,
    read_policy_bytes,
)
from orchestrator.workflow.problems import Location, PolicyError, Problem

# A file modified this close to our last read may change again without its
# mtime moving on coarse file systems: such a file is hashed again each time.
RACY_WINDOW_NS = 2_000_000_000

_log = get_logger(__name__)


class ReloadOutcome(StrEnum):
    """What one :meth:`PolicySource.refresh` did."""

    UNCHANGED = "unchanged"
    APPLIED = "applied"
    REJECTED = "rejected"


@dataclass(frozen=True)
class ReloadFailure:
    """The last rejected version of the file: its errors, when, and its content hash."""

    problems: tuple[Problem, ...]
    failed_at: datetime
    digest: str | None

    @property
    def messages(self) -> tuple[str, ...]:
        return tuple(str(p) for p in self.problems)


@dataclass(frozen=True)
class PolicyStatus:
    """What the dashboard shows about the policy: the one in force and the last rejected edit."""

    path: str
    digest: str
    loaded_at: datetime
    warnings: tuple[str, ...]
    last_error: ReloadFailure | None


def _utc_now() -> datetime:
    return datetime.now(UTC)


class PolicySource:
    """Holds the policy in force for one WORKFLOW.md and reloads it safely. Thread-safe.

    ``env`` (default: ``os.environ`` at each load) and ``flags`` are the
    override layers; they stay the same across reloads.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        env: Mapping[str, str] | None = None,
        flags: Mapping[str, object] | None = None,
        clock: Callable[[], datetime] = _utc_now,
    ) -> None:
        self._path = Path(path)
        self._source = display_name(self._path)
        self._env = dict(env) if env is not None else None
        self._flags = dict(flags or {})
        self._clock = clock
        self._lock = threading.Lock()
        self._refresh_lock = threading.Lock()
        self._forced = False
        self._signature: tuple[int, int, int, int] | None = None
        self._read_at_ns = 0
        self._failure: ReloadFailure | None = None
        read = self._read()
        if isinstance(read, Problem):
            raise PolicyError([read])
        data, signature, read_at = read
        check = check_bytes(
            data, path=self._path, source=self._source, env=self._environment(), flags=self._flags
        )
        if check.workflow is None:
            raise PolicyError(check.problems)
        self._current: Workflow = check.workflow
        self._loaded_at = clock()
        self._signature, self._read_at_ns = signature, read_at
        _log.info(
            "policy_loaded",
            path=self._source,
            digest=check.workflow.digest[:12],
            rollout_mode=str(check.workflow.policy.rollout.mode),
            warnings=[str(w) for w in check.workflow.warnings],
        )

    @property
    def path(self) -> Path:
        return self._path

    @property
    def current(self) -> Workflow:
        """The policy in force: always a valid one."""
        with self._lock:
            return self._current

    @property
    def last_error(self) -> ReloadFailure | None:
        """The errors of the last rejected edit, until a valid version is in place again."""
        with self._lock:
            return self._failure

    def status(self) -> PolicyStatus:
        """A consistent snapshot for the dashboard."""
        with self._lock:
            return PolicyStatus(
                path=self._source,
                digest=self._current.digest,
                loaded_at=self._loaded_at,
                warnings=tuple(str(w) for w in self._current.warnings),
                last_error=self._failure,
            )

    def request_reload(self) -> None:
        """Make the next :meth:`refresh` re-read the file whatever its stat says (for SIGHUP).

        Only sets a flag, so it is safe to call from a signal handler.
        """
        self._forced = True

    def refresh(self) -> ReloadOutcome:
        """Check the file once (call at a tick boundary); apply a valid change."""
        with self._refresh_lock:
            forced, self._forced = self._forced, False
            try:
                stat = os.stat(self._path)
            except OSError:
                stat = None
            if stat is not None and not forced and self._unchanged(stat):
                return ReloadOutcome.UNCHANGED
            read = self._read()
            if isinstance(read, Problem):
                self._signature = None
                return self._reject((read,), None)
            data, signature, read_at = read
            self._signature, self._read_at_ns = signature, read_at
            digest = digest_of(data)
            with self._lock:
                current, failure = self._current, self._failure
            if digest == current.digest:
                if failure is None:
                    return ReloadOutcome.UNCHANGED
                with self._lock:
                    self._failure = None
                _log.info("policy_restored", path=self._source, digest=digest[:12])
                return ReloadOutcome.APPLIED
            if failure is not None and failure.digest == digest:
                return ReloadOutcome.REJECTED
            check = check_bytes(
                data,
                path=self._path,
                source=self._source,
                env=self._environment(),
                flags=self._flags,
            )
            if check.workflow is None:
                return self._reject(check.problems, digest)
            with self._lock:
                self._current = check.workflow
                self._failure = None
                self._loaded_at = self._clock()
            _log.info(
                "policy_reloaded",
                path=self._source,
                digest=digest[:12],
                previous_digest=current.digest[:12],
                rollout_mode=str(check.workflow.policy.rollout.mode),
                warnings=[str(w) for w in check.workflow.warnings],
            )
            return ReloadOutcome.APPLIED

    def _unchanged(self, stat: os.stat_result) -> bool:
        signature = (stat.st_mtime_ns, stat.st_size, stat.st_ino, stat.st_dev)
        racy = stat.st_mtime_ns >= self._read_at_ns - RACY_WINDOW_NS
        return signature == self._signature and not racy

    def _environment(self) -> Mapping[str, str]:
        return self._env if self._env is not None else dict(os.environ)

    def _read(self) -> tuple[bytes, tuple[int, int, int, int], int] | Problem:
        # The read time is taken before reading, so a write during the read counts as racy.
        read_at = time.time_ns()
        try:
            stat = os.stat(self._path)
        except FileNotFoundError:
            return Problem(Location(self._source), None, "file not found")
        except OSError as exc:
            return Problem(Location(self._source), None, f"cannot read the file: {exc.strerror}")
        data = read_policy_bytes(self._path, self._source)
        if isinstance(data, Problem):
            return data
        signature = (stat.st_mtime_ns, stat.st_size, stat.st_ino, stat.st_dev)
        return data, signature, read_at

    def _reject(self, problems: tuple[Problem, ...], digest: str | None) -> ReloadOutcome:
        errors = tuple(p for p in problems if p.is_error)
        with self._lock:
            previous = self._failure
            self._failure = ReloadFailure(errors, self._clock(), digest)
            kept = self._current.digest
        if previous is None or previous.messages != self._failure.messages:
            _log.warning(
                "policy_reload_rejected",
                path=self._source,
                kept_digest=kept[:12],
                errors=[str(p) for p in errors],
            )
        return ReloadOutcome.REJECTED
