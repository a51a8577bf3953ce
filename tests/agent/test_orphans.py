"""Agents die with the daemon: a parent death signal for the leader, the registry for the rest.

The decision over recorded entries is a pure function, tested as a table over
made-up process tables. Everything else uses real processes: a daemon-like
parent (``orphan_parent.py``, the real runner in a pool thread) killed with
SIGKILL, with and without bubblewrap, and registry sweeps over live, dead,
recycled and corrupt entries. Tests assert on outcomes, polling ``/proc`` up
to a deadline, never on how long something took.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from orchestrator.agent import (
    AgentRunner,
    AgentSettings,
    SandboxMode,
    SandboxSettings,
    TurnOutcome,
    TurnRequest,
)
from orchestrator.agent.process import SETPRIV_ENV, spawn, terminate_session
from orchestrator.agent.reaper import (
    TAG_ENV,
    GroupEntry,
    OrphanReport,
    ProcessInfo,
    boot_id,
    plan_sweep,
    read_process,
)
from orchestrator.agent.registry import ProcessRegistry
from orchestrator.domain.phases import Phase

from .conftest import Harness
from .test_sandbox import processes_with, require_bwrap, sleep_token, wait_for

PARENT = Path(__file__).with_name("orphan_parent.py")
L = 4000  # the recorded leader in the table tests
OWNER = 100


# ------------------------------------------------------------ the decision


def proc(pid: int, *, pgid: int = 0, sid: int = 0, start: int = 50, **more: Any) -> ProcessInfo:
    values: dict[str, Any] = {
        "pid": pid,
        "ppid": 1,
        "pgid": pgid or pid,
        "sid": sid or pid,
        "start_time": start,
        "state": "S",
    }
    values.update(more)
    return ProcessInfo(**values)


def entry(**overrides: Any) -> GroupEntry:
    values: dict[str, Any] = {
        "pid": L,
        "start_time": 50,
        "tag": "t" * 32,
        "kind": "agent",
        "label": "run-1",
        "owner_pid": OWNER,
        "owner_start_time": 10,
        "boot_id": "boot-1",
    }
    values.update(overrides)
    return GroupEntry(**values)


LEADER = proc(L)
SAME_GROUP = proc(4001, pgid=L, sid=L, start=60)
OTHER_GROUP_SAME_SESSION = proc(4002, sid=L, start=70)
OWNER_ALIVE = proc(OWNER, start=10)

SWEEP_RULES = [
    # (rule, entry overrides, processes, kept, targets; None = dropped)
    ("a live daemon's entry is kept", {}, [OWNER_ALIVE, LEADER, SAME_GROUP], True, None),
    (
        "a dead daemon's leader, its group and its session are ended",
        {},
        [LEADER, SAME_GROUP, OTHER_GROUP_SAME_SESSION, proc(4100)],
        False,
        {L, 4001, 4002},
    ),
    (
        "a daemon whose pid was recycled counts as dead",
        {},
        [proc(OWNER, start=11), LEADER],
        False,
        {L},
    ),
    (
        "a dead leader's group and session are still ended",
        {},
        [SAME_GROUP, OTHER_GROUP_SAME_SESSION],
        False,
        {4001, 4002},
    ),
    (
        "a recycled leader pid is never killed, nor its group",
        {"start_time": 40},
        [LEADER, SAME_GROUP],
        False,
        None,
    ),
    (
        "a tagged process is ended even when the leader pid was recycled",
        {"start_time": 40},
        [LEADER, proc(4200, tag="t" * 32)],
        False,
        {4200},
    ),
    (
        "a tagged process that left the session is ended",
        {},
        [LEADER, proc(4300, start=90, tag="t" * 32)],
        False,
        {L, 4300},
    ),
    (
        "a process older than the leader is not its member",
        {},
        [proc(4400, pgid=L, sid=L, start=49)],
        False,
        None,
    ),
    ("a dead pid with nothing left is dropped", {}, [proc(4500)], False, None),
    ("zombies are not targets", {}, [proc(L, state="Z")], False, None),
    (
        "another boot's entry is dropped without killing",
        {"boot_id": "boot-0"},
        [LEADER, SAME_GROUP],
        False,
        None,
    ),
    ("protected processes are never targets", {}, [proc(1, pgid=L, sid=L, start=99)], False, None),
]


@pytest.mark.parametrize(
    ("overrides", "processes", "kept", "targets"),
    [row[1:] for row in SWEEP_RULES],
    ids=[row[0] for row in SWEEP_RULES],
)
def test_sweep_rules(
    overrides: dict[str, Any],
    processes: list[ProcessInfo],
    kept: bool,
    targets: set[int] | None,
) -> None:
    recorded = entry(**overrides)
    table = {p.pid: p for p in processes}
    plan = plan_sweep([recorded], table, boot="boot-1", protected=frozenset({1}))
    assert plan.keep == ((recorded,) if kept else ())
    if targets is None:
        assert plan.end == {}
        assert plan.drop == (() if kept else (recorded,))
    else:
        assert plan.end == {recorded: frozenset(targets)}
        assert plan.drop == ()


@pytest.mark.parametrize(
    "text",
    [
        "{not json",
        "[]",
        json.dumps({**json.loads(entry().to_json()), "pid": "4000"}),
        json.dumps({**json.loads(entry().to_json()), "pid": True}),
        json.dumps({k: v for k, v in json.loads(entry().to_json()).items() if k != "tag"}),
        json.dumps({**json.loads(entry().to_json()), "pid": 1}),
    ],
    ids=["not json", "not an object", "pid a string", "pid a bool", "no tag", "pid 1"],
)
def test_an_entry_is_read_only_when_every_field_is_right(text: str) -> None:
    with pytest.raises(ValueError):
        GroupEntry.from_json(text)
    assert GroupEntry.from_json(entry().to_json()) == entry()


# ------------------------------------------------------------ real processes


@pytest.fixture
def tokens() -> Iterator[Callable[[], str]]:
    """Fresh ``sleep`` arguments; whatever still sleeps on one is killed after the test."""
    made: list[str] = []

    def make() -> str:
        made.append(sleep_token())
        return made[-1]

    yield make
    for token in made:
        for pid in processes_with(token):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


def sleepers(token: str) -> list[int]:
    """The live ``sleep TOKEN`` processes (not the shells whose command line names it)."""
    wanted = f"sleep\0{token}\0".encode()
    return [pid for pid in processes_with(token) if _cmdline(pid) == wanted]


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def dead_pid() -> int:
    done = subprocess.Popen(["true"])
    done.wait()
    return done.pid


def session(script: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """``bash -c script`` leading a session of its own, like an agent."""
    return subprocess.Popen(
        ["bash", "-c", script],
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **(env or {})},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )


def orphan_entry(pid: int, **overrides: Any) -> GroupEntry:
    """An entry for the session ``pid`` leads, left by a daemon that is gone."""
    leader = read_process(pid)
    assert leader is not None
    values: dict[str, Any] = {
        "pid": pid,
        "start_time": leader.start_time,
        "tag": secrets.token_hex(16),
        "kind": "agent",
        "label": "run-1",
        "owner_pid": dead_pid(),
        "owner_start_time": 0,
        "boot_id": boot_id(),
    }
    values.update(overrides)
    return GroupEntry(**values)


def write_entry(folder: Path, recorded: GroupEntry) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / recorded.file_name
    path.write_text(recorded.to_json())
    return path


def sweep(folder: Path, *recorded: GroupEntry) -> OrphanReport:
    """Leave ``recorded`` in ``folder`` as a dead daemon would, then sweep as its next life."""
    for one in recorded:
        write_entry(folder, one)
    return ProcessRegistry(folder).end_orphans(grace_s=1.0)


def running(token: str) -> bool:
    return bool(sleepers(token))


def gone(token: str) -> bool:
    return not sleepers(token)


def leader_alive(recorded: GroupEntry) -> bool:
    found = read_process(recorded.pid)
    return found is not None and found.alive and found.start_time == recorded.start_time


def entries(folder: Path) -> list[GroupEntry]:
    return [GroupEntry.from_json(p.read_text()) for p in sorted(folder.glob("*.json"))]


def test_a_leftover_live_session_is_ended_and_its_entry_removed(
    tmp_path: Path, tokens: Callable[[], str]
) -> None:
    same_group, other_group = tokens(), tokens()
    leader = session(f"sleep {same_group} & (set -m; sleep {other_group} & wait) & wait")
    assert wait_for(lambda: running(same_group) and running(other_group))
    folder = tmp_path / "agents"

    report = sweep(folder, orphan_entry(leader.pid))

    leader.wait(10)
    assert wait_for(lambda: gone(same_group) and gone(other_group))
    assert leader.pid in report.ended
    assert report.survivors == ()
    assert report.removed == 1
    assert list(folder.iterdir()) == []


def test_a_dead_leaders_group_is_ended(tmp_path: Path, tokens: Callable[[], str]) -> None:
    token = tokens()
    leader = session(f"sleep {token} & exit 0")
    recorded = orphan_entry(leader.pid)
    leader.wait(10)
    assert wait_for(lambda: running(token))
    left = sleepers(token)
    folder = tmp_path / "agents"

    report = sweep(folder, recorded)

    assert wait_for(lambda: gone(token))
    assert set(left) <= set(report.ended)
    assert list(folder.iterdir()) == []


def test_a_process_that_left_the_session_is_found_by_its_tag(
    tmp_path: Path, tokens: Callable[[], str]
) -> None:
    token, tag = tokens(), secrets.token_hex(16)
    leader = session(f"setsid sleep {token} & exit 0", env={TAG_ENV: tag})
    recorded = orphan_entry(leader.pid, tag=tag)
    leader.wait(10)
    assert wait_for(lambda: running(token))
    escaped = sleepers(token)
    info = read_process(escaped[0])
    assert info is not None and info.sid != recorded.pid
    folder = tmp_path / "agents"

    report = sweep(folder, recorded)

    assert wait_for(lambda: gone(token))
    assert set(escaped) <= set(report.ended)


def test_a_recycled_pid_is_not_killed(tmp_path: Path, tokens: Callable[[], str]) -> None:
    leader_token, member_token = tokens(), tokens()
    stranger = session(f"sleep {member_token} & exec sleep {leader_token}")
    assert wait_for(lambda: running(leader_token) and running(member_token))
    folder = tmp_path / "agents"
    real = orphan_entry(stranger.pid)

    # The pid is the one recorded, but this process started later: the pid was reused.
    report = sweep(folder, replace(real, start_time=real.start_time - 1))

    assert report.ended == ()
    assert stranger.poll() is None
    assert running(leader_token) and running(member_token)
    assert list(folder.iterdir()) == []
    stranger.kill()
    stranger.wait(10)


def test_a_stale_entry_for_a_dead_pid_is_just_removed(tmp_path: Path) -> None:
    folder = tmp_path / "agents"

    report = sweep(folder, replace(orphan_entry(os.getpid()), pid=dead_pid(), label="dead"))

    assert report.ended == ()
    assert report.removed == 1
    assert list(folder.iterdir()) == []


def test_a_live_daemons_sessions_are_left_alone(tmp_path: Path, tokens: Callable[[], str]) -> None:
    token = tokens()
    leader = session(f"exec sleep {token}")
    assert wait_for(lambda: running(token))
    me = read_process(os.getpid())
    assert me is not None
    folder = tmp_path / "agents"
    mine = orphan_entry(leader.pid, owner_pid=me.pid, owner_start_time=me.start_time)

    report = sweep(folder, mine)

    assert report.ended == () and report.kept == 1
    assert entries(folder) == [mine]
    assert leader.poll() is None
    leader.kill()
    leader.wait(10)


def test_a_corrupt_entry_is_removed_with_a_warning_naming_it(tmp_path: Path) -> None:
    folder = tmp_path / "agents"
    folder.mkdir()
    broken = folder / "4242-17.json"
    broken.write_text("{half an entry")
    unfinished = folder / ".4243-18.json.tmp"
    unfinished.write_text("{")

    with capture_logs() as logs:
        report = ProcessRegistry(folder).end_orphans(grace_s=1.0)

    assert report.corrupt == (broken,)
    assert not broken.exists()
    warnings = [line for line in logs if line["event"] == "agent_registry_entry_corrupt"]
    assert [line["file"] for line in warnings] == [str(broken)]
    assert warnings[0]["log_level"] == "warning"
    # A temporary file of an interrupted write is not an entry: never read, never warned about.
    assert unfinished.exists()


def test_a_turn_is_recorded_while_it_runs_and_forgotten_after(
    harness: Harness, tmp_path: Path
) -> None:
    folder = tmp_path / "state" / "agents"
    listing = tmp_path / "listing.txt"
    harness.hooks = replace(harness.hooks, before_run=f"ls {folder} > {tmp_path}/hook.txt")
    agent = AgentSettings(
        command=f'ls {folder} > {listing}; echo "tag=${TAG_ENV}" >> {listing}',
        stall_timeout_ms=20_000,
    )
    runner = AgentRunner(
        agent,
        harness.hooks,
        harness.environment(agent),
        log_dir=tmp_path / "logs",
        registry=ProcessRegistry(folder),
    )
    result = runner.run(
        TurnRequest(workspace=harness.workspace(), prompt="Go.", phase=Phase.IMPLEMENTING)
    )

    assert result.outcome is TurnOutcome.COMPLETED, result.message
    seen = listing.read_text().splitlines()
    assert len([name for name in seen if name.endswith(".json")]) == 1
    assert seen[-1].startswith("tag=") and len(seen[-1]) == len("tag=") + 32
    assert len((tmp_path / "hook.txt").read_text().split()) == 1
    assert list(folder.iterdir()) == []


# ------------------------------------------- a daemon-like parent, SIGKILLed


def agent_command(setsid_token: str, group_token: str, leader_token: str) -> str:
    quiet = "</dev/null >/dev/null 2>&1"
    return (
        f"setsid sleep {setsid_token} {quiet} & "
        f"sleep {group_token} {quiet} & "
        """echo '{"type": "message", "text": "working"}'; """
        f"sleep {leader_token}; echo done"
    )


def start_parent(
    harness: Harness,
    tmp_path: Path,
    command: str,
    *,
    sandbox: bool = False,
    env: dict[str, str] | None = None,
) -> tuple[subprocess.Popen[bytes], Path, Path]:
    """The daemon-like parent, running one turn of ``command``; its registry folder, its log."""
    workspace = harness.workspace()
    state = tmp_path / "state"
    config: dict[str, Any] = {
        "workspace": {
            **{k: v for k, v in vars(workspace).items() if k != "path"},
            "path": str(workspace.path),
        },
        "registry": str(state / "agents"),
        "logs": str(tmp_path / "logs"),
        "command": command,
    }
    if sandbox:
        config["sandbox"] = {
            "home_root": str(state / "agent-homes"),
            "workspace_root": str(harness.root),
            "hidden": [str(state)],
        }
    path = tmp_path / "parent.json"
    path.write_text(json.dumps(config))
    log = tmp_path / "parent.log"
    parent = subprocess.Popen(
        [sys.executable, str(PARENT), str(path)],
        env={**os.environ, **(env or {})},
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    return parent, state / "agents", log


def kill(parent: subprocess.Popen[bytes]) -> None:
    parent.send_signal(signal.SIGKILL)
    parent.wait(10)


def test_agents_die_with_a_killed_parent_and_the_next_life_ends_the_rest(
    harness: Harness, tmp_path: Path, tokens: Callable[[], str]
) -> None:
    setsid_token, group_token, leader_token = tokens(), tokens(), tokens()
    command = agent_command(setsid_token, group_token, leader_token)
    parent, folder, _log = start_parent(harness, tmp_path, command)
    try:
        assert wait_for(
            lambda: (
                all(running(t) for t in (setsid_token, group_token, leader_token))
                and len(entries(folder)) == 1
            ),
            timeout_s=30,
        ), "the agent never started"
        (recorded,) = entries(folder)
        assert recorded.kind == "agent" and leader_alive(recorded)
        left_behind = {
            pid for token in (setsid_token, group_token, leader_token) for pid in sleepers(token)
        }
    finally:
        kill(parent)

    # The leader (bash) had a parent death signal: it dies with the daemon's thread.
    assert wait_for(lambda: not leader_alive(recorded))
    report = ProcessRegistry(folder).end_orphans(grace_s=1.0)

    assert wait_for(lambda: all(gone(t) for t in (setsid_token, group_token, leader_token)))
    # What the leader had started was still there for the sweep, setsid child included.
    assert left_behind <= set(report.ended)
    assert list(folder.iterdir()) == []


def test_without_setpriv_the_agent_runs_and_the_next_life_ends_all_of_it(
    harness: Harness, tmp_path: Path, tokens: Callable[[], str]
) -> None:
    setsid_token, group_token, leader_token = tokens(), tokens(), tokens()
    command = agent_command(setsid_token, group_token, leader_token)
    missing = {SETPRIV_ENV: str(tmp_path / "no-setpriv")}
    parent, folder, log = start_parent(harness, tmp_path, command, env=missing)
    try:
        assert wait_for(
            lambda: running(leader_token) and len(entries(folder)) == 1, timeout_s=30
        ), "the agent never started"
        (recorded,) = entries(folder)
    finally:
        kill(parent)

    assert "agent_pdeathsig_unavailable" in log.read_text()
    # Nothing killed the leader this time; the sweep ends it with the rest.
    assert leader_alive(recorded)
    report = ProcessRegistry(folder).end_orphans(grace_s=1.0)

    assert wait_for(lambda: all(gone(t) for t in (setsid_token, group_token, leader_token)))
    assert recorded.pid in report.ended
    assert list(folder.iterdir()) == []


def test_a_sandboxed_agent_dies_whole_with_a_killed_parent(
    harness: Harness, tmp_path: Path, tokens: Callable[[], str]
) -> None:
    require_bwrap()
    setsid_token, group_token, leader_token = tokens(), tokens(), tokens()
    command = agent_command(setsid_token, group_token, leader_token)
    parent, folder, _log = start_parent(harness, tmp_path, command, sandbox=True)
    try:
        assert wait_for(
            lambda: (
                all(running(t) for t in (setsid_token, group_token, leader_token))
                and len(entries(folder)) == 1
            ),
            timeout_s=30,
        ), "the sandboxed agent never started"
    finally:
        kill(parent)

    # bubblewrap dies with the parent, and its PID namespace with it: setsid or not.
    assert wait_for(lambda: all(gone(t) for t in (setsid_token, group_token, leader_token)))
    report = ProcessRegistry(folder).end_orphans(grace_s=1.0)
    assert report.ended == ()
    assert list(folder.iterdir()) == []


def test_ending_a_leftover_sandbox_ends_everything_inside_it(
    harness: Harness, tmp_path: Path, tokens: Callable[[], str]
) -> None:
    require_bwrap()
    setsid_token, group_token, leader_token = tokens(), tokens(), tokens()
    state = tmp_path / "state"
    sandbox = SandboxSettings(
        mode=SandboxMode.BWRAP,
        home_root=state / "agent-homes",
        workspace_root=harness.root,
        hidden=(state,),
    )
    folder = state / "agents"
    registry = ProcessRegistry(folder)
    track = registry.track("agent", "run-1")
    leader = spawn(
        ["bash", "-c", agent_command(setsid_token, group_token, leader_token)],
        cwd=harness.workspace().path,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        sandbox=sandbox,
        track=track,
    )
    try:
        assert wait_for(lambda: all(running(t) for t in (setsid_token, group_token, leader_token)))
        assert track.entry is not None and entries(folder) == [track.entry]
        # As a dead daemon would have left it, with a tag the processes do not carry: only
        # bubblewrap's session and its PID namespace can bring the setsid child down.
        write_entry(folder, replace(track.entry, tag=secrets.token_hex(16), owner_pid=dead_pid()))

        report = registry.end_orphans(grace_s=1.0)

        assert wait_for(lambda: all(gone(t) for t in (setsid_token, group_token, leader_token)))
        assert leader.pid in report.ended
        assert list(folder.iterdir()) == []
    finally:
        terminate_session(leader, 0.1)


def test_a_program_started_but_not_yet_recorded_is_found_by_its_pending_tag(
    tmp_path: Path, tokens: Callable[[], str]
) -> None:
    """A daemon killed between starting an agent and recording it: the tag written before
    the start is enough for the next life to end what it started."""
    token, tag = tokens(), secrets.token_hex(16)
    leader = session(f"sleep {token} & exit 0", env={TAG_ENV: tag})
    leader.wait(10)
    assert wait_for(lambda: running(token))
    pending = replace(orphan_entry(os.getpid(), tag=tag), pid=0, start_time=0)
    assert pending.pending and pending.file_name == f"pending-{tag}.json"
    folder = tmp_path / "agents"

    report = sweep(folder, pending)

    assert wait_for(lambda: gone(token))
    assert report.ended and list(folder.iterdir()) == []


def test_a_pending_entry_never_targets_processes_without_its_tag(tmp_path: Path) -> None:
    # Kernel threads have process group and session 0: a pending entry's pid 0 matches none.
    pending = replace(orphan_entry(os.getpid()), pid=0, start_time=0)
    report = sweep(tmp_path / "agents", pending)
    assert report.ended == () and report.removed == 1


def test_the_pending_entry_is_replaced_once_the_program_started(tmp_path: Path) -> None:
    registry = ProcessRegistry(tmp_path / "agents")
    track = registry.track("agent", "run-9")
    track.starting()
    (pending,) = entries(tmp_path / "agents")
    assert pending.pending and pending.tag == track.tag
    proc = session("sleep 5", env={TAG_ENV: track.tag})
    try:
        track.started(proc.pid)
        (recorded,) = entries(tmp_path / "agents")
        assert recorded.pid == proc.pid and recorded.tag == track.tag
    finally:
        proc.kill()
        proc.wait()
    track.ended()
    assert entries(tmp_path / "agents") == []
