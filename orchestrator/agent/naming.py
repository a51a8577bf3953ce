"""Names derived from an issue: the workspace directory key and the git branch.

Both are pure functions of their input, so the same issue always lands in the
same directory and on the same branch across restarts and replicas.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

KEY_TEXT_LIMIT = 48
KEY_HASH_LENGTH = 12
SLUG_LIMIT = 48
BRANCH_LIMIT = 120

_KEY_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_SLUG_UNSAFE = re.compile(r"[^a-z0-9]+")
# Characters git refuses anywhere in a ref name (see git-check-ref-format(1)).
_REF_FORBIDDEN = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]")


def workspace_key(identifier: str) -> str:
    """A directory name for ``identifier``: its safe characters plus a short stable hash.

    The text part keeps only ``[A-Za-z0-9._-]`` (anything else becomes ``_``),
    never starts with ``.`` or ``-``, and is bounded; the hash of the whole,
    unmodified identifier keeps two identifiers that sanitize to the same text
    apart. The result can never be ``.``, ``..`` or contain a path separator.
    """
    text = _KEY_UNSAFE.sub("_", identifier).lstrip(".-")[:KEY_TEXT_LIMIT] or "issue"
    digest = hashlib.sha256(identifier.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{text}-{digest[:KEY_HASH_LENGTH]}"


def title_slug(title: str, limit: int = SLUG_LIMIT) -> str:
    """A lowercase ASCII slug of ``title`` (``a-z``, ``0-9``, single dashes), at most ``limit``."""
    ascii_text = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode("ascii")
    slug = _SLUG_UNSAFE.sub("-", ascii_text.lower()).strip("-")
    return slug[:limit].rstrip("-")


def branch_name(prefix: str, number: int, title: str, *, limit: int = BRANCH_LIMIT) -> str:
    """``prefix`` + issue number + a slug of the title, valid for git and at most ``limit`` long."""
    if number < 0:
        raise ValueError(f"issue number must not be negative, got {number}")
    base = f"{prefix}{number}"
    room = min(SLUG_LIMIT, limit - len(base) - 1)
    slug = title_slug(title, room) if room > 0 else ""
    name = f"{base}-{slug}" if slug else base
    if not is_valid_branch_name(name):
        raise ValueError(f"branch prefix {prefix!r} does not give a valid git branch name")
    return name


def is_valid_branch_name(name: str) -> bool:
    """Whether git accepts ``name`` as a branch (the rules of ``git check-ref-format --branch``).

    This is deliberately at least as strict as git, so a name it accepts is
    always accepted by git.
    """
    if not name or name in {"@", "HEAD"} or name.startswith("-"):
        return False
    if _REF_FORBIDDEN.search(name):
        return False
    if ".." in name or "@{" in name or "//" in name:
        return False
    if name.startswith("/") or name.endswith(("/", ".")):
        return False
    for component in name.split("/"):
        if not component or component.startswith(".") or component.endswith(".lock"):
            return False
    return True
