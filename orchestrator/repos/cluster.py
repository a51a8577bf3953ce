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
from orchestrator.store.database import Database
from orchestrator.store.fencing import Fence
from orchestrator.wiring.policy_view import PolicyView

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
        # The poll leases this replica holds, by repository (in the order they were taken).
        self._fences: dict[str, Fence] = {}

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
        self._fences.clear()
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
        """The repositories whose poll lease this replica holds."""
        return tuple(self._fences)

    @property
    def fence(self) -> Fence | None:
        """The first poll lease this replica's ticks write under (None on a follower)."""
        return next(iter(self._fences.values()), None)

    def fence_of(self, repo: str) -> Fence | None:
        """The poll lease ``repo``'s tick writes under (None when another replica leads it)."""
        return self._fences.get(repo)

    def lead(self, repo: str) -> Leadership:
        """Take or keep ``repo``'s poll lease; logs when leadership is taken or lost."""
        name = poll_lease_name(repo)
        epoch = self.db.leases.acquire(name, self.replica_id, ttl=self.ttl, now=self.clock())
        previous = self._fences.pop(repo, None)
        if epoch is None:
            if previous is not None:
                log.warning("leadership_lost", lease=name, epoch=previous.epoch)
            return Leadership(repo, None)
        fence = Fence.lease(name, self.replica_id, epoch)
        self._fences[repo] = fence
        if previous is None or previous.epoch != epoch:
            log.info("leadership_taken", lease=name, epoch=epoch)
        return Leadership(repo, fence)

    def drop(self, repo: str) -> None:
        """Give up ``repo``'s poll lease (the policy stopped tracking it)."""
        fence = self._fences.pop(repo, None)
        if fence is not None:
            self.db.leases.release(fence.key, self.replica_id)
            log.info("leadership_released", lease=fence.key, epoch=fence.epoch)

    def heartbeat(self, *repos: str) -> bool:
        """Beat, renew the poll leases (or try to take them over); True when one was taken.

        A leader whose renewal fails (the lease expired: this process stalled)
        stops leading that repository at once; its writes under the old epoch are
        refused.
        """
        now = self.clock()
        self.db.replicas.beat(self.replica_id, ttl=self.ttl, now=now)
        taken = False
        for repo in repos:
            fence = self._fences.get(repo)
            if fence is not None:
                if self.db.leases.renew(fence.key, self.replica_id, ttl=self.ttl, now=now):
                    continue
                log.warning("leadership_lost", lease=fence.key, epoch=fence.epoch)
                del self._fences[repo]
            taken = self.lead(repo).leading or taken
        return taken

    def leader(self, repo: str) -> str | None:
        """Who leads ``repo`` now (any replica), on the database's clock."""
        return self.db.leases.holder(poll_lease_name(repo), now=self.clock())

    def reap(self) -> int:
        """Forget the holders of expired leases and replicas dead for a day."""
        now = self.clock()
        self.db.replicas.forget_older_than(now - FORGET_AFTER)
        return self.db.leases.reap(now=now)
