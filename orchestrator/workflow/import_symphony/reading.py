"""How the Symphony-family keys of one file are read as this product's keys.

Each key listed in :mod:`~orchestrator.workflow.import_symphony.keys` is read
as the equivalent setting here (the agent preset, codex and pi command lines,
Codex's sandbox as agent.permissions, ...) or ignored, always with a warning
located at the key, and the keys the file sets in our own words win.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from orchestrator.workflow.document import Document
from orchestrator.workflow.import_symphony.keys import FOREIGN_KEYS, reason
from orchestrator.workflow.problems import Location, Problem, Severity

CODEX_SANDBOXES: Mapping[str, str] = MappingProxyType(
    {"workspace-write": "workspace", "danger-full-access": "full"}
)


@dataclass(frozen=True)
class Mapped:
    """A Symphony key's value read as one of ours: the target, its raw value, where it was."""

    target: str
    value: object
    location: Location
    # The Symphony keys it was read from.
    sources: tuple[str, ...] = ()


@dataclass
class Reading:
    """What the Symphony-family keys of one file amount to."""

    mapped: list[Mapped] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    found: bool = False
    # Keys read as nothing here: (path, why).
    ignored: list[tuple[str, str]] = field(default_factory=list)


def _flatten(path: str, value: object, out: list[tuple[str, object]]) -> None:
    entry = FOREIGN_KEYS.get(path)
    if entry is not None and entry.section and isinstance(value, dict):
        out.append((path, _SECTION))
        for key, item in value.items():
            _flatten(f"{path}.{key}", item, out)
        return
    out.append((path, value))


_SECTION = object()

# The preset that runs each dialect's agent: Symphony speaks to `codex app-server`
# over JSON-RPC, which the codex-app-server preset does too.
PRESET_OF = {"codex": "codex-app-server", "pi": "pi"}
CODEX_PRESETS = ("codex", "codex-app-server")


def _agent_preset(written: list[tuple[str, object]], native: Mapping[str, object]) -> str | None:
    if "agent.preset" in native:
        return None
    values = dict(written)
    runtime = values.get("worker.runtime")
    if isinstance(runtime, str) and runtime in PRESET_OF:
        return PRESET_OF[runtime]
    if "pi" in values:
        return "pi"
    if "codex" in values:
        return PRESET_OF["codex"]
    return None


def _codex_command(command: str) -> tuple[str | None, list[str]]:
    """Symphony's ``codex ... app-server`` as the program and the flags for ``codex exec``."""
    words = shlex.split(command)
    program = words[0] if words else "codex"
    flags = [w for w in words[1:] if w != "app-server"]
    return (None if program == "codex" else program), flags


def _pi_flags(path: str, value: object) -> list[str] | str:
    """The ``pi`` command-line flags a pi-symphony key stands for, or why there are none."""
    if path == "pi.model":
        if not isinstance(value, dict):
            return "expected a mapping with provider and model_id"
        flags: list[str] = []
        if value.get("provider"):
            flags += ["--provider", str(value["provider"])]
        if value.get("model_id"):
            flags += ["--model", str(value["model_id"])]
        return flags
    if path == "pi.thinking_level":
        return ["--thinking", str(value)] if value else []
    if path == "pi.disable_extensions":
        return ["--no-extensions"] if value is True else []
    if path == "pi.disable_themes":
        return ["--no-themes"] if value is True else []
    return "not a pi flag"


def read_foreign(
    document: Document,
    source: str,
    written: list[tuple[str, object]],
    native: Mapping[str, object],
) -> Reading:
    """Read the Symphony-family keys ``written`` in the file (path, value), given our own keys.

    ``native`` holds the keys the file sets in this product's own words; they
    win over a Symphony key read as the same setting.
    """
    reading = Reading()
    flat: list[tuple[str, object]] = []
    for path, value in written:
        _flatten(path, value, flat)
    if not flat:
        return reading
    reading.found = True
    preset = _agent_preset(flat, native)
    running = preset or str(native.get("agent.preset", "codex"))
    extra_args: list[str] = []
    extra_at: Location | None = None
    extra_from: list[str] = []

    def where(path: str) -> Location:
        position = document.positions.get(path)
        if position is None:
            return Location(source)
        return Location(source, position.line, position.column)

    def warn(path: str, message: str) -> None:
        reading.problems.append(Problem(where(path), path, message, Severity.WARNING))

    def ignore(path: str, dialect: str, why: str, *, equivalent: bool = True) -> None:
        what = "key, ignored" if equivalent else "key with no equivalent here, ignored"
        warn(path, f"{dialect}'s {what}: {why}")
        reading.ignored.append((path, why))

    def read_as(path: str, target: str, value: object, dialect: str) -> None:
        if target in native:
            ignore(path, dialect, f"the file also sets {target}")
            return
        reading.mapped.append(Mapped(target, value, where(path), (path,)))
        shown = f"{target}: {value}" if isinstance(value, str | int) else target
        warn(path, f"{dialect}'s key, read as {shown}; write {target} instead")

    for path, value in flat:
        entry = FOREIGN_KEYS.get(path)
        if entry is None:
            parent = FOREIGN_KEYS[path.rsplit(".", 1)[0]]
            why = f"not a key of {parent.dialect}'s {parent.path} known here"
            warn(path, f"{why}; ignored")
            reading.ignored.append((path, why))
            continue
        dialect = entry.dialect
        if value is _SECTION:
            # Each key below gets its own warning; the section itself may choose the agent.
            if path in PRESET_OF and preset == PRESET_OF[path]:
                read_as(path, "agent.preset", preset, dialect)
            continue
        if path in ("codex", "pi"):  # an empty section
            continue
        if path == "worker.runtime":
            if preset is not None and isinstance(value, str) and preset == PRESET_OF.get(value):
                read_as(path, "agent.preset", preset, dialect)
            else:
                ignore(path, dialect, "the agent is set by agent.preset")
            continue
        if path == "codex.command":
            if running not in CODEX_PRESETS:
                ignore(path, dialect, f"the agent here is {running}, not codex")
            elif running == "codex-app-server" and isinstance(value, str) and value.strip():
                # The command runs unchanged; the client speaks app-server's protocol to it.
                read_as(path, "agent.command", value.strip(), dialect)
            elif "agent.extra_args" in native:
                ignore(path, dialect, "the file also sets agent.extra_args")
            elif isinstance(value, str) and value.strip():
                program, flags = _codex_command(value)
                if program is not None:
                    read_as(path, "agent.command", program, dialect)
                extra_args += flags
                extra_at = extra_at or where(path)
                extra_from.append(path)
                shown = " ".join(flags)
                warn(
                    path,
                    f"{dialect}'s key, read as agent.command and agent.extra_args ({shown}); "
                    "the codex preset runs `codex exec --json`, never `app-server`",
                )
            else:
                ignore(path, dialect, "expected the codex command as a string")
            continue
        if path == "codex.thread_sandbox" and running == "codex-app-server":
            ignore(
                path,
                dialect,
                "codex-app-server runs the thread with full access inside the product's sandbox "
                "(agent.sandbox), which is what confines it",
            )
            continue
        if path == "codex.thread_sandbox":
            permission = CODEX_SANDBOXES.get(str(value))
            if permission is None:
                ignore(
                    path,
                    dialect,
                    f"no equivalent of {value!r} here (agent.permissions is workspace or full)",
                )
            else:
                read_as(path, "agent.permissions", permission, dialect)
            continue
        if path.startswith("pi.") and entry.target == "agent.extra_args":
            if running != "pi":
                ignore(path, dialect, f"the agent here is {running}, not pi")
                continue
            if "agent.extra_args" in native:
                ignore(path, dialect, "the file also sets agent.extra_args")
                continue
            flags_or_why = _pi_flags(path, value)
            if isinstance(flags_or_why, str):
                ignore(path, dialect, flags_or_why)
                continue
            extra_args += flags_or_why
            extra_at = extra_at or where(path)
            extra_from.append(path)
            shown = " ".join(flags_or_why) or "no flag"
            warn(path, f"{dialect}'s key, read as agent.extra_args ({shown})")
            continue
        if path == "codex.stall_timeout_ms" and isinstance(value, int) and value < 0:
            # Symphony: `<= 0` turns stall detection off; here that is 0.
            read_as(path, "agent.stall_timeout_ms", 0, dialect)
            continue
        if path == "pi.command" and running != "pi":
            ignore(path, dialect, f"the agent here is {running}, not pi")
            continue
        if entry.target is None:
            ignore(path, dialect, reason(entry), equivalent=False)
            continue
        read_as(path, entry.target, value, dialect)
    if extra_args and extra_at is not None:
        reading.mapped.append(Mapped("agent.extra_args", extra_args, extra_at, tuple(extra_from)))
    empty_dir = "hooks.after_create_in_empty_dir"
    if native.get("hooks.after_create") and empty_dir not in native:
        # Symphony runs after_create in the new, empty workspace folder.
        reading.mapped.append(
            Mapped(empty_dir, True, where("hooks.after_create"), ("hooks.after_create",))
        )
        warn(
            "hooks.after_create",
            "Symphony runs after_create in an empty folder: read with "
            f"{empty_dir}: true; write that key",
        )
    return reading
