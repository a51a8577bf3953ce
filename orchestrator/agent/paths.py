"""Path safety: every folder the agent layer uses is a real directory directly under its parent.

A symbolic link planted where a workspace (or a mirror, or the result folder)
should be could redirect writes and deletions anywhere on the machine, so such
a path is refused rather than followed.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from orchestrator.agent.errors import UnsafeWorkspacePath


def checked_child(parent: Path, name: str, *, create: bool = False) -> Path:
    """``parent/name`` after checking it is (or can become) a plain directory inside ``parent``.

    Raises :class:`UnsafeWorkspacePath` when ``name`` is not a single path
    component, when the path is a symbolic link, resolves anywhere else, or
    exists as something other than a directory.
    """
    if not name or name in (".", "..") or "/" in name or "\x00" in name:
        raise UnsafeWorkspacePath(f"{name!r} is not a plain folder name")
    base = parent.resolve()
    candidate = base / name
    _refuse_link(candidate)
    resolved = candidate.resolve()
    if resolved != candidate or not resolved.is_relative_to(base):
        raise UnsafeWorkspacePath(f"{candidate} resolves to {resolved}, outside {base}")
    if create:
        with contextlib.suppress(FileExistsError):
            candidate.mkdir(exist_ok=True)
        # Someone may have swapped in a link between the check and the mkdir.
        _refuse_link(candidate)
    if candidate.exists() and not candidate.is_dir():
        raise UnsafeWorkspacePath(f"{candidate} exists and is not a directory")
    return candidate


def _refuse_link(path: Path) -> None:
    if path.is_symlink():
        target = os.readlink(path)
        raise UnsafeWorkspacePath(
            f"{path} is a symbolic link to {target}; refusing to use it as a workspace folder"
        )
