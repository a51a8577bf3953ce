"""Git smart HTTP with token auth: clone, push, refusals, and branch heads seen by the API."""

from __future__ import annotations

import base64
import gzip
import subprocess
from pathlib import Path
from typing import Any

from orchestrator_sim.githttp import pushed_branches
from orchestrator_sim.testing import SimWorld
from tests.sim.gitops import git, push_branch


def _git_fails(world: SimWorld, *args: str, cwd: Path | None = None) -> str:
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=world.git_env(), capture_output=True, text=True, check=False
    )
    assert done.returncode != 0, f"git {' '.join(args)} unexpectedly succeeded"
    return done.stderr


def test_clone_with_token_sees_the_files(sim_world: SimWorld, tmp_path: Path) -> None:
    target = tmp_path / "clone"
    git("clone", "-q", sim_world.clone_url(), str(target), env=sim_world.git_env())
    assert (target / "README.md").read_text().startswith("# widgets")
    assert git("branch", "--show-current", cwd=target, env=sim_world.git_env()) == "main"


def test_clone_with_an_authorization_header(sim_world: SimWorld, tmp_path: Path) -> None:
    basic = base64.b64encode(f"x-access-token:{sim_world.bot.token}".encode()).decode()
    plain_url = sim_world.server.git_url(sim_world.owner, sim_world.name)
    git(
        "-c",
        f"http.extraHeader=Authorization: Basic {basic}",
        "clone",
        "-q",
        plain_url,
        str(tmp_path / "clone"),
        env=sim_world.git_env(),
    )
    assert (tmp_path / "clone" / "src" / "widgets.py").exists()


def test_missing_or_wrong_token_is_refused(sim_world: SimWorld, tmp_path: Path) -> None:
    plain_url = sim_world.server.git_url(sim_world.owner, sim_world.name)
    error = _git_fails(sim_world, "clone", "-q", plain_url, str(tmp_path / "anon"))
    assert "Authentication failed" in error or "could not read Username" in error
    wrong = plain_url.replace("http://", "http://x-access-token:ghp_wrong@")
    _git_fails(sim_world, "clone", "-q", wrong, str(tmp_path / "wrong"))
    counters = sim_world.control.counters()
    assert counters["tokens"]["(unknown token)"]["requests"] >= 1


def test_reader_cannot_push(sim_world: SimWorld, tmp_path: Path) -> None:
    sim_world.control.set_permission(sim_world.repo, sim_world.bot.login, "read")
    work = tmp_path / "work"
    git("clone", "-q", sim_world.clone_url(), str(work), env=sim_world.git_env())
    (work / "new.txt").write_text("new\n")
    git("add", ".", cwd=work, env=sim_world.git_env())
    git("commit", "-q", "-m", "new", cwd=work, env=sim_world.git_env())
    error = _git_fails(sim_world, "push", "origin", "HEAD:refs/heads/x", cwd=work)
    assert "403" in error
    assert "x" not in sim_world.control.repo_info(sim_world.repo)["branches"]


def test_private_repository_is_invisible_to_outsiders(sim_world: SimWorld, tmp_path: Path) -> None:
    control = sim_world.control
    control.create_repo(
        "acme/secret", {"s.txt": "s\n"}, private=True, permissions={"alice": "read"}
    )
    outsider_url = sim_world.server.git_url("acme", "secret").replace(
        "http://", f"http://x-access-token:{sim_world.bot.token}@"
    )
    error = _git_fails(sim_world, "clone", "-q", outsider_url, str(tmp_path / "no"))
    assert "not found" in error.lower()
    reader_url = sim_world.server.git_url("acme", "secret").replace(
        "http://", f"http://x-access-token:{sim_world.human.token}@"
    )
    git("clone", "-q", reader_url, str(tmp_path / "yes"), env=sim_world.git_env())


def test_push_and_delete_branches_show_in_the_api(
    sim_world: SimWorld, gh: Any, tmp_path: Path
) -> None:
    sha = push_branch(sim_world, tmp_path / "work", "topic", {"t.txt": "t\n"})
    repo = gh.get_repo(sim_world.repo)
    assert repo.get_branch("topic").commit.sha == sha
    git("push", "-q", "origin", ":topic", cwd=tmp_path / "work", env=sim_world.git_env())
    assert [b.name for b in repo.get_branches()] == ["main"]
    pushes = [w for w in sim_world.control.writes() if w["route"] == "GIT git-receive-pack"]
    assert [w["login"] for w in pushes] == [sim_world.bot.login, sim_world.bot.login]


def test_human_push_through_control_is_fetchable(sim_world: SimWorld, tmp_path: Path) -> None:
    work = tmp_path / "work"
    git("clone", "-q", sim_world.clone_url(), str(work), env=sim_world.git_env())
    sha = sim_world.control.push(
        sim_world.repo, "main", {"README.md": "# changed by alice\n"}, as_user="alice"
    )
    git("pull", "-q", "--ff-only", cwd=work, env=sim_world.git_env())
    assert git("rev-parse", "HEAD", cwd=work, env=sim_world.git_env()) == sha
    author = git("log", "-1", "--format=%an <%ae>", cwd=work, env=sim_world.git_env())
    assert author.startswith("Alice Example <")


def test_one_push_of_several_branches_updates_each_of_them(
    sim_world: SimWorld, gh: Any, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    first = push_branch(sim_world, work, "feature/x", {"x.txt": "x\n"})
    env = sim_world.git_env()
    git("checkout", "-q", "-b", "feature/y", "origin/main", cwd=work, env=env)
    (work / "y.txt").write_text("y\n")
    git("add", "y.txt", cwd=work, env=env)
    git("commit", "-q", "-m", "y", cwd=work, env=env)
    git("checkout", "-q", "feature/x", cwd=work, env=env)
    (work / "x.txt").write_text("x again\n")
    git("commit", "-q", "-am", "x again", cwd=work, env=env)
    git("push", "-q", "origin", "feature/x", "feature/y", cwd=work, env=env)
    repo = gh.get_repo(sim_world.repo)
    heads = {b.name: b.commit.sha for b in repo.get_branches()}
    assert heads["feature/x"] == git("rev-parse", "feature/x", cwd=work, env=env) != first
    assert heads["feature/y"] == git("rev-parse", "feature/y", cwd=work, env=env)
    assert set(heads) == {"main", "feature/x", "feature/y"}


def _pkt(text: str) -> bytes:
    return f"{len(text) + 4:04x}{text}".encode()


def test_the_branches_a_push_names_are_read_from_its_commands() -> None:
    old, new = "0" * 40, "1" * 40
    body = (
        _pkt(f"shallow {new}\n")
        + _pkt(f"{old} {new} refs/heads/feature/x\0report-status side-band-64k\n")
        + _pkt(f"{new} {old} refs/heads/gone\n")
        + _pkt(f"{old} {new} refs/tags/v1\n")
        + b"0000PACK..."
    )
    assert pushed_branches(body, None) == ["feature/x", "gone"]
    assert pushed_branches(gzip.compress(body), "gzip") == ["feature/x", "gone"]
    assert pushed_branches(b"zzzz", None) is None
    assert pushed_branches(_pkt(f"{old} {new} refs/heads/a\n"), None) is None
    assert pushed_branches(b"not gzip", "gzip") is None
