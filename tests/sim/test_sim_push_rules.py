"""Push rules: a git push or a REST ref update that breaks an active ruleset is refused
with GitHub's texts (GH013 for git, 422 for REST), and nothing of it lands."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from orchestrator_sim.testing import SimWorld
from tests.sim.gitops import git, push_branch
from tests.sim.strict import manual_world, rest

DECLINED = "(push declined due to repository rule violations)"


def _head(world: SimWorld, branch: str) -> str | None:
    answer = rest(world, "GET", f"/repos/{world.repo}/branches/{branch}")
    return str(answer.json()["commit"]["sha"]) if answer.status_code == 200 else None


def _push(work: Path, env: dict[str, str], *refspecs: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "push", "origin", *refspecs],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def _commit(work: Path, env: dict[str, str], name: str) -> str:
    (work / name).write_text(f"{name}\n")
    git("add", "-A", cwd=work, env=env)
    git("commit", "-q", "-m", f"add {name}", cwd=work, env=env)
    return git("rev-parse", "HEAD", cwd=work, env=env)


def test_force_pushes_and_deletions_are_refused_with_gh013(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, _clock):
        work = tmp_path / "work"
        first = push_branch(world, work, "guarded", {"a.txt": "a\n"})
        world.control.create_ruleset(
            world.repo,
            "guard",
            [{"type": "non_fast_forward"}, {"type": "deletion"}],
            include=["refs/heads/guarded"],
        )
        env = world.git_env(tmp_path)
        ahead = push_branch(world, work, "guarded", {"b.txt": "b\n"})
        assert _head(world, "guarded") == ahead != first

        git("reset", "-q", "--hard", first, cwd=work, env=env)
        rewritten = _commit(work, env, "c.txt")
        forced = _push(work, env, "--force", "HEAD:refs/heads/guarded")
        deleted = _push(work, env, ":refs/heads/guarded")

        assert forced.returncode != 0
        lines = [line.rstrip() for line in forced.stderr.splitlines()]
        assert "remote: error: GH013: Repository rule violations found for refs/heads/guarded." in (
            lines
        )
        rules_page = f"{world.url}/{world.repo}/rules?ref=refs%2Fheads%2Fguarded"
        assert f"remote: Review all repository rules at {rules_page}" in lines
        assert "remote: - Cannot force-push to this branch" in lines
        assert f" ! [remote rejected] HEAD -> guarded {DECLINED}" in lines
        assert "remote: - Cannot delete this branch" in deleted.stderr
        assert _head(world, "guarded") == ahead
        emulator = world.server.emulator
        bare = emulator.repo_path(emulator.state.repo(world.owner, world.name))
        found = subprocess.run(
            ["git", "--git-dir", str(bare), "cat-file", "-e", rewritten],
            capture_output=True,
            check=False,
        )
        assert found.returncode != 0, "a refused push left its objects in the repository"


def test_pull_request_rule_refuses_direct_pushes_unless_bypassed(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, _clock):
        world.control.create_ruleset(
            world.repo,
            "main",
            [{"type": "pull_request"}],
            bypass_actors=[{"actor_type": "RepositoryRole", "actor_id": 5}],
        )
        refused_work, bypass_work = tmp_path / "bot", tmp_path / "admin"
        with pytest.raises(AssertionError) as refused:
            push_branch(world, refused_work, "main", {"direct.txt": "x\n"})
        assert "remote: - Changes must be made through a pull request." in str(refused.value)
        sha = push_branch(world, bypass_work, "main", {"direct.txt": "x\n"}, world.human)
        assert _head(world, "main") == sha


def test_commit_rules_list_the_offending_commits(tmp_path: Path) -> None:
    if shutil.which("ssh-keygen") is None:
        pytest.skip("ssh-keygen signs the commit this test pushes")
    with manual_world(tmp_path) as (world, _clock):
        world.control.create_ruleset(
            world.repo,
            "signed",
            [
                {"type": "required_signatures"},
                {"type": "commit_message_pattern", "parameters": {"pattern": "add "}},
            ],
            include=["~ALL"],
        )
        env = world.git_env(tmp_path)
        work = tmp_path / "work"
        git("clone", "-q", world.clone_url(), str(work), env=env)
        git("checkout", "-q", "-b", "signed", cwd=work, env=env)
        unsigned = _commit(work, env, "plain.txt")
        refused = _push(work, env, "HEAD:refs/heads/signed")
        lines = [line.rstrip() for line in refused.stderr.splitlines()]
        start = lines.index("remote: - Commits must have verified signatures.")
        assert lines[start : start + 4] == [
            "remote: - Commits must have verified signatures.",
            "remote:   Found 1 violation:",
            "remote:",
            f"remote:   {unsigned}",
        ]
        assert _head(world, "signed") is None

        key = tmp_path / "key"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
        git("reset", "-q", "--hard", "origin/main", cwd=work, env=env)
        _signed_commit(work, env, key, "signed.txt", "Signed change")
        badly_named = _push(work, env, "HEAD:refs/heads/signed")
        assert "remote: - Commit message must start with a matching pattern: add " in (
            badly_named.stderr
        )
        assert "Commits must have verified signatures" not in badly_named.stderr

        git("reset", "-q", "--hard", "origin/main", cwd=work, env=env)
        signed = _signed_commit(work, env, key, "signed.txt", "add signed.txt")
        assert _push(work, env, "HEAD:refs/heads/signed").returncode == 0
        assert _head(world, "signed") == signed


def _signed_commit(work: Path, env: dict[str, str], key: Path, name: str, message: str) -> str:
    """Commit ``name`` with an SSH signature made with ``key``."""
    (work / name).write_text(f"{name}\n")
    git("add", "-A", cwd=work, env=env)
    signing = {
        **env,
        "GIT_CONFIG_COUNT": "2",
        "GIT_CONFIG_KEY_0": "gpg.format",
        "GIT_CONFIG_VALUE_0": "ssh",
        "GIT_CONFIG_KEY_1": "user.signingkey",
        "GIT_CONFIG_VALUE_1": str(key),
    }
    git("commit", "-q", "-S", "-m", message, cwd=work, env=signing)
    return git("rev-parse", "HEAD", cwd=work, env=env)


def test_branch_names_must_match_the_pattern(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, _clock):
        pattern = {"operator": "regex", "pattern": "^(feature|fix)/"}
        world.control.create_ruleset(
            world.repo,
            "names",
            [{"type": "branch_name_pattern", "parameters": pattern}],
            include=["~ALL"],
            exclude=["~DEFAULT_BRANCH"],
        )
        with pytest.raises(AssertionError) as refused:
            push_branch(world, tmp_path / "work", "random", {"x.txt": "x\n"})
        assert "remote: - Branch name must match a given regex pattern: ^(feature|fix)/" in str(
            refused.value
        )
        sha = push_branch(world, tmp_path / "work", "feature/ok", {"y.txt": "y\n"})
        assert _head(world, "feature/ok") == sha


def test_rest_ref_updates_meet_the_same_rules(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, _clock):
        main = _head(world, "main")
        push_branch(world, tmp_path / "work", "guarded", {"a.txt": "a\n"})
        world.control.create_ruleset(
            world.repo,
            "guard",
            [{"type": "non_fast_forward"}, {"type": "deletion"}, {"type": "creation"}],
            include=["refs/heads/guarded", "refs/heads/new-*"],
        )
        refs = f"/repos/{world.repo}/git/refs"
        forced = rest(world, "PATCH", f"{refs}/heads/guarded", {"sha": main, "force": True})
        deleted = rest(world, "DELETE", f"{refs}/heads/guarded")
        created = rest(world, "POST", refs, {"ref": "refs/heads/new-one", "sha": main})

        assert (forced.status_code, forced.json()["message"]) == (
            422,
            "Repository rule violations found\n\nCannot force-push to this branch\n\n",
        )
        assert deleted.json()["message"] == (
            "Repository rule violations found\n\nCannot delete this branch\n\n"
        )
        assert created.json()["message"] == (
            "Repository rule violations found\n\n"
            "Cannot create ref due to creations being restricted.\n\n"
        )
        assert _head(world, "guarded") != main
        assert _head(world, "new-one") is None
