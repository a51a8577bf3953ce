"""The polling budget, counted by the emulator's billing (GitHub's formula), not timed."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from github import Auth, Github

from orchestrator.domain.snapshot import Actor
from orchestrator.github.client import GitHubClient, MemoryEtagCache
from orchestrator.github.gateway import GitHubGateway
from orchestrator.github.prstate import SETTLE_S, PRStatePoller
from orchestrator.sim.testing import SimWorld, make_token, running_world
from orchestrator.tracker.base import TrackerSettings
from orchestrator.tracker.github_issues import GitHubIssuesTracker

PRS = 200


def _billed(world: SimWorld, login: str) -> int:
    return int(world.control.counters()["tokens"].get(login, {}).get("billed", 0))


def _setup(world: SimWorld) -> list[int]:
    control = world.control
    numbers = []
    for i in range(PRS):
        issue = control.create_issue(
            world.repo, f"Task {i}", as_user=world.human.login, labels=["agent"]
        )
        control.push(
            world.repo, f"agent/{issue}", {f"src/t{i}.py": f"v = {i}\n"}, as_user=world.human.login
        )
        numbers.append(
            control.create_pull(world.repo, f"Task {i}", f"agent/{issue}", as_user=world.bot.login)
        )
    return numbers


def test_unchanged_poll_costs_at_most_four_units(tmp_path: Path) -> None:
    with running_world(tmp_path / "sim") as world:
        numbers = _setup(world)
        client = GitHubClient(world.url, world.bot.token, cache=MemoryEtagCache())
        gateway = GitHubGateway(client)
        tracker = GitHubIssuesTracker(
            gateway, TrackerSettings(repo=world.repo, required_labels=frozenset({"agent"}))
        )

        def actor(login: str, typename: str | None) -> Actor:
            return Actor(login, is_bot=typename == "Bot")

        poller = PRStatePoller(client, client.cache, actor)

        def poll() -> int:
            before = _billed(world, world.bot.login)
            assert len(tracker.fetch_candidates()) == PRS
            assert len(poller.poll(world.repo, numbers)) == PRS
            return _billed(world, world.bot.login) - before

        # The pull requests were all just created: let their last update settle, as
        # it has on any poll that is not the first seconds after a change.
        time.sleep(SETTLE_S + 0.5)
        first = poll()
        second = poll()

        # One pull request changes: a check run appears on its head.
        head = world.github().get_repo(world.repo).get_pull(numbers[7]).head.sha
        world.control.check_run(world.repo, sha=head, name="ci", conclusion="failure")
        third = poll()
        states = poller.poll(world.repo, numbers[7:8])
        assert states[numbers[7]].checks is not None
        assert states[numbers[7]].checks.failing == {"ci"}

        # What a simple bot does: the PR, its reviews, check runs and status, per PR.
        world.control.create_user("naive", (naive_token := make_token()), bot=True)
        world.control.set_permission(world.repo, "naive", "write")
        naive_before = _billed(world, "naive")
        gh = Github(
            base_url=world.url,
            auth=Auth.Token(naive_token),
            seconds_between_requests=0,
            retry=0,
            per_page=100,
        )
        repo = gh.get_repo(world.repo)
        for number in numbers:
            pr = repo.get_pull(number)
            list(pr.get_reviews())
            commit = repo.get_commit(pr.head.sha)
            list(commit.get_check_runs())
            commit.get_combined_status()
        naive = _billed(world, "naive") - naive_before

        print(
            f"\nbudget with {PRS} PRs: first poll {first} units, unchanged poll {second} units, "
            f"one PR changed {third} units, naive per-PR REST poll {naive} units"
        )
        assert second <= 4
        assert naive >= 800
        # The changed PR costs one full-state fetch (1 point for a single PR) on top.
        assert third <= 4 + 1


def test_a_state_fetched_within_the_same_second_as_a_change_is_fetched_again(
    tmp_path: Path,
) -> None:
    """updatedAt has one-second resolution: a fresh change may hide a second one."""
    with running_world(tmp_path / "sim") as world:
        control = world.control
        control.push(world.repo, "b", {"f.txt": "1\n"}, as_user=world.human.login)
        number = control.create_pull(world.repo, "T", "b", as_user=world.bot.login)
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
