"""Many branches at once in a bare repository, each with one commit, via ``git fast-import``.

Pushing branch after branch costs several git processes each; `create_branches`
writes every commit and ref in one fast-import stream (one process, one pack),
so ten thousand branches take seconds. The commits are ordinary ones: the
same author and committer identity and date a push through the control API
would give them.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from orchestrator_sim.gitstore import GitError, GitStore, Identity

# Characters a path or ref name may not carry in a fast-import stream without quoting.
_UNQUOTED = ('"', "\n", "\\")


@dataclass(frozen=True, slots=True)
class NewBranch:
    """A branch to create with one commit that writes ``content`` to the file ``path``."""

    name: str
    path: str
    content: str
    message: str


def create_branches(
    store: GitStore,
    repo_path: Path,
    start: str,
    branches: Sequence[NewBranch],
    *,
    author: Identity,
    moment: datetime,
) -> dict[str, str]:
    """Create each branch as one commit on top of ``start`` (a SHA); return {name: SHA}.

    Refuses with `GitError`, creating nothing, when a branch exists already, a
    name repeats, or git rejects a name or path.
    """
    names = [branch.name for branch in branches]
    if len(set(names)) != len(names):
        raise GitError("branch names repeat")
    for branch in branches:
        path = branch.path
        if not path or path.startswith("/") or ".." in path.split("/"):
            raise GitError(f"bad file path {path!r}")
        if any(c in path or c in branch.name for c in _UNQUOTED):
            raise GitError(f"bad branch {branch.name!r} or path {path!r}")
    with store.lock_for(repo_path):
        taken = set(store.heads(repo_path)) & set(names)
        if taken:
            raise GitError(f"branch {sorted(taken)[0]!r} exists already")
        with tempfile.TemporaryDirectory(prefix="sim-bulk-") as scratch:
            marks = Path(scratch) / "marks"
            store.run(
                repo_path,
                "fast-import",
                "--quiet",
                "--done",
                f"--export-marks={marks}",
                input_text=_stream(start, branches, author, moment),
            )
            shas = _read_marks(marks)
        # Thousands of loose refs would slow every later ref listing; GitHub packs them too.
        store.run(repo_path, "pack-refs", "--all")
    return {branch.name: shas[index] for index, branch in enumerate(branches, start=1)}


def _stream(start: str, branches: Sequence[NewBranch], author: Identity, moment: datetime) -> str:
    """The fast-import commands: one commit per branch, each from ``start``."""
    signature = f"{author.name} <{author.email}> {int(moment.timestamp())} +0000"
    parts: list[str] = []
    for index, branch in enumerate(branches, start=1):
        # ``git commit-tree -m`` ends a message with a newline; so do these commits.
        message = branch.message + "\n"
        parts.append(
            f"commit refs/heads/{branch.name}\nmark :{index}\n"
            f"author {signature}\ncommitter {signature}\n"
            f"{_data(message)}from {start}\n"
            f"M 100644 inline {branch.path}\n{_data(branch.content)}\n"
        )
    parts.append("done\n")
    return "".join(parts)


def _data(text: str) -> str:
    return f"data {len(text.encode())}\n{text}\n"


def _read_marks(marks: Path) -> dict[int, str]:
    shas: dict[int, str] = {}
    for line in marks.read_text(encoding="utf-8").splitlines():
        mark, _, sha = line.partition(" ")
        shas[int(mark.lstrip(":"))] = sha
    return shas
