"""A push whose commits would close another issue is refused, naming the commit and the phrase.

The agent's commits are checked in the daemon's own scratch repository, read raw:
a NUL byte or a foreign ``encoding`` header cannot hide a closing keyword. Only
the commits the push brings are read; a reworded branch goes through.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from orchestrator.agent import IssueRef, RepoSource, Workspace, WorkspaceManager
from orchestrator.agent.commit_messages import message_of
from orchestrator.agent.errors import PushRefused
from orchestrator.domain.pr_body import ClosingScope

from .conftest import TOKEN, Harness, git
from .git_http import GitHttpServer

SCOPE = ClosingScope("acme/widgets", 7)


Setup = tuple[WorkspaceManager, Workspace, RepoSource]


@pytest.fixture
def setup(harness: Harness, git_server: GitHttpServer) -> Setup:
    """The issue's workspace, its manager and the served repository's source."""
    source = RepoSource(git_server.url("widgets.git"), token=TOKEN)
    manager = harness.manager()
    return manager, manager.ensure(IssueRef("acme/widgets#7", 7, "Add a widget"), source), source


def served_branch(server: GitHttpServer, tmp_path: Path, branch: str) -> str | None:
    done = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}"],
        cwd=tmp_path / "served" / "widgets.git",
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip() or None


def commit(workspace: Workspace, message: str, name: str = "widget.py") -> str:
    path = workspace.path / name
    path.write_text((path.read_text() if path.exists() else "") + "x = 1\n")
    git(workspace.path, "add", "-A")
    git(workspace.path, "commit", "--quiet", "-m", message)
    return git(workspace.path, "rev-parse", "HEAD")


def raw_commit(workspace: Workspace, headers: str, message: bytes) -> str:
    """A commit object written byte for byte (what ``git commit`` would not write)."""
    tree = git(workspace.path, "rev-parse", "HEAD^{tree}")
    parent = git(workspace.path, "rev-parse", "HEAD")
    body = (
        f"tree {tree}\nparent {parent}\nauthor A <a@example.com> 0 +0000\n"
        f"committer A <a@example.com> 0 +0000\n{headers}\n"
    ).encode() + message
    done = subprocess.run(
        ["git", "hash-object", "-t", "commit", "-w", "--literally", "--stdin"],
        cwd=workspace.path,
        input=body,
        capture_output=True,
        check=True,
    )
    sha = done.stdout.decode().strip()
    git(workspace.path, "update-ref", f"refs/heads/{workspace.branch}", sha)
    return sha


def test_a_commit_closing_another_issue_is_refused_by_name_and_a_reworded_one_is_pushed(
    setup: Setup, git_server: GitHttpServer, tmp_path: Path
) -> None:
    manager, workspace, source = setup
    commit(workspace, "Add a widget")
    bad = commit(workspace, "Tidy up\n\n**Closes**\u00a0acme/gadgets#1", "tidy.py")

    with pytest.raises(PushRefused) as refused:
        manager.publish(workspace, source, closing=SCOPE)
    message = str(refused.value)
    assert f"the commit {bad[:12]} says 'Closes acme/gadgets#1'" in message
    assert "only acme/widgets#7 may be closed" in message
    assert refused.value.head == bad
    assert served_branch(git_server, tmp_path, workspace.branch) is None

    # The agent rewords the commit: the new head goes through, the tracked issue may be closed.
    git(workspace.path, "commit", "--quiet", "--amend", "-m", "Tidy up\n\nRefs acme/gadgets#1")
    commit(workspace, "Finish\n\nCloses #7", "done.py")
    head = manager.publish(workspace, source, closing=SCOPE)
    assert served_branch(git_server, tmp_path, workspace.branch) == head


def test_only_the_commits_the_push_brings_are_read(
    setup: Setup, git_server: GitHttpServer, tmp_path: Path
) -> None:
    manager, workspace, source = setup
    commit(workspace, "Fixes acme/gadgets#1")
    # Pushed before the rule (or by someone else): already on the remote branch.
    manager.publish(workspace, source)
    head = commit(workspace, "Add more", "more.py")
    assert manager.publish(workspace, source, closing=SCOPE) == head


@pytest.mark.parametrize(
    ("headers", "message", "expected"),
    [
        ("", b"Tidy up\x00Closes acme/gadgets#1\n", "says 'Closes acme/gadgets#1'"),
        ("encoding ISO-8859-1\n", b"Tidy up\n", "declares its message in 'ISO-8859-1'"),
    ],
    ids=["a NUL byte before the phrase", "a foreign encoding"],
)
def test_a_message_that_could_hide_a_phrase_is_refused(
    setup: Setup,
    git_server: GitHttpServer,
    tmp_path: Path,
    headers: str,
    message: bytes,
    expected: str,
) -> None:
    manager, workspace, source = setup
    commit(workspace, "Add a widget")
    sha = raw_commit(workspace, headers, message)
    with pytest.raises(PushRefused, match=f"the commit {sha[:12]} {expected}"):
        manager.publish(workspace, source, closing=SCOPE)
    assert served_branch(git_server, tmp_path, workspace.branch) is None


def test_without_a_tracked_number_no_closing_keyword_is_pushed(
    setup: Setup, git_server: GitHttpServer, tmp_path: Path
) -> None:
    manager, workspace, source = setup
    commit(workspace, "Fixes #7")
    with pytest.raises(PushRefused, match="no issue may be closed by keyword"):
        manager.publish(workspace, source, closing=ClosingScope("acme/widgets", None))


def test_the_message_of_a_raw_commit_starts_after_the_headers() -> None:
    raw = (
        "tree t\nparent p\nauthor A <a@x> 0 +0000\ncommitter A <a@x> 0 +0000\n"
        "gpgsig -----BEGIN-----\n sig\n -----END-----\nencoding UTF-8\n\nSubject\n\nBody"
    )
    assert message_of(raw) == ("Subject\n\nBody", "UTF-8")
