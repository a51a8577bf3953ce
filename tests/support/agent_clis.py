"""The verified command lines of the real coding-agent CLIs against the model-API stand-in.

``make agents`` installs the pinned CLIs into ``.cache/agents``; each function here builds
the command line, environment and standard input with which that CLI, run in a git
repository, streams JSON lines on stdout, runs the stand-in's tool calls and commits.
The smoke tests (tests/agent/test_real_cli_smoke.py) and the fixture capture
(tests/support/capture_agent_fixtures.py) share them, so the fixtures' README tells exactly
what was run.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
AGENTS_BIN = ROOT / ".cache" / "agents" / "node_modules" / ".bin"

#: The versions `make agents` pins (keep in step with the Makefile).
VERSIONS: Mapping[str, str] = {"codex": "0.169.0", "claude": "2.1.197", "pi": "0.73.1"}

#: Codex's model: one from its bundled catalog (`codex debug models`), so no
#: "model metadata not found" warning; its tools then include exec_command and apply_patch.
CODEX_MODEL = "gpt-5.5"
#: The tools Claude Code may use without asking: Bash runs `git commit` (as root,
#: --dangerously-skip-permissions and --permission-mode bypassPermissions are refused).
CLAUDE_ALLOWED_TOOLS = "Bash,Edit,Write,Read"
#: Pi's built-in Anthropic provider, its base URL pointed at the stand-in by models.json.
PI_PROVIDER = "anthropic"

#: The fake keys; the stand-in accepts any key.
OPENAI_KEY = "sk-stand-in"
ANTHROPIC_KEY = "sk-ant-stand-in"


def binary(cli: str) -> Path:
    """Where `make agents` puts ``cli`` (codex, claude or pi)."""
    return AGENTS_BIN / cli


def installed(cli: str) -> bool:
    return binary(cli).exists()


@dataclass(frozen=True)
class Invocation:
    """One CLI run: argv, the variables added to the environment, and standard input."""

    argv: list[str]
    env: dict[str, str]
    stdin: str

    def shown(self) -> str:
        """The command line as the fixtures' README shows it (binary path relative)."""
        words = [str(Path(self.argv[0]).relative_to(ROOT)), *self.argv[1:]]
        return " ".join(_shell_word(w) for w in words)


def _shell_word(word: str) -> str:
    safe = all(c.isalnum() or c in "@%+=:,./-_" for c in word)
    return word if safe and word else "'" + word.replace("'", "'\\''") + "'"


def codex(
    base_url: str,
    home: Path,
    prompt: str,
    *,
    resume: str | None = None,
    sandbox: str = "danger-full-access",
) -> Invocation:
    """``codex exec --json`` on a custom Responses provider at ``base_url``/v1.

    The prompt comes on stdin (no prompt argument, or ``-`` after a resumed thread id).
    ``workspace-write`` keeps .git read-only (a commit fails with "Read-only file system"),
    so committing needs ``danger-full-access``; this version has no ``--full-auto``.
    ``resume`` continues a thread: ``codex exec ... resume THREAD_ID -``.
    """
    provider = (
        f'{{name="stand-in",base_url="{base_url}/v1",env_key="STAND_IN_OPENAI_KEY",'
        f'wire_api="responses"}}'
    )
    argv = [
        str(binary("codex")),
        "exec",
        "--json",
        "--sandbox",
        sandbox,
        "--model",
        CODEX_MODEL,
        "-c",
        "model_provider=stand_in",
        "-c",
        f"model_providers.stand_in={provider}",
    ]
    if resume is not None:
        argv += ["resume", resume, "-"]
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)  # codex refuses a CODEX_HOME that is missing
    env = {"CODEX_HOME": str(codex_home), "STAND_IN_OPENAI_KEY": OPENAI_KEY}
    return Invocation(argv, env, prompt)


def codex_app_server(base_url: str, home: Path) -> Invocation:
    """``codex app-server`` on the same stand-in provider as :func:`codex` (``-c`` settings only).

    The server speaks JSON-RPC on stdin and stdout: the prompt, the working directory,
    the sandbox and the approval policy come in its requests, not on the command line
    (orchestrator/agent/app_server.py is the client).
    """
    flags = codex(base_url, home, "").argv
    provider = flags[flags.index("-c") :]
    argv = [str(binary("codex")), "app-server", "-c", f"model={CODEX_MODEL}", *provider]
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    env = {"CODEX_HOME": str(codex_home), "STAND_IN_OPENAI_KEY": OPENAI_KEY}
    return Invocation(argv, env, "")


def claude(
    base_url: str,
    prompt: str,
    *,
    allowed_tools: str = CLAUDE_ALLOWED_TOOLS,
    resume: str | None = None,
    max_retries: int | None = None,
) -> Invocation:
    """``claude -p --output-format stream-json --verbose`` with the prompt on stdin.

    ``max_retries`` sets CLAUDE_CODE_MAX_RETRIES (the default, 10, backs off for minutes).
    ``resume`` continues a session: ``--resume SESSION_ID``.
    """
    argv = [
        str(binary("claude")),
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--allowedTools",
        allowed_tools,
    ]
    if resume is not None:
        argv += ["--resume", resume]
    env = {
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": ANTHROPIC_KEY,
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }
    if max_retries is not None:
        env["CLAUDE_CODE_MAX_RETRIES"] = str(max_retries)
    return Invocation(argv, env, prompt)


def pi(
    base_url: str,
    home: Path,
    prompt: str,
    *,
    session: str | None = None,
) -> Invocation:
    """``pi --mode json`` on its built-in Anthropic provider, prompt on stdin only.

    Pi joins piped stdin, ``@file`` arguments and the first message argument into one
    prompt, so the prompt is passed once, on stdin. ``--mode json`` runs without a TTY and
    exits at the end. The first stdout line (``{"type":"session","id":...}``) names the
    session; ``--session ID`` (or a unique prefix, or the session file) continues it.
    """
    agent_dir = home / ".pi" / "agent"
    agent_dir.mkdir(parents=True, exist_ok=True)
    models = {"providers": {PI_PROVIDER: {"baseUrl": base_url}}}
    (agent_dir / "models.json").write_text(json.dumps(models, indent=2) + "\n")
    argv = [str(binary("pi")), "--mode", "json", "--provider", PI_PROVIDER]
    if session is not None:
        argv += ["--session", session]
    env = {
        "PI_CODING_AGENT_DIR": str(agent_dir),
        "ANTHROPIC_API_KEY": ANTHROPIC_KEY,
        "PI_OFFLINE": "1",
        "PI_TELEMETRY": "0",
    }
    return Invocation(argv, env, prompt)


# --- running -------------------------------------------------------------------------------


def make_repo(path: Path) -> Path:
    """A throw-away git repository at ``path`` with one commit (README.md)."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.email", "agent@example.invalid")
    git(path, "config", "user.name", "Agent")
    (path / "README.md").write_text("# Demo\n")
    git(path, "add", "-A")
    git(path, "commit", "-qm", "Initial commit")
    return path


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def commits(repo: Path) -> list[str]:
    """Subjects of the commits on HEAD, newest first."""
    return git(repo, "log", "--format=%s").splitlines()


@dataclass
class Run:
    """What a CLI run produced: exit code (None when it was killed at the timeout)."""

    returncode: int | None
    stdout: str
    stderr: str
    seconds: float
    #: Seconds from start at which each stdout line arrived.
    line_times: list[float] = field(default_factory=list)

    @property
    def timed_out(self) -> bool:
        return self.returncode is None

    def events(self) -> list[dict[str, object]]:
        """The stdout lines that are JSON objects."""
        found = []
        for line in self.stdout.splitlines():
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict):
                found.append(value)
        return found


def run(
    invocation: Invocation,
    cwd: Path,
    *,
    home: Path,
    timeout: float = 120,
    base_env: Mapping[str, str] | None = None,
    extra_args: Sequence[str] = (),
) -> Run:
    """Run ``invocation`` in ``cwd`` with HOME=``home``; kill it after ``timeout`` seconds."""
    env = dict(os.environ if base_env is None else base_env)
    for name in list(env):
        # The caller's own agent credentials and endpoints never leak into a run.
        if name.startswith(("ANTHROPIC_", "OPENAI_", "CODEX_", "CLAUDE", "PI_")):
            del env[name]
    env.update(invocation.env)
    env["HOME"] = str(home)
    home.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    process = subprocess.Popen(
        [*invocation.argv, *extra_args],
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    out: list[str] = []
    times: list[float] = []
    err: list[str] = []

    def read_out() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            times.append(round(time.monotonic() - started, 2))
            out.append(line)

    def read_err() -> None:
        assert process.stderr is not None
        err.append(process.stderr.read())

    readers = [threading.Thread(target=read_out), threading.Thread(target=read_err)]
    for reader in readers:
        reader.start()
    assert process.stdin is not None
    try:
        process.stdin.write(invocation.stdin)
        process.stdin.close()
    except BrokenPipeError:
        pass
    returncode: int | None
    try:
        returncode = process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, 9)
        process.wait()
        returncode = None
    for reader in readers:
        reader.join(timeout=10)
    seconds = round(time.monotonic() - started, 1)
    return Run(returncode, "".join(out), "".join(err), seconds, times)
