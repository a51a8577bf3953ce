"""Benchmark: how many requests per second the emulator serves, small and at scale.

Run ``python -m benchmarks.emulator``. It starts an emulator in this process
and sends requests over keep-alive connections, then prints the figures; it
asserts nothing. First simple authenticated GETs (one client, then several in
threads); then, in scale mode, two repositories seeded through the control
API's bulk seed, one with 1,000 and one with 10,000 issues, each issue with an
open pull request (green check run, approved), and every route the daemon polls
measured with one keep-alive client over a window of 100 items read once
before, the two repositories in turn so that the machine's load touches both
alike. Besides requests per second it prints the process's CPU time per
request (client included), which other processes disturb less.
"""

from __future__ import annotations

import argparse
import http.client
import json
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from orchestrator.github import queries
from orchestrator_sim.testing import Seeded, SimWorld, running_world

# Issues (each with its pull request) the scale mode measures at, by default.
SCALE_SIZES = (1_000, 10_000)
# How many different items (pull requests, issues, pages) each route cycles through.
WINDOW = 100
LABEL = "agent"


@dataclass(frozen=True, slots=True)
class Call:
    """One request of a benchmark loop and the status it must answer."""

    path: str
    method: str = "GET"
    body: bytes | None = None
    etag: str | None = None
    expect: int = 200


def _loop(
    port: int,
    token: str,
    calls: Sequence[Call],
    seconds: float,
    counts: list[int],
    *,
    limit: int | None = None,
) -> None:
    """Send ``calls`` in turn for ``seconds`` (or ``limit`` of them) on one connection."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    base = {"Authorization": f"token {token}", "Accept": "application/vnd.github+json"}
    done = 0
    deadline = time.perf_counter() + seconds
    try:
        while time.perf_counter() < deadline and (limit is None or done < limit):
            call = calls[done % len(calls)]
            headers = dict(base)
            if call.etag is not None:
                headers["If-None-Match"] = call.etag
            if call.body is not None:
                headers["Content-Type"] = "application/json"
            connection.request(call.method, call.path, body=call.body, headers=headers)
            answer = connection.getresponse()
            body = answer.read()
            # GraphQL answers its errors with a 200.
            if answer.status != call.expect or (call.method == "POST" and b'"errors":' in body):
                raise RuntimeError(f"{call.method} {call.path} answered {answer.status}")
            done += 1
    finally:
        connection.close()
    counts.append(done)


def measure_calls(
    port: int, token: str, calls: Sequence[Call], clients: int, seconds: float
) -> float:
    """Requests per second over ``seconds`` with ``clients`` keep-alive connections."""
    counts: list[int] = []
    threads = [
        threading.Thread(target=_loop, args=(port, token, calls, seconds, counts))
        for _ in range(clients)
    ]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    if len(counts) != clients:
        raise RuntimeError("a benchmark client failed")
    return sum(counts) / elapsed


def measure(port: int, token: str, path: str, clients: int, seconds: float) -> float:
    """Requests per second of GET ``path`` over ``seconds`` with ``clients`` connections."""
    return measure_calls(port, token, [Call(path)], clients, seconds)


def _simple(args: argparse.Namespace) -> list[tuple[str, float]]:
    with (
        tempfile.TemporaryDirectory(prefix="sim-bench-") as scratch,
        running_world(Path(scratch)) as world,
    ):
        world.control.set_rate_limit(limit=10_000_000)
        world.control.create_issue(world.repo, "Benchmark issue", as_user=world.human.login)
        port = world.server.port
        token = world.bot.token
        issue_path = f"/repos/{world.repo}/issues/1"
        measure(port, token, "/user", 1, 0.5)
        return [
            ("GET /user, 1 client", measure(port, token, "/user", 1, args.seconds)),
            ("GET issue, 1 client", measure(port, token, issue_path, 1, args.seconds)),
            (
                f"GET issue, {args.clients} clients",
                measure(port, token, issue_path, args.clients, args.seconds),
            ),
        ]


# ---------------------------------------------------------------- scale mode


@dataclass(frozen=True, slots=True)
class Route:
    """One row of the scale table: the requests it cycles through, and how it is read.

    ``batch`` is how many pull requests one request carries (GraphQL batches);
    with ``first_read`` the row times the first pass over ``calls`` right after
    a change to the state (nothing rendered yet) instead of the passes after it;
    a ``conditional`` row sends each answer's ETag back and expects 304.
    """

    label: str
    calls: list[Call]
    batch: int = 1
    first_read: bool = False
    conditional: bool = False


@dataclass(frozen=True, slots=True)
class Figure:
    """Requests per second of one row, and the process's CPU time per request
    (client included: a figure the load of other processes disturbs less)."""

    rate: float
    cpu_ms: float


def _timed(
    port: int, token: str, calls: Sequence[Call], seconds: float, limit: int | None
) -> Figure:
    counts: list[int] = []
    cpu, wall = time.process_time(), time.perf_counter()
    _loop(port, token, calls, seconds, counts, limit=limit)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return Figure(counts[0] / wall, 1000 * cpu / max(1, counts[0]))


def _spread(items: Sequence[Seeded], count: int) -> list[Seeded]:
    """``count`` items spread evenly over ``items`` (so not only the oldest)."""
    step = max(1, len(items) // count)
    return list(items[::step][:count])


def _etag(port: int, token: str, path: str) -> str:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.request("GET", path, headers={"Authorization": f"token {token}"})
        answer = connection.getresponse()
        answer.read()
        return str(answer.getheader("etag"))
    finally:
        connection.close()


def _graphql(batches: list[queries.GraphQLRequest]) -> list[Call]:
    return [Call("/graphql", "POST", json.dumps(request.payload()).encode()) for request in batches]


def daemon_routes(world: SimWorld, items: Sequence[Seeded]) -> list[Route]:
    """The requests the daemon sends, each over up to 100 different seeded items."""
    repo = world.repo
    owner, name = repo.split("/")
    window = _spread(items, WINDOW)
    pulls = [item.pull or 0 for item in items]
    pages = [
        f"/repos/{repo}/issues?state=open&labels={LABEL}&sort=created&direction=asc"
        f"&per_page=100&page={page}"
        for page in range(1, max(1, min(WINDOW, len(items) // 100)) + 1)
    ]
    list_label = "GET .../issues?labels=...&per_page=100"
    return [
        Route(
            "GET /repos/{o}/{r}/pulls/{n}", [Call(f"/repos/{repo}/pulls/{i.pull}") for i in window]
        ),
        Route(
            "GET /repos/{o}/{r}/issues/{n}",
            [Call(f"/repos/{repo}/issues/{i.issue}") for i in window],
        ),
        Route(f"{list_label} 200, first read", [Call(path) for path in pages], first_read=True),
        Route(f"{list_label} 200, unchanged", [Call(path) for path in pages]),
        Route(f"{list_label} 304", [Call(path) for path in pages], conditional=True),
        Route(
            "GET /repos/{o}/{r}/issues/{n}/comments",
            [Call(f"/repos/{repo}/issues/{i.issue}/comments") for i in window],
        ),
        Route(
            "GET /repos/{o}/{r}/pulls/{n}/reviews",
            [Call(f"/repos/{repo}/pulls/{i.pull}/reviews") for i in window],
        ),
        Route(
            "GET /repos/{o}/{r}/commits/{sha}/check-runs",
            [Call(f"/repos/{repo}/commits/{i.head_sha}/check-runs") for i in window],
        ),
        Route(
            "POST /graphql PullRequestFingerprints (100)",
            _graphql(
                [
                    queries.fingerprint_request(owner, name, pulls[start : start + 100])
                    for start in range(0, len(pulls), max(100, len(pulls) // 10))
                ]
            ),
            batch=100,
        ),
        Route(
            "POST /graphql PullRequestStates (10)",
            _graphql(
                [
                    queries.state_request(owner, name, pulls[start : start + 10])
                    for start in range(0, len(pulls), max(10, len(pulls) // WINDOW))
                ]
            ),
            batch=10,
        ),
    ]


def _first_read(world: SimWorld, calls: Sequence[Call]) -> Figure:
    """One pass over ``calls`` right after a change (which retires every rendering)."""
    world.control.comment(world.repo, 1, "benchmark: a change", as_user=world.human.login)
    return _timed(world.server.port, world.bot.token, calls, 3600.0, len(calls))


def scale_figures(
    worlds: dict[int, SimWorld], routes: dict[int, list[Route]], seconds: float
) -> dict[int, dict[str, Figure]]:
    """Each route on every repository with one keep-alive client, the repositories in
    turn (so a change in the machine's load touches them alike): the median of three
    runs of ``seconds`` each, after one pass that works out mergeability and diff
    stats and checks every answer."""
    figures: dict[int, dict[str, Figure]] = {size: {} for size in worlds}
    sizes = sorted(worlds)
    for index, first in enumerate(routes[sizes[0]]):
        calls: dict[int, Sequence[Call]] = {}
        for size in sizes:
            world, route = worlds[size], routes[size][index]
            port, token = world.server.port, world.bot.token
            calls[size] = route.calls
            if route.conditional:
                calls[size] = [
                    Call(c.path, etag=_etag(port, token, c.path), expect=304) for c in route.calls
                ]
            if route.first_read:
                figures[size][route.label] = _first_read(world, calls[size])
            else:
                _timed(port, token, calls[size], 3600.0, len(calls[size]))
        if first.first_read:
            continue
        runs: dict[int, list[Figure]] = {size: [] for size in sizes}
        for _ in range(3):
            for size in sizes:
                world = worlds[size]
                port, token = world.server.port, world.bot.token
                runs[size].append(_timed(port, token, calls[size], seconds, None))
        for size in sizes:
            figures[size][first.label] = sorted(runs[size], key=lambda f: f.rate)[1]
    return figures


def _scale(sizes: Sequence[int], seconds: float) -> None:
    worlds: dict[int, SimWorld] = {}
    routes: dict[int, list[Route]] = {}
    with (
        tempfile.TemporaryDirectory(prefix="sim-bench-") as scratch,
        running_world(Path(scratch), mergeability_delay=0) as world,
    ):
        world.control.set_rate_limit(limit=10_000_000)
        world.control.set_rate_limit(resource="graphql", limit=10_000_000)
        levels = {world.bot.login: "write", world.human.login: "admin"}
        for size in sorted(sizes):
            repo = f"{world.owner}/scale-{size}"
            world.control.create_repo(repo, permissions=levels)
            worlds[size] = replace(world, repo=repo)
            started = time.perf_counter()
            seeded = worlds[size].seed(size, labels=[LABEL], review="APPROVED")
            print(
                f"{repo}: {size:,} issues, each with an open pull request (green check run, "
                f"approved), seeded in {time.perf_counter() - started:.1f} s",
                flush=True,
            )
            routes[size] = daemon_routes(worlds[size], seeded)
        results = scale_figures(worlds, routes, seconds)
    _print_table(results, routes[min(sizes)])


def _print_table(results: dict[int, dict[str, Figure]], routes: Sequence[Route]) -> None:
    sizes = sorted(results)
    print(
        "requests/s with one keep-alive client (CPU ms per request, client included)".ljust(56)
        + "".join(f"{size:>20,}" for size in sizes)
    )
    for route in routes:
        cells = "".join(
            f"{results[size][route.label].rate:>10.0f}/s ({results[size][route.label].cpu_ms:4.1f})"
            for size in sizes
        )
        print(route.label.ljust(56) + cells)
        if route.batch > 1:
            prs = "".join(
                f"{results[size][route.label].rate * route.batch:>13.0f} PRs/s" for size in sizes
            )
            print("  batches/s above; pull requests/s:".ljust(56) + prs)
    rest = [
        results[sizes[-1]][route.label].rate
        for route in routes
        if route.batch == 1 and not route.first_read
    ]
    print(
        f"slowest REST row at {sizes[-1]:,} (first reads aside): {min(rest):.0f} requests/s "
        "(target: 500 with 10,000 loaded)"
    )


def main(argv: list[str] | None = None) -> None:
    """Print requests per second for simple GETs, then for the daemon's routes at scale."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=3.0, help="duration of each run")
    parser.add_argument("--clients", type=int, default=4, help="concurrent clients in run 3")
    parser.add_argument(
        "--scale",
        default=",".join(str(size) for size in SCALE_SIZES),
        help="issue counts of the scale mode, comma-separated (empty: skip it)",
    )
    parser.add_argument(
        "--route-seconds", type=float, default=1.0, help="duration of each scale-mode run"
    )
    args = parser.parse_args(argv)
    results = _simple(args)
    for label, rate in results:
        print(f"{label:<28} {rate:8.0f} requests/s")
    print(f"slowest: {min(rate for _label, rate in results):.0f} requests/s (target: 500)")
    sizes = [int(size) for size in args.scale.split(",") if size.strip()]
    if sizes:
        _scale(sizes, args.route_seconds)


if __name__ == "__main__":
    main()
