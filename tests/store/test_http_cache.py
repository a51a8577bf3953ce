"""The HTTP cache: the database behind a memory bounded by size, batched reads and writes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from orchestrator.store.database import Database
from orchestrator.store.http_cache import BATCH, CachedResponse, HttpCache, entry_size

NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def answer(number: int, body: str = "x" * 1000, etag: str | None = None) -> CachedResponse:
    return CachedResponse(
        f"https://api.github.com/repos/acme/app/issues/{number}",
        etag or f'W/"{number}"',
        None,
        body,
    )


def test_a_roundtrip_with_every_field(database: Database) -> None:
    url = "https://api.github.com/repos/acme/app/issues?state=open"
    assert database.http_cache.get(url) is None
    database.http_cache.put(url, etag='W/"1"', last_modified=None, body="[]", now=NOW)
    database.http_cache.put(url, etag='W/"2"', last_modified="Sun", body="[1]", now=NOW)
    expected = CachedResponse(url, 'W/"2"', "Sun", "[1]")
    assert database.http_cache.get(url) == expected
    assert HttpCache(database.sessions).get(url) == expected
    database.http_cache.delete(url)
    assert database.http_cache.get(url) is None
    assert HttpCache(database.sessions).get(url) is None


def test_the_memory_drops_the_least_recently_used_by_size(database: Database) -> None:
    size = entry_size(answer(1))
    cache = HttpCache(database.sessions, memory_bytes=3 * size)
    cache.put_many([answer(1), answer(2), answer(3)], now=NOW)
    assert cache.held == (3, 3 * size)
    cache.get(answer(1).url)  # 1 is now the most recently used: 2 goes first
    cache.put_many([answer(4)], now=NOW)
    assert cache.held == (3, 3 * size)
    # A body twice as big makes room for itself by dropping two.
    cache.put_many([answer(5, body="y" * 2000)], now=NOW)
    assert cache.held[0] == 2 and cache.held[1] <= 3 * size
    # What left the memory is still in the database, and comes back into memory.
    everything = [answer(n) for n in range(1, 5)] + [answer(5, body="y" * 2000)]
    assert cache.get_many([a.url for a in everything]) == {a.url: a for a in everything}
    assert cache.held[1] <= 3 * size
    assert cache.get(answer(2).url) == answer(2)


def test_an_answer_bigger_than_the_bound_stays_in_the_database_only(database: Database) -> None:
    cache = HttpCache(database.sessions, memory_bytes=500)
    big = answer(1, body="z" * 600)
    cache.put_many([big], now=NOW)
    assert cache.held == (0, 0)
    assert cache.get(big.url) == big
    assert cache.held == (0, 0)


def test_batched_reads_and_writes_cover_more_keys_than_one_query_takes(
    database: Database,
) -> None:
    count = 2 * BATCH + 7
    answers = [answer(n, body=f"[{n}]") for n in range(count)]
    database.http_cache.put_many(answers, now=NOW)
    cold = HttpCache(database.sessions)
    urls = [a.url for a in answers] + ["https://api.github.com/never/asked"]
    assert cold.get_many(urls) == {a.url: a for a in answers}
    assert cold.held[0] == count
    # The last answer for a URL given twice in one call wins.
    newer = answer(3, body="[new]", etag='W/"new"')
    cold.put_many([answer(3, body="[old]"), newer], now=NOW)
    assert HttpCache(database.sessions).get(newer.url) == newer
    assert cold.get(newer.url) == newer


def test_another_instance_sees_a_write_and_a_stale_memory_keeps_a_whole_pair(
    database: Database,
) -> None:
    """Another replica's write is read from the database; an older pair kept in memory
    still has the body that goes with its ETag (a 304 to it serves the right body)."""
    ours = HttpCache(database.sessions)
    theirs = HttpCache(database.sessions)
    ours.put_many([answer(1, body="[1]", etag='W/"a"')], now=NOW)
    theirs.put_many([answer(1, body="[2]", etag='W/"b"')], now=NOW)
    assert HttpCache(database.sessions).get(answer(1).url) == answer(1, body="[2]", etag='W/"b"')
    kept = ours.get(answer(1).url)
    assert kept is not None and (kept.etag, kept.body) in {('W/"a"', "[1]"), ('W/"b"', "[2]")}


def test_warming_reads_the_newest_answers_up_to_the_bound(database: Database) -> None:
    answers = [answer(n) for n in range(10)]
    for minutes, item in enumerate(answers):
        database.http_cache.put_many([item], now=NOW + timedelta(minutes=minutes))
    size = entry_size(answers[0])
    cache = HttpCache(database.sessions, memory_bytes=4 * size)
    assert cache.warm() == 4
    assert cache.held == (4, 4 * size)
    # The newest four are in memory: reading them drops nothing.
    newest = [a.url for a in answers[-4:]]
    assert list(cache.get_many(newest)) == newest
    assert cache.held == (4, 4 * size)
    assert HttpCache(database.sessions).warm() == 10
