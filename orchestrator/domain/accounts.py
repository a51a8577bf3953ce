"""One spelling of a GitHub account for every comparison the product makes.

GitHub names an App's bot ``slug[bot]`` (type ``Bot``) in REST and ``slug``
(a ``Bot`` node) in GraphQL; logins are case-insensitive. Whether an author
is the daemon itself (its workpad, its review comment, its thread replies, a
label it set, an approval) is decided by :func:`same_account` alone, so one
account is recognised whichever API reported it.
"""

from __future__ import annotations

BOT_SUFFIX = "[bot]"


def account_key(login: str) -> str:
    """The account's login as the product compares it: lower case, without ``[bot]``."""
    return login.strip().lower().removesuffix(BOT_SUFFIX)


def same_account(login: str | None, other: str | None) -> bool:
    """Whether two logins name one account, across REST (``app[bot]``) and GraphQL (``app``)."""
    if not login or not other:
        return False
    return account_key(login) == account_key(other)


def is_bot_login(login: str, user_type: str | None = None) -> bool:
    """Whether GitHub shows the account as a bot (an App), by type or by its REST login."""
    return user_type == "Bot" or login.lower().endswith(BOT_SUFFIX)
