"""Plays the server's side of a recorded ``codex app-server`` JSON-RPC transcript.

``python tests/support/replay_app_server.py TRANSCRIPT.jsonl [--speed N]`` walks the
transcript (tests/support/capture_app_server.py wrote it) in order: for each line the
client wrote it reads one line from stdin and checks it is the same kind of message
(same method, or an answer to the same request); for each line the server wrote it
waits until the recorded time divided by ``--speed`` and writes it, with the ids of its
answers mapped to the ids this client used. When ``$REPLAY_RECORD`` is set, every
message read is saved there (a JSON list) for the test to inspect. A client that sends
something else, or that is silent for 10 s when a message is due, ends the replay with
exit code 3 and the reason on stderr. At the end it waits for end of input (the
client's cue to shut down) and exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import sys
import time
from pathlib import Path
from typing import Any

WAIT_S = 10.0


class Mismatch(Exception):
    """The client did not send what the transcript expects."""


class Replay:
    def __init__(self, record: Path | None) -> None:
        self.record = record
        self.received: list[Any] = []
        self.ids: dict[object, object] = {}
        self._buffer = b""

    def read(self) -> dict[str, Any] | None:
        """The next message from the client (None at end of input)."""
        deadline = time.monotonic() + WAIT_S
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Mismatch(f"nothing from the client for {WAIT_S} s")
            ready, _, _ = select.select([0], [], [], left)
            if not ready:
                continue
            data = os.read(0, 65536)
            if not data:
                return None
            self._buffer += data
        line, self._buffer = self._buffer.split(b"\n", 1)
        message = json.loads(line)
        self.received.append(message)
        self.save()
        return message if isinstance(message, dict) else {}

    def save(self) -> None:
        if self.record is not None:
            self.record.write_text(json.dumps(self.received), encoding="utf-8")

    def expect(self, recorded: dict[str, Any]) -> None:
        got = self.read()
        if got is None:
            raise Mismatch(f"the client closed its output, expected {_kind(recorded)}")
        if _kind(got) != _kind(recorded):
            raise Mismatch(f"expected {_kind(recorded)}, got {_kind(got)}")
        if "method" in recorded and "id" in recorded:
            self.ids[recorded["id"]] = got.get("id")

    def write(self, recorded: dict[str, Any]) -> None:
        message = dict(recorded)
        if "method" not in message and message.get("id") in self.ids:
            message["id"] = self.ids[message["id"]]
        sys.stdout.write(json.dumps(message, separators=(",", ":")) + "\n")
        sys.stdout.flush()


def _kind(message: dict[str, Any]) -> str:
    method = message.get("method")
    if isinstance(method, str):
        return f"request {method}" if "id" in message else f"notification {method}"
    return "an answer"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("transcript", type=Path)
    parser.add_argument("--speed", type=float, default=1.0)
    args, _ = parser.parse_known_args(argv)
    record = os.environ.get("REPLAY_RECORD")
    replay = Replay(Path(record) if record else None)
    replay.save()
    lines = args.transcript.read_text(encoding="utf-8").splitlines()
    stderr = args.transcript.with_suffix(".stderr.txt")
    if stderr.exists():
        sys.stderr.write(stderr.read_text(encoding="utf-8"))
        sys.stderr.flush()
    start = time.monotonic()
    try:
        for line in lines:
            entry = json.loads(line)
            if entry["from"] == "client":
                replay.expect(entry["message"])
                continue
            delay = float(entry["t"]) / args.speed - (time.monotonic() - start)
            if delay > 0:
                time.sleep(delay)
            replay.write(entry["message"])
        while replay.read() is not None:
            pass
    except Mismatch as error:
        sys.stderr.write(f"replay: {args.transcript.name}: {error}\n")
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
