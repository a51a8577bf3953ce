"""A reader for systemd unit files and time spans, enough to check the shipped unit."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from pathlib import Path

_SPAN_UNITS_S = {
    "us": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "sec": 1.0,
    "m": 60.0,
    "min": 60.0,
    "h": 3600.0,
    "hr": 3600.0,
}
_SPAN_PART = re.compile(r"(\d+(?:\.\d+)?)\s*([a-z]*)")


class UnitSyntaxError(ValueError):
    """A line the reader does not understand, with its position."""


@dataclass(frozen=True)
class UnitFile:
    """The assignments of a unit file, in order, per section (keys may repeat)."""

    path: Path
    sections: dict[str, list[tuple[str, str]]] = field(default_factory=dict)

    def values(self, section: str, key: str) -> list[str]:
        """Every value assigned to ``key``; an empty assignment resets the list, as in systemd."""
        found: list[str] = []
        for name, value in self.sections.get(section, []):
            if name == key:
                found = [] if value == "" else [*found, value]
        return found

    def value(self, section: str, key: str) -> str | None:
        """The last value of ``key``, or None when it is not set."""
        values = self.values(section, key)
        return values[-1] if values else None

    def words(self, section: str, key: str) -> list[str]:
        """The space-separated items of every assignment of a list setting."""
        return [word for value in self.values(section, key) for word in value.split()]

    def environment(self) -> dict[str, str]:
        pairs: dict[str, str] = {}
        for value in self.values("Service", "Environment"):
            for item in value.split():
                name, _, setting = item.partition("=")
                pairs[name] = setting
        return pairs


ALL_NAMESPACES = frozenset({"cgroup", "ipc", "net", "mnt", "pid", "user", "uts"})


def allowed_namespaces(unit: UnitFile) -> set[str]:
    """The namespace types ``RestrictNamespaces=`` lets the service create (systemd's rules)."""
    values = unit.values("Service", "RestrictNamespaces")
    if not values:
        return set(ALL_NAMESPACES)
    allowed: set[str] = set()
    for value in values:
        if value in ("no", "false"):
            allowed = set(ALL_NAMESPACES)
        elif value in ("yes", "true"):
            allowed = set()
        elif value.startswith("~"):
            allowed = set(ALL_NAMESPACES) - set(value[1:].split())
        else:
            allowed |= set(value.split())
    return allowed


def read_unit(path: Path) -> UnitFile:
    unit = UnitFile(path)
    section: str | None = None
    pending = ""
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line = raw.strip()
        if not pending and (not line or line.startswith(("#", ";"))):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line, pending = pending + line, ""
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
            unit.sections.setdefault(section, [])
            continue
        key, sep, value = line.partition("=")
        if not sep or section is None:
            raise UnitSyntaxError(f"{path}:{number}: expected KEY=VALUE inside a [Section]")
        unit.sections[section].append((key.strip(), value.strip()))
    return unit


def timespan_s(text: str) -> float:
    """A systemd time span (``90``, ``60s``, ``1min 30s``, ``500ms``) in seconds."""
    text = text.strip()
    if text.isdigit():
        return float(text)
    total = 0.0
    position = 0
    for match in _SPAN_PART.finditer(text):
        if text[position : match.start()].strip():
            raise ValueError(f"not a time span: {text!r}")
        number, unit = match.groups()
        if unit not in _SPAN_UNITS_S:
            raise ValueError(f"unknown time unit {unit!r} in {text!r}")
        total += float(number) * _SPAN_UNITS_S[unit]
        position = match.end()
    if position == 0 or text[position:].strip():
        raise ValueError(f"not a time span: {text!r}")
    return total


def longest_graceful_stop_s() -> float:
    """How long a SIGTERM may take with the default policy: the turns' grace period
    (``agent.shutdown_grace_ms``), then each cancelled agent's own SIGTERM grace and the
    daemon's wait for it. systemd's and compose's stop timeouts must exceed it."""
    from orchestrator.agent.settings import AgentSettings as RunnerSettings
    from orchestrator.daemon.daemon import CANCEL_WAIT_S
    from orchestrator.workflow import Policy

    agent_sigterm_grace_ms = next(
        f.default for f in fields(RunnerSettings) if f.name == "grace_period_ms"
    )
    assert isinstance(agent_sigterm_grace_ms, int)
    return Policy().agent.shutdown_grace_ms / 1000 + agent_sigterm_grace_ms / 1000 + CANCEL_WAIT_S
