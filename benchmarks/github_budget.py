"""What polling pull requests costs, counted by the emulator's billing with GitHub's formula.

``python -m benchmarks.github_budget [--prs N]`` opens N issues with a pull
request each on a fresh emulator, then polls them as the daemon does (the
candidate list with an ETag, the fingerprints, the full state of what changed)
and prints the units of a first poll, of an unchanged poll, of a poll after one
pull request changed, and of a naive per-PR REST poll of the same world.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from orchestrator.domain.snapshot import Actor
from orchestrator.github.client import GitHubClient, MemoryEtagCache
from orchestrator.github.gateway import GitHubGateway
from orchestrator.github.prstate import SETTLE_S, PRStatePoller
from orchestrator.tracker.base import TrackerSettings
from orchestrator.tracker.github_issues import GitHubIssuesTracker


@dataclass(frozen=True)
class PollBudget:
    """Units billed for each kind of poll over ``prs`` pull requests."""

    prs: int
    first: int
    unchanged: int
    one_changed: int
    naive: int


def measure(world: object, prs: int = 200) -> PollBudget:
    """Set up ``prs`` pull requests in a running emulator world and measure each poll."""
    from github import Auth, Github

    from orchestrator_sim.testing import SimWorld, make_token

    assert isinstance(world, SimWorld)
    control = world.control
    numbers = []
    for i in range(prs):
        issue = control.create_issue(
            world.repo, f"Task {i}", as_user=world.human.login, labels=["agent"]
        )
        control.push(
            world.repo, f"agent/{issue}", {f"src/t{i}.py": f"v = {i}\n"}, as_user=world.human.login
        )
        numbers.append(
            control.create_pull(world.repo, f"Task {i}", f"agent/{issue}", as_user=world.bot.login)
        )

    def billed(login: str) -> int:
        return int(control.counters()["tokens"].get(login, {}).get("billed", 0))

    client = GitHubClient(world.url, world.bot.token, cache=MemoryEtagCache())
    gateway = GitHubGateway(client)
    tracker = GitHubIssuesTracker(
        lambda: gateway,
        TrackerSettings(repo=world.repo, required_labels=frozenset({"agent"})),
    )
    poller = PRStatePoller(client, client.cache, lambda login, t: Actor(login, t == "Bot"))

    def poll() -> int:
        before = billed(world.bot.login)
        if len(tracker.fetch_candidates()) != prs or len(poller.poll(world.repo, numbers)) != prs:
            raise RuntimeError("the poll did not see every issue and pull request")
        return billed(world.bot.login) - before

    # Right after creation every pull request changed within the settle window.
    time.sleep(SETTLE_S + 0.5)
    # Start-up: the issue feed's full read, then its first incremental read (of every
    # item updated within its window: all of them, created a moment ago).
    first = poll() + poll()
    unchanged = poll()
    head = world.github().get_repo(world.repo).get_pull(numbers[7]).head.sha
    control.check_run(world.repo, sha=head, name="ci", conclusion="failure")
    one_changed = poll()

    control.create_user("naive", (naive_token := make_token()), bot=True)
    control.set_permission(world.repo, "naive", "write")
    before = billed("naive")
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
    return PollBudget(prs, first, unchanged, one_changed, billed("naive") - before)


def main(argv: list[str] | None = None) -> int:
    """Print the poll budget of N pull requests (default 200)."""
    from orchestrator_sim.testing import running_world

    parser = argparse.ArgumentParser(prog="python -m benchmarks.github_budget")
    parser.add_argument("--prs", type=int, default=200)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp, running_world(Path(tmp) / "sim") as world:
        figures = measure(world, args.prs)
    print(
        f"poll budget with {figures.prs} pull requests: first poll {figures.first} units, "
        f"unchanged poll {figures.unchanged} units (target 4 or fewer), one pull request "
        f"changed {figures.one_changed} units, naive per-PR REST poll {figures.naive} units",
        flush=True,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
