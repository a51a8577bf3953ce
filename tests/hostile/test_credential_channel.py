"""The credential handed to the daemon's git cannot be read by another process of the same user.

A process of the daemon's user that escaped every namespace (the hidden
suite's watcher did, through the daemon's git) can open ``/proc/<pid>/fd/<n>``
of any dumpable process of that user: for a pipe, that is a second reader of
the pipe, and the credential is there until git's helper reads it. The
credential therefore travels through a socket, which ``/proc`` cannot open.
"""

from __future__ import annotations

import errno
import subprocess
from pathlib import Path

import pytest

from orchestrator.agent.git import Credentials, credential_pipe

TOKEN = "ghp_" + "Cc1Dd2Ee3Ff4Gg5Hh6Ii7Jj8Kk9Ll0Mm1Nn2Oo"


def test_the_credential_cannot_be_read_through_proc_while_git_holds_it() -> None:
    with credential_pipe(Credentials("x-access-token", TOKEN)) as (flags, fds):
        assert flags[0] == "-c" and flags[1].startswith("credential.helper=")
        [fd] = fds
        # Stands in for git: a process of the same user holding the inherited descriptor.
        holder = subprocess.Popen(["sleep", "30"], pass_fds=fds, close_fds=True)
        try:
            with pytest.raises(OSError) as refused:
                Path(f"/proc/{holder.pid}/fd/{fd}").read_bytes()
            assert refused.value.errno == errno.ENXIO
        finally:
            holder.kill()
            holder.wait()


def _ask(helper: str, fds: tuple[int, ...], action: str) -> str:
    """Run the helper as git runs a "!" helper: ``sh -c 'HELPER "$@"' HELPER ACTION``."""
    done = subprocess.run(
        ["sh", "-c", f'{helper} "$@"', helper, action],
        pass_fds=fds,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def test_the_helper_hands_the_credential_to_git_once() -> None:
    with credential_pipe(Credentials("x-access-token", TOKEN)) as (flags, fds):
        helper = flags[1].removeprefix("credential.helper=!")
        first = _ask(helper, fds, "get")
        again = _ask(helper, fds, "get")
        ignored = _ask(helper, fds, "store")
    assert first == f"username=x-access-token\npassword={TOKEN}\n"
    assert again == "" and ignored == ""
