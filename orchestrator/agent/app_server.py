"""The ``codex-app-server`` preset: one turn over Codex's JSON-RPC protocol on stdio.

``codex app-server`` (the command Symphony's ``codex.command`` runs) reads
JSON-RPC 2.0 messages, one per line, on its standard input and writes its
answers, notifications and its own requests on standard output. The contract
is the schema Codex 0.169.0 prints with ``codex app-server generate-ts`` (or
``generate-json-schema``); a turn goes:

1. ``initialize`` (client info), its answer, then the ``initialized`` notification;
2. ``thread/start`` with the workspace as ``cwd``, ``sandbox: danger-full-access``
   and ``approvalPolicy: never`` (Codex's own ``workspace-write`` sandbox keeps
   ``.git`` read-only, so no commit could be made; isolation is the product's
   sandbox), or ``thread/resume`` of the recorded thread for a continuation
   (a thread that cannot be resumed is replaced by a new one);
3. ``turn/start`` with the prompt as text input and the same cwd and policies;
4. notifications until ``turn/completed`` (``completed``, ``failed`` or
   ``interrupted``) for that turn; the runner then ends the process.

Requests from the server are answered at once, so the turn never waits for a
person: command and file-change approvals are accepted (the agent may edit,
run commands and commit in its workspace, as with the ``codex`` preset),
requests for more permissions grant nothing more, questions for a user and
MCP elicitations are declined, and anything else gets a JSON-RPC error.

:class:`AppServerClient` is the preset's event mapper: it reads each message
the server writes, says what to write back (:meth:`AppServerClient.outgoing`)
and whether the turn is over (:attr:`AppServerClient.turn_over`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from orchestrator.agent.events import AgentEvent, EventKind, TokenUsage
from orchestrator.agent.presets.codex import codex_error_class
from orchestrator.agent.presets.command import EventMapper
from orchestrator.agent.presets.values import clip_text, token_count, usage_less, valid_session_id
from orchestrator.logs import get_logger

log = get_logger(__name__)

CLIENT_NAME = "orchestrator"
CLIENT_VERSION = "1"
# What the client asks of every thread and turn: no approvals, no Codex sandbox.
SANDBOX_MODE = "danger-full-access"
APPROVAL_POLICY = "never"
# A server that does not read what it is sent: past this, the turn fails.
MAX_PENDING_BYTES = 4 * 1024 * 1024

# The JSON-RPC error code (https://www.jsonrpc.org/specification#error_object).
METHOD_NOT_FOUND = -32601

_TOOL_ITEMS = {
    "commandExecution": "command",
    "fileChange": None,
    "mcpToolCall": "tool",
    "dynamicToolCall": "tool",
    "webSearch": "query",
    "imageView": "path",
}


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _usage(raw: object) -> TokenUsage | None:
    """A ``TokenUsageBreakdown`` (inputTokens includes the cached part, as with ``codex exec``)."""
    if not isinstance(raw, dict):
        return None
    return TokenUsage(
        input_tokens=token_count(raw.get("inputTokens")),
        cached_input_tokens=token_count(raw.get("cachedInputTokens")),
        output_tokens=token_count(raw.get("outputTokens")),
    )


def _error_text(raw: object) -> str:
    """A ``TurnError`` or a JSON-RPC error object as one line."""
    error = _dict(raw)
    message = clip_text(error.get("message")) or "error"
    details = clip_text(error.get("additionalDetails"))
    return f"{message} ({details})" if details else message


class AppServerClient(EventMapper):
    """One turn of ``codex app-server``: the messages to send, and what the answers mean.

    ``map`` takes every JSON object the server writes (answers to our
    requests, its notifications and its own requests) and returns the event it
    stands for; whatever must be written back is queued for :meth:`outgoing`.
    Token usage is the thread's running total (``thread/tokenUsage/updated``)
    less the ``baseline`` of the turns before it, as with ``codex exec``.
    """

    conversational = True

    def __init__(
        self,
        baseline: TokenUsage | None = None,
        *,
        prompt: str,
        cwd: Path,
        resume_session_id: str | None = None,
    ) -> None:
        super().__init__(baseline)
        self.prompt = prompt
        self.cwd = cwd
        self.resume_session_id = valid_session_id(resume_session_id)
        self.turn_id: str | None = None
        self._next_id = 0
        # Our requests still unanswered: id -> method.
        self._pending: dict[int, str] = {}
        self._outbox: list[bytes] = []
        self._total: TokenUsage | None = None
        self._request(
            "initialize",
            {
                "clientInfo": {"name": CLIENT_NAME, "title": None, "version": CLIENT_VERSION},
                "capabilities": {"experimentalApi": False, "requestAttestation": False},
            },
        )

    # ------------------------------------------------------------ writing

    def outgoing(self) -> list[bytes]:
        """The lines to write to the server now (each ends with a newline); clears the queue."""
        lines, self._outbox = self._outbox, []
        return lines

    def _send(self, message: dict[str, Any]) -> None:
        self._outbox.append(json.dumps(message, separators=(",", ":")).encode() + b"\n")

    def _request(self, method: str, params: dict[str, Any]) -> None:
        self._next_id += 1
        self._pending[self._next_id] = method
        self._send({"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params})

    def _answer(self, request_id: object, result: dict[str, Any]) -> None:
        self._send({"jsonrpc": "2.0", "id": request_id, "result": result})

    def _refuse(self, request_id: object, code: int, message: str) -> None:
        self._send(
            {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
        )

    def _end(self, failure: str | None) -> None:
        self.turn_over = True
        if failure is not None and self.failure is None:
            self.failure = failure

    # ------------------------------------------------------------ reading

    @property
    def usage(self) -> TokenUsage:
        return TokenUsage() if self._total is None else usage_less(self._total, self.baseline)

    def map(self, obj: dict[str, Any]) -> AgentEvent:
        method = obj.get("method")
        if isinstance(method, str) and "id" in obj:
            return self._server_request(obj["id"], method, _dict(obj.get("params")))
        if isinstance(method, str):
            return self._notification(method, _dict(obj.get("params")))
        if "id" in obj and ("result" in obj or "error" in obj):
            return self._response(obj)
        return AgentEvent(EventKind.OTHER, "unknown")

    def _response(self, obj: dict[str, Any]) -> AgentEvent:
        raw_id = obj.get("id")
        method = (
            self._pending.pop(raw_id, None)
            if isinstance(raw_id, int) and not isinstance(raw_id, bool)
            else None
        )
        if method is None:
            return AgentEvent(EventKind.OTHER, "response")
        raw_type = f"{method} (response)"
        if "error" in obj:
            reason = _error_text(obj.get("error"))
            if method == "thread/resume":
                # The thread is gone (another CODEX_HOME, pruned history): start a new one.
                log.warning(
                    "app_server_resume_failed", session_id=self.resume_session_id, error=reason
                )
                self._start_thread()
                return AgentEvent(EventKind.OTHER, raw_type, text=reason)
            failure = f"{codex_error_class(reason)}: {method} was refused: {reason}"
            self._end(failure)
            return AgentEvent(EventKind.ERROR, raw_type, text=failure)
        result = _dict(obj.get("result"))
        if method == "initialize":
            self._send({"jsonrpc": "2.0", "method": "initialized"})
            if self.resume_session_id:
                self._request(
                    "thread/resume", {"threadId": self.resume_session_id, **self._policies()}
                )
            else:
                self._start_thread()
            return AgentEvent(EventKind.OTHER, raw_type)
        if method in ("thread/start", "thread/resume"):
            thread = valid_session_id(_dict(result.get("thread")).get("id"))
            if thread is None:
                failure = f"error: {method} answered without a thread id"
                self._end(failure)
                return AgentEvent(EventKind.ERROR, raw_type, text=failure)
            self.session_id = thread
            self._request(
                "turn/start",
                {
                    "threadId": thread,
                    "input": [{"type": "text", "text": self.prompt, "text_elements": []}],
                    "cwd": str(self.cwd),
                    "approvalPolicy": APPROVAL_POLICY,
                    "sandboxPolicy": {"type": "dangerFullAccess"},
                },
            )
            return AgentEvent(EventKind.SESSION, raw_type, session_id=thread)
        if method == "turn/start":
            turn = _dict(result.get("turn"))
            self.turn_id = self.turn_id or clip_text(turn.get("id"))
            return self._turn_status(turn, raw_type) or AgentEvent(EventKind.OTHER, raw_type)
        return AgentEvent(EventKind.OTHER, raw_type)

    def _start_thread(self) -> None:
        self._request("thread/start", self._policies())

    def _policies(self) -> dict[str, Any]:
        return {"cwd": str(self.cwd), "approvalPolicy": APPROVAL_POLICY, "sandbox": SANDBOX_MODE}

    def _ours(self, params: dict[str, Any]) -> bool:
        """Whether a notification is about this turn's thread (sub-agents have threads too)."""
        thread = params.get("threadId")
        return self.session_id is None or thread is None or thread == self.session_id

    def _notification(self, method: str, params: dict[str, Any]) -> AgentEvent:
        if method == "thread/started":
            thread = valid_session_id(_dict(params.get("thread")).get("id"))
            if self.session_id is None and thread is not None:
                self.session_id = thread
            return AgentEvent(EventKind.SESSION, method, session_id=thread)
        if not self._ours(params):
            return AgentEvent(EventKind.OTHER, method)
        if method == "turn/started":
            self.turn_id = self.turn_id or clip_text(_dict(params.get("turn")).get("id"))
            return AgentEvent(EventKind.OTHER, method)
        if method == "turn/completed":
            turn = _dict(params.get("turn"))
            turn_id = turn.get("id")
            if self.turn_id is not None and turn_id is not None and turn_id != self.turn_id:
                return AgentEvent(EventKind.OTHER, method)
            return self._turn_status(turn, method, final=True) or AgentEvent(
                EventKind.TURN_COMPLETED, method
            )
        if method in ("item/started", "item/completed"):
            return self._item(method, _dict(params.get("item")))
        if method == "thread/tokenUsage/updated":
            total = _usage(_dict(params.get("tokenUsage")).get("total"))
            if total is None:
                return AgentEvent(EventKind.OTHER, method)
            before = self.usage
            self._total = total
            return AgentEvent(EventKind.USAGE, method, usage=usage_less(self.usage, before))
        if method == "error":
            message = _error_text(params.get("error"))
            retrying = params.get("willRetry") is True
            text = f"{codex_error_class(message)}: {message}"
            return AgentEvent(EventKind.ERROR, method, text=text, no_progress=retrying)
        return AgentEvent(EventKind.OTHER, method)

    def _item(self, method: str, item: dict[str, Any]) -> AgentEvent:
        item_type = str(item.get("type") or "")
        if item_type == "agentMessage":
            if method != "item/completed":
                return AgentEvent(EventKind.OTHER, method)
            return AgentEvent(EventKind.MESSAGE, method, text=clip_text(item.get("text")))
        if item_type in _TOOL_ITEMS:
            field = _TOOL_ITEMS[item_type]
            name = clip_text(item.get(field)) if field else None
            return AgentEvent(EventKind.TOOL, method, text=name or item_type)
        return AgentEvent(EventKind.OTHER, method)

    def _turn_status(
        self, turn: dict[str, Any], raw_type: str, *, final: bool = False
    ) -> AgentEvent | None:
        """The event for a turn that reached its end (None while it is in progress)."""
        status = turn.get("status")
        if status == "completed" or (final and status is None):
            self._end(None)
            return AgentEvent(EventKind.TURN_COMPLETED, raw_type, usage=self.usage)
        if status in ("failed", "interrupted") or final:
            reason = _error_text(turn.get("error")) if turn.get("error") else None
            what = reason or f"the turn ended {status or 'without a status'}"
            failure = f"{codex_error_class(what)}: {what}"
            self._end(failure)
            return AgentEvent(EventKind.ERROR, raw_type, text=failure)
        return None

    # ------------------------------------------------------ server requests

    def _server_request(
        self, request_id: object, method: str, params: dict[str, Any]
    ) -> AgentEvent:
        """Answer a request of the server at once: the turn never waits for a person."""
        if isinstance(request_id, bool) or not isinstance(request_id, str | int):
            return AgentEvent(EventKind.OTHER, method)
        if method in ("item/commandExecution/requestApproval", "item/fileChange/requestApproval"):
            self._answer(request_id, {"decision": "accept"})
            what = clip_text(params.get("command")) or method.split("/")[1]
            return AgentEvent(EventKind.TOOL, method, text=f"approved: {what}")
        if method in ("execCommandApproval", "applyPatchApproval"):
            self._answer(request_id, {"decision": "approved"})
            return AgentEvent(EventKind.TOOL, method, text="approved")
        if method == "item/permissions/requestApproval":
            # The thread already has full access inside the product's sandbox.
            self._answer(request_id, {"permissions": {}, "scope": "turn"})
            return AgentEvent(EventKind.OTHER, method)
        if method == "item/tool/requestUserInput":
            # No one is there to answer: every question gets no answer.
            self._answer(request_id, {"answers": {}})
            return AgentEvent(EventKind.OTHER, method, text="no user to answer")
        if method == "mcpServer/elicitation/request":
            self._answer(request_id, {"action": "decline", "content": None, "_meta": None})
            return AgentEvent(EventKind.OTHER, method)
        if method == "item/tool/call":
            text = "this client registered no dynamic tools"
            self._answer(
                request_id,
                {"contentItems": [{"type": "inputText", "text": text}], "success": False},
            )
            return AgentEvent(EventKind.OTHER, method)
        self._refuse(request_id, METHOD_NOT_FOUND, f"{method} is not supported by this client")
        return AgentEvent(EventKind.OTHER, method)
