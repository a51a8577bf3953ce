"""Running git for workspaces without ever writing a credential to disk.

A repository URL may carry credentials (``https://user:token@host/...``) and a
token may be given separately. Both are turned into an ``Authorization`` header
that reaches git only through the environment of the one command that needs
it (``GIT_CONFIG_COUNT``/``GIT_CONFIG_KEY_n``/``GIT_CONFIG_VALUE_n``), never
through the command line (visible to every user in ``ps``) and never through a
config file or a remote URL an agent could read.
"""

from __future__ import annotations

import base64
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import SplitResult, unquote, urlsplit, urlunsplit

from orchestrator.agent.errors import GitError
from orchestrator.agent.process import run_bounded
from orchestrator.logs import redact_text, register_secret

GIT_OUTPUT_LIMIT = 1024 * 1024


@dataclass(frozen=True)
class RepoSource:
    """Where a repository is cloned from: a URL (or local path) and an optional token.

    ``url`` may embed credentials; they are split off and used only as a
    header. ``token`` is sent as HTTP basic auth with the user
    ``x-access-token``, the form GitHub accepts for installation and personal
    tokens.
    """

    url: str
    token: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not self.url or not self.url.strip():
            raise ValueError("repository URL must not be empty")

    @property
    def clean_url(self) -> str:
        """The URL without any user name or password: safe to store and to show."""
        return split_credentials(self.url)[0]

    def auth_header(self) -> str | None:
        """The ``Authorization`` header value for this source, if it has credentials."""
        _, user, password = split_credentials(self.url)
        if self.token:
            user, password = "x-access-token", self.token
        if user is None and password is None:
            return None
        raw = f"{user or ''}:{password or ''}".encode()
        for secret in (password, self.token):
            register_secret(secret)
        encoded = base64.b64encode(raw).decode("ascii")
        register_secret(encoded)
        return "Basic " + encoded


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


# Flags for git commands run inside a workspace, whose config the agent may have
# edited: no hooks and no file-system monitor program may run on our behalf.
UNTRUSTED_REPO_FLAGS = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false")


def git_environment(
    auth_header: str | None = None, base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """An environment for git (``base``, default the daemon's): never prompts, no config injection.

    With ``auth_header``, an ``http.extraHeader`` is added for this command only.
    """
    env = {
        k: v
        for k, v in (os.environ if base is None else base).items()
        if not k.startswith(("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_"))
        and k not in ("GIT_CONFIG_COUNT", "GIT_CONFIG_PARAMETERS", "GIT_DIR", "GIT_WORK_TREE")
    }
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["GCM_INTERACTIVE"] = "never"
    env["LC_ALL"] = "C"
    if auth_header is not None:
        env["GIT_CONFIG_COUNT"] = "1"
        env["GIT_CONFIG_KEY_0"] = "http.extraHeader"
        env["GIT_CONFIG_VALUE_0"] = f"Authorization: {auth_header}"
    return env


def run_git(
    args: Sequence[str],
    *,
    cwd: Path,
    timeout_s: float,
    auth_header: str | None = None,
    check: bool = True,
    cancel: threading.Event | None = None,
    env: Mapping[str, str] | None = None,
) -> str:
    """Run ``git args`` in ``cwd`` and return its standard output, stripped.

    ``env`` replaces the daemon's environment as the base (pass the filtered
    agent environment for commands in a workspace). Raises :class:`GitError`
    (with credentials redacted) when the command fails and ``check`` is set, or
    when it times out.
    """
    result = run_bounded(
        ["git", *args],
        cwd=cwd,
        env=git_environment(auth_header, env),
        timeout_s=timeout_s,
        grace_s=2.0,
        capture_bytes=GIT_OUTPUT_LIMIT,
        merge_stderr=False,
        cancel=cancel,
    )
    if result.timed_out or result.cancelled or (check and result.exit_code != 0):
        command = redact_text(" ".join(args))
        output = redact_text((result.stderr or result.stdout)[-2000:])
        raise GitError(command, result.exit_code, output)
    return result.stdout.strip()


def git_ok(
    args: Sequence[str], *, cwd: Path, timeout_s: float, env: Mapping[str, str] | None = None
) -> bool:
    """Whether ``git args`` succeeds (for existence checks such as ``rev-parse --verify``)."""
    result = run_bounded(
        ["git", *args],
        cwd=cwd,
        env=git_environment(None, env),
        timeout_s=timeout_s,
        grace_s=1.0,
        capture_bytes=4096,
        merge_stderr=False,
    )
    return result.ok
