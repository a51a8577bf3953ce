"""A real git smart-HTTP server on 127.0.0.1 for the workspace tests.

It serves bare repositories through ``git http-backend`` (the CGI program that
ships with git), demands HTTP basic auth with a token when given one, and
records which git commands clients sent, so tests can tell a clone from a
cheap up-to-date check.
"""

from __future__ import annotations

import base64
import gzip
import os
import subprocess
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


@dataclass
class Seen:
    """One request: method, path, whether it carried valid credentials, git commands in it."""

    method: str
    path: str
    authorized: bool
    commands: list[str] = field(default_factory=list)


class GitHttpServer:
    """Serves ``root/<name>.git`` at ``http://127.0.0.1:PORT/<name>.git``."""

    def __init__(self, root: Path, token: str | None) -> None:
        self.root = root
        self.token = token
        self.seen: list[Seen] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server.handle(self, b"")

            def do_POST(self) -> None:
                server.handle(self, _read_body(self))

            def log_message(self, format: str, *args: object) -> None:
                return

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self._http.server_address[1])

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/{name}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._http.shutdown()
        self._http.server_close()

    def commands(self) -> list[str]:
        with self._lock:
            return [c for s in self.seen for c in s.commands]

    def _authorized(self, header: str | None) -> bool:
        if self.token is None:
            return True
        if not header or not header.startswith("Basic "):
            return False
        try:
            decoded = base64.b64decode(header[6:]).decode()
        except ValueError:
            return False
        _, _, password = decoded.partition(":")
        return password == self.token

    def handle(self, request: BaseHTTPRequestHandler, body: bytes) -> None:
        path, _, query = request.path.partition("?")
        authorized = self._authorized(request.headers.get("Authorization"))
        raw = gzip.decompress(body) if request.headers.get("Content-Encoding") == "gzip" else body
        commands = [
            name
            for name in ("command=fetch", "command=ls-refs", "git-receive-pack")
            if name.encode() in raw or (name == "git-receive-pack" and path.endswith(name))
        ]
        with self._lock:
            self.seen.append(Seen(request.command, path, authorized, commands))
        if not authorized:
            request.send_response(401)
            request.send_header("WWW-Authenticate", 'Basic realm="git"')
            request.send_header("Content-Length", "0")
            request.end_headers()
            return
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_PROJECT_ROOT": str(self.root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "REQUEST_METHOD": request.command,
            "CONTENT_TYPE": request.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "REMOTE_USER": "tester",
            "REMOTE_ADDR": "127.0.0.1",
            "GIT_PROTOCOL": request.headers.get("Git-Protocol", ""),
        }
        if request.headers.get("Content-Encoding"):
            env["HTTP_CONTENT_ENCODING"] = request.headers["Content-Encoding"]
        done = subprocess.run(
            ["git", "http-backend"], input=body, env=env, capture_output=True, check=False
        )
        head, separator, payload = done.stdout.partition(b"\r\n\r\n")
        if not separator:
            head, _, payload = done.stdout.partition(b"\n\n")
        status = 200
        headers: list[tuple[str, str]] = []
        for line in head.decode("latin-1").splitlines():
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.strip().split()[0])
            elif name:
                headers.append((name, value.strip()))
        request.send_response(status)
        for name, value in headers:
            request.send_header(name, value)
        request.send_header("Content-Length", str(len(payload)))
        request.end_headers()
        request.wfile.write(payload)


def _read_body(request: BaseHTTPRequestHandler) -> bytes:
    if request.headers.get("Transfer-Encoding", "").lower() == "chunked":
        chunks = []
        while True:
            size = int(request.rfile.readline().strip().split(b";")[0], 16)
            if size == 0:
                request.rfile.readline()
                return b"".join(chunks)
            chunks.append(request.rfile.read(size))
            request.rfile.readline()
    length = int(request.headers.get("Content-Length") or 0)
    return request.rfile.read(length)
