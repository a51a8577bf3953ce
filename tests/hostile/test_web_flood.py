"""A connection flood against the real daemon's dashboard starves nothing else.

``orchestrator run`` runs in a process of its own whose descriptor limit is
1,024, soft and hard (what a systemd service gets without ``LimitNOFILE=``).
A local client (anyone on the machine, the agent too) holds 1,100 connections
to the dashboard, each with an unfinished request, and reopens every one the
server closes. Meanwhile an issue goes through an agent turn to an open pull
request, ``/healthz`` keeps answering, no ``Too many open files`` appears,
the daemon stays under its limit and its log stays small.

The figures (the daemon's peak descriptors, ``/healthz`` latencies, the log
lines written during the flood) are printed: ``pytest -s`` shows them.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from orchestrator.logs import read_json_log
from orchestrator_sim.testing import SimWorld, running_world
from tests.e2e.harness import Flow, default_scenario, policy_document, write_policy, write_scenario
from tests.hostile.flood import Flood

ORCHESTRATOR = str(Path(sys.executable).parent / "orchestrator")
DESCRIPTOR_LIMIT = 1024
FLOOD_SIZE = 1100
# The log of a daemon that copes writes a few lines per tick and turn, not one per refusal.
MAX_FLOOD_LOG_LINES = 1000


@pytest.fixture
def world(tmp_path: Path) -> Iterator[SimWorld]:
    with running_world(tmp_path / "sim") as running:
        yield running


def limited(argv: list[str]) -> list[str]:
    """``argv`` with 1,024 descriptors, soft and hard: no way to raise them (util-linux prlimit)."""
    prlimit = shutil.which("prlimit")
    if prlimit is None:
        pytest.fail("prlimit (util-linux) is needed to limit the daemon's descriptors")
    return [prlimit, f"--nofile={DESCRIPTOR_LIMIT}:{DESCRIPTOR_LIMIT}", "--", *argv]


@contextmanager
def daemon(tmp: Path, world: SimWorld, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    policy = tmp / "WORKFLOW.md"
    scenario = write_scenario(tmp, default_scenario())
    document = policy_document(tmp, world, scenario, "mutate", {"polling": {"interval_ms": 500}})
    write_policy(policy, document)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp / "home"),
        "XDG_STATE_HOME": str(tmp / "state"),
        "E2E_ENDPOINT": world.url,
        "E2E_TOKEN": world.bot.token,
    }
    argv = [ORCHESTRATOR, "--log-format", "json", "run", str(policy), "--port", "0"]
    with log.open("ab") as out:
        proc = subprocess.Popen(
            limited(argv), env=env, stdout=out, stderr=out, start_new_session=True
        )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


def events(log: Path, name: str) -> list[dict[str, Any]]:
    return [entry for entry in read_json_log(log) if entry.get("event") == name]


def line_count(log: Path) -> int:
    with log.open("rb") as handle:
        return sum(1 for _ in handle)


def descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def wait_for(condition: Callable[[], bool], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


class Watch:
    """Samples the daemon's descriptors and ``/healthz`` while the flood runs."""

    def __init__(self, pid: int, url: str) -> None:
        self.pid = pid
        self.url = url
        self.peak_descriptors = 0
        self.latencies: list[float] = []
        self.failures: list[str] = []

    def sample(self) -> None:
        self.peak_descriptors = max(self.peak_descriptors, descriptors(self.pid))
        started = time.monotonic()
        try:
            answer = httpx.get(f"{self.url}/healthz", timeout=30)
        except httpx.HTTPError as error:
            self.failures.append(repr(error))
        else:
            if answer.status_code == 200:
                self.latencies.append(time.monotonic() - started)
            else:
                self.failures.append(f"{answer.status_code}: {answer.text}")
        self.peak_descriptors = max(self.peak_descriptors, descriptors(self.pid))


def raise_own_limit(needed: int) -> None:
    """This process holds the flood's sockets and the emulator's: it needs room for both."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        if hard != resource.RLIM_INFINITY and hard < needed:
            pytest.fail(f"the tests need {needed} descriptors; the hard limit here is {hard}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))


@pytest.mark.slow
def test_a_connection_flood_starves_neither_the_turns_nor_the_health_check(
    tmp_path: Path, world: SimWorld
) -> None:
    raise_own_limit(FLOOD_SIZE * 2 + 1024)
    log = tmp_path / "daemon.log"
    flow = Flow(world, tmp_path, tmp_path / "unused.md", tmp_path / "unused.json", {})
    with daemon(tmp_path, world, log) as proc:
        assert wait_for(lambda: bool(events(log, "daemon_ready")), 60), log.read_text()[-3000:]
        url = events(log, "web_started")[0]["url"]
        address = urlsplit(url)
        assert address.hostname is not None and address.port is not None
        idle_descriptors = descriptors(proc.pid)
        watch = Watch(proc.pid, url)
        flood = Flood((address.hostname, address.port), FLOOD_SIZE)
        lines_before = line_count(log)
        flood.start()
        try:
            flooded = wait_for(lambda: flood.counts.opened >= FLOOD_SIZE, 60)
            watch.sample()
            flow.open_issue("Add the feature")

            def pull_request_opened() -> bool:
                watch.sample()
                return proc.poll() is not None or bool(flow.pulls())

            wait_for(pull_request_opened, 180)
            opened = bool(flow.pulls())
            watch.sample()
            alive_under_flood = proc.poll() is None
            # A stop under the flood: the open connections do not hold the shutdown up.
            proc.send_signal(signal.SIGTERM)
            try:
                code: int | None = proc.wait(60)
            except subprocess.TimeoutExpired:
                code = None
        finally:
            flood.stop()
        flood_lines = line_count(log) - lines_before

    text = log.read_text(encoding="utf-8", errors="replace")
    figures = {
        "descriptor_limit": DESCRIPTOR_LIMIT,
        "daemon_descriptors_idle": idle_descriptors,
        "daemon_descriptors_peak": watch.peak_descriptors,
        "healthz_answered": len(watch.latencies),
        "healthz_failed": len(watch.failures),
        "healthz_median_s": round(statistics.median(watch.latencies), 3)
        if watch.latencies
        else None,
        "healthz_max_s": round(max(watch.latencies), 3) if watch.latencies else None,
        "log_lines_during_flood": flood_lines,
        "log_bytes": len(text.encode()),
        "flood_connections_opened": flood.counts.opened,
        "flood_connections_closed_by_server": flood.counts.closed_by_server,
        "flood_peak_held": flood.counts.peak_held,
    }
    print(f"\nweb flood figures: {json.dumps(figures)}")

    assert flooded, "the flood never opened its connections"
    assert watch.failures == [], watch.failures[:3]
    assert "Too many open files" not in text
    assert not events(log, "database_unreachable")
    assert alive_under_flood, text[-3000:]
    assert opened, "no pull request was opened during the flood"
    implementing = [e for e in events(log, "turn_recorded") if e.get("phase") == "implementing"]
    assert [e["outcome"] for e in implementing] == ["succeeded"]
    assert code == 0, text[-3000:]
    assert watch.peak_descriptors < DESCRIPTOR_LIMIT
    assert flood_lines < MAX_FLOOD_LOG_LINES, flood_lines
    # The flood did reach the server: it held connections and had many of them closed.
    assert flood.counts.peak_held >= 200
    assert flood.counts.closed_by_server > 0
    # What the daemon had: the limit it was given, a quarter of it for the web server.
    limits = [(e["soft"], e["hard"], e["web_budget"]) for e in events(log, "descriptor_limit")]
    assert limits == [(DESCRIPTOR_LIMIT, DESCRIPTOR_LIMIT, DESCRIPTOR_LIMIT // 4)]
