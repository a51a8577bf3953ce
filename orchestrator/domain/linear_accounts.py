"""How a policy names a Linear user, and which user such a name is.

A Linear user has an id (a UUID, never changed), an email (changed only through
Linear's own verification; ``UserUpdateInput`` has no email) and two names each
user edits freely (``userUpdate``): the full ``name``, which is not unique, and
the ``displayName``, unique only among the names held today, so one given up can
be taken by another member. A name a user chooses authorizes nothing: a policy
entry that names a person (``tracker.approvers``) is an email or an id, and it
matches a user only on that field, without regard to case.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_USER_ID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+$")


def is_linear_user_id(entry: str) -> bool:
    """Whether ``entry`` has the shape of a Linear user id (a UUID)."""
    return bool(_USER_ID.match(entry.strip().casefold()))


def is_email(entry: str) -> bool:
    """Whether ``entry`` has the shape of an email address (one ``@``, no spaces)."""
    return bool(_EMAIL.match(entry.strip()))


def names_linear_user(entries: Iterable[str], user_id: str, email: str | None) -> bool:
    """Whether one of the policy's ``entries`` names the user ``user_id`` (with ``email``):
    an id entry by the id, an email entry by the email; any other entry names nobody."""
    wanted_id = user_id.casefold()
    wanted_email = email.strip().casefold() if email else None
    for entry in entries:
        key = entry.strip().casefold()
        if is_linear_user_id(key) and key == wanted_id:
            return True
        if wanted_email is not None and is_email(key) and key == wanted_email:
            return True
    return False
