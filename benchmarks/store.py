"""Benchmark of the store on the tick's path: ``python -m benchmarks.store``.

It fills a fresh SQLite database (and a PostgreSQL one when
``ORCHESTRATOR_TEST_PG_URL`` is set) with 10,000 tracked issues in mixed phases
and as many HTTP cache entries and pull request states, then times what every
tick does with them:

- ``RecordStore.load`` of the repository when nothing changed, and after
  another writer changed 1% of the rows (min, median and max of 10 runs);
- HTTP cache lookups of 10,000 URLs, cold (from the database) and warm;
- the pull request poller's cache reads for 10,000 pull requests;
- the resident memory a process gains by holding the 10,000 loaded records
  (measured in a child process, so what the set-up allocated does not count).

It prints figures and asserts nothing.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import insert

from benchmarks.cluster import scratch_database
from benchmarks.planner import build_snapshot
from orchestrator.domain.phases import Phase, RolloutMode
from orchestrator.domain.policy import FlowPolicy
from orchestrator.domain.snapshot import StoredRecord
from orchestrator.github import prstate
from orchestrator.store import migrate
from orchestrator.store.database import Database
from orchestrator.store.engine import describe_url
from orchestrator.store.http_cache import CachedResponse, HttpCache
from orchestrator.store.models import HttpCacheEntry, TrackedIssue
from orchestrator.store.records import RecordStore, record_columns

PG_URL_ENV = "ORCHESTRATOR_TEST_PG_URL"
REPO = "acme/app"
_NOW = datetime(2026, 3, 14, 12, 0, tzinfo=UTC)
_INSERT_BATCH = 500
# A transaction each when one by one: a few hundred say enough.
_PUTS = 200


# ---------------------------------------------------------------- the data


def _records(count: int) -> list[StoredRecord]:
    """``count`` records in mixed phases, as the planner's benchmark builds them."""
    policy = FlowPolicy(rollout_mode=RolloutMode.MERGE, max_concurrent_agents=50)
    snapshot = build_snapshot(count, policy)
    fallback = StoredRecord(phase=Phase.IMPLEMENTING, phase_since=_NOW)
    return [item.record or fallback for item in snapshot.issues]


def _issue_body(number: int) -> str:
    """An issue as GitHub's REST API answers it, about 1.5 kB."""
    return json.dumps(
        {
            "number": number,
            "title": f"Issue {number}",
            "state": "open",
            "labels": [{"name": "agent", "color": "ededed", "description": "owned by the agent"}],
            "user": {"login": "alice", "type": "User", "id": 1000 + number},
            "body": "Steps to reproduce the problem, expected and actual behaviour. " * 16,
            "url": f"https://api.github.com/repos/{REPO}/issues/{number}",
            "created_at": "2026-03-01T10:00:00Z",
            "updated_at": "2026-03-14T11:00:00Z",
        }
    )


def _fingerprint(number: int) -> dict[str, Any]:
    head = f"{number:040x}"
    return {
        "number": number,
        "updatedAt": "2026-03-14T11:00:00Z",
        "headRefOid": head,
        "headRef": {"target": {"oid": head, "statusCheckRollup": {"contexts": {"nodes": []}}}},
        "reviewThreads": {"totalCount": 0, "nodes": []},
    }


def _state_body(number: int) -> str:
    """A full pull request state node, about 2 kB."""
    return json.dumps(
        {
            "number": number,
            "headRefOid": f"{number:040x}",
            "state": "OPEN",
            "mergeable": "MERGEABLE",
            "updatedAt": "2026-03-14T11:00:00Z",
            "reviews": {
                "nodes": [
                    {
                        "state": "APPROVED",
                        "author": {"login": "alice", "__typename": "User"},
                        "commit": {"oid": f"{number:040x}"},
                        "submittedAt": "2026-03-14T10:00:00Z",
                    }
                ]
            },
            "reviewThreads": {
                "nodes": [
                    {
                        "id": f"T{number}",
                        "path": "app.py",
                        "isResolved": True,
                        "comments": {
                            "nodes": [
                                {
                                    "author": {"login": "alice", "__typename": "User"},
                                    "body": "Handle the empty case, please. " * 20,
                                    "createdAt": "2026-03-14T09:00:00Z",
                                }
                            ]
                        },
                    }
                ]
            },
            "__headChecks": {"oid": f"{number:040x}", "contexts": []},
            "__incomplete": [],
        }
    )


def _issue_url(number: int) -> str:
    return f"https://api.github.com/repos/{REPO}/issues/{number}"


def seed(db: Database, count: int) -> None:
    """``count`` tracked issues, ``count`` cached REST answers and ``count`` PR states."""
    issues = [
        {
            "repo": REPO,
            "number": number,
            "title": f"Issue {number}",
            "labels": ["agent"],
            "phase": record.phase.value,
            "phase_since": record.phase_since,
            "version": 1,
            "created_at": _NOW,
            "updated_at": _NOW,
            **record_columns(record),
        }
        for number, record in enumerate(_records(count), start=1)
    ]
    cached = [
        {"url": _issue_url(n), "etag": f'W/"{n:032x}"', "body": _issue_body(n), "updated_at": _NOW}
        for n in range(1, count + 1)
    ] + [
        {
            "url": prstate.state_key(REPO, n),
            "etag": prstate.fingerprint_hash(_fingerprint(n)),
            "body": _state_body(n),
            "updated_at": _NOW,
        }
        for n in range(1, count + 1)
    ]
    with db.session() as session:
        for model, rows in ((TrackedIssue, issues), (HttpCacheEntry, cached)):
            for start in range(0, len(rows), _INSERT_BATCH):
                session.execute(insert(model), rows[start : start + _INSERT_BATCH])


# ---------------------------------------------------------------- timing


def _ms(work: Callable[[], object]) -> float:
    gc.collect()
    started = time.perf_counter()
    work()
    return (time.perf_counter() - started) * 1000


def _one(work: Callable[[], object]) -> str:
    return f"{_ms(work):8.1f} ms"


def _spread(timings: Sequence[float]) -> str:
    return (
        f"min {min(timings):8.1f}  median {statistics.median(timings):8.1f}  "
        f"max {max(timings):8.1f} ms"
    )


def _line(label: str, figure: str) -> None:
    print(f"  {label:<46} {figure}", flush=True)


def _bench_records(db: Database, count: int, runs: int) -> None:
    records = RecordStore(db)
    _line("RecordStore.load, first (decodes every row)", _one(lambda: records.load(REPO)))
    steady = [_ms(lambda: records.load(REPO)) for _ in range(runs)]
    _line(f"RecordStore.load, nothing changed ({runs} runs)", _spread(steady))
    writer = RecordStore(db)
    ids = [row.issue_id for row in writer.load(REPO).values()]
    rng = random.Random(11)
    changed = []
    for run in range(runs):
        for issue_id in rng.sample(ids, max(1, count // 100)):
            writer.update(
                issue_id,
                lambda r: replace(r, attempt=r.attempt + 1),
                now=_NOW + timedelta(seconds=run),
            )
        changed.append(_ms(lambda: records.load(REPO)))
    _line(f"RecordStore.load, 1% changed by another ({runs} runs)", _spread(changed))


def _bench_http_cache(db: Database, count: int) -> None:
    urls = [_issue_url(n) for n in range(1, count + 1)]
    one_by_one = HttpCache(db.sessions)
    for state in ("cold", "warm"):
        _line(
            f"HttpCache.get x {count}, one by one, {state}",
            _one(lambda: [one_by_one.get(url) for url in urls]),
        )
    batched = HttpCache(db.sessions)
    for state in ("cold", "warm"):
        _line(f"HttpCache.get_many x {count}, {state}", _one(lambda: batched.get_many(urls)))
    started = HttpCache(db.sessions)
    _line(f"HttpCache.warm() at start-up, {2 * count} entries", _one(started.warm))
    _line(
        f"HttpCache.get x {count}, one by one, after warm()",
        _one(lambda: [started.get(url) for url in urls]),
    )
    writes = HttpCache(db.sessions)
    fresh = [CachedResponse(f"{REPO}/bench/{n}", 'W/"1"', None, "[]") for n in range(_PUTS)]

    def put_each() -> None:
        for entry in fresh:
            writes.put(entry.url, etag=entry.etag, last_modified=None, body=entry.body, now=_NOW)

    _line(f"HttpCache.put x {_PUTS}, one by one", _one(put_each))
    _line(f"HttpCache.put_many x {_PUTS}", _one(lambda: writes.put_many(fresh, now=_NOW)))


def _bench_poller(db: Database, count: int) -> None:
    fingerprints = {n: _fingerprint(n) for n in range(1, count + 1)}
    cache = HttpCache(db.sessions)
    for state in ("cold", "warm"):
        _line(
            f"poller cache reads x {count} PRs, {state}",
            _one(lambda: prstate.reusable_states(cache, REPO, fingerprints)),
        )


# ---------------------------------------------------------------- memory


def _rss_bytes() -> int:
    with open("/proc/self/statm", encoding="ascii") as statm:
        pages = int(statm.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE")


def hold(url: str) -> None:
    """In a fresh process: what holding every loaded record of the repository costs.

    The resident memory is measured first, without tracing; then a second store
    loads the same rows under ``tracemalloc`` for the size of the Python objects.
    """
    db = Database.open(url, migrate=False)
    db.issues.get(REPO, 1)  # the connection, the mappers and the codec are ready
    gc.collect()
    rss = _rss_bytes()
    loaded = RecordStore(db).load(REPO)
    gc.collect()
    gained = _rss_bytes() - rss
    del loaded
    gc.collect()
    tracemalloc.start()
    loaded = RecordStore(db).load(REPO)
    gc.collect()
    traced, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"{len(loaded)} {gained} {traced}")
    db.close()


def _bench_memory(url: str) -> None:
    # The child imports this very package, wherever it was run from.
    root = str(Path(__file__).resolve().parents[1])
    path = os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.store", "--hold", url],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": path},
    )
    if done.returncode != 0:
        _line("memory of the loaded records", f"failed: {done.stderr.strip()[-300:]}")
        return
    count, gained, traced = (int(part) for part in done.stdout.split()[-3:])
    _line(
        f"memory held by {count} loaded records",
        f"RSS +{gained / 2**20:6.1f} MiB, Python objects {traced / 2**20:6.1f} MiB",
    )


# ---------------------------------------------------------------- databases


def run(url: str, count: int, runs: int) -> None:
    """Seed the database at ``url`` and print every figure."""
    migrate.upgrade(url)
    db = Database.open(url)
    try:
        started = time.perf_counter()
        seed(db, count)
        print(
            f"{describe_url(url)}: {count} issues, {2 * count} cache entries "
            f"(seeded in {time.perf_counter() - started:.1f} s)",
            flush=True,
        )
        _bench_records(db, count, runs)
        _bench_http_cache(db, count)
        _bench_poller(db, count)
        _bench_memory(url)
    finally:
        db.close()


def main(argv: list[str] | None = None) -> int:
    """Print the figures on SQLite, and on PostgreSQL when ORCHESTRATOR_TEST_PG_URL is set."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.store")
    parser.add_argument("--issues", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--hold", metavar="URL", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.hold:
        hold(args.hold)
        return 0
    with tempfile.TemporaryDirectory(prefix="store-bench-") as tmp:
        run(f"sqlite:///{Path(tmp) / 'bench.db'}", args.issues, args.runs)
    server = os.environ.get(PG_URL_ENV)
    if server:
        with scratch_database(server) as url:
            run(url, args.issues, args.runs)
    else:
        print(f"PostgreSQL: skipped ({PG_URL_ENV} not set)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
