"""Whether commits carry a signature, read from the commit objects themselves.

GitHub requires *verified* signatures; the emulator has no registry of
accounts' keys, so it counts a commit as signed when the commit object carries
a ``gpgsig`` (or ``gpgsig-sha256``) header, and never checks the signature
itself. Commits the emulator writes for GitHub (merge, squash and merge-group
commits) are GitHub's own and count as verified where that matters.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from orchestrator_sim.gitstore import GitStore

# The commit headers that carry a signature.
SIGNATURE_HEADERS = ("gpgsig", "gpgsig-sha256")


def commit_signed(
    store: GitStore, path: Path, sha: str, env: Mapping[str, str] | None = None
) -> bool:
    """Whether commit ``sha`` has a signature header (False for an unknown commit).

    ``env`` lets a caller read objects still in a push's quarantine.
    """
    if not sha or sha.startswith("-"):
        return False
    done = store.run(path, "cat-file", "commit", sha, env=env, check=False)
    if done.returncode != 0:
        return False
    headers = done.stdout.split("\n\n", 1)[0]
    return any(line.partition(" ")[0] in SIGNATURE_HEADERS for line in headers.splitlines())
