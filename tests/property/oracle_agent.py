"""The merge oracle's coding agent: a tiny program that follows the agent contract, fast.

It imports nothing of the orchestrator (it stands in for a real agent, which
knows only the contract): the phase comes from ``ORCHESTRATOR_PHASE``, the
result folder from ``ORCHESTRATOR_RESULT_DIR``, the turn's context from
``ORCHESTRATOR_CONTEXT_FILE``. Its one argument is a JSON file the test rewrites
before every tick, with the date commits should carry (the emulator's clock,
which the test moves ahead of the wall clock) and whether to backdate them.

- reviewing: writes ``review.md`` for the current HEAD, without findings;
- rework: commits a small change and writes ``fix-summary.json`` answering
  every thread and check the context expects;
- any other phase: does nothing.
"""

import json
import os
import subprocess
import sys


def emit(kind: str, **fields: object) -> None:
    sys.stdout.write(json.dumps({"type": kind, **fields}) + "\n")
    sys.stdout.flush()


def git(*args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(["git", *args], capture_output=True, text=True, check=True, env=env)
    return done.stdout.strip()


def main() -> int:
    settings = {}
    if len(sys.argv) > 1:
        try:
            with open(sys.argv[1], encoding="utf-8") as handle:
                settings = json.load(handle)
        except (OSError, ValueError):
            settings = {}
    phase = os.environ.get("ORCHESTRATOR_PHASE", "")
    results = os.environ.get("ORCHESTRATOR_RESULT_DIR") or ".orchestrator"
    os.makedirs(results, exist_ok=True)
    emit("message", text=f"oracle agent: {phase}")
    if phase == "reviewing":
        head = git("rev-parse", "HEAD")
        with open(os.path.join(results, "review.md"), "w", encoding="utf-8") as out:
            out.write(f"<!-- orchestrator-review-head: {head} -->\n\nNo findings.\n")
    elif phase == "rework":
        context = {}
        path = os.environ.get("ORCHESTRATOR_CONTEXT_FILE") or os.path.join(results, "context.json")
        try:
            with open(path, encoding="utf-8") as handle:
                context = json.load(handle)
        except (OSError, ValueError):
            context = {}
        expected = context.get("expected_fix_summary") or {}
        run_id = os.environ.get("ORCHESTRATOR_RUN_ID", "run")
        os.makedirs("oracle", exist_ok=True)
        with open(os.path.join("oracle", "rework.txt"), "a", encoding="utf-8") as out:
            out.write(f"rework {run_id}\n")
        env = dict(os.environ)
        date = settings.get("backdated" if settings.get("backdate") else "date")
        if date:
            env["GIT_AUTHOR_DATE"] = date
            env["GIT_COMMITTER_DATE"] = date
        git("add", "-A", "--", "oracle")
        git("commit", "--quiet", "--no-verify", "-m", "Address the review", env=env)
        head = git("rev-parse", "HEAD")
        entries = [
            {"thread": str(t), "status": "fixed", "message": "Done.", "commit": head}
            for t in expected.get("threads") or []
        ] + [
            {"check": str(c), "status": "fixed", "message": "Fixed.", "commit": head}
            for c in expected.get("checks") or []
        ]
        with open(os.path.join(results, "fix-summary.json"), "w", encoding="utf-8") as out:
            json.dump({"entries": entries}, out)
    emit("message", text="done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
