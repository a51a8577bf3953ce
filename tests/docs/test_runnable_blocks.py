"""The shell blocks the documentation marks as runnable run, as written, against the emulator.

The marker is an HTML comment on the line right before a ```` ```sh ````,
```` ```bash ```` or ```` ```console ```` fence, which rendered Markdown does
not show (in a console block the lines after a ``$ `` prompt are the commands,
the others their output)::

    <!-- runnable -->
    ```sh
    orchestrator validate WORKFLOW.md
    ```

``<!-- runnable: postgresql -->`` marks a block that needs a PostgreSQL
database: it runs with ``ORCHESTRATOR_DATABASE_URL`` naming a fresh, empty one
on the server of ``ORCHESTRATOR_TEST_PG_URL`` (set by ``make test``), and is
skipped only where that variable is unset outside CI. A marker before anything
but a shell fence fails the test naming its line.

The marked blocks of README.md, deploy/README.md and docs/*.md each run with
``bash`` under ``set -Eeuo pipefail``, in a scratch directory of their own that
holds what a reader has at hand: copies of the checkout's ``workflows/`` and
``deploy/``, and a ``WORKFLOW.md`` made from ``workflows/observe.md`` with its
``/var/lib/orchestrator`` paths and port moved into the scratch directory.
``orchestrator`` on ``PATH`` is this checkout (a wrapper around ``python -m
orchestrator``); ``HOME``, ``XDG_STATE_HOME``, ``XDG_CONFIG_HOME`` and ``TMPDIR``
are in the scratch directory; ``ORCHESTRATOR_TRACKER__ENDPOINT`` points at an emulator this
module starts, holding ``acme/widgets`` (the examples' repository) with one
issue labelled ``orchestrator``; ``GITHUB_TOKEN`` is the emulator's bot token,
the only secret an operator's shell holds for the observe stage.

A command that runs until stopped (the daemon, the emulator) says so in its
comment: ``orchestrator run WORKFLOW.md  # ... runs until stopped ...``. The
test starts it in the background, waits for the line that says it is up
(``daemon_ready``, ``GitHub emulator on``), sends SIGTERM and requires exit
status 0, then goes on with the block. Such a line must be one simple command.

A failure names the document, the line that failed and the block, with the
block's output. ``make demo`` and ``make test`` are never marked: the demo has
its own test (tests/demo/) and the suite cannot run itself. Blocks that need
systemd, Docker, root, a real GitHub or a PostgreSQL server of their own
(``db.internal``) stay unmarked.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from orchestrator_sim.testing import SimWorld, start_world

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = ("README.md", "deploy/README.md", "docs/*.md")
MARKER = re.compile(r"^\s*<!--\s*runnable(?:\s*:\s*(?P<needs>[\w-]+))?\s*-->\s*$")
FENCE = re.compile(r"^(?P<indent>\s*)```(?P<info>.*)$")
SHELLS = ("sh", "bash", "console")
NEEDS = ("postgresql",)
UNTIL_STOPPED = re.compile(r"^(?P<command>\s*[^#\s].*?)\s+#[^'\"]*\bruns until stopped\b.*$")
READY = "daemon_ready|GitHub emulator on"
BLOCK_TIMEOUT = 120.0

PRELUDE = f"""\
set -Eeuo pipefail
trap 'echo "failed (exit $?) at block line $((LINENO - __offset)): $BASH_COMMAND" >&2' ERR
__runs_until_stopped() {{
  local log pid status i
  log=$(mktemp)
  "$@" >"$log" 2>&1 &
  pid=$!
  for ((i = 0; i < 600; i++)); do
    grep -Eq '{READY}' "$log" && break
    if ! kill -0 "$pid" 2>/dev/null; then
      cat "$log" >&2
      echo "exited before it was up: $*" >&2
      return 1
    fi
    sleep 0.1
  done
  if ! grep -Eq '{READY}' "$log"; then
    kill -KILL "$pid"; cat "$log" >&2
    echo "not up after 60 s: $*" >&2
    return 1
  fi
  kill -TERM "$pid"
  status=0; wait "$pid" || status=$?
  cat "$log"
  if [ "$status" -ne 0 ]; then
    echo "exit status $status after SIGTERM: $*" >&2
    return 1
  fi
}}
"""


@dataclass(frozen=True, slots=True)
class Block:
    """One marked block: where it is, what it needs, its text (or why it cannot run)."""

    document: str
    line: int  # the first line inside the fence, 1-based
    needs: str | None
    text: str
    problem: str | None = None
    console: bool = False

    @property
    def where(self) -> str:
        return f"{self.document}:{self.line}"


def documents() -> list[Path]:
    found: list[Path] = []
    for pattern in DOCUMENTS:
        found.extend(sorted(ROOT.glob(pattern)))
    return found


def marked_blocks(path: Path) -> list[Block]:
    """The blocks of ``path`` that a marker line announces, in order."""
    name = path.relative_to(ROOT).as_posix()
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    for index, line in enumerate(lines):
        marker = MARKER.match(line)
        if marker is None:
            continue
        needs = marker.group("needs")
        fence = FENCE.match(lines[index + 1]) if index + 1 < len(lines) else None
        info = fence.group("info").split() if fence else []
        problem = None
        if fence is None or not info or info[0] not in SHELLS:
            problem = (
                f"the marker on line {index + 1} is not followed by a ```sh, ```bash "
                "or ```console fence"
            )
        elif needs is not None and needs not in NEEDS:
            problem = f"the marker on line {index + 1} needs {needs!r}; known: {', '.join(NEEDS)}"
        if problem or fence is None:
            blocks.append(Block(name, index + 1, needs, "", problem))
            continue
        indent = fence.group("indent")
        body: list[str] = []
        for inner in lines[index + 2 :]:
            if inner.strip() == "```":
                break
            body.append(inner.removeprefix(indent))
        else:
            problem = f"the block after the marker on line {index + 1} is never closed"
        text = "\n".join(body) + "\n"
        blocks.append(Block(name, index + 3, needs, text, problem, console=info[0] == "console"))
    return blocks


def all_blocks() -> list[Block]:
    return [block for path in documents() for block in marked_blocks(path)]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "block" in metafunc.fixturenames:
        params = [
            pytest.param(
                block,
                id=block.where,
                marks=[pytest.mark.postgres] if block.needs == "postgresql" else [],
            )
            for block in all_blocks()
        ]
        metafunc.parametrize("block", params)


def commands(block: Block) -> list[str]:
    """The block's lines as bash runs them, one for one, so line numbers stay right.

    In a console block the lines after a ``$ `` prompt (and those continuing
    one after a trailing backslash) are commands; the output lines become blank.
    """
    if not block.console:
        return block.text.splitlines()
    lines: list[str] = []
    continued = False
    for line in block.text.splitlines():
        if line.startswith("$ ") or continued:
            command = line.removeprefix("$ ")
            continued = command.endswith("\\")
            lines.append(command)
        else:
            lines.append("")
    return lines


def until_stopped(line: str) -> str:
    """A command commented "runs until stopped" goes through the prelude's helper."""
    long_running = UNTIL_STOPPED.match(line)
    if long_running is None:
        return line
    command = long_running.group("command")
    indent = command[: len(command) - len(command.lstrip())]
    return f"{indent}__runs_until_stopped {command.lstrip()}"


def script(block: Block) -> tuple[str, int]:
    """The bash script for ``block`` and the number of lines before the block's first one."""
    lines = [until_stopped(line) for line in commands(block)]
    offset = PRELUDE.count("\n") + 1
    return f"__offset={offset}\n{PRELUDE}" + "\n".join(lines) + "\n", offset


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimWorld]:
    """The emulator the blocks talk to: acme/widgets with one issue the daemon owns."""
    running = start_world(tmp_path_factory.mktemp("emulator"))
    try:
        running.control.create_issue(
            running.repo,
            "Greet by full name",
            as_user=running.human.login,
            body="`greet` should take a full name.",
            labels=["orchestrator"],
        )
        yield running
    finally:
        running.server.stop()


def scratch_directory(base: Path) -> dict[str, str]:
    """Fill ``base`` with what a reader has at hand; return the paths the environment names."""
    for folder in ("workflows", "deploy"):
        shutil.copytree(ROOT / folder, base / folder)
    state = base / "state"
    var = base / "var" / "lib" / "orchestrator"
    for directory in (base / "home", base / "config", base / "tmp", state, var):
        directory.mkdir(parents=True)
    example = ROOT / "workflows" / "observe.md"
    policy = example.read_text(encoding="utf-8")
    paths = policy.count("/var/lib/orchestrator")
    policy = policy.replace("/var/lib/orchestrator", str(var))
    policy, ports = re.subn(r"(?m)^(\s*port:\s*)\d+\s*$", rf"\g<1>{free_port()}", policy)
    if paths < 3 or ports != 1:
        raise AssertionError(
            f"{example}: expected its state paths under /var/lib/orchestrator (database, "
            f"workspaces, STOP; found {paths}) and one server port (found {ports})"
        )
    (base / "WORKFLOW.md").write_text(policy, encoding="utf-8")
    bindir = base / "bin"
    bindir.mkdir()
    wrapper = bindir / "orchestrator"
    wrapper.write_text(
        "#!/bin/sh\n"
        f"PYTHONPATH={shlex.quote(str(ROOT))}${{PYTHONPATH:+:$PYTHONPATH}}\n"
        "export PYTHONPATH\n"
        f'exec {shlex.quote(sys.executable)} -m orchestrator "$@"\n',
        encoding="utf-8",
    )
    wrapper.chmod(0o755)
    return {"bin": str(bindir), "state": str(state), "var": str(var)}


def environment(base: Path, paths: dict[str, str], world: SimWorld) -> dict[str, str]:
    """An operator's shell for the blocks, with nothing of the test runner's own settings."""
    keep = ("PATH", "LANG", "LC_ALL", "TZ", "USER", "LOGNAME", "SHELL")
    env = {key: os.environ[key] for key in keep if key in os.environ}
    env.update(
        {
            "PATH": f"{paths['bin']}:{os.environ.get('PATH', '/usr/bin:/bin')}",
            "HOME": str(base / "home"),
            "XDG_STATE_HOME": paths["state"],
            "XDG_CONFIG_HOME": str(base / "config"),
            "TMPDIR": str(base / "tmp"),
            "GITHUB_TOKEN": world.bot.token,
            "ORCHESTRATOR_TRACKER__ENDPOINT": world.url,
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_CONFIG_NOSYSTEM": "1",
        }
    )
    return env


def test_the_readme_has_runnable_blocks() -> None:
    """The marker is in use where readers start: the README's first commands run."""
    readme = marked_blocks(ROOT / "README.md")
    assert readme, "README.md marks no block as runnable"
    assert any("orchestrator run" in block.text for block in readme)


def test_runs_until_stopped_lines_are_recognised() -> None:
    """The long-running convention picks the command and leaves ordinary comments alone."""
    block = Block(
        "x.md",
        1,
        None,
        "orchestrator run WORKFLOW.md   # the daemon: runs until stopped\n"
        "orchestrator run WORKFLOW.md --once   # one tick\n",
    )
    text, offset = script(block)
    body = text.splitlines()[offset:]
    assert body == [
        "__runs_until_stopped orchestrator run WORKFLOW.md",
        "orchestrator run WORKFLOW.md --once   # one tick",
    ]


def test_console_blocks_run_their_prompted_lines() -> None:
    """Output lines of a console block become blank lines, so failures keep their line."""
    text = "$ orchestrator validate \\\n    WORKFLOW.md\nWORKFLOW.md: valid\n"
    block = Block("x.md", 1, None, text, console=True)
    text, offset = script(block)
    assert text.splitlines()[offset:] == ["orchestrator validate \\", "    WORKFLOW.md", ""]


def run(block: Block, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run ``block`` with bash; a block still running after BLOCK_TIMEOUT fails the test."""
    text, _ = script(block)
    try:
        return subprocess.run(
            ["bash", "-c", text],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=BLOCK_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{block.where}: still running after {BLOCK_TIMEOUT:.0f} s\n{block.text}{exc}")


def failure(block: Block, done: subprocess.CompletedProcess[str]) -> str:
    """What a failed block reports: the document's line that failed, the block, its output."""
    failed = re.findall(r"at block line (\d+): ", done.stderr)
    line = block.line + int(failed[-1]) - 1 if failed else block.line
    return (
        f"{block.document}:{line}: the block starting on line {block.line} "
        f"failed with exit status {done.returncode}\n"
        f"--- block\n{block.text}--- stdout\n{done.stdout[-4000:]}"
        f"--- stderr\n{done.stderr[-4000:]}"
    )


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("true\nfalse\ntrue\n", "x.md:11: the block starting on line 10 failed"),
        ("sh -c 'exit 3'   # runs until stopped\n", "exited before it was up"),
        (
            "sh -c 'echo daemon_ready; exec sleep 30'   # runs until stopped\n",
            "exit status 143 after SIGTERM",
        ),
    ],
    ids=["failing-line", "exits-early", "unclean-stop"],
)
def test_failures_name_the_line_and_the_cause(text: str, says: str, tmp_path: Path) -> None:
    """The conventions catch a failing line, a server that never comes up, an unclean stop."""
    block = Block("x.md", 10, None, text)
    done = run(block, tmp_path, {"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
    assert done.returncode != 0
    assert says in failure(block, done)


def test_a_clean_stop_lets_the_block_go_on(tmp_path: Path) -> None:
    """A server that is up and exits 0 on SIGTERM passes, and the next line runs."""
    server = "sh -c 'trap \"exit 0\" TERM; echo daemon_ready; while :; do sleep 0.1; done'"
    block = Block("x.md", 1, None, f"{server}   # runs until stopped\necho next\n")
    done = run(block, tmp_path, {"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["daemon_ready", "next"]


def test_block(
    block: Block, world: SimWorld, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if block.problem:
        pytest.fail(f"{block.where}: {block.problem}")
    paths = scratch_directory(tmp_path)
    env = environment(tmp_path, paths, world)
    if block.needs == "postgresql":
        env["ORCHESTRATOR_DATABASE_URL"] = str(request.getfixturevalue("pg_url"))
    done = run(block, tmp_path, env)
    if done.returncode != 0:
        pytest.fail(failure(block, done), pytrace=False)
