"""Run ``orchestrator run`` as its own process on SQLite files in chosen states.

The daemon runs as ``nobody`` when the tests run as root (root ignores file
modes, so a read-only file is only read-only for another user), otherwise as
the current user. Mounts (a tiny tmpfs for a full disk, a read-only bind mount)
need root; without it those tests are skipped, except under ``CI`` where they fail.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from orchestrator_sim.testing import SimWorld
from tests.e2e.harness import default_scenario, policy_document, write_policy, write_scenario
from tests.hostile.test_hostile_daemon import daemon_user as unprivileged_daemon_user

ORCHESTRATOR = str(Path(sys.executable).parent / "orchestrator")


@dataclass(frozen=True)
class DaemonUser:
    """Who the daemon runs as: the command prefix, the ids and the name in messages."""

    prefix: tuple[str, ...]
    uid: int
    gid: int
    name: str


def daemon_user() -> DaemonUser:
    prefix, uid, gid = unprivileged_daemon_user()
    return DaemonUser(tuple(prefix), uid, gid, pwd.getpwuid(uid).pw_name)


def give(path: Path, user: DaemonUser) -> None:
    """Make ``path`` the daemon user's (a no-op when that is the current user)."""
    if os.geteuid() == 0:
        os.chown(path, user.uid, user.gid)


def cannot_run(reason: str) -> None:
    """Skip a test this host cannot run, but never under CI, where it must run."""
    if os.environ.get("CI"):
        pytest.fail(f"{reason}; under CI this test must run (as root)")
    pytest.skip(reason)


def mount(*args: str) -> None:
    if os.geteuid() != 0:
        cannot_run("mounting a file system needs root")
    done = subprocess.run(["mount", *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        cannot_run(f"mount {' '.join(args)} refused: {done.stderr.strip()}")


def umount(path: Path) -> None:
    subprocess.run(["umount", "-l", str(path)], capture_output=True, check=False)


@contextmanager
def shared_folder() -> Iterator[Path]:
    """A fresh folder every user can enter (pytest's own is private to root)."""
    base = Path(tempfile.mkdtemp(prefix="storage-", dir="/tmp"))
    base.chmod(0o755)
    try:
        yield base
    finally:
        subprocess.run(["chmod", "-R", "u+rwX", str(base)], capture_output=True, check=False)
        shutil.rmtree(base, ignore_errors=True)


@dataclass(frozen=True)
class DaemonSetup:
    """A policy file for the emulator, and the environment ``orchestrator run`` needs."""

    policy: Path
    env: dict[str, str]
    user: DaemonUser

    def command(self, db: str, *extra: str) -> list[str]:
        return [*self.user.prefix, ORCHESTRATOR, "run", str(self.policy), "--db", db, *extra]

    def run(
        self, db: str, *extra: str, cwd: Path | None = None, timeout_s: float = 120
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.command(db, *extra),
            env=self.env,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )

    def start(self, db: str, log: Path) -> subprocess.Popen[bytes]:
        with log.open("wb") as output:
            return subprocess.Popen(
                self.command(db, "--port", "0"),
                env=self.env,
                stdout=output,
                stderr=output,
                start_new_session=True,
            )


def daemon_setup(base: Path, world: SimWorld) -> DaemonSetup:
    """The policy and environment under ``base``, usable by the daemon's user."""
    user = daemon_user()
    scenario = write_scenario(base, default_scenario())
    document = policy_document(base, world, scenario, "merge", {})
    policy = write_policy(base / "WORKFLOW.md", document)
    home = base / "home"
    home.mkdir()
    for path in (home, base / "agent-home", scenario):
        give(path, user)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "ORCHESTRATOR_WORKSPACE__ROOT": str(home / "workspaces"),
        "E2E_ENDPOINT": world.url,
        "E2E_TOKEN": world.bot.token,
    }
    return DaemonSetup(policy, env, user)
