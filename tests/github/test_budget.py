"""The polling budget, counted by the emulator's billing (GitHub's formula), not timed."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from benchmarks.github_budget import measure
from orchestrator.domain.snapshot import Actor
from orchestrator.github.client import GitHubClient
from orchestrator.github.prstate import SETTLE_S, PRStatePoller
from orchestrator.store import migrate
from orchestrator.store.database import Database
from orchestrator_sim.testing import SimWorld, running_world

PRS = 200


def open_pull(world: SimWorld) -> int:
    """A pull request of the bot's from branch ``b`` (one file changed)."""
    world.control.push(world.repo, "b", {"f.txt": "1\n"}, as_user=world.human.login)
    return world.control.create_pull(world.repo, "T", "b", as_user=world.bot.login)


def wait_for_mergeability(world: SimWorld, number: int) -> None:
    """Wait until GitHub has worked out whether the pull request merges (it is None first)."""
    while world.github().get_repo(world.repo).get_pull(number).mergeable is None:
        time.sleep(0.05)


def test_unchanged_poll_costs_at_most_four_units(tmp_path: Path) -> None:
    with running_world(tmp_path / "sim") as world:
        figures = measure(world, PRS)
        print(
            f"\nbudget with {PRS} PRs: first poll {figures.first} units, unchanged poll "
            f"{figures.unchanged} units, one PR changed {figures.one_changed} units, naive "
            f"per-PR REST poll {figures.naive} units"
        )
        assert figures.unchanged <= 4
        assert figures.naive >= 800
        # The changed PR costs one full-state fetch (1 point for a single PR) on top.
        assert figures.one_changed <= 4 + 1


def test_a_state_fetched_within_the_same_second_as_a_change_is_fetched_again(
    tmp_path: Path,
) -> None:
    """updatedAt has one-second resolution: a fresh change may hide a second one."""
    with running_world(tmp_path / "sim") as world:
        number = open_pull(world)
        client = GitHubClient(world.url, world.bot.token)
        clock = [datetime.now(UTC)]
        poller = PRStatePoller(
            client, client.cache, lambda login, t: Actor(login), clock=lambda: clock[0]
        )

        def graphql_requests() -> int:
            return client.accounting.requests["POST /graphql"]

        def full_fetched() -> bool:
            before = graphql_requests()
            poller.poll(world.repo, [number])
            return graphql_requests() - before == 2  # fingerprint + full state

        assert full_fetched()  # first sight
        assert full_fetched()  # the update was too recent to trust the fingerprint
        clock[0] += timedelta(seconds=SETTLE_S + 1)
        assert full_fetched()  # fetched once more, now settled
        assert not full_fetched()  # unchanged: the fingerprint alone


def test_the_stores_cache_keeps_polls_cheap_across_a_restart(tmp_path: Path) -> None:
    """A new process starts with an empty memory: the ETags and the pull request states
    it finds in the database still make its first requests conditional and its polls cheap."""
    url = f"sqlite:///{tmp_path / 'orchestrator.db'}"
    migrate.upgrade(url)
    with running_world(tmp_path / "sim") as world:
        number = open_pull(world)
        # Mergeability is worked out a moment later and changes the fingerprint: wait for it,
        # so both lives see the same pull request.
        wait_for_mergeability(world, number)
        clock = datetime.now(UTC) + timedelta(seconds=SETTLE_S + 1)
        issues = f"/repos/{world.repo}/issues"
        for life in ("first", "after a restart"):
            db = Database.open(url)
            try:
                client = GitHubClient(world.url, world.bot.token, cache=db.http_cache)
                poller = PRStatePoller(
                    client, db.http_cache, lambda login, t: Actor(login), clock=lambda: clock
                )
                poller.poll(world.repo, [number])
                listed = client.request("GET", issues, conditional=True)
                graphql = client.accounting.requests["POST /graphql"]
                # First life: fingerprint and full state, a 200. Then: the fingerprint, a 304.
                assert (graphql, listed.from_cache) == (
                    (2, False) if life == "first" else (1, True)
                ), life
            finally:
                db.close()


def test_a_base_branch_moving_costs_no_full_state_read_of_the_pull_requests_on_it(
    tmp_path: Path,
) -> None:
    """GitHub works every open pull request's mergeability out again when its base moves
    (unknown, then known): the fingerprint carries it, so no full state is read for it,
    and the state returned has the fingerprint's mergeability."""
    with running_world(tmp_path / "sim") as world:
        control = world.control
        number = open_pull(world)
        client = GitHubClient(world.url, world.bot.token)
        clock = [datetime.now(UTC)]
        poller = PRStatePoller(
            client, client.cache, lambda login, t: Actor(login), clock=lambda: clock[0]
        )

        def poll() -> tuple[int, bool | None]:
            before = client.accounting.requests["POST /graphql"]
            state = poller.poll(world.repo, [number])[number]
            return client.accounting.requests["POST /graphql"] - before, state.mergeable

        # Settled: mergeability known, the state read under a settled fingerprint.
        wait_for_mergeability(world, number)
        clock[0] += timedelta(seconds=SETTLE_S + 1)
        poll()
        clock[0] += timedelta(seconds=SETTLE_S + 1)
        assert poll() == (1, True)  # the fingerprint alone

        # The base moves under it: unknown for a while, then a conflict.
        control.push(world.repo, "main", {"f.txt": "2\n"}, as_user=world.human.login)
        requests, mergeable = poll()
        assert requests == 1 and mergeable in (None, False)
        wait_for_mergeability(world, number)
        assert poll() == (1, False)
