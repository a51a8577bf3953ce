"""Parsing ``OWNER/REPO#N`` references given on the command line."""

from __future__ import annotations

import re

import click

_REF = re.compile(r"^(?P<repo>[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)#(?P<number>[1-9][0-9]*)$")


def parse_ref(value: str) -> tuple[str, int]:
    match = _REF.match(value.strip())
    if match is None:
        raise click.BadParameter(f"{value!r} is not OWNER/REPO#NUMBER (for example acme/app#12)")
    return match["repo"], int(match["number"])
