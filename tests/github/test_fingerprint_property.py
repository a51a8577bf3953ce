"""The cheap poll never misses a change a full read would see: random event sequences
against one pull request on the emulator, comparing the poller with an uncached read."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from orchestrator.domain.snapshot import Actor, PullRequest
from orchestrator.github.client import GitHubClient, MemoryEtagCache
from orchestrator.github.prstate import SETTLE_S, PRStatePoller, inspect_pr_state
from orchestrator_sim.clock import ManualClock
from orchestrator_sim.testing import SimWorld, make_token, running_world

EXAMPLES = int(os.environ.get("FINGERPRINT_EXAMPLES", "60"))
_counter = itertools.count()

EVENTS = st.lists(
    st.one_of(
        st.tuples(
            st.just("check"),
            st.sampled_from(["ci", "lint", "docs"]),
            st.sampled_from(["queued", "in_progress", "success", "failure", "neutral"]),
        ),
        st.tuples(
            st.just("status"),
            st.sampled_from(["deploy", "cov"]),
            st.sampled_from(["pending", "success", "failure", "error"]),
        ),
        st.tuples(
            st.just("review"),
            st.sampled_from(["alice", "reader"]),
            st.sampled_from(["APPROVED", "CHANGES_REQUESTED", "COMMENTED"]),
        ),
        st.tuples(st.just("thread"), st.sampled_from(["alice", "reader"]), st.just("")),
        st.tuples(st.just("resolve"), st.just(""), st.just("")),
        st.tuples(st.just("push"), st.sampled_from(["alice"]), st.just("")),
        st.tuples(st.just("mergeable"), st.sampled_from(["yes", "no", "unknown"]), st.just("")),
        st.tuples(st.just("wait"), st.just(""), st.just("")),
    ),
    min_size=1,
    max_size=8,
)


CLOCK = ManualClock(datetime(2026, 1, 1, tzinfo=UTC))


@pytest.fixture(scope="module")
def shared_world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimWorld]:
    # One clock for GitHub and the poller: events between two "wait"s share one second,
    # as changes close together do on GitHub, whose timestamps have one-second resolution.
    with running_world(tmp_path_factory.mktemp("sim"), clock=CLOCK) as world:
        world.control.create_user("reader", make_token())
        world.control.set_permission(world.repo, "reader", "read")
        yield world


def _seen(pr: PullRequest | None) -> dict[str, Any]:
    """What a decision reads of a pull request (timestamps aside)."""
    assert pr is not None
    return {
        "head": pr.head_sha,
        "status": pr.status,
        "mergeable": pr.mergeable,
        "draft": pr.is_draft,
        "checks": pr.checks,
        "incomplete": pr.incomplete,
        "reviews": sorted((r.author.login, r.verdict, r.commit_sha) for r in pr.reviews),
        "threads": sorted(
            (t.id, t.is_resolved, t.is_outdated, len(t.comments)) for t in pr.threads
        ),
    }


def _apply(
    world: SimWorld,
    number: int,
    branch: str,
    threads: list[int],
    runs: dict[tuple[str, str], int],
    event: tuple[str, str, str],
) -> None:
    control = world.control
    kind, who, what = event
    head = str(world.github(world.human).get_repo(world.repo).get_pull(number).head.sha)
    if kind == "check":
        # CI updates its run in place until it completes (the count of runs stays the same).
        done = what not in ("queued", "in_progress")
        run = control.check_run(
            world.repo,
            sha=head,
            name=who,
            status="completed" if done else what,
            conclusion=what if done else None,
            run_id=runs.get((head, who)),
        )
        runs[(head, who)] = int(run["id"])
    elif kind == "status":
        control.status(world.repo, what, as_user="alice", sha=head, context=who)
    elif kind == "review":
        control.review(world.repo, number, what, as_user=who, body="noted")
    elif kind == "thread":
        review = control.review(
            world.repo,
            number,
            "COMMENTED",
            as_user=who,
            comments=[{"path": "src/p.py", "line": 1, "body": "Why this?"}],
        )
        threads.extend(int(thread["id"]) for thread in review["threads"])
    elif kind == "resolve":
        if threads:
            control.resolve_thread(world.repo, threads.pop(0), as_user="alice")
    elif kind == "push":
        control.push(world.repo, branch, {"src/p.py": f"v = {next(_counter)}\n"}, as_user=who)
    elif kind == "mergeable":
        control.set_mergeable(world.repo, number, {"yes": True, "no": False, "unknown": None}[who])
    elif kind == "wait":
        # Time passes beyond the settle window: the poller trusts its fingerprints again.
        CLOCK.advance(SETTLE_S + 1)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@example(
    # A check completes while another has failed: GitHub's rollup stays FAILURE and no
    # count changes, and check runs never move the pull request's updatedAt.
    events=[
        ("check", "ci", "failure"),
        ("check", "lint", "in_progress"),
        ("check", "lint", "success"),
    ]
)
@example(
    events=[
        ("status", "deploy", "failure"),
        ("status", "cov", "pending"),
        ("status", "cov", "success"),
    ]
)
@given(events=EVENTS)
def test_the_cheap_poll_sees_every_change_the_full_read_sees(
    shared_world: SimWorld, events: list[tuple[str, str, str]]
) -> None:
    world = shared_world
    branch = f"prop/{next(_counter)}"
    world.control.push(world.repo, branch, {"src/p.py": "v = 0\n"}, as_user="alice")
    number = world.control.create_pull(world.repo, "Prop", branch, as_user=world.bot.login)
    world.control.set_mergeable(world.repo, number, True)
    client = GitHubClient(world.url, world.bot.token, cache=MemoryEtagCache())

    def actor(login: str, typename: str | None) -> Actor:
        return Actor(login, is_bot=typename == "Bot", can_write=login == "alice")

    poller = PRStatePoller(client, client.cache, actor, clock=CLOCK)
    CLOCK.advance(SETTLE_S + 1)
    poller.poll(world.repo, [number])
    threads: list[int] = []
    runs: dict[tuple[str, str], int] = {}
    for event in events:
        _apply(world, number, branch, threads, runs, event)
        cheap = poller.poll(world.repo, [number]).get(number)
        full = inspect_pr_state(client, world.repo, number, actor)
        assert _seen(cheap) == _seen(full), f"after {event} of {events}"
