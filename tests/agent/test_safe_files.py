"""Files in ``.orchestrator/`` are hostile: no link followed, no FIFO blocking, no size unbounded.

Each test plants, with real files, what a hostile agent can leave in its
workspace, and runs the runtime's read or write under a short timeout: the
daemon must refuse with an error that names the file, at once.
"""

from __future__ import annotations

import os
import socket
import stat
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from orchestrator.agent import HookSettings, TurnOutcome
from orchestrator.agent.result_files import CONTEXT_FILE, ResultFile, clear_outputs, read_results
from orchestrator.agent.safe_files import (
    UnsafeFile,
    open_for_reading,
    read_file,
    write_file,
)
from orchestrator.domain.agent_files.errors import ResultErrorKind

from .conftest import Harness

T = TypeVar("T")
HEAD = "a" * 40
QUICK_S = 5.0


def within(seconds: float, action: Callable[[], T]) -> T:
    """Run ``action`` in a thread; fail the test if it has not returned after ``seconds``."""
    outcome: dict[str, object] = {}

    def run() -> None:
        try:
            outcome["value"] = action()
        except BaseException as error:
            outcome["error"] = error

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"still blocked after {seconds} s"
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["value"]  # type: ignore[return-value]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    path = tmp_path / "ws" / ".orchestrator"
    path.mkdir(parents=True)
    return path


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    path = tmp_path / "daemon-secret.txt"
    path.write_text("the daemon's own file\n")
    return path


# ------------------------------------------------------------------ writing


def test_a_write_replaces_a_regular_file_atomically(folder: Path) -> None:
    (folder / CONTEXT_FILE).write_text("old")
    write_file(folder, CONTEXT_FILE, b'{"new": true}')
    assert (folder / CONTEXT_FILE).read_text() == '{"new": true}'
    assert sorted(p.name for p in folder.iterdir()) == [CONTEXT_FILE], "no temporary left"
    assert stat.S_IMODE((folder / CONTEXT_FILE).stat().st_mode) == 0o600


def test_a_write_creates_the_folder_as_a_private_directory(tmp_path: Path) -> None:
    folder = tmp_path / ".orchestrator"
    write_file(folder, CONTEXT_FILE, b"{}")
    assert folder.is_dir() and not folder.is_symlink()
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700


def test_a_symlinked_context_file_is_not_followed(folder: Path, outside: Path) -> None:
    (folder / CONTEXT_FILE).symlink_to(outside)
    with pytest.raises(UnsafeFile) as caught:
        within(QUICK_S, lambda: write_file(folder, CONTEXT_FILE, b"{}"))
    assert outside.read_text() == "the daemon's own file\n"
    assert (folder / CONTEXT_FILE).is_symlink(), "refused, not replaced"
    assert str(caught.value).startswith(str(folder / CONTEXT_FILE))
    assert "symbolic link" in str(caught.value)


def test_a_hard_linked_context_file_is_replaced_not_written_through(
    folder: Path, outside: Path
) -> None:
    os.link(outside, folder / CONTEXT_FILE)
    write_file(folder, CONTEXT_FILE, b"{}")
    assert outside.read_text() == "the daemon's own file\n"
    assert (folder / CONTEXT_FILE).read_text() == "{}"


@pytest.mark.parametrize("kind", ["fifo", "directory", "socket"])
def test_a_special_context_file_fails_at_once(folder: Path, kind: str) -> None:
    target = folder / CONTEXT_FILE
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "directory":
        target.mkdir()
    else:
        with socket.socket(socket.AF_UNIX) as server:
            server.bind(str(target))
    started = time.monotonic()
    with pytest.raises(UnsafeFile) as caught:
        within(QUICK_S, lambda: write_file(folder, CONTEXT_FILE, b"{}"))
    assert time.monotonic() - started < QUICK_S
    assert caught.value.path == target
    assert {"fifo": "a FIFO", "directory": "a directory", "socket": "a socket"}[kind] in str(
        caught.value
    )


def test_a_result_folder_that_is_a_link_is_refused(tmp_path: Path, outside: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / ".orchestrator").symlink_to(elsewhere)
    with pytest.raises(UnsafeFile) as caught:
        write_file(workspace / ".orchestrator", CONTEXT_FILE, b"{}")
    assert "symbolic link" in str(caught.value)
    assert list(elsewhere.iterdir()) == []
    results = read_results(workspace / ".orchestrator", expected_head=HEAD, max_bytes=1000)
    (error,) = results.errors
    assert error.file == ".orchestrator"
    assert "symbolic link" in error.message


@pytest.mark.parametrize("kind", ["fifo", "file"])
def test_a_result_folder_that_is_not_a_directory_is_refused(tmp_path: Path, kind: str) -> None:
    folder = tmp_path / ".orchestrator"
    if kind == "fifo":
        os.mkfifo(folder)
    else:
        folder.write_text("x")
    with pytest.raises(UnsafeFile) as caught:
        within(QUICK_S, lambda: write_file(folder, CONTEXT_FILE, b"{}"))
    assert "must be a plain directory" in str(caught.value)
    results = within(QUICK_S, lambda: read_results(folder, expected_head=HEAD, max_bytes=10))
    assert [e.file for e in results.errors] == [".orchestrator"]


# ------------------------------------------------------------------ reading


def test_a_fifo_result_file_fails_quickly_with_its_name(folder: Path) -> None:
    os.mkfifo(folder / "fix-summary.json")
    results = within(QUICK_S, lambda: read_results(folder, expected_head=HEAD, max_bytes=1000))
    (error,) = results.errors
    assert str(error) == "fix-summary.json: is a FIFO, not a regular file"


def test_a_ten_megabyte_result_file_is_refused_without_reading_it(folder: Path) -> None:
    with (folder / "review.md").open("wb") as handle:
        handle.truncate(10 * 1024 * 1024)
    results = within(QUICK_S, lambda: read_results(folder, expected_head=HEAD, max_bytes=1 << 20))
    (error,) = results.errors
    assert error.file == "review.md"
    assert error.kind is ResultErrorKind.TOO_LARGE
    assert "10485760 bytes, more than the limit of 1048576" in error.message


def test_a_directory_result_file_is_refused(folder: Path) -> None:
    (folder / "pr-description.md").mkdir()
    (error,) = read_results(folder, expected_head=HEAD, max_bytes=1000).errors
    assert str(error) == "pr-description.md: is a directory, not a regular file"


def test_a_hard_link_to_a_daemon_file_is_not_read(folder: Path, outside: Path) -> None:
    os.link(outside, folder / "pr-description.md")
    (error,) = read_results(folder, expected_head=HEAD, max_bytes=1000).errors
    assert error.file == "pr-description.md"
    assert "2 hard links" in error.message


def test_every_kind_of_planted_result_is_cleared_without_following(
    folder: Path, outside: Path
) -> None:
    os.mkfifo(folder / "review.md")
    (folder / "blocked.md").symlink_to(outside)
    (folder / "fix-summary.json").mkdir()
    (folder / "fix-summary.json" / "inner").symlink_to(outside.parent)
    os.link(outside, folder / "pr-description.md")
    within(QUICK_S, lambda: clear_outputs(folder))
    assert list(folder.iterdir()) == []
    assert outside.read_text() == "the daemon's own file\n"


def test_reading_an_absent_folder_or_file_is_none(tmp_path: Path) -> None:
    assert read_file(tmp_path / "missing", "x", max_bytes=10) is None
    assert read_file(tmp_path, "missing", max_bytes=10) is None
    assert read_results(tmp_path / "missing", expected_head=HEAD, max_bytes=10).ok


def test_a_fifo_prompt_cannot_become_the_agents_input(folder: Path) -> None:
    os.mkfifo(folder / "prompt.md")
    with pytest.raises(UnsafeFile):
        within(QUICK_S, lambda: open_for_reading(folder, "prompt.md"))


# --------------------------------------------------------- through the runner


def test_a_hook_that_swaps_the_prompt_for_a_fifo_fails_the_turn_quickly(
    harness: Harness,
) -> None:
    harness.hooks = HookSettings(
        before_run='rm -f "$ORCHESTRATOR_PROMPT_FILE" && mkfifo "$ORCHESTRATOR_PROMPT_FILE"'
    )
    result = within(30, lambda: harness.run({"steps": [{"message": "never runs"}]}))
    assert result.outcome is TurnOutcome.FAILED
    assert "could not open the prompt" in result.message
    assert "prompt.md: is a FIFO" in result.message
    assert result.events == 0


@pytest.mark.parametrize(
    ("step", "expected"),
    [
        ({"kind": "fifo"}, "review.md: is a FIFO, not a regular file"),
        ({"kind": "directory"}, "review.md: is a directory, not a regular file"),
        ({"kind": "symlink", "target": "/etc/passwd"}, "review.md: is a symbolic link"),
    ],
)
def test_an_agent_planting_a_special_result_file_gets_a_located_failure(
    harness: Harness, step: dict[str, str], expected: str
) -> None:
    scenario = {"steps": [{"special_file": {"path": ".orchestrator/review.md", **step}}]}
    result = within(30, lambda: harness.run(scenario, required=frozenset({ResultFile.REVIEW})))
    assert result.outcome is TurnOutcome.INVALID_RESULTS
    assert expected in result.message


def test_an_agent_replacing_the_result_folder_with_a_link_reads_nothing(
    harness: Harness, tmp_path: Path
) -> None:
    decoy = tmp_path / "decoy"
    decoy.mkdir()
    (decoy / "pr-description.md").write_text("from elsewhere")
    scenario = {
        "steps": [
            {"special_file": {"path": ".orchestrator", "kind": "symlink", "target": str(decoy)}}
        ]
    }
    result = harness.run(scenario)
    assert result.outcome is TurnOutcome.INVALID_RESULTS
    assert result.results.pr_description is None
    assert ".orchestrator" in result.message


def test_an_agent_leaving_a_huge_result_file_is_refused_quickly(harness: Harness) -> None:
    scenario = {"steps": [{"huge_file": {"path": ".orchestrator/review.md", "bytes": 10 << 20}}]}
    result = within(60, lambda: harness.run(scenario))
    assert result.outcome is TurnOutcome.INVALID_RESULTS
    error = result.results.error_for(ResultFile.REVIEW)
    assert error is not None and error.kind is ResultErrorKind.TOO_LARGE
