"""Record real ``codex app-server`` sessions (JSON-RPC transcripts) against the model stand-in.

    python -m tests.support.capture_app_server

needs ``make agents``. Each scenario runs the pinned ``codex app-server`` in a throw-away
git repository under /tmp/agent-fixtures/codex-app-server (fixed paths and port, so the
transcripts carry no random temp paths), drives it with the product's own client
(orchestrator/agent/app_server.py) and writes, under
tests/fixtures/agents/codex-app-server-<version>/, ``<scenario>.jsonl``: every message
both ways, one a line, ``{"t": seconds, "from": "client"|"server", "message": {...}}``,
and ``<scenario>.stderr.txt``. tests/support/replay_app_server.py plays the server's
side of a transcript back; the README there says how the captures were made.
"""

from __future__ import annotations

import json
import os
import selectors
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.agent.app_server import AppServerClient
from orchestrator.agent.events import TokenUsage
from tests.support import agent_clis
from tests.support.model_api import HttpError, ModelApi, Reply, Shell, Text, WriteFile

FIXTURES = agent_clis.ROOT / "tests" / "fixtures" / "agents"
SCRATCH = Path("/tmp/agent-fixtures/codex-app-server")
PORT = 47612
PROMPT = "Add src/feature.py, commit it, and write the pull request description."
PROMPT_2 = "Also add src/more.py and commit it."
FEATURE = Shell(
    "mkdir -p src && printf 'x = 1\\n' >> src/feature.py && git add -A "
    "&& git commit -qm 'Add feature'"
)
PR_BODY = WriteFile(".orchestrator/pr-description.md", "## Summary\n\nAdds src/feature.py.\n")
MORE = Shell("printf 'y = 2\\n' > src/more.py && git add -A && git commit -qm 'Add more'")


@dataclass
class Session:
    """One recorded session: the transcript, how it ended, and the client's view of it."""

    lines: list[dict[str, Any]] = field(default_factory=list)
    stderr: str = ""
    returncode: int | None = None
    session_id: str | None = None
    failure: str | None = None
    usage: TokenUsage = field(default_factory=TokenUsage)
    turn_over: bool = False


def drive(
    invocation: agent_clis.Invocation,
    repo: Path,
    home: Path,
    prompt: str,
    *,
    resume: str | None = None,
    baseline: TokenUsage | None = None,
    timeout: float = 90.0,
) -> Session:
    """Run ``codex app-server`` in ``repo`` and play one turn with the product's client."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "CODEX_"))}
    env.update(invocation.env, HOME=str(home))
    proc = subprocess.Popen(
        invocation.argv,
        cwd=repo,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    assert proc.stdin and proc.stdout and proc.stderr
    client = AppServerClient(baseline, prompt=prompt, cwd=repo, resume_session_id=resume)
    session = Session()
    started = time.monotonic()

    def record(side: str, message: dict[str, Any]) -> None:
        at = round(time.monotonic() - started, 3)
        session.lines.append({"t": at, "from": side, "message": message})

    def flush() -> None:
        for line in client.outgoing():
            record("client", json.loads(line))
            proc.stdin.write(line)  # type: ignore[union-attr]
            proc.stdin.flush()  # type: ignore[union-attr]

    # Raw reads: a buffered readline() would hide lines already read from select().
    fd = proc.stdout.fileno()
    selector = selectors.DefaultSelector()
    selector.register(fd, selectors.EVENT_READ)
    flush()
    buffer = b""
    eof = False
    while not (client.turn_over or eof) and time.monotonic() - started < timeout:
        if not selector.select(0.2):
            continue
        data = os.read(fd, 65536)
        eof = not data
        buffer += data
        while b"\n" in buffer and not client.turn_over:
            line, buffer = buffer.split(b"\n", 1)
            message = json.loads(line)
            record("server", message)
            client.map(message)
            flush()
    proc.stdin.close()
    try:
        session.returncode = proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    session.stderr = proc.stderr.read().decode("utf-8", "replace")
    session.session_id = client.session_id
    session.failure = client.failure
    session.usage = client.usage
    session.turn_over = client.turn_over
    return session


def _write(folder: Path, name: str, session: Session) -> None:
    with (folder / f"{name}.jsonl").open("w", encoding="utf-8") as handle:
        for line in session.lines:
            handle.write(json.dumps(line, separators=(",", ":")) + "\n")
    (folder / f"{name}.stderr.txt").write_text(session.stderr, encoding="utf-8")


def _scenario(name: str) -> tuple[Path, Path]:
    root = SCRATCH / name
    shutil.rmtree(root, ignore_errors=True)
    repo = agent_clis.make_repo(root / "repo")
    home = root / "home"
    home.mkdir(parents=True)
    return repo, home


def main() -> int:
    if not agent_clis.installed("codex"):
        print(f"{agent_clis.binary('codex')} is missing (run `make agents`)", file=sys.stderr)
        return 1
    folder = FIXTURES / f"codex-app-server-{agent_clis.VERSIONS['codex']}"
    folder.mkdir(parents=True, exist_ok=True)
    summary: dict[str, Any] = {}

    script: list[Reply] = [FEATURE, PR_BODY, Text("Added src/feature.py and committed it.")]
    repo, home = _scenario("success")
    with ModelApi(script, port=PORT) as api:
        invocation = agent_clis.codex_app_server(api.base_url, home)
        done = drive(invocation, repo, home, PROMPT)
    _write(folder, "success", done)
    summary["success"] = _summary(invocation, done, repo)

    repo, home = _scenario("resume")
    turns: list[Reply] = [FEATURE, Text("Done."), MORE, Text("Done again.")]
    with ModelApi(turns, port=PORT) as api:
        invocation = agent_clis.codex_app_server(api.base_url, home)
        first = drive(invocation, repo, home, PROMPT)
        summary["resume_turn1"] = _summary(invocation, first, repo)
        second = drive(
            invocation, repo, home, PROMPT_2, resume=first.session_id, baseline=first.usage
        )
        summary["resume_turn2"] = _summary(invocation, second, repo)
    _write(folder, "resume_turn1", first)
    _write(folder, "resume_turn2", second)

    repo, home = _scenario("unauthorized")
    with ModelApi.failing(HttpError(401), port=PORT) as api:
        invocation = agent_clis.codex_app_server(api.base_url, home)
        refused = drive(invocation, repo, home, PROMPT)
    _write(folder, "unauthorized", refused)
    summary["unauthorized"] = _summary(invocation, refused, repo)
    (folder / "captures.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary, indent=2))
    return 0


def _summary(invocation: agent_clis.Invocation, session: Session, repo: Path) -> dict[str, Any]:
    return {
        "command": invocation.shown(),
        "env": invocation.env,
        "returncode": session.returncode,
        "turn_over": session.turn_over,
        "session_id": session.session_id,
        "failure": session.failure,
        "usage": [
            session.usage.input_tokens,
            session.usage.cached_input_tokens,
            session.usage.output_tokens,
        ],
        "messages": len(session.lines),
        "commits": agent_clis.commits(repo),
    }


if __name__ == "__main__":
    sys.exit(main())
