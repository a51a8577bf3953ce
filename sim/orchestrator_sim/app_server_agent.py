"""The scripted agent speaking Codex's app-server protocol (`sim agent --protocol app-server`).

It plays the server's side of ``codex app-server`` on stdin and stdout, as the
``codex-app-server`` preset's client expects it (orchestrator/agent/app_server.py):
it answers ``initialize``, ``thread/start`` or ``thread/resume`` and ``turn/start``
(whose text input is the prompt), plays the scenario's steps as the turn, and ends
it with ``turn/completed``: ``completed`` when the steps ran through and the
scenario's exit code is 0, ``failed`` otherwise. A ``crash`` or ``exit`` step ends
the process mid-turn, as a dying server would. Then it reads its input until the
client closes it, refusing requests it does not know, and exits 0.

The steps' events become notifications: ``message`` an ``agentMessage`` item,
``events`` ``commandExecution`` items, ``usage`` a ``thread/tokenUsage/updated``
with the thread's running total, ``session`` a ``thread/started``; an ``emit``
step whose object has a ``method`` or an ``id`` is written as it is (a raw
JSON-RPC message, such as an approval request).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from orchestrator_sim.agent import ScriptedAgent
from orchestrator_sim.scenario_agent import Behaviour

USER_AGENT = "orchestrator-sim/0 (scripted app-server)"
METHOD_NOT_FOUND = -32601


class AppServerAgent(ScriptedAgent):
    """A scripted turn over the app-server protocol."""

    def __init__(self, behaviour: Behaviour, **kwargs: Any) -> None:
        super().__init__(behaviour, **kwargs)
        run_id = self.run_id
        # The JSON-RPC requests come where the prompt would.
        self.rpc_in = self.prompt
        self.thread_id = f"sim-thread-{run_id}"
        self.turn_id = f"sim-turn-{run_id}"
        self._items = 0
        self._total = {"inputTokens": 0, "cachedInputTokens": 0, "outputTokens": 0}

    # ----------------------------------------------------------- protocol

    def _read(self) -> dict[str, Any] | None:
        """The client's next message (None at end of input); a line that is not JSON is skipped."""
        while True:
            line = self.rpc_in.readline()
            if not line:
                return None
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if isinstance(message, dict):
                return message

    def _send(self, message: dict[str, Any]) -> None:
        self._print(json.dumps(message, separators=(",", ":")))

    def _notify(self, method: str, params: dict[str, Any]) -> None:
        self._send({"method": method, "params": params})

    def _thread(self) -> dict[str, Any]:
        return {"id": self.thread_id, "cwd": str(self.workspace), "status": {"type": "idle"}}

    def _turn(self, status: str, error: dict[str, Any] | None = None) -> dict[str, Any]:
        return {"id": self.turn_id, "items": [], "status": status, "error": error}

    def _handshake(self) -> bool:
        """Answer until ``turn/start``; False when the input ends first."""
        while True:
            message = self._read()
            if message is None:
                return False
            method, request_id = message.get("method"), message.get("id")
            raw = message.get("params")
            params: dict[str, Any] = raw if isinstance(raw, dict) else {}
            if request_id is None:
                continue  # a notification (initialized) or an answer
            if method == "initialize":
                self._send(
                    {
                        "id": request_id,
                        "result": {
                            "userAgent": USER_AGENT,
                            "codexHome": os.environ.get("CODEX_HOME", ""),
                            "platformFamily": "unix",
                            "platformOs": sys.platform,
                        },
                    }
                )
            elif method in ("thread/start", "thread/resume"):
                resumed = params.get("threadId") if method == "thread/resume" else None
                if isinstance(resumed, str) and resumed:
                    self.thread_id = resumed
                self._send({"id": request_id, "result": {"thread": self._thread()}})
                if method == "thread/start":
                    self._notify("thread/started", {"thread": self._thread()})
            elif method == "turn/start":
                texts = [
                    part.get("text", "")
                    for part in params.get("input") or []
                    if isinstance(part, dict) and part.get("type") == "text"
                ]
                self._prompt_text = "\n".join(texts).encode("utf-8")
                self._send({"id": request_id, "result": {"turn": self._turn("inProgress")}})
                self._notify(
                    "turn/started", {"threadId": self.thread_id, "turn": self._turn("inProgress")}
                )
                return True
            else:
                self._refuse(request_id, method)

    def _refuse(self, request_id: object, method: object) -> None:
        self._send(
            {
                "id": request_id,
                "error": {"code": METHOD_NOT_FOUND, "message": f"{method} is not scripted"},
            }
        )

    def run(self) -> int:
        if not self._handshake():
            self.err.write("scripted app-server: the input ended before turn/start\n")
            self.err.flush()
            return 1
        stopped = self.play()
        if stopped is not None:
            return stopped
        code = self.behaviour.exit_code
        error = None if code == 0 else {"message": f"the scripted turn failed (exit code {code})"}
        status = "completed" if code == 0 else "failed"
        self._notify(
            "turn/completed", {"threadId": self.thread_id, "turn": self._turn(status, error)}
        )
        while (message := self._read()) is not None:
            if message.get("method") is not None and message.get("id") is not None:
                self._refuse(message["id"], message["method"])
        return 0

    # ------------------------------------------------------------- events

    def emit(self, event: dict[str, Any]) -> None:
        """The agent contract's event as the app-server notification it stands for."""
        if "method" in event or "id" in event:
            self._send(event)
            return
        kind = event.get("type")
        if kind == "session":
            self._notify("thread/started", {"thread": self._thread()})
        elif kind == "message":
            self._item({"type": "agentMessage", "text": str(event.get("text") or "")})
        elif kind == "tool":
            self._item(
                {
                    "type": "commandExecution",
                    "command": str(event.get("name") or "tool"),
                    "status": "completed",
                }
            )
        elif kind == "usage":
            for wire, name in (
                ("inputTokens", "input_tokens"),
                ("cachedInputTokens", "cached_input_tokens"),
                ("outputTokens", "output_tokens"),
            ):
                value = event.get(name)
                self._total[wire] += value if isinstance(value, int) else 0
            breakdown = dict(self._total)
            self._notify(
                "thread/tokenUsage/updated",
                {
                    "threadId": self.thread_id,
                    "turnId": self.turn_id,
                    "tokenUsage": {"total": breakdown, "last": breakdown},
                },
            )
        elif kind == "error":
            self._notify(
                "error",
                {
                    "threadId": self.thread_id,
                    "turnId": self.turn_id,
                    "error": {"message": str(event.get("message") or "error")},
                    "willRetry": bool(event.get("will_retry")),
                },
            )
        else:
            self._notify(str(kind or "sim/event"), {"threadId": self.thread_id, **event})

    def _item(self, item: dict[str, Any]) -> None:
        self._items += 1
        item = {"id": f"item-{self._items}", **item}
        where = {"threadId": self.thread_id, "turnId": self.turn_id}
        self._notify("item/started", {"item": item, **where})
        self._notify("item/completed", {"item": item, **where})

    def _session(self, value: str) -> None:
        if value != "auto":
            self.thread_id = value
        self.emit({"type": "session"})
