"""Git smart HTTP in front of the bare repositories, through ``git http-backend`` (CGI).

Clients authenticate like on GitHub: HTTP Basic with the token as password
(``x-access-token:TOKEN``), or ``Authorization: token|Bearer TOKEN``. Reading
needs read permission, pushing needs write; after a push the branch heads are
copied into the state so pull requests follow their branches.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass

from orchestrator.logs import get_logger
from orchestrator_sim.emulator import Emulator
from orchestrator_sim.push_rules import check_push
from orchestrator_sim.receive_pack import parse_receive_request
from orchestrator_sim.records import Repo, User

log = get_logger(__name__)

GIT_SERVICES = ("git-upload-pack", "git-receive-pack")


@dataclass(frozen=True, slots=True)
class GitRequest:
    """One smart-HTTP request: which repository, which CGI path, which service."""

    owner: str
    name: str
    subpath: str
    service: str | None

    @property
    def is_push(self) -> bool:
        return self.service == "git-receive-pack"


def parse_git_path(path: str, query: str) -> GitRequest | None:
    """Recognise ``/<owner>/<repo>[.git]/(info/refs|git-upload-pack|git-receive-pack)``."""
    parts = path.lstrip("/").split("/")
    if len(parts) < 3:
        return None
    owner, name, rest = parts[0], parts[1], "/".join(parts[2:])
    if name.endswith(".git"):
        name = name[: -len(".git")]
    if rest == "info/refs":
        service = None
        for item in query.split("&"):
            key, _, value = item.partition("=")
            if key == "service":
                service = value
        if service not in GIT_SERVICES:
            return None
        return GitRequest(owner, name, rest, service)
    if rest in GIT_SERVICES:
        return GitRequest(owner, name, rest, rest)
    return None


@dataclass(slots=True)
class CgiResponse:
    """What ``git http-backend`` answered."""

    status: int
    headers: dict[str, str]
    body: bytes


async def run_http_backend(
    emulator: Emulator,
    repo: Repo,
    user: User,
    request: GitRequest,
    *,
    method: str,
    query: str,
    content_type: str | None,
    content_encoding: str | None,
    git_protocol: str | None,
    body: bytes,
    base_url: str = "",
) -> CgiResponse:
    """Run the CGI for one request and parse its answer; sync branch heads after a push.

    A push that breaks the repository's rulesets is refused before git sees it
    (`orchestrator_sim.push_rules`); ``base_url`` is where its text points.
    """
    if request.is_push and request.subpath == "git-receive-pack" and method == "POST":
        refused = await asyncio.to_thread(
            check_push, emulator, repo, user.login, body, content_encoding, base_url
        )
        if refused is not None:
            headers = {"content-type": "application/x-git-receive-pack-result"}
            return CgiResponse(200, headers, refused)
    path = emulator.repo_path(repo)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "GIT_PROJECT_ROOT": str(path.parent),
        "GIT_HTTP_EXPORT_ALL": "1",
        "PATH_INFO": f"/{path.name}/{request.subpath}",
        "REQUEST_METHOD": method,
        "QUERY_STRING": query,
        "REMOTE_USER": user.login,
        "REMOTE_ADDR": "127.0.0.1",
        "CONTENT_TYPE": content_type or "",
        "CONTENT_LENGTH": str(len(body)),
        "GIT_CONFIG_NOSYSTEM": "1",
        "HOME": str(emulator.state_dir),
    }
    if content_encoding:
        env["HTTP_CONTENT_ENCODING"] = content_encoding
    if git_protocol:
        env["GIT_PROTOCOL"] = git_protocol
    process = await asyncio.create_subprocess_exec(
        "git",
        "http-backend",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    out, err = await process.communicate(body)
    if process.returncode != 0 and not out:
        log.warning(
            "sim_git_backend_failed", repo=repo.full_name, error=err.decode(errors="replace")
        )
        return CgiResponse(500, {"content-type": "text/plain"}, b"git http-backend failed\n")
    response = _parse_cgi(out)
    if request.is_push and request.subpath == "git-receive-pack":
        named = pushed_branches(body, content_encoding)
        await asyncio.to_thread(emulator.sync_branches, repo, user.login, named)
        log.info("sim_git_push", repo=repo.full_name, login=user.login)
    return response


def pushed_branches(body: bytes, content_encoding: str | None) -> list[str] | None:
    """The branches a receive-pack request names in its commands (``old new ref`` pkt-lines
    up to the first flush); None when the request cannot be read that way."""
    request = parse_receive_request(body, content_encoding)
    if request is None:
        return None
    return [command.branch for command in request.commands if command.branch is not None]


def _parse_cgi(output: bytes) -> CgiResponse:
    head, separator, body = output.partition(b"\r\n\r\n")
    if not separator:
        head, separator, body = output.partition(b"\n\n")
    status = 200
    headers: dict[str, str] = {}
    for raw in head.decode("latin-1").splitlines():
        key, _, value = raw.partition(":")
        key, value = key.strip().lower(), value.strip()
        if not key:
            continue
        if key == "status":
            status = int(value.split()[0])
        else:
            headers[key] = value
    return CgiResponse(status, headers, body)
