"""Plays back a real agent CLI's recorded output, as the CLI printed it.

``python -m tests.support.replay_agent FIXTURE_DIR SCENARIO [--speed N]`` writes
``SCENARIO.jsonl`` to stdout line by line, at the recorded times divided by
``--speed`` (captures.json, ``stdout_line_times``), ``SCENARIO.stderr.txt`` to
stderr, records its arguments and standard input next to ``$REPLAY_RECORD``
when set, and exits with the recorded exit code. A capture the CLI never ended
(killed at the timeout) sleeps until it is killed, as the CLI would have run on.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("fixtures", type=Path)
    parser.add_argument("scenario")
    parser.add_argument("--speed", type=float, default=1.0)
    args, rest = parser.parse_known_args(argv)
    record = os.environ.get("REPLAY_RECORD")
    if record:
        stdin = sys.stdin.read()
        Path(record).write_text(json.dumps({"argv": rest, "stdin": stdin}), encoding="utf-8")
    capture = json.loads((args.fixtures / "captures.json").read_text(encoding="utf-8"))[
        args.scenario
    ]
    lines = (args.fixtures / f"{args.scenario}.jsonl").read_text(encoding="utf-8").splitlines()
    times = capture.get("stdout_line_times") or [0.0] * len(lines)
    stderr = args.fixtures / f"{args.scenario}.stderr.txt"
    if stderr.exists():
        sys.stderr.write(stderr.read_text(encoding="utf-8"))
        sys.stderr.flush()
    start = time.monotonic()
    for line, at in zip(lines, times, strict=False):
        delay = float(at) / args.speed - (time.monotonic() - start)
        if delay > 0:
            time.sleep(delay)
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
    exit_code = capture.get("exit_code")
    if exit_code is None:
        while True:
            time.sleep(3600)
    return int(exit_code)


if __name__ == "__main__":
    sys.exit(main())
