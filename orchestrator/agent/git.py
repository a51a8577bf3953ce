"""The daemon's own git, in repositories the agent cannot write; credentials through a socket.

The daemon runs git itself only in repositories it made and the agent never
touched: the mirrors (hidden from sandboxed agents) and the repositories made
for one fetch or push. The agent's workspace is reached only through
:class:`~orchestrator.agent.workspace_git.WorkspaceGit`, inside the agent's
sandbox. Still, every git command the daemon runs

- gets a minimal, explicit environment (``PATH``, a private empty ``HOME``,
  ``LC_ALL=C``), never the daemon's: no secret it holds reaches git or anything
  git starts; ``GIT_CONFIG_NOSYSTEM`` and ``GIT_CONFIG_GLOBAL=/dev/null`` keep
  the system and user config out; ``GIT_ALLOW_PROTOCOL`` allows only the
  https, http and file transports (``ext::`` and friends would run commands),
  whatever a config's ``protocol.<name>.allow`` says;
- carries command-line settings that outrank any repository config: no hooks,
  no file-system monitor, no attributes file, no ssh command or proxy, no
  alternate-refs command, no pager, editor or signature program, no
  credential helper but ours, no extra HTTP header;
- receives a credential, when it needs one, from a credential helper that reads
  it from a socket inherited by that one command: never in an environment
  variable, on a command line or in a file.
"""

from __future__ import annotations

import contextlib
import os
import socket
import tempfile
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol
from urllib.parse import SplitResult, unquote, urlsplit, urlunsplit

from orchestrator.agent.bounded_run import run_bounded
from orchestrator.agent.errors import GitError
from orchestrator.logs import redact_text, register_secret

GIT_OUTPUT_LIMIT = 1024 * 1024


class TokenSupply(Protocol):
    """Where a token that changes over time comes from (a GitHub App's installation tokens).

    ``token`` answers one that is valid now; ``refused`` tells that the remote
    refused ``token`` and answers whether a different one can be had (then the
    operation is worth one more try).
    """

    def token(self) -> str: ...

    def refused(self, token: str) -> bool: ...


@dataclass(frozen=True)
class RepoSource:
    """Where a repository is cloned from: a URL (or local path) and an optional token.

    ``url`` may embed credentials; they are split off and handed to git only
    through :func:`credential_pipe`. ``token`` is sent as HTTP basic auth with
    the user ``x-access-token``, the form GitHub accepts for installation and
    personal tokens; a :class:`TokenSupply` is asked for a current token each
    time git needs one.
    """

    url: str
    token: str | TokenSupply | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.url or not self.url.strip():
            raise ValueError("repository URL must not be empty")

    @property
    def clean_url(self) -> str:
        """The URL without any user name or password: safe to store and to show."""
        return split_credentials(self.url)[0]

    def credentials(self) -> Credentials | None:
        """The user name and password to send for this source, if it has any."""
        _, user, password = split_credentials(self.url)
        token = self.token
        if token is not None and not isinstance(token, str):
            token = token.token()
        if token:
            user, password = "x-access-token", token
        if user is None and password is None:
            return None
        register_secret(password)
        return Credentials(user or "", password or "")

    def refused(self, credentials: Credentials | None) -> bool:
        """The remote refused ``credentials``: whether a fresh token is worth one more try."""
        if credentials is None or isinstance(self.token, str) or self.token is None:
            return False
        return self.token.refused(credentials.password)


@dataclass(frozen=True)
class Credentials:
    """A user name and password for one git remote (never logged, never written)."""

    username: str
    password: str = field(repr=False)


def split_credentials(url: str) -> tuple[str, str | None, str | None]:
    """Split ``url`` into (URL without userinfo, user, password) for http(s) URLs."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or "@" not in parts.netloc:
        return url, None, None
    userinfo, _, hostport = parts.netloc.rpartition("@")
    user, has_password, password = userinfo.partition(":")
    clean = SplitResult(parts.scheme, hostport, parts.path, parts.query, parts.fragment)
    return (
        urlunsplit(clean),
        unquote(user) if user else None,
        unquote(password) if has_password else None,
    )


# Command-line settings outrank every config file: whatever a repository's config,
# an include it names, or the agent says, these hold for every daemon git command.
# Each one names a program git would otherwise run, or switches off what would run one
# (docs/agent.md, "The daemon's own git", lists them with the command that reads each).
PINNED_SETTINGS: tuple[tuple[str, str], ...] = (
    ("core.hooksPath", "/dev/null"),
    ("core.fsmonitor", "false"),
    ("core.attributesFile", "/dev/null"),
    ("core.sshCommand", "false"),
    ("core.gitProxy", ""),
    ("core.askPass", ""),
    ("core.alternateRefsCommand", "true"),
    ("core.pager", "cat"),
    ("core.editor", "true"),
    ("sequence.editor", "true"),
    ("http.extraHeader", ""),
    ("credential.helper", ""),
    ("log.showSignature", "false"),
    ("merge.verifySignatures", "false"),
    ("gpg.program", "false"),
    ("gpg.openpgp.program", "false"),
    ("gpg.x509.program", "false"),
    ("gpg.ssh.program", "false"),
    ("submodule.recurse", "false"),
    ("fetch.recurseSubmodules", "false"),
    ("protocol.allow", "never"),
    ("protocol.https.allow", "always"),
    ("protocol.http.allow", "always"),
    ("protocol.file.allow", "always"),
)
PINNED_FLAGS: tuple[str, ...] = tuple(
    part for key, value in PINNED_SETTINGS for part in ("-c", f"{key}={value}")
)
# The transports the daemon's own repositories may use. Unlike ``protocol.allow``, which
# a repository's ``protocol.<name>.allow`` overrides, this variable outranks all config.
DAEMON_PROTOCOLS = "https:http:file"

_HOME_LOCK = threading.Lock()
_HOME: list[Path] = []


def private_home() -> Path:
    """An empty directory, private to this process, used as git's ``HOME``."""
    with _HOME_LOCK:
        if not _HOME or not _HOME[0].is_dir():
            _HOME[:] = [Path(tempfile.mkdtemp(prefix="orchestrator-git-home-"))]
        return _HOME[0]


def git_environment(protocols: str = DAEMON_PROTOCOLS) -> dict[str, str]:
    """The whole environment of a daemon git command: nothing inherited but the daemon's ``PATH``.

    ``protocols`` are the only transports git may use (``GIT_ALLOW_PROTOCOL``);
    editors, pagers, replacement objects and grafts are switched off.
    """
    return {
        "PATH": os.environ.get("PATH") or os.defpath,
        "HOME": str(private_home()),
        "LC_ALL": "C",
        "LANG": "C",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ASKPASS": "",
        "SSH_ASKPASS": "",
        "GCM_INTERACTIVE": "never",
        "GIT_ALLOW_PROTOCOL": protocols,
        "GIT_EDITOR": "true",
        "GIT_SEQUENCE_EDITOR": "true",
        "GIT_PAGER": "cat",
        "GIT_NO_REPLACE_OBJECTS": "1",
        "GIT_GRAFT_FILE": os.devnull,
    }


@contextlib.contextmanager
def credential_pipe(credentials: Credentials | None) -> Iterator[tuple[list[str], tuple[int, ...]]]:
    """The flags and inherited descriptor that hand ``credentials`` to git.

    The credential travels through one end of a socket pair, inherited by that
    one git command alone; the helper is a bash command that prints what it
    reads from that descriptor when git asks (``get``) and ignores
    ``store``/``erase``. A socket, unlike a pipe, cannot be opened again
    through ``/proc/<pid>/fd``, so no other process can read it there while
    git runs. The other end is closed before git starts, so the helper reads
    the credential and then the end of the stream.
    """
    if credentials is None:
        yield [], ()
        return
    payload = f"username={credentials.username}\npassword={credentials.password}\n".encode()
    ours, theirs = socket.socketpair()
    try:
        ours.sendall(payload)
        ours.close()
        fd = theirs.fileno()
        # bash: git's ``sh`` may be dash, which redirects only from descriptors 0 to 9.
        helper = f"!bash -c 'if test \"$1\" = get; then cat <&{fd}; fi' orchestrator-credential"
        yield ["-c", f"credential.helper={helper}"], (fd,)
    finally:
        ours.close()
        theirs.close()


def run_git(
    args: Sequence[str],
    *,
    cwd: Path,
    timeout_s: float,
    credentials: Credentials | None = None,
    check: bool = True,
    cancel: threading.Event | None = None,
) -> str:
    """Run the daemon's ``git args`` in ``cwd`` and return its standard output, stripped.

    For repositories the daemon made and the agent cannot write (mirrors and
    the repositories made for one fetch or push); the agent's workspace is
    reached only through :class:`~orchestrator.agent.workspace_git.WorkspaceGit`.
    The command always runs with the pinned settings and the minimal
    environment; ``credentials`` reach git through a socket. Raises
    :class:`GitError` (with credentials redacted) when the command fails and
    ``check`` is set, or when it times out.
    """
    with credential_pipe(credentials) as (helper_flags, fds):
        result = run_bounded(
            ["git", *PINNED_FLAGS, *helper_flags, *args],
            cwd=cwd,
            env=git_environment(),
            timeout_s=timeout_s,
            grace_s=2.0,
            capture_bytes=GIT_OUTPUT_LIMIT,
            merge_stderr=False,
            cancel=cancel,
            pass_fds=fds,
        )
    if result.timed_out or result.cancelled or (check and result.exit_code != 0):
        command = redact_text(" ".join(args))
        output = redact_text((result.stderr or result.stdout)[-2000:])
        raise GitError(command, result.exit_code, output)
    return result.stdout.strip()


# What git says when the remote refused the credential it sent (HTTP 401).
_AUTH_REFUSED = (
    "authentication failed",
    "invalid username or password",
    "the requested url returned error: 401",
)


def refused_credentials(error: GitError) -> bool:
    """Whether a failed git command failed because the remote refused its credential."""
    text = error.output.lower()
    return any(marker in text for marker in _AUTH_REFUSED)


def git_ok(args: Sequence[str], *, cwd: Path, timeout_s: float) -> bool:
    """Whether ``git args`` succeeds (for existence checks such as ``rev-parse --verify``), in
    a repository the daemon made."""
    result = run_bounded(
        ["git", *PINNED_FLAGS, *args],
        cwd=cwd,
        env=git_environment(),
        timeout_s=timeout_s,
        grace_s=1.0,
        capture_bytes=4096,
        merge_stderr=False,
    )
    return result.ok
