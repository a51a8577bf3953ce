"""A turn on a pull request starts from its head, whatever the workspace held before."""

from __future__ import annotations

from pathlib import Path

import pytest
from structlog.testing import capture_logs

from orchestrator.agent import IssueRef, RepoSource, Workspace, WorkspaceManager
from orchestrator.agent.errors import WorkspaceError
from orchestrator.turns.workspace_sync import sync_to_head

from .conftest import TOKEN, Harness, git
from .git_http import GitHttpServer


def _commit(repo: Path, name: str, text: str, message: str) -> str:
    (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "--quiet", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def _pushed_elsewhere(tmp_path: Path, branch: str, base: str | None = None) -> str:
    """Another clone pushes ``branch`` (from ``base`` when given, over what was there)."""
    served = tmp_path / "served" / "widgets.git"
    other = tmp_path / "elsewhere"
    git(tmp_path, "clone", "--quiet", str(served), str(other))
    git(other, "checkout", "--quiet", "-B", branch, base or "origin/main")
    head = _commit(other, "feature.py", "FEATURE = 2\n", "the turn, run again elsewhere")
    git(other, "push", "--quiet", "--force", "origin", branch)
    return head


@pytest.fixture
def setup(
    harness: Harness, git_server: GitHttpServer
) -> tuple[WorkspaceManager, Workspace, RepoSource]:
    source = RepoSource(git_server.url("widgets.git"), token=TOKEN)
    manager = harness.manager()
    workspace = manager.ensure(IssueRef("acme/widgets#7", 7, "Add a widget"), source)
    return manager, workspace, source


def test_a_workspace_that_went_its_own_way_is_reset_to_the_pull_requests_head(
    setup: tuple[WorkspaceManager, Workspace, RepoSource], tmp_path: Path
) -> None:
    manager, workspace, source = setup
    # A turn committed here and was never pushed; the turn ran again on another replica.
    stale = _commit(workspace.path, "feature.py", "FEATURE = 1\n", "the turn, never pushed")
    (workspace.path / "feature.py").write_text("FEATURE = 'half done'\n")
    head = _pushed_elsewhere(tmp_path, workspace.branch)
    with capture_logs() as logs:
        sync_to_head(manager, workspace, source, head)
    assert git(workspace.path, "rev-parse", "HEAD") == head
    assert (workspace.path / "feature.py").read_text() == "FEATURE = 2\n"
    assert git(workspace.path, "status", "--porcelain") == ""
    [reset] = [e for e in logs if e["event"] == "workspace_reset"]
    assert reset["left_behind"] == stale and reset["head"] == head


def test_commits_that_only_add_to_the_head_are_kept(
    setup: tuple[WorkspaceManager, Workspace, RepoSource], tmp_path: Path
) -> None:
    manager, workspace, source = setup
    base = git(workspace.path, "rev-parse", "HEAD")
    manager.publish(workspace, source)
    ahead = _commit(workspace.path, "feature.py", "FEATURE = 1\n", "not pushed yet")
    sync_to_head(manager, workspace, source, base)
    assert git(workspace.path, "rev-parse", "HEAD") == ahead


def test_a_head_the_branch_does_not_have_fails_the_turn(
    setup: tuple[WorkspaceManager, Workspace, RepoSource],
) -> None:
    manager, workspace, source = setup
    before = git(workspace.path, "rev-parse", "HEAD")
    with pytest.raises(WorkspaceError, match="is not on its branch"):
        # Not even pushed yet.
        sync_to_head(manager, workspace, source, "0123456789abcdef0123456789abcdef01234567")
    manager.publish(workspace, source)
    with pytest.raises(WorkspaceError, match="is not on its branch"):
        sync_to_head(manager, workspace, source, "0123456789abcdef0123456789abcdef01234567")
    assert git(workspace.path, "rev-parse", "HEAD") == before
