"""The scripted agent: a real program that follows the agent contract, driven by a scenario file.

It reads the same ``ORCHESTRATOR_*`` variables a real agent gets, prints JSON
lines, edits and commits files with git, and writes result files, or misbehaves
on purpose (hangs, stalls, crashes, prints noise, leaves huge files, plants
links and FIFOs, spawns children that ignore SIGTERM). Run it as ``orchestrator sim agent`` or
``python -m orchestrator_sim.agent``; the scenario format is in docs/agent.md.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import string
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, NoReturn

import click

from orchestrator_sim.scenario_agent import Behaviour, ScenarioError, Step, load_scenario

EXIT_SCENARIO_ERROR = 2
# What the scripted agent speaks: the agent contract's JSON lines, or Codex's app-server.
PROTOCOL_LINES = "lines"
PROTOCOL_APP_SERVER = "app-server"
_CHILD = (
    "import signal, time\n"
    "if {ignore}: signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "while True: time.sleep(3600)\n"
)


class _Exit(Exception):
    """Ends the scripted run with an exit code (crash, exit, a failed git command)."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


class ScriptedAgent:
    """Plays one turn of a scenario in a workspace, writing events to ``out``."""

    def __init__(
        self,
        behaviour: Behaviour,
        *,
        workspace: Path,
        result_dir: Path,
        run_id: str,
        resume_session: str | None,
        out: IO[str],
        err: IO[str],
        prompt: IO[bytes],
    ) -> None:
        self.behaviour = behaviour
        self.workspace = workspace
        self.result_dir = result_dir
        self.run_id = run_id
        self.resume_session = resume_session
        self.out = out
        self.err = err
        self.prompt = prompt
        self._prompt_text: bytes | None = None
        self._children: list[subprocess.Popen[bytes]] = []
        self._actions: dict[str, Callable[[Any], None]] = {
            "message": lambda a: self.emit({"type": "message", "text": a}),
            "emit": self.emit,
            "session": self._session,
            "events": self._events,
            "usage": lambda a: self.emit({"type": "usage", **a}),
            "sleep_ms": lambda a: time.sleep(a / 1000),
            "write": self._write,
            "commit": self._commit,
            "review": self._review,
            "fix_summary": self._fix_summary,
            "pr_description": lambda a: self._result("pr-description.md", a),
            "blocked": self._blocked,
            "result_file": self._result_file,
            "noise": self._noise,
            "huge_line": lambda a: self._print("x" * a),
            "huge_file": self._huge_file,
            "special_file": self._special_file,
            "hang": lambda a: self._hang() if a else None,
            "stall_after": self._stall_after,
            "crash": self._crash,
            "exit": self._exit,
            "ignore_sigterm": self._ignore_sigterm,
            "spawn": self._spawn,
            "dump_env": lambda a: self._dump(a, dict(os.environ)),
            "save_prompt": self._save_prompt,
        }

    def run(self) -> int:
        """Play every step, then exit with the behaviour's exit code."""
        stopped = self.play()
        return self.behaviour.exit_code if stopped is None else stopped

    def play(self) -> int | None:
        """Play every step: the exit code of a step that ended the run (crash, exit), else None."""
        try:
            for step in self.behaviour.steps:
                self._do(step)
        except _Exit as stop:
            return stop.code
        return None

    def _do(self, step: Step) -> None:
        try:
            self._actions[step.action](step.arg)
        except (OSError, subprocess.SubprocessError) as error:
            self.err.write(f"scripted agent: {step.where}: {step.action} failed: {error}\n")
            self.err.flush()
            raise _Exit(1) from error

    # ---------------------------------------------------------------- output

    def emit(self, event: dict[str, Any]) -> None:
        """Print one JSON event line and flush it, so the runner sees it at once."""
        self._print(json.dumps(event, separators=(",", ":")))

    def _print(self, line: str) -> None:
        self.out.write(line + "\n")
        self.out.flush()

    def _session(self, value: str) -> None:
        if value == "auto":
            value = self.resume_session or f"sim-{self.run_id}"
        self.emit({"type": "session", "session_id": value})

    def _events(self, arg: int | dict[str, int]) -> None:
        count = arg if isinstance(arg, int) else arg["count"]
        interval = 0 if isinstance(arg, int) else arg.get("interval_ms", 0)
        for index in range(count):
            if index and interval:
                time.sleep(interval / 1000)
            self.emit({"type": "tool", "name": f"step-{index + 1}"})

    def _noise(self, arg: str | dict[str, Any]) -> None:
        if isinstance(arg, str):
            self._print(arg)
            return
        for _ in range(arg.get("lines", 1)):
            self._print(arg.get("text", "this is not JSON"))

    # ---------------------------------------------------------------- files

    def _path(self, value: str) -> Path:
        path = Path(value)
        return path if path.is_absolute() else self.workspace / path

    @staticmethod
    def _expand(text: str) -> str:
        # One scenario can serve several issues: $VAR / ${VAR} come from the environment.
        return string.Template(text).safe_substitute(os.environ)

    def _write(self, arg: dict[str, Any]) -> None:
        path = self._path(self._expand(arg["path"]))
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a" if arg.get("append") else "w", encoding="utf-8") as handle:
            handle.write(self._expand(arg["content"]))

    def _huge_file(self, arg: dict[str, Any]) -> None:
        path = self._path(arg["path"])
        path.parent.mkdir(parents=True, exist_ok=True)
        remaining = arg["bytes"]
        block = b"x" * min(remaining, 1024 * 1024)
        with path.open("wb") as handle:
            while remaining > 0:
                handle.write(block[:remaining])
                remaining -= len(block)

    def _special_file(self, arg: dict[str, str]) -> None:
        """Replace whatever is at ``path`` with a link, hard link, FIFO or directory."""
        path = self._path(self._expand(arg["path"]))
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.is_symlink() or path.exists():
            path.unlink()
        kind = arg["kind"]
        target = self._expand(arg.get("target", ""))
        if kind == "symlink":
            path.symlink_to(target)
        elif kind == "hardlink":
            os.link(self._path(target), path)
        elif kind == "fifo":
            os.mkfifo(path)
        else:
            path.mkdir()

    def _result(self, name: str, content: str) -> None:
        self.result_dir.mkdir(parents=True, exist_ok=True)
        (self.result_dir / name).write_text(content, encoding="utf-8")

    def _result_file(self, arg: dict[str, str]) -> None:
        name = arg["name"]
        if "/" in name or name in ("", ".", ".."):
            self._fail(f"result_file name {name!r} must be a plain file name")
        self._result(name, arg["content"])

    def _dump(self, target: str, data: Any) -> None:
        path = self._path(target)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=2, sort_keys=True), encoding="utf-8")

    def _save_prompt(self, target: str) -> None:
        if self._prompt_text is None:
            self._prompt_text = self.prompt.read()
        path = self._path(target)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(self._prompt_text)

    # ------------------------------------------------------------------ git

    def _git(self, *args: str) -> str:
        done = subprocess.run(
            ["git", *args], cwd=self.workspace, capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            self._fail(f"git {' '.join(args)} failed: {done.stderr.strip()}")
        return done.stdout.strip()

    def _head(self, ref: str = "HEAD") -> str | None:
        done = subprocess.run(
            ["git", "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
            cwd=self.workspace,
            capture_output=True,
            text=True,
            check=False,
        )
        return done.stdout.strip() or None

    def _commit(self, arg: str | dict[str, Any]) -> None:
        spec = {"message": arg} if isinstance(arg, str) else arg
        paths = spec.get("paths")
        if paths:
            self._git("add", "--", *[str(p) for p in paths])
        else:
            self._git("add", "-A")
        extra = ["--allow-empty"] if spec.get("allow_empty") else []
        if spec.get("amend"):
            # Rewords (and extends) the last commit, as an agent told its message is refused.
            extra.append("--amend")
        message = self._expand(spec["message"])
        self._git("commit", "--quiet", "--no-verify", "-m", message, *extra)

    def _review(self, arg: dict[str, Any]) -> None:
        head = str(arg.get("head", "current"))
        if head == "current":
            sha = self._head() or "0" * 40
        elif head == "stale":
            sha = self._head("HEAD~1") or "f" * 40
        else:
            sha = head
        lines = [f"<!-- orchestrator-review-head: {sha} -->", ""]
        if arg.get("overview"):
            lines += [arg["overview"], ""]
        for index, finding in enumerate(arg.get("findings", []), start=1):
            severity = finding.get("severity", "P2")
            lines.append(f"### {finding.get('id', f'F{index}')} [{severity}] {finding['title']}")
            for field in ("summary", "why_it_matters", "suggested_fix", "location"):
                if field in finding:
                    value = str(finding[field]).replace("\n", "\n  ")
                    lines.append(f"- {field}: {value}")
            lines.append("")
        self._result("review.md", "\n".join(lines))

    def _fix_summary(self, arg: list[Any] | dict[str, Any]) -> None:
        document = {"entries": arg} if isinstance(arg, list) else dict(arg)
        entries = document.get("entries")
        if isinstance(entries, list):
            head = self._head()
            document["entries"] = [
                {**e, "commit": head}
                if isinstance(e, dict) and e.get("commit") == "HEAD" and head
                else e
                for e in entries
            ]
        self._result("fix-summary.json", json.dumps(document, indent=2))

    def _blocked(self, arg: str | dict[str, str]) -> None:
        if isinstance(arg, str):
            self._result("blocked.md", arg + "\n")
            return
        marker = (
            f"<!-- orchestrator-blocked-reason: {arg['reason']} -->\n" if "reason" in arg else ""
        )
        self._result("blocked.md", marker + arg["question"] + "\n")

    # ------------------------------------------------------------ misbehave

    def _hang(self) -> NoReturn:
        while True:
            time.sleep(3600)

    def _stall_after(self, count: int) -> NoReturn:
        self._events(count)
        self._hang()

    def _crash(self, arg: str | dict[str, Any]) -> NoReturn:
        spec: dict[str, Any] = {"message": arg} if isinstance(arg, str) else arg
        self.err.write(str(spec.get("message", "scripted agent crashed")) + "\n")
        self.err.flush()
        raise _Exit(int(spec.get("exit_code", 1)))

    def _exit(self, code: int) -> NoReturn:
        raise _Exit(code)

    def _ignore_sigterm(self, on: bool) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN if on else signal.SIG_DFL)

    def _spawn(self, arg: dict[str, Any]) -> None:
        code = _CHILD.format(ignore=bool(arg.get("ignore_sigterm", True)))
        for _ in range(arg.get("count", 1)):
            child = subprocess.Popen(
                [sys.executable, "-c", code],
                process_group=0 if arg.get("new_group") else None,
            )
            self._children.append(child)
        if "pids_file" in arg:
            pids = {"agent": os.getpid(), "children": [c.pid for c in self._children]}
            self._dump(arg["pids_file"], pids)

    def _fail(self, message: str) -> NoReturn:
        self.err.write(f"scripted agent: {message}\n")
        self.err.flush()
        raise _Exit(1)


def run_scripted_agent(
    scenario_path: Path,
    *,
    phase: str,
    attempt: int,
    out: IO[str],
    err: IO[str],
    protocol: str = PROTOCOL_LINES,
) -> int:
    """Load the scenario and play the turn for ``phase``/``attempt``; returns the exit code.

    ``protocol`` ``app-server`` speaks Codex's app-server JSON-RPC on stdin and stdout
    (:mod:`orchestrator_sim.app_server_agent`) instead of the agent contract's lines.
    """
    try:
        scenario = load_scenario(scenario_path)
    except ScenarioError as error:
        err.write(f"scripted agent: {error}\n")
        return EXIT_SCENARIO_ERROR
    workspace = Path(os.environ.get("ORCHESTRATOR_WORKSPACE") or Path.cwd())
    result_dir = Path(os.environ.get("ORCHESTRATOR_RESULT_DIR") or workspace / ".orchestrator")
    factory: type[ScriptedAgent] = ScriptedAgent
    if protocol == PROTOCOL_APP_SERVER:
        from orchestrator_sim.app_server_agent import AppServerAgent

        factory = AppServerAgent
    agent = factory(
        scenario.behaviour(phase, attempt),
        workspace=workspace,
        result_dir=result_dir,
        run_id=os.environ.get("ORCHESTRATOR_RUN_ID", "local"),
        resume_session=os.environ.get("ORCHESTRATOR_SESSION_ID") or None,
        out=out,
        err=err,
        prompt=sys.stdin.buffer,
    )
    return agent.run()


@click.command("agent")
@click.option(
    "--scenario",
    "scenario_path",
    envvar="ORCHESTRATOR_SCENARIO",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Scenario file (JSON or YAML). Also ORCHESTRATOR_SCENARIO.",
)
@click.option(
    "--phase",
    envvar="ORCHESTRATOR_PHASE",
    default="implementing",
    show_default=True,
    help="Which phase's behaviour to play. Also ORCHESTRATOR_PHASE.",
)
@click.option(
    "--attempt",
    envvar="ORCHESTRATOR_ATTEMPT",
    default=1,
    show_default=True,
    type=click.IntRange(min=1),
    help="Which attempt's behaviour to play. Also ORCHESTRATOR_ATTEMPT.",
)
@click.option(
    "--protocol",
    type=click.Choice([PROTOCOL_LINES, PROTOCOL_APP_SERVER]),
    default=PROTOCOL_LINES,
    show_default=True,
    help="`lines`: the agent contract's JSON lines (preset command); `app-server`: Codex's "
    "app-server JSON-RPC on stdio (preset codex-app-server).",
)
@click.option("--check", is_flag=True, help="Only validate the scenario file and exit.")
def agent_command(
    scenario_path: Path, phase: str, attempt: int, protocol: str, check: bool
) -> None:
    """Play a scripted coding agent that follows the agent contract (docs/agent.md)."""
    if check:
        try:
            scenario = load_scenario(scenario_path)
        except ScenarioError as error:
            raise click.ClickException(str(error)) from None
        phases = ", ".join(sorted(scenario.phases)) or "none"
        steps = len(scenario.default.steps)
        click.echo(f"{scenario_path}: valid ({steps} default steps; phases: {phases})")
        return
    code = run_scripted_agent(
        scenario_path,
        phase=phase,
        attempt=attempt,
        out=sys.stdout,
        err=sys.stderr,
        protocol=protocol,
    )
    sys.exit(code)


if __name__ == "__main__":
    agent_command(prog_name="python -m orchestrator_sim.agent")
