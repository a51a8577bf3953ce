"""This replica's place in the cluster: presence, the polling lease, heartbeats, takeover.

Every daemon is a replica, alone on SQLite or one of several on PostgreSQL.
It registers in the ``replicas`` table at start and beats from the
scheduler's heartbeat; the replica holding a repository's poll lease is its
leader and the only one that ticks it. Lease validity is judged on the
database's clock, and each change of hands bumps the lease's epoch; the
leader's writes carry a :class:`~orchestrator.store.fencing.Fence` with that
epoch, which the side-effect gate checks in the transaction that records the
intent.

The heartbeat (every ``lease_s / 3`` seconds) renews what this replica holds
and, on a follower, tries to take the poll lease over, so a dead leader is
replaced within one lease period plus one heartbeat: ten seconds and a bit by
default, whatever the polling interval. A shorter lease means a faster
takeover and proportionally more heartbeat writes: three small transactions
per replica per heartbeat.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from orchestrator import __version__
from orchestrator.logs import get_logger
from orchestrator.runtime.wiring import PolicyView
from orchestrator.store.database import Database
from orchestrator.store.fencing import Fence

log = get_logger(__name__)

DEFAULT_LEASE_S = 10.0
# Dead replicas stay listed this long (the operator sees who died), then are forgotten.
FORGET_AFTER = timedelta(days=1)


def poll_lease_name(repo: str) -> str:
    return f"poll:{repo}"


@dataclass(frozen=True)
class Leadership:
    """Whether this replica leads ``repo`` now, and the fence its writes carry."""

    repo: str
    fence: Fence | None

    @property
    def leading(self) -> bool:
        return self.fence is not None


class ClusterRole:
    """Presence, leadership and takeover of one replica; the daemon's scheduler drives it."""

    def __init__(
        self,
        db: Database,
        *,
        replica_id: str,
        lease_s: float = DEFAULT_LEASE_S,
        clock: Callable[[], datetime],
        version: str = __version__,
    ) -> None:
        self.db = db
        self.replica_id = replica_id
        self.lease_s = lease_s
        self.clock = clock
        self.version = version
        self._fence: Fence | None = None
        self._repo: str | None = None

    # ------------------------------------------------------------ presence

    @property
    def ttl(self) -> timedelta:
        """How long a lease, claim or heartbeat of this replica lives without renewal."""
        return timedelta(seconds=self.lease_s)

    @property
    def heartbeat_s(self) -> float:
        return self.lease_s / 3

    def join(self) -> None:
        """Register this replica (a restart under the same id replaces the old row)."""
        self.db.replicas.register(
            self.replica_id, version=self.version, ttl=self.ttl, now=self.clock()
        )

    def leave(self) -> int:
        """On a clean shutdown: give up every lease and mark this replica stopped."""
        released = self.db.leases.release_all(self.replica_id)
        self.db.replicas.stopped(self.replica_id, now=self.clock())
        self._fence = None
        return released

    def live_replicas(self) -> int:
        return max(1, self.db.replicas.count_live(now=self.clock()))

    def scaled(self, view: PolicyView) -> PolicyView:
        """The policy with ``agent.max_concurrent_agents`` counted per live replica."""
        replicas = self.live_replicas()
        if replicas == 1:
            return view
        flow = view.flow
        return replace(
            view,
            flow=replace(flow, max_concurrent_agents=flow.max_concurrent_agents * replicas),
        )

    # ---------------------------------------------------------- leadership

    @property
    def leading(self) -> tuple[str, ...]:
        return (self._repo,) if self._fence is not None and self._repo is not None else ()

    @property
    def fence(self) -> Fence | None:
        """The poll lease this replica's tick writes under (None on a follower)."""
        return self._fence

    def lead(self, repo: str) -> Leadership:
        """Take or keep ``repo``'s poll lease; logs when leadership is taken or lost."""
        name = poll_lease_name(repo)
        epoch = self.db.leases.acquire(name, self.replica_id, ttl=self.ttl, now=self.clock())
        previous = self._fence
        if epoch is None:
            if previous is not None:
                log.warning("leadership_lost", lease=name, epoch=previous.epoch)
            self._fence = None
        else:
            self._fence = Fence.lease(name, self.replica_id, epoch)
            if previous is None or previous.epoch != epoch:
                log.info("leadership_taken", lease=name, epoch=epoch)
        self._repo = repo
        return Leadership(repo, self._fence)

    def heartbeat(self, repo: str) -> bool:
        """Beat, renew the poll lease (or try to take it over); True when leadership was taken.

        A leader whose renewal fails (the lease expired: this process stalled)
        stops leading at once; its writes under the old epoch are refused.
        """
        now = self.clock()
        self.db.replicas.beat(self.replica_id, ttl=self.ttl, now=now)
        if self._fence is not None:
            if self.db.leases.renew(self._fence.key, self.replica_id, ttl=self.ttl, now=now):
                return False
            log.warning("leadership_lost", lease=self._fence.key, epoch=self._fence.epoch)
            self._fence = None
        return self.lead(repo).leading

    def leader(self, repo: str) -> str | None:
        """Who leads ``repo`` now (any replica), on the database's clock."""
        return self.db.leases.holder(poll_lease_name(repo), now=self.clock())

    def reap(self) -> int:
        """Forget the holders of expired leases and replicas dead for a day."""
        now = self.clock()
        self.db.replicas.forget_older_than(now - FORGET_AFTER)
        return self.db.leases.reap(now=now)
