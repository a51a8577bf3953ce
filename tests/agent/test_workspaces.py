"""Workspaces with real git: creation from a mirror, reuse, removal, path safety, credentials."""

from __future__ import annotations

from pathlib import Path

import pytest
from structlog.testing import capture_logs

from orchestrator.agent import (
    AgentSettings,
    HookFailed,
    HookSettings,
    IssueRef,
    RepoSource,
    UnsafeWorkspacePath,
    WorkspaceError,
    WorkspaceManager,
    WorkspaceSettings,
)
from orchestrator.agent.git import split_credentials
from orchestrator.agent.naming import workspace_key
from orchestrator.agent.sandbox import SandboxSettings

from .conftest import TOKEN, Harness, git
from .git_http import GitHttpServer


def _files_containing(root: Path, needle: str) -> list[Path]:
    found = []
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            try:
                if needle.encode() in path.read_bytes():
                    found.append(path)
            except OSError:
                continue
    return found


def test_a_new_workspace_is_a_checkout_on_the_issue_branch(harness: Harness) -> None:
    workspace = harness.workspace("acme/widgets#7", "Add a widget")
    assert workspace.created
    assert workspace.path.parent == harness.root.resolve()
    assert workspace.path.name == workspace_key("acme/widgets#7")
    assert workspace.branch == "orchestrator/7-add-a-widget"
    assert workspace.base_branch == "main"
    assert (workspace.path / "README.md").read_text() == "# widgets\n"
    assert git(workspace.path, "symbolic-ref", "--short", "HEAD") == workspace.branch
    assert git(workspace.path, "remote", "get-url", "origin") == str(harness.origin)
    assert workspace.result_dir.is_dir()
    # The exchange folder never ends up in a commit.
    (workspace.result_dir / "review.md").write_text("x")
    assert git(workspace.path, "status", "--porcelain") == ""


def test_continuation_reuses_the_workspace_and_keeps_local_work(harness: Harness) -> None:
    first = harness.workspace()
    (first.path / "notes.txt").write_text("work in progress\n")
    again = harness.workspace()
    assert not again.created
    assert again.path == first.path
    assert again.branch == first.branch
    assert again.base_branch == "main"
    assert (again.path / "notes.txt").read_text() == "work in progress\n"


def test_a_recorded_branch_wins_over_the_title(harness: Harness) -> None:
    manager = harness.manager()
    issue = IssueRef("acme/widgets#9", 9, "Renamed later", branch="orchestrator/9-original")
    workspace = manager.ensure(issue, harness.source)
    assert workspace.branch == "orchestrator/9-original"
    assert git(workspace.path, "symbolic-ref", "--short", "HEAD") == "orchestrator/9-original"


def test_the_branch_is_never_read_back_from_the_workspace(harness: Harness) -> None:
    manager = harness.manager()
    issue = IssueRef("acme/widgets#9", 9, "Renamed later", branch="orchestrator/9-original")
    first = manager.ensure(issue, harness.source)
    # The agent switches to the base branch and rewires its config.
    git(first.path, "checkout", "--quiet", "-B", "main", "origin/main")
    git(first.path, "config", "branch.main.merge", "refs/heads/orchestrator/9-original")
    again = manager.ensure(issue, harness.source)
    assert again.branch == "orchestrator/9-original"
    assert again.base_branch == "main"


def test_publishing_onto_the_base_branch_is_refused(harness: Harness) -> None:
    manager = harness.manager()
    workspace = manager.ensure(IssueRef("acme/widgets#9", 9, "x", branch="main"), harness.source)
    with pytest.raises(WorkspaceError, match="refusing to publish"):
        manager.publish(workspace, harness.source)


def test_an_existing_remote_branch_is_checked_out_and_tracked(
    harness: Harness, tmp_path: Path
) -> None:
    work = tmp_path / "elsewhere"
    git(tmp_path, "clone", "--quiet", str(harness.origin), str(work))
    git(work, "checkout", "--quiet", "-b", "orchestrator/7-add-a-widget")
    (work / "feature.txt").write_text("pushed before\n")
    git(work, "add", "-A")
    git(work, "commit", "--quiet", "-m", "earlier work")
    git(work, "push", "--quiet", "origin", "orchestrator/7-add-a-widget")
    workspace = harness.workspace()
    assert (workspace.path / "feature.txt").read_text() == "pushed before\n"
    upstream = git(workspace.path, "rev-parse", "--abbrev-ref", "@{upstream}")
    assert upstream == "origin/orchestrator/7-add-a-widget"


def test_the_mirror_is_made_once_outside_the_workspace_root(harness: Harness) -> None:
    one = harness.workspace("acme/widgets#1")
    two = harness.workspace("acme/widgets#2")
    manager = harness.manager()
    # The mirrors live beside the workspace root, never under it.
    assert not manager.mirrors.root.is_relative_to(manager.root)
    assert manager.mirrors.root == manager.root.parent / f"{manager.root.name}.mirrors"
    mirrors = list(manager.mirrors.root.glob("*.git"))
    assert len(mirrors) == 1
    assert not list(manager.root.glob("*.git"))
    # Each workspace is an independent repository (copied through upload-pack, not linked).
    assert one.path != two.path
    assert (one.path / ".git" / "objects").is_dir() and (two.path / ".git" / "objects").is_dir()


@pytest.mark.parametrize("left", ["nothing", "an empty HEAD file only"])
def test_a_mirror_a_killed_process_left_half_made_is_made_again(
    harness: Harness, left: str
) -> None:
    manager = harness.manager()
    source = harness.source
    mirror = manager.mirrors.path_for(source)
    mirror.mkdir(parents=True)
    if left != "nothing":
        (mirror / "HEAD").write_text("")
    with capture_logs() as logs:
        workspace = harness.workspace("acme/widgets#1")
    assert (workspace.path / ".git").is_dir()
    assert (mirror / "objects").is_dir() and (mirror / "refs").is_dir()
    assert [e["mirror"] for e in logs if e["event"] == "mirror_damaged"] == [str(mirror)]
    assert not list((manager.mirrors.root / ".staging").iterdir())


@pytest.mark.parametrize(
    "identifier",
    [
        "../../etc/passwd",
        "/etc/passwd",
        "..",
        "Ünïcødé/рабочий#3 ☃",
        "y" * 500,
    ],
)
def test_hostile_identifiers_stay_directly_under_the_root(
    harness: Harness, identifier: str
) -> None:
    manager = harness.manager()
    workspace = manager.ensure(IssueRef(identifier, 3, "t" * 500), harness.source)
    assert workspace.path.parent == harness.root.resolve()
    assert workspace.path.resolve() == workspace.path
    assert len(workspace.branch) <= 120


def test_identifiers_that_sanitize_alike_get_their_own_workspaces(harness: Harness) -> None:
    manager = harness.manager()
    a = manager.ensure(IssueRef("acme/widgets#7", 7, "x"), harness.source)
    b = manager.ensure(IssueRef("acme_widgets_7", 7, "x"), harness.source)
    assert a.path != b.path
    assert a.path.parent == b.path.parent == harness.root.resolve()


def test_a_symlink_planted_in_the_root_cannot_redirect_a_workspace(
    harness: Harness, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    manager = harness.manager()
    planted = manager.root / workspace_key("acme/widgets#7")
    planted.symlink_to(outside)
    with pytest.raises(UnsafeWorkspacePath, match="symbolic link"):
        manager.ensure(IssueRef("acme/widgets#7", 7, "x"), harness.source)
    with pytest.raises(UnsafeWorkspacePath):
        manager.remove(IssueRef("acme/widgets#7", 7))
    assert list(outside.iterdir()) == []


def test_a_symlinked_mirror_is_refused(harness: Harness, tmp_path: Path) -> None:
    outside = tmp_path / "mirror-elsewhere"
    outside.mkdir()
    manager = harness.manager()
    manager.mirrors.path_for(harness.source).symlink_to(outside)
    with pytest.raises(UnsafeWorkspacePath):
        manager.ensure(IssueRef("acme/widgets#7", 7, "x"), harness.source)
    assert list(outside.iterdir()) == []


def test_a_stray_folder_is_not_taken_for_a_workspace(harness: Harness) -> None:
    manager = harness.manager()
    stray = manager.root / workspace_key("acme/widgets#7")
    stray.mkdir()
    with pytest.raises(WorkspaceError, match="not a workspace"):
        manager.ensure(IssueRef("acme/widgets#7", 7, "x"), harness.source)


def test_an_unknown_base_branch_is_a_clear_error(harness: Harness) -> None:
    manager = WorkspaceManager(
        WorkspaceSettings(root=harness.root, base_branch="develop"),
        HookSettings(),
        harness.environment(AgentSettings(command="true")),
    )
    with pytest.raises(WorkspaceError, match="base branch 'develop' not found"):
        manager.ensure(IssueRef("acme/widgets#7", 7, "x"), harness.source)
    assert not (harness.root / workspace_key("acme/widgets#7")).exists()


def test_an_unreachable_repository_leaves_nothing_behind(harness: Harness, tmp_path: Path) -> None:
    manager = harness.manager()
    with pytest.raises(WorkspaceError, match="does not appear to be a git repository"):
        manager.ensure(IssueRef("acme/widgets#7", 7, "x"), RepoSource(str(tmp_path / "missing")))
    assert not manager.exists("acme/widgets#7")
    assert list(manager.mirrors.root.glob("*.git")) == []
    assert list((manager.mirrors.root / ".staging").iterdir()) == []


def test_removal_runs_before_remove_and_deletes_the_workspace(
    harness: Harness, tmp_path: Path
) -> None:
    marker = tmp_path / "removed.txt"
    harness.hooks = HookSettings(before_remove=f"pwd > {marker}; exit 3")
    manager = harness.manager()
    workspace = manager.ensure(IssueRef("acme/widgets#7", 7, "x"), harness.source)
    assert manager.remove(IssueRef("acme/widgets#7", 7))
    # The hook ran in the workspace, and its failure did not stop the removal.
    assert marker.read_text().strip() == str(workspace.path)
    assert not workspace.path.exists()
    assert not manager.remove(IssueRef("acme/widgets#7", 7))


def test_removal_deletes_the_per_issue_agent_home_but_never_a_shared_one(
    harness: Harness, tmp_path: Path
) -> None:
    homes = tmp_path / "agent-homes"
    harness.hooks = HookSettings(sandbox=SandboxSettings(home_root=homes))
    manager = harness.manager()
    workspace = manager.ensure(IssueRef("acme/widgets#7", 7, "x"), harness.source)
    assert manager.hooks.sandbox is not None
    launch = manager.hooks.sandbox.launch(["true"], cwd=workspace.path, env={})
    home = Path(launch.env["HOME"])
    (home / ".agent-login").write_text("state")
    assert home.parent == homes.resolve()
    manager.remove(IssueRef("acme/widgets#7", 7))
    assert not home.exists() and homes.is_dir()

    shared = tmp_path / "shared-home"
    shared.mkdir()
    (shared / "login").write_text("kept")
    harness.hooks = HookSettings(sandbox=SandboxSettings(home=shared))
    manager = harness.manager()
    manager.ensure(IssueRef("acme/widgets#8", 8, "x"), harness.source)
    manager.remove(IssueRef("acme/widgets#8", 8))
    assert (shared / "login").read_text() == "kept"


def test_removal_does_not_follow_links_inside_the_workspace(
    harness: Harness, tmp_path: Path
) -> None:
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "keep.txt").write_text("keep me")
    manager = harness.manager()
    workspace = manager.ensure(IssueRef("acme/widgets#7", 7, "x"), harness.source)
    (workspace.path / "link").symlink_to(precious)
    manager.remove(IssueRef("acme/widgets#7", 7))
    assert (precious / "keep.txt").read_text() == "keep me"


def test_after_create_failure_aborts_and_removes_the_new_workspace(harness: Harness) -> None:
    harness.hooks = HookSettings(after_create="echo cannot install; exit 4")
    manager = harness.manager()
    with pytest.raises(HookFailed) as caught:
        manager.ensure(IssueRef("acme/widgets#7", 7, "x"), harness.source)
    assert caught.value.result.exit_code == 4
    assert "cannot install" in caught.value.result.output
    assert not manager.exists("acme/widgets#7")


def test_after_create_timeout_aborts_creation(harness: Harness) -> None:
    harness.hooks = HookSettings(after_create="sleep 30", timeout_ms=300, grace_period_ms=100)
    manager = harness.manager()
    with pytest.raises(HookFailed, match="timed out") as caught:
        manager.ensure(IssueRef("acme/widgets#7", 7, "x"), harness.source)
    assert caught.value.result.timed_out
    assert not manager.exists("acme/widgets#7")


def test_after_create_runs_once_in_the_new_workspace(harness: Harness) -> None:
    harness.hooks = HookSettings(after_create='echo "$ORCHESTRATOR_BRANCH" >> created.txt')
    first = harness.workspace()
    harness.workspace()
    assert (first.path / "created.txt").read_text() == f"{first.branch}\n"


def test_after_create_in_an_empty_dir_runs_first_and_the_branch_goes_around_it(
    harness: Harness,
) -> None:
    # Symphony's order: the hook sees an empty folder and may clone the repository
    # there itself; the runtime's own checkout then fits around what it made.
    harness.hooks = HookSettings(
        after_create=(
            'found="$(ls -A)"\n'
            f"git clone --quiet {harness.origin} .\n"
            'printf %s "$found" > "$ORCHESTRATOR_HOOK.listing"\n'
            "git config core.hooksPath /nowhere\n"
            "echo planted > README.md\n"
            "mkdir -p deps && echo dep > deps/lib.txt\n"
        ),
        after_create_in_empty_dir=True,
    )
    workspace = harness.workspace()
    assert (workspace.path / "after_create.listing").read_text() == ""
    # The hook's files stay; tracked files have the branch's content.
    assert (workspace.path / "deps" / "lib.txt").read_text() == "dep\n"
    assert (workspace.path / "README.md").read_text() == "# widgets\n"
    assert git(workspace.path, "symbolic-ref", "--short", "HEAD") == workspace.branch
    # The .git is the runtime's: the hook's config did not survive.
    assert "hooksPath" not in (workspace.path / ".git" / "config").read_text()
    assert git(workspace.path, "remote", "get-url", "origin") == str(harness.origin)
    assert workspace.result_dir.is_dir()
    # Reuse does not run the hook again.
    again = harness.workspace()
    assert not again.created


def test_after_create_in_an_empty_dir_that_fails_leaves_nothing_behind(harness: Harness) -> None:
    harness.hooks = HookSettings(
        after_create="touch half-made; exit 3", after_create_in_empty_dir=True
    )
    manager = harness.manager()
    with pytest.raises(HookFailed):
        manager.ensure(IssueRef("acme/widgets#7", 7, "x"), harness.source)
    assert not manager.exists("acme/widgets#7")
    staging = harness.root / ".staging"
    assert not staging.exists() or not any(staging.iterdir())


# --------------------------------------------------------------- credentials


def test_credentials_in_the_url_are_split_off() -> None:
    url = f"https://x-access-token:{TOKEN}@github.example/acme/widgets.git"
    clean, user, password = split_credentials(url)
    assert clean == "https://github.example/acme/widgets.git"
    assert (user, password) == ("x-access-token", TOKEN)
    assert RepoSource(url).clean_url == clean
    assert TOKEN not in repr(RepoSource("https://h/r.git", token=TOKEN))
    assert split_credentials("git@github.com:acme/widgets.git")[0] == (
        "git@github.com:acme/widgets.git"
    )


@pytest.mark.parametrize("style", ["token", "url"])
def test_a_token_never_lands_on_disk(
    harness: Harness, git_server: GitHttpServer, style: str
) -> None:
    url = git_server.url("widgets.git")
    if style == "token":
        source = RepoSource(url, token=TOKEN)
    else:
        source = RepoSource(url.replace("http://", f"http://x-access-token:{TOKEN}@"))
    manager = harness.manager()
    workspace = manager.ensure(IssueRef("acme/widgets#7", 7, "x"), source)
    assert git(workspace.path, "remote", "get-url", "origin") == url
    assert _files_containing(harness.root, TOKEN) == []
    assert _files_containing(harness.root, "x-access-token") == []
    # The server only answers with credentials, so the header was used.
    assert any(seen.authorized and seen.commands for seen in git_server.seen)


def test_without_the_token_the_server_refuses(harness: Harness, git_server: GitHttpServer) -> None:
    manager = harness.manager()
    with pytest.raises(WorkspaceError):
        manager.ensure(
            IssueRef("acme/widgets#7", 7, "x"), RepoSource(git_server.url("widgets.git"))
        )


def test_a_second_workspace_fetches_without_downloading_the_repository_again(
    harness: Harness, git_server: GitHttpServer
) -> None:
    source = RepoSource(git_server.url("widgets.git"), token=TOKEN)
    manager = harness.manager()
    manager.ensure(IssueRef("acme/widgets#1", 1, "x"), source)
    downloads = git_server.commands().count("command=fetch")
    manager.ensure(IssueRef("acme/widgets#2", 2, "y"), source)
    assert downloads == 1
    assert git_server.commands().count("command=fetch") == downloads


def test_publish_pushes_through_the_mirror_with_the_token(
    harness: Harness, git_server: GitHttpServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    source = RepoSource(git_server.url("widgets.git"), token=TOKEN)
    manager = harness.manager()
    workspace = manager.ensure(IssueRef("acme/widgets#7", 7, "Add a widget"), source)
    (workspace.path / "widget.py").write_text("WIDGET = 1\n")
    git(workspace.path, "add", "-A")
    git(workspace.path, "commit", "--quiet", "-m", "add widget")
    # Hooks the agent planted must not run with the credential around.
    for name in ("pre-push", "reference-transaction"):
        hook = workspace.path / ".git" / "hooks" / name
        hook.write_text(f"#!/bin/sh\nenv >> {tmp_path / 'leak.txt'}\n")
        hook.chmod(0o755)
    sha = manager.publish(workspace, source)
    served = tmp_path / "served" / "widgets.git"
    assert git(served, "rev-parse", f"refs/heads/{workspace.branch}") == sha
    assert not (tmp_path / "leak.txt").exists()
    assert _files_containing(harness.root, TOKEN) == []
    assert git(workspace.path, "rev-parse", f"origin/{workspace.branch}") == sha
    assert "GITHUB_TOKEN" not in manager.agent_git_env()


def test_a_workspace_fetches_only_its_branch_and_the_default_one(harness: Harness) -> None:
    """A repository may have thousands of branches: the mirror takes the default branch
    and the issue's own, and drops an issue branch the remote no longer has."""
    remote = harness.origin
    for name in ("someone/else", "orchestrator/9-other"):
        git(remote, "branch", name, "main")
    manager = harness.manager()
    manager.ensure(IssueRef("acme/widgets#7", 7, "x"), harness.source)
    mirror = manager.mirrors.path_for(harness.source)

    def branches() -> list[str]:
        return git(mirror, "for-each-ref", "--format=%(refname:short)", "refs/heads").split()

    assert branches() == ["main"]
    assert manager.mirrors.default_branch(mirror) == "main"

    # The issue branch exists on the remote: the mirror takes it; once deleted, drops it.
    git(remote, "branch", "orchestrator/8-y", "main")
    manager.mirrors.update(harness.source, branches=["orchestrator/8-y"])
    assert branches() == ["main", "orchestrator/8-y"]
    git(remote, "branch", "-D", "orchestrator/8-y")
    manager.mirrors.update(harness.source, branches=["orchestrator/8-y"])
    assert branches() == ["main"]
    # Without a list, every branch (as for a first look at the repository).
    manager.mirrors.update(harness.source)
    assert branches() == ["main", "orchestrator/9-other", "someone/else"]
