"""Plain-git helpers for the emulator tests: clone, commit and push as a given account."""

from __future__ import annotations

import subprocess
from pathlib import Path

from orchestrator_sim.testing import Account, SimWorld


def git(*args: str, cwd: Path | None = None, env: dict[str, str], check: bool = True) -> str:
    """Run git and return its stdout; failures raise with git's own message."""
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {done.stderr}")
    return done.stdout.strip()


def push_branch(
    world: SimWorld,
    workdir: Path,
    branch: str,
    files: dict[str, str],
    account: Account | None = None,
) -> str:
    """Clone (once) as ``account`` (default: bot), commit ``files`` on ``branch``, push; the SHA."""
    env = world.git_env(workdir.parent)
    if not (workdir / ".git").exists():
        git("clone", "-q", world.clone_url(account), str(workdir), env=env)
    git(
        "checkout",
        "-q",
        "-B",
        branch,
        f"origin/{branch}" if _remote_has(workdir, branch, env) else "origin/main",
        cwd=workdir,
        env=env,
    )
    for name, content in files.items():
        target = workdir / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
    git("add", "-A", cwd=workdir, env=env)
    git("commit", "-q", "-m", f"change {branch}", cwd=workdir, env=env)
    git("push", "-q", "origin", f"HEAD:refs/heads/{branch}", cwd=workdir, env=env)
    return git("rev-parse", "HEAD", cwd=workdir, env=env)


def _remote_has(workdir: Path, branch: str, env: dict[str, str]) -> bool:
    git("fetch", "-q", "origin", cwd=workdir, env=env)
    found = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", f"origin/{branch}"],
        cwd=workdir,
        env=env,
        capture_output=True,
        check=False,
    )
    return found.returncode == 0
