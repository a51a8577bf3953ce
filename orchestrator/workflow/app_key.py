"""A GitHub App's private key as the policy names it: a PEM file, or the PEM in a `$VAR`.

The key is read and checked (an RSA private key in PEM form) without ever
putting any of its text in a message: errors name the file or say that the
value is not a key, nothing more.
"""

from __future__ import annotations

import os
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
from cryptography.hazmat.primitives.serialization import load_pem_private_key

from orchestrator.state_home import expand_path

PEM_START = "-----BEGIN"
# A private key file is a few kilobytes; anything much larger is not one.
MAX_KEY_BYTES = 64 * 1024


class AppKeyError(ValueError):
    """The App's private key cannot be used; the message never holds any of its text."""


def is_inline_pem(value: str) -> bool:
    """Whether the setting holds the PEM itself (from a `$VAR`) rather than a file name."""
    return value.lstrip().startswith(PEM_START)


def key_file_absolute(value: str, base_dir: Path) -> str:
    """A key file named relative to the policy's folder, made absolute; a PEM is left alone."""
    if is_inline_pem(value) or not value.strip():
        return value
    path = Path(expand_path(value.strip()))
    if not path.is_absolute():
        path = base_dir / path
    return os.path.normpath(path)


def read_private_key(value: str) -> str:
    """The PEM text of the App's key named by ``value``, checked to be an RSA private key."""
    if is_inline_pem(value):
        text, where = value.strip() + "\n", "the value of tracker.private_key_file"
    else:
        path = Path(value)
        where = str(path)
        try:
            with path.open("rb") as handle:
                raw = handle.read(MAX_KEY_BYTES + 1)
        except OSError as error:
            raise AppKeyError(f"cannot read the key file {where}: {error.strerror}") from None
        if len(raw) > MAX_KEY_BYTES:
            raise AppKeyError(f"{where} is not a private key (larger than {MAX_KEY_BYTES} bytes)")
        try:
            text = raw.decode("ascii")
        except UnicodeDecodeError:
            raise AppKeyError(f"{where} is not a PEM private key (not text)") from None
    try:
        key = load_pem_private_key(text.encode("ascii"), password=None)
    except (ValueError, TypeError, UnicodeEncodeError):
        # The library's own message may quote the input: never pass it on.
        raise AppKeyError(
            f"{where} is not an unencrypted PEM private key (GitHub's download is one)"
        ) from None
    if not isinstance(key, RSAPrivateKey):
        raise AppKeyError(f"{where} is not an RSA private key (GitHub Apps sign with RSA)")
    return text
