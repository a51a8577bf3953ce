"""Capture the real CLIs' JSON-lines output against the model-API stand-in as fixtures.

    python -m tests.support.capture_agent_fixtures [CLI ...] [--only SCENARIO ...]

needs ``make agents``. For each CLI (codex, claude, pi) it runs the scenarios below in
throw-away repositories under /tmp/agent-fixtures (fixed paths and a fixed port, so the
captures carry no random temp paths) and writes, under
tests/fixtures/agents/<cli>-<version>/, ``<scenario>.jsonl`` (stdout as it came),
``<scenario>.stderr.txt``, ``captures.json`` (command, env, exit code, timings) and a
README.md generated from them. It takes several minutes (the error scenarios wait for the
CLIs' retries); nothing runs it automatically.
"""

from __future__ import annotations

import argparse
import datetime
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support import agent_clis
from tests.support.agent_clis import Invocation, Run
from tests.support.model_api import HttpError, ModelApi, Reply, Shell, Text, WriteFile

FIXTURES = agent_clis.ROOT / "tests" / "fixtures" / "agents"
SCRATCH = Path("/tmp/agent-fixtures")
PORT = 47611
BASE_URL = f"http://127.0.0.1:{PORT}"

PROMPT = "Add src/feature.py, commit it, and write the pull request description."
PROMPT_2 = "Also add src/more.py and commit it."
FEATURE = Shell(
    "mkdir -p src && printf 'x = 1\\n' >> src/feature.py && git add -A "
    "&& git commit -qm 'Add feature'"
)
PR_BODY = WriteFile(".orchestrator/pr-description.md", "## Summary\n\nAdds src/feature.py.\n")
MORE = Shell("printf 'y = 2\\n' > src/more.py && git add -A && git commit -qm 'Add more'")
SUCCESS: list[Reply] = [FEATURE, PR_BODY, Text("Added src/feature.py and committed it.")]


#: What the captures showed, for the README (facts of these versions, checked by hand).
NOTES: dict[str, list[str]] = {
    "codex": [
        "Base URL: a custom provider through `-c model_provider=ID -c model_providers.ID={...,"
        ' wire_api="responses"}`; the key comes from the variable named by `env_key`.'
        " It POSTs `{base_url}/responses` with `stream: true` and nothing else.",
        "Tools offered with `gpt-5.5`: exec_command (shell, argument `cmd`), write_stdin,"
        " apply_patch (freeform custom tool), view_image, goals, tool_search, web_search.",
        "`--sandbox workspace-write` keeps .git read-only (`git commit`: Read-only file system);"
        " with CODEX_HOME under /tmp it cannot run commands at all (bwrap: execvp"
        " codex-linux-sandbox: No such file or directory). `danger-full-access` commits."
        " No `--full-auto` in this version. CODEX_HOME must exist.",
        "Resume: `codex exec [options] resume THREAD_ID -` (prompt on stdin); thread.started"
        " repeats the same thread_id; turn.completed usage is the thread's running total.",
        "401: 5 `Reconnecting... n/5` error events, then error + turn.failed, exit 1."
        " 500: the same after 30 requests (~25 s). Connection refused: `Reconnecting..."
        " waiting for network` error events with a growing delay, no end (killed at 120 s).",
    ],
    "claude": [
        "Base URL: ANTHROPIC_BASE_URL + ANTHROPIC_API_KEY; it sends `HEAD /` first, then"
        " `POST /v1/messages?beta=true` (streamed). No other requests with"
        " CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1.",
        "As root, --dangerously-skip-permissions and --permission-mode bypassPermissions are"
        " refused (exit 1, stderr); IS_SANDBOX=1 lifts that. `--allowedTools Bash,Edit,Write,Read`"
        " runs `git commit`; acceptEdits, dontAsk and auto without Bash allowed deny it.",
        "Errors are retried CLAUDE_CODE_MAX_RETRIES times (default 10, backing off to ~35 s;"
        " the default runs did not end within 90 s); then an assistant line with model"
        " `<synthetic>` and a result line with is_error true, subtype success, exit 1.",
        "A denied tool lands in the result line's permission_denials; the run still exits 0.",
        "Resume: `--resume SESSION_ID` keeps the session_id; the result's usage and"
        " total_cost_usd cover that invocation only.",
    ],
    "pi": [
        "Base URL: `{PI_CODING_AGENT_DIR}/models.json` with"
        ' `{"providers": {"anthropic": {"baseUrl": URL}}}` and `--provider anthropic`;'
        " ANTHROPIC_API_KEY. Its tools: read, bash, edit, write.",
        "The prompt goes on stdin once: piped stdin, @files and the first message argument"
        " are joined. `--mode json` needs no `-p`.",
        "The first line `{type: session, id}` names the session; `--session ID` continues it"
        " (same id, earlier turns sent again).",
        "Every error ends with exit code 0: 401 at once (stopReason error, errorMessage);"
        " 500 and connection refused after auto_retry_start x3 (2, 4, 8 s) and"
        " auto_retry_end success false.",
        "Usage and cost are per assistant message (usage.cost from Pi's price table); no total.",
    ],
}


@dataclass
class Scenario:
    """One capture: the stand-in's script, the invocation, how long to let it run."""

    name: str
    title: str
    server: Callable[[], ModelApi | None]
    #: The invocation for a home directory and the session to continue (or None).
    invocation: Callable[[Path, str | None], Invocation]
    timeout: float = 90
    #: A scenario that continues the previous one's session in the same repo and home.
    continues: str | None = None
    session_from: Callable[[Run], str] | None = None


def _script(replies: list[Reply]) -> Callable[[], ModelApi]:
    return lambda: ModelApi(replies, port=PORT)


def _failing(status: int) -> Callable[[], ModelApi]:
    return lambda: ModelApi.failing(HttpError(status), port=PORT)


def _nothing() -> None:
    return None


def _first(kind: str, key: str) -> Callable[[Run], str]:
    def find(run: Run) -> str:
        for event in run.events():
            if event.get("type") == kind and key in event:
                return str(event[key])
        raise LookupError(f"no {kind} event with {key}")

    return find


def scenarios(cli: str) -> list[Scenario]:
    if cli == "codex":

        def inv(prompt: str = PROMPT) -> Callable[[Path, str | None], Invocation]:
            return lambda home, session: agent_clis.codex(BASE_URL, home, prompt, resume=session)

        return [
            Scenario("success", "commits, writes the PR description", _script(SUCCESS), inv()),
            Scenario("unauthorized", "every request answered 401", _failing(401), inv()),
            Scenario("server_error", "every request answered 500", _failing(500), inv()),
            Scenario("no_network", "nothing listens (connection refused)", _nothing, inv(), 120),
            Scenario(
                "resume_turn1",
                "two turns, first: a commit",
                _script([FEATURE, Text("First turn done.")]),
                inv(),
                session_from=_first("thread.started", "thread_id"),
            ),
            Scenario(
                "resume_turn2",
                "two turns, second: `resume THREAD_ID -`, another commit",
                _script([MORE, Text("Second turn done.")]),
                inv(PROMPT_2),
                continues="resume_turn1",
            ),
        ]
    if cli == "claude":

        def cinv(
            *,
            prompt: str = PROMPT,
            tools: str = agent_clis.CLAUDE_ALLOWED_TOOLS,
            retries: int | None = 2,
        ) -> Callable[[Path, str | None], Invocation]:
            return lambda home, session: agent_clis.claude(
                BASE_URL, prompt, allowed_tools=tools, max_retries=retries, resume=session
            )

        return [
            Scenario("success", "commits, writes the PR description", _script(SUCCESS), cinv()),
            Scenario("unauthorized", "401, CLAUDE_CODE_MAX_RETRIES=2", _failing(401), cinv()),
            Scenario("server_error", "500, CLAUDE_CODE_MAX_RETRIES=2", _failing(500), cinv()),
            Scenario(
                "no_network", "connection refused, CLAUDE_CODE_MAX_RETRIES=2", _nothing, cinv()
            ),
            Scenario(
                "unauthorized.default_retries",
                "401 with the default 10 retries, killed at 90 s",
                _failing(401),
                cinv(retries=None),
            ),
            Scenario(
                "server_error.default_retries",
                "500 with the default 10 retries, killed at 90 s",
                _failing(500),
                cinv(retries=None),
            ),
            Scenario(
                "no_network.default_retries",
                "connection refused with the default 10 retries, killed at 90 s",
                _nothing,
                cinv(retries=None),
            ),
            Scenario(
                "permission_denied",
                "Bash not in --allowedTools: both tool calls denied",
                _script(SUCCESS),
                cinv(tools="Edit,Write,Read"),
            ),
            Scenario(
                "resume_turn1",
                "two turns, first: a commit",
                _script([FEATURE, Text("First turn done.")]),
                cinv(),
                session_from=_first("result", "session_id"),
            ),
            Scenario(
                "resume_turn2",
                "two turns, second: `--resume SESSION_ID`, another commit",
                _script([MORE, Text("Second turn done.")]),
                cinv(prompt=PROMPT_2),
                continues="resume_turn1",
            ),
        ]
    if cli == "pi":

        def pinv(prompt: str = PROMPT) -> Callable[[Path, str | None], Invocation]:
            return lambda home, session: agent_clis.pi(BASE_URL, home, prompt, session=session)

        return [
            Scenario("success", "commits, writes the PR description", _script(SUCCESS), pinv()),
            Scenario("unauthorized", "every request answered 401", _failing(401), pinv()),
            Scenario("server_error", "every request answered 500", _failing(500), pinv()),
            Scenario("no_network", "nothing listens (connection refused)", _nothing, pinv()),
            Scenario(
                "resume_turn1",
                "two turns, first: a commit",
                _script([FEATURE, Text("First turn done.")]),
                pinv(),
                session_from=_first("session", "id"),
            ),
            Scenario(
                "resume_turn2",
                "two turns, second: `--session SESSION_ID`, another commit",
                _script([MORE, Text("Second turn done.")]),
                pinv(PROMPT_2),
                continues="resume_turn1",
            ),
        ]
    raise ValueError(cli)


def capture(cli: str, only: set[str]) -> None:
    version = agent_clis.VERSIONS[cli]
    folder = FIXTURES / f"{cli}-{version}"
    folder.mkdir(parents=True, exist_ok=True)
    manifest_path = folder / "captures.json"
    manifest: dict[str, Any] = (
        json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    )
    sessions: dict[str, str] = {}
    for scenario in scenarios(cli):
        if only and scenario.name not in only and scenario.continues not in only:
            continue
        place = SCRATCH / cli / (scenario.continues or scenario.name)
        if scenario.continues is None:
            shutil.rmtree(place, ignore_errors=True)
            agent_clis.make_repo(place / "repo")
        repo, home = place / "repo", place / "home"
        session = sessions[scenario.continues] if scenario.continues else None
        invocation = scenario.invocation(home, session)
        api = scenario.server()
        if api is not None:
            api.start()
        try:
            run = agent_clis.run(invocation, repo, home=home, timeout=scenario.timeout)
        finally:
            if api is not None:
                api.stop()
        if scenario.session_from is not None:
            sessions[scenario.name] = scenario.session_from(run)
        (folder / f"{scenario.name}.jsonl").write_text(run.stdout)
        (folder / f"{scenario.name}.stderr.txt").write_text(run.stderr)
        manifest[scenario.name] = {
            "title": scenario.title,
            "command": invocation.shown(),
            "env": {**invocation.env, "HOME": str(home)},
            "stdin": invocation.stdin,
            "cwd": str(repo),
            "exit_code": run.returncode,
            "killed_after_seconds": scenario.timeout if run.timed_out else None,
            "seconds": run.seconds,
            "stdout_line_times": run.line_times,
            "requests": None if api is None else len(api.requests),
            "requests_by_path": None
            if api is None
            else sorted({f"{r.method} {r.path}" for r in api.requests}),
            "history_items_in_first_request": None if api is None else _history(api),
            "commits": agent_clis.commits(repo),
            "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        print(
            f"{cli} {scenario.name}: exit {run.returncode} in {run.seconds}s, "
            f"{len(run.stdout.splitlines())} lines, commits {manifest[scenario.name]['commits']}"
        )
    manifest_path.write_text(json.dumps(manifest, indent=2) + "\n")
    write_readme(cli, folder, manifest)


def _history(api: ModelApi) -> int | None:
    """How many conversation items the first main-loop request carried (a resumed
    session's first request carries the earlier turns)."""
    for request in api.requests:
        if isinstance(request.body, dict) and request.body.get("tools"):
            items = request.body.get("messages") or request.body.get("input") or []
            return len(items)
    return None


def write_readme(cli: str, folder: Path, manifest: dict[str, Any]) -> None:
    version = agent_clis.VERSIONS[cli]
    lines = [
        f"# {cli} {version}: real JSON-lines output against the model-API stand-in",
        "",
        "Captured by `python -m tests.support.capture_agent_fixtures "
        f"{cli}` (after `make agents`): the CLI",
        "ran in a throw-away git repository (one commit) against tests/support/model_api.py",
        f"on {BASE_URL}. `<scenario>.jsonl` is its stdout as it came, "
        "`<scenario>.stderr.txt` its stderr,",
        "`captures.json` the details (env, stdin, timings of each stdout line, requests, "
        "commits after the run).",
        "Exit code `null` means the run was killed at the timeout.",
        "",
        "## Findings",
        "",
        *[f"- {note}" for note in NOTES[cli]],
        "",
    ]
    for name, entry in manifest.items():
        env = " ".join(f"{k}={agent_clis._shell_word(v)}" for k, v in entry["env"].items())
        killed = entry["killed_after_seconds"]
        ending = f"killed after {killed} s" if killed else f"exit code {entry['exit_code']}"
        lines += [
            f"## {name}.jsonl: {entry['title']}",
            "",
            f"- {ending}, {entry['seconds']} s, captured {entry['date']}; "
            f"{entry['requests'] if entry['requests'] is not None else 'no'} requests "
            f"to the stand-in; commits after: {', '.join(entry['commits'])}",
            f"- prompt on stdin: {entry['stdin']!r}",
        ]
        if entry["seconds"] > 5:
            times = ", ".join(str(t) for t in entry["stdout_line_times"])
            lines.append(f"- stdout lines arrived at (s): {times}")
        lines += [
            "",
            "```sh",
            f"cd {entry['cwd']}",
            f"{env} \\",
            f"  {entry['command']}",
            "```",
            "",
        ]
    (folder / "README.md").write_text("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("clis", nargs="*", default=["codex", "claude", "pi"])
    parser.add_argument("--only", nargs="*", default=[])
    parser.add_argument("--readme-only", action="store_true", help="rewrite the READMEs")
    args = parser.parse_args()
    for cli in args.clis:
        if args.readme_only:
            folder = FIXTURES / f"{cli}-{agent_clis.VERSIONS[cli]}"
            write_readme(cli, folder, json.loads((folder / "captures.json").read_text()))
            continue
        if not agent_clis.installed(cli):
            raise SystemExit(f"{agent_clis.binary(cli)} is missing: run `make agents`")
        capture(cli, set(args.only))


if __name__ == "__main__":
    main()
