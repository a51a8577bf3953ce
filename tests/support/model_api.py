"""A scripted local stand-in for the model APIs that the real coding-agent CLIs call.

One threaded HTTP server on 127.0.0.1 speaks the dialects the three CLIs use:

* the OpenAI Responses API (``POST /v1/responses``, streamed), as Codex uses it;
* the Anthropic Messages API (``POST /v1/messages``, streamed or not, with
  ``/v1/messages/count_tokens``), as Claude Code uses it and as Pi's built-in
  ``anthropic`` provider uses it once its base URL points here.

The server is *scripted*: a script is a list of model replies, and every main-loop request
takes the next one. A reply is a text answer, one tool call, or an HTTP error. Tool calls are
written in the CLI's own tool vocabulary, chosen from the tools the request offers (Codex's
``exec_command``/``shell``, Claude Code's ``Bash``, Pi's ``bash``). Requests that offer no
tools at all are the CLIs' side requests (titles, summaries, quota probes): they are answered
with ``side_reply`` and take nothing from the script. Every request is recorded for
assertions. Anything else is answered 404 in the provider's error shape.

Stdlib only: ``http.server`` and ``json``.
"""

from __future__ import annotations

import itertools
import json
import shlex
import sys
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, ClassVar
from urllib.parse import urlsplit

# --- replies -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Text:
    """The model answers with text and ends its turn."""

    text: str


@dataclass(frozen=True)
class Shell:
    """The model calls the CLI's shell tool with one command line."""

    command: str


@dataclass(frozen=True)
class WriteFile:
    """The model writes a file (relative to the working directory) through the shell tool.

    Rendered as a here-document so that the same reply works with every CLI.
    """

    path: str
    content: str

    def as_shell(self) -> Shell:
        parent = self.path.rsplit("/", 1)[0] if "/" in self.path else "."
        body = self.content if self.content.endswith("\n") else self.content + "\n"
        marker = "STAND_IN_EOF"
        return Shell(
            f"mkdir -p {shlex.quote(parent)} && cat > {shlex.quote(self.path)} <<'{marker}'\n"
            f"{body}{marker}"
        )


@dataclass(frozen=True)
class ToolCall:
    """A raw tool call: ``name`` and ``arguments`` exactly as the CLI's tool expects them."""

    name: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True)
class HttpError:
    """The API answers with an HTTP error in the provider's own error shape.

    ``message`` defaults to the provider's usual wording for ``status``.
    """

    status: int
    message: str | None = None


Reply = Text | Shell | WriteFile | ToolCall | HttpError


@dataclass(frozen=True)
class Usage:
    """Token counts reported with every successful reply (the same for each reply)."""

    input_tokens: int = 1000
    cached_input_tokens: int = 200
    output_tokens: int = 50


@dataclass
class RecordedRequest:
    """One request as received, and what the stand-in answered."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: Any
    dialect: str
    reply: Reply | None = None
    side: bool = False

    @property
    def tool_names(self) -> list[str]:
        """The names of the tools the request offered to the model."""
        if not isinstance(self.body, dict):
            return []
        return [str(t.get("name") or t.get("type")) for t in self.body.get("tools") or []]


# --- dialects ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Response:
    """What the handler sends back: a status, headers and either a body or SSE events."""

    status: int
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""
    events: Sequence[tuple[str, Mapping[str, Any]]] = ()

    @staticmethod
    def json(status: int, payload: Mapping[str, Any]) -> Response:
        return Response(
            status, {"content-type": "application/json"}, json.dumps(payload).encode("utf-8")
        )

    @staticmethod
    def sse(events: Sequence[tuple[str, Mapping[str, Any]]]) -> Response:
        return Response(200, {"content-type": "text/event-stream"}, events=events)


class Dialect:
    """A provider's wire format: how a reply becomes a response."""

    name: ClassVar[str] = "none"
    shell_tools: ClassVar[tuple[str, ...]] = ()

    def __init__(self, usage: Usage, ids: Iterator[int]) -> None:
        self.usage = usage
        self._ids = ids

    def next_id(self, prefix: str) -> str:
        return f"{prefix}_{next(self._ids):04d}"

    def is_side_request(self, body: Any) -> bool:
        """A request that offers no tools is not the agent's main loop."""
        return not (isinstance(body, dict) and body.get("tools"))

    def shell_call(self, request: RecordedRequest, command: str) -> ToolCall:
        """The shell tool call for ``command`` in the vocabulary the request offers."""
        offered = request.tool_names
        for wanted in self.shell_tools:
            if wanted in offered:
                return ToolCall(wanted, self.shell_arguments(wanted, command))
        raise LookupError(f"no shell tool among the offered tools {offered}")

    def shell_arguments(self, tool: str, command: str) -> dict[str, Any]:
        raise NotImplementedError

    def render(self, request: RecordedRequest, reply: Reply) -> Response:
        if isinstance(reply, HttpError):
            return self.error(reply.status, reply.message)
        if isinstance(reply, WriteFile):
            reply = reply.as_shell()
        if isinstance(reply, Shell):
            reply = self.shell_call(request, reply.command)
        stream = isinstance(request.body, dict) and bool(request.body.get("stream"))
        model = str(request.body.get("model", "stand-in")) if isinstance(request.body, dict) else ""
        return self.answer(reply, model=model, stream=stream)

    def answer(self, reply: Text | ToolCall, *, model: str, stream: bool) -> Response:
        raise NotImplementedError

    def error(self, status: int, message: str | None) -> Response:
        raise NotImplementedError


class OpenAIResponses(Dialect):
    """The OpenAI Responses API, streamed, as Codex reads it (``response.*`` events)."""

    name = "openai-responses"
    shell_tools = ("exec_command", "shell_command", "shell")

    def shell_arguments(self, tool: str, command: str) -> dict[str, Any]:
        if tool == "exec_command":
            return {"cmd": command, "yield_time_ms": 10000}
        if tool == "shell_command":
            return {"command": command}
        return {"command": ["bash", "-lc", command]}

    def _usage(self) -> dict[str, Any]:
        u = self.usage
        return {
            "input_tokens": u.input_tokens,
            "input_tokens_details": {"cached_tokens": u.cached_input_tokens},
            "output_tokens": u.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": u.input_tokens + u.output_tokens,
        }

    def _item(self, reply: Text | ToolCall) -> tuple[dict[str, Any], dict[str, Any]]:
        """The output item as first added (empty) and as done (complete)."""
        if isinstance(reply, Text):
            item_id = self.next_id("msg")
            added = {
                "type": "message",
                "id": item_id,
                "role": "assistant",
                "status": "in_progress",
                "content": [],
            }
            done = {
                **added,
                "status": "completed",
                "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
            }
            return added, done
        item_id, call_id = self.next_id("fc"), self.next_id("call")
        added = {
            "type": "function_call",
            "id": item_id,
            "call_id": call_id,
            "name": reply.name,
            "arguments": "",
            "status": "in_progress",
        }
        done = {**added, "arguments": json.dumps(dict(reply.arguments)), "status": "completed"}
        return added, done

    def answer(self, reply: Text | ToolCall, *, model: str, stream: bool) -> Response:
        response_id = self.next_id("resp")
        added, done = self._item(reply)
        base = {"id": response_id, "object": "response", "model": model, "output": []}
        completed = {**base, "status": "completed", "output": [done], "usage": self._usage()}
        if not stream:
            return Response.json(200, completed)
        events: list[tuple[str, Mapping[str, Any]]] = [
            ("response.created", {"response": {**base, "status": "in_progress"}}),
            ("response.in_progress", {"response": {**base, "status": "in_progress"}}),
            ("response.output_item.added", {"output_index": 0, "item": added}),
        ]
        if isinstance(reply, Text):
            part = {"type": "output_text", "text": "", "annotations": []}
            where = {"item_id": done["id"], "output_index": 0, "content_index": 0}
            events += [
                ("response.content_part.added", {**where, "part": part}),
                ("response.output_text.delta", {**where, "delta": reply.text}),
                ("response.output_text.done", {**where, "text": reply.text}),
                ("response.content_part.done", {**where, "part": done["content"][0]}),
            ]
        else:
            where = {"item_id": done["id"], "output_index": 0}
            events += [
                ("response.function_call_arguments.delta", {**where, "delta": done["arguments"]}),
                (
                    "response.function_call_arguments.done",
                    {**where, "arguments": done["arguments"]},
                ),
            ]
        events += [
            ("response.output_item.done", {"output_index": 0, "item": done}),
            ("response.completed", {"response": completed}),
        ]
        numbered = [
            (kind, {"type": kind, "sequence_number": n, **data})
            for n, (kind, data) in enumerate(events)
        ]
        return Response.sse(numbered)

    def error(self, status: int, message: str | None) -> Response:
        if status == 401:
            detail = {
                "message": message or "Incorrect API key provided: sk-stand***-in.",
                "type": "invalid_request_error",
                "param": None,
                "code": "invalid_api_key",
            }
        elif status == 404:
            detail = {
                "message": message or "Not found.",
                "type": "invalid_request_error",
                "param": None,
                "code": None,
            }
        else:
            detail = {
                "message": message
                or "The server had an error while processing your request. Sorry about that!",
                "type": "server_error",
                "param": None,
                "code": None,
            }
        return Response.json(status, {"error": detail})


class AnthropicMessages(Dialect):
    """The Anthropic Messages API (streamed or not), as Claude Code and Pi read it."""

    name = "anthropic-messages"
    shell_tools = ("Bash", "bash")

    def shell_arguments(self, tool: str, command: str) -> dict[str, Any]:
        if tool == "Bash":
            return {"command": command, "description": "Run a shell command"}
        return {"command": command}

    def _usage(self, *, output: int) -> dict[str, Any]:
        u = self.usage
        return {
            "input_tokens": u.input_tokens - u.cached_input_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": u.cached_input_tokens,
            "output_tokens": output,
        }

    def _block(self, reply: Text | ToolCall) -> dict[str, Any]:
        if isinstance(reply, Text):
            return {"type": "text", "text": reply.text}
        return {
            "type": "tool_use",
            "id": self.next_id("toolu_stand_in"),
            "name": reply.name,
            "input": dict(reply.arguments),
        }

    def answer(self, reply: Text | ToolCall, *, model: str, stream: bool) -> Response:
        block = self._block(reply)
        stop_reason = "end_turn" if isinstance(reply, Text) else "tool_use"
        message = {
            "id": self.next_id("msg_stand_in"),
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [block],
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": self._usage(output=self.usage.output_tokens),
        }
        if not stream:
            return Response.json(200, message)
        start: dict[str, Any]
        delta: dict[str, Any]
        if block["type"] == "text":
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            start = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events: list[tuple[str, Mapping[str, Any]]] = [
            (
                "message_start",
                {
                    "message": {
                        **message,
                        "content": [],
                        "stop_reason": None,
                        "usage": self._usage(output=1),
                    }
                },
            ),
            ("content_block_start", {"index": 0, "content_block": start}),
            ("ping", {}),
            ("content_block_delta", {"index": 0, "delta": delta}),
            ("content_block_stop", {"index": 0}),
            (
                "message_delta",
                {
                    "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                    "usage": {"output_tokens": self.usage.output_tokens},
                },
            ),
            ("message_stop", {}),
        ]
        return Response.sse([(kind, {"type": kind, **data}) for kind, data in events])

    def count_tokens(self) -> Response:
        return Response.json(200, {"input_tokens": self.usage.input_tokens})

    def error(self, status: int, message: str | None) -> Response:
        kinds = {
            400: ("invalid_request_error", "Invalid request."),
            401: ("authentication_error", "invalid x-api-key"),
            403: ("permission_error", "Your API key does not have permission."),
            404: ("not_found_error", "Not found."),
            429: ("rate_limit_error", "Rate limited."),
            529: ("overloaded_error", "Overloaded"),
        }
        kind, default = kinds.get(status, ("api_error", "Internal server error"))
        payload = {"type": "error", "error": {"type": kind, "message": message or default}}
        headers = {"content-type": "application/json", "request-id": "req_stand_in"}
        return Response(status, headers, json.dumps(payload).encode("utf-8"))


# --- the server ----------------------------------------------------------------------------


class ModelApi:
    """The scripted stand-in: start it, point a CLI at ``base_url``, read ``requests``.

    ``script`` is consumed one reply per main-loop request; once it is used up every further
    main-loop request gets ``when_exhausted``. Side requests (no tools offered) get
    ``side_reply``. Use ``ModelApi.failing(HttpError(401))`` for a server that refuses all.
    ``port`` 0 takes a free port.
    """

    def __init__(
        self,
        script: Iterable[Reply] = (),
        *,
        when_exhausted: Reply = Text("Done."),
        side_reply: Reply = Text("OK"),
        usage: Usage | None = None,
        port: int = 0,
    ) -> None:
        self._script = list(script)
        self._port = port
        self.when_exhausted = when_exhausted
        self.side_reply = side_reply
        self.requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        ids = itertools.count(1)
        self.openai = OpenAIResponses(usage or Usage(), ids)
        self.anthropic = AnthropicMessages(usage or Usage(), ids)
        self.dialects: dict[str, Dialect] = {
            "/v1/responses": self.openai,
            "/v1/messages": self.anthropic,
        }
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @classmethod
    def failing(cls, error: HttpError, *, port: int = 0) -> ModelApi:
        """A stand-in that answers every model request with ``error``."""
        return cls((), when_exhausted=error, side_reply=error, port=port)

    # lifecycle

    def start(self) -> ModelApi:
        server = _Server(("127.0.0.1", self._port), _handler_for(self))
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, name="model-api", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> ModelApi:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the stand-in is not running")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT``: append ``/v1`` for OpenAI-style base URLs."""
        return f"http://127.0.0.1:{self.port}"

    # scripting

    @property
    def remaining(self) -> list[Reply]:
        with self._lock:
            return list(self._script)

    def main_requests(self) -> list[RecordedRequest]:
        """The recorded requests that took a reply from the script (or ``when_exhausted``)."""
        with self._lock:
            return [r for r in self.requests if r.reply is not None and not r.side]

    def _next_reply(self, side: bool) -> Reply:
        with self._lock:
            if side:
                return self.side_reply
            return self._script.pop(0) if self._script else self.when_exhausted

    def respond(self, request: RecordedRequest) -> Response:
        """Record ``request`` and produce its response."""
        with self._lock:
            self.requests.append(request)
        dialect = self.dialects.get(request.path)
        if request.method == "POST" and request.path == "/v1/messages/count_tokens":
            request.dialect = self.anthropic.name
            return self.anthropic.count_tokens()
        if dialect is None or request.method != "POST":
            anthropic = request.path.startswith("/v1/messages") or "anthropic-version" in {
                k.lower() for k in request.headers
            }
            fallback: Dialect = self.anthropic if anthropic else self.openai
            return fallback.error(404, f"{request.method} {request.path} is not served here.")
        request.dialect = dialect.name
        request.side = dialect.is_side_request(request.body)
        reply = self._next_reply(request.side)
        request.reply = reply
        return dialect.render(request, reply)


class _Server(ThreadingHTTPServer):
    """Threaded, and quiet about clients that hang up (a CLI killed mid-stream)."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def _handler_for(api: ModelApi) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "model-api-stand-in"

        def _serve(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body: Any = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("utf-8", "replace")
            url = urlsplit(self.path)
            request = RecordedRequest(
                method=self.command,
                path=url.path,
                query=url.query,
                headers=dict(self.headers.items()),
                body=body,
                dialect="none",
            )
            self._send(api.respond(request))

        def _send(self, response: Response) -> None:
            self.send_response(response.status)
            for name, value in response.headers.items():
                self.send_header(name, value)
            if not response.events:
                self.send_header("content-length", str(len(response.body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(response.body)
                return
            # A streamed answer: no length, the connection closes after the last event.
            self.send_header("cache-control", "no-cache")
            self.send_header("connection", "close")
            self.end_headers()
            self.close_connection = True
            for kind, data in response.events:
                self.wfile.write(f"event: {kind}\ndata: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()

        do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _serve

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the recorded requests are the log."""

    return Handler
