"""The parts of git's receive-pack protocol the emulator reads and writes itself.

A push request (``POST .../git-receive-pack``) is pkt-lines of ref commands
(``old new ref``, the first carrying the client's capabilities after a NUL),
a flush, push options when negotiated, then the pack. To refuse a push the way
GitHub does, the emulator answers in the client's own terms: messages on
side-band 2 (git shows them as ``remote: ...``) and a report-status with
``ng <ref> <reason>`` for each command, so git prints
``! [remote rejected] main -> main (<reason>)``.
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass

ZERO_SHA = "0" * 40
# Side-band 64k allows 65520-byte packets; one byte of each is the band number.
_BAND_64K = 65515
_BAND_SMALL = 995


@dataclass(frozen=True)
class RefCommand:
    """One ref update of a push: ``old`` is zeros for a new ref, ``new`` for a deletion."""

    old: str
    new: str
    ref: str

    @property
    def branch(self) -> str | None:
        return self.ref.removeprefix("refs/heads/") if self.ref.startswith("refs/heads/") else None


@dataclass(frozen=True)
class ReceiveRequest:
    """A parsed push: its ref commands, the client's capabilities, and the pack bytes."""

    commands: tuple[RefCommand, ...]
    capabilities: frozenset[str]
    pack: bytes


def _pkt_lines(data: bytes, position: int) -> tuple[list[bytes], int] | None:
    """The pkt-lines from ``position`` up to the next flush, and where the flush ends."""
    lines: list[bytes] = []
    while position + 4 <= len(data):
        try:
            length = int(data[position : position + 4], 16)
        except ValueError:
            return None
        if length == 0:
            return lines, position + 4
        if length < 4:
            return None
        lines.append(data[position + 4 : position + length])
        position += length
    return None


def parse_receive_request(body: bytes, content_encoding: str | None) -> ReceiveRequest | None:
    """The commands, capabilities and pack of a receive-pack request; None when unreadable."""
    try:
        data = gzip.decompress(body) if content_encoding == "gzip" else body
    except (OSError, EOFError):
        return None
    found = _pkt_lines(data, 0)
    if found is None:
        return None
    lines, position = found
    commands: list[RefCommand] = []
    capabilities: frozenset[str] = frozenset()
    for raw in lines:
        line, _, caps = raw.partition(b"\0")
        if caps and not capabilities:
            capabilities = frozenset(caps.decode("utf-8", errors="replace").split())
        parts = line.rstrip(b"\n").decode("utf-8", errors="replace").split(" ")
        if parts[0] == "shallow":
            continue
        if len(parts) != 3:
            return None
        commands.append(RefCommand(*parts))
    if (
        "push-options" in capabilities
        and position < len(data)
        and not data.startswith(b"PACK", position)
    ):
        options = _pkt_lines(data, position)
        if options is None:
            return None
        position = options[1]
    return ReceiveRequest(tuple(commands), capabilities, data[position:])


def _pkt(payload: bytes) -> bytes:
    return f"{len(payload) + 4:04x}".encode() + payload


def refusal(request: ReceiveRequest, messages: str, reason: str) -> bytes:
    """A receive-pack answer refusing every command with ``reason``, showing ``messages``."""
    report = _pkt(b"unpack ok\n")
    for command in request.commands:
        report += _pkt(f"ng {command.ref} {reason}\n".encode())
    report += b"0000"
    caps = request.capabilities
    if "side-band-64k" not in caps and "side-band" not in caps:
        return report if caps & {"report-status", "report-status-v2"} else b""
    size = _BAND_64K if "side-band-64k" in caps else _BAND_SMALL
    answer = b""
    text = messages.encode()
    for start in range(0, len(text), size):
        answer += _pkt(b"\2" + text[start : start + size])
    if caps & {"report-status", "report-status-v2"}:
        for start in range(0, len(report), size):
            answer += _pkt(b"\1" + report[start : start + size])
    return answer + b"0000"
