"""Benchmark: how many simple authenticated GET requests per second the emulator serves.

Run ``python -m orchestrator.sim.bench``. It starts an emulator in this process,
sends GETs over keep-alive connections (one client, then several in threads)
and prints the figures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import http.client
import tempfile
import threading
import time
from pathlib import Path

from orchestrator.sim.testing import running_world


def _hammer(port: int, token: str, path: str, seconds: float, counts: list[int]) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Authorization": f"token {token}", "Accept": "application/vnd.github+json"}
    done = 0
    deadline = time.perf_counter() + seconds
    try:
        while time.perf_counter() < deadline:
            connection.request("GET", path, headers=headers)
            answer = connection.getresponse()
            answer.read()
            if answer.status != 200:
                raise RuntimeError(f"GET {path} answered {answer.status}")
            done += 1
    finally:
        connection.close()
    counts.append(done)


def measure(port: int, token: str, path: str, clients: int, seconds: float) -> float:
    """Requests per second over ``seconds`` with ``clients`` keep-alive connections."""
    counts: list[int] = []
    threads = [
        threading.Thread(target=_hammer, args=(port, token, path, seconds, counts))
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


def main(argv: list[str] | None = None) -> None:
    """Print requests per second for GET /repos/{owner}/{repo}/issues/1 and GET /user."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=3.0, help="duration of each run")
    parser.add_argument("--clients", type=int, default=4, help="concurrent clients in run 2")
    args = parser.parse_args(argv)
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
        results = [
            ("GET /user, 1 client", measure(port, token, "/user", 1, args.seconds)),
            ("GET issue, 1 client", measure(port, token, issue_path, 1, args.seconds)),
            (
                f"GET issue, {args.clients} clients",
                measure(port, token, issue_path, args.clients, args.seconds),
            ),
        ]
    for label, rate in results:
        print(f"{label:<28} {rate:8.0f} requests/s")
    print(f"slowest: {min(rate for _label, rate in results):.0f} requests/s (target: 500)")


if __name__ == "__main__":
    main()
