"""Scenario files of the scripted agent: loading, validation, and choosing the steps for a turn.

A scenario is a JSON or YAML mapping. Its top-level ``steps`` (and
``exit_code``) are the default behaviour; ``phases.<phase>`` overrides them for
one phase and ``phases.<phase>.attempts.<n>`` for one attempt of it. Every
problem is reported with the file and the path of the offending entry, e.g.
``scenario.yaml: phases.reviewing.steps[2]: unknown step 'wrte' (did you mean 'write'?)``.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

SCENARIO_LIMIT = 4 * 1024 * 1024


class ScenarioError(ValueError):
    """A scenario file that cannot be used; the message names the file and the entry."""


@dataclass(frozen=True)
class Step:
    """One action of the scripted agent, with its argument and where it was written."""

    action: str
    arg: Any
    where: str


@dataclass(frozen=True)
class Behaviour:
    """What the agent does in one turn: its steps, then the exit code."""

    steps: tuple[Step, ...]
    exit_code: int


@dataclass(frozen=True)
class Scenario:
    """A whole scenario file, parsed and validated."""

    source: str
    default: Behaviour
    phases: Mapping[str, Behaviour]
    attempts: Mapping[tuple[str, int], Behaviour]

    def behaviour(self, phase: str, attempt: int) -> Behaviour:
        """The behaviour for this phase and attempt (most specific entry wins)."""
        found = self.attempts.get((phase, attempt))
        if found is not None:
            return found
        return self.phases.get(phase, self.default)


Check = Callable[[Any, str], None]


def _fail(where: str, message: str) -> NoReturn:
    raise ScenarioError(f"{where}: {message}")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _text(value: Any, where: str) -> None:
    if not isinstance(value, str):
        _fail(where, f"must be text, got {type(value).__name__}")


def _count(value: Any, where: str) -> None:
    if not _is_int(value) or value < 0:
        _fail(where, f"must be a whole number >= 0, got {value!r}")


def _flag(value: Any, where: str) -> None:
    if not isinstance(value, bool):
        _fail(where, f"must be true or false, got {value!r}")


def _object(value: Any, where: str) -> None:
    if not isinstance(value, dict):
        _fail(where, f"must be a mapping, got {type(value).__name__}")


def _fields(
    value: Any,
    where: str,
    *,
    required: Mapping[str, Check] | None = None,
    optional: Mapping[str, Check] | None = None,
) -> None:
    _object(value, where)
    required = required or {}
    optional = optional or {}
    for key in value:
        if key not in required and key not in optional:
            known = sorted([*required, *optional])
            _fail(f"{where}.{key}", f"unknown field; expected one of {', '.join(known)}")
    for key, check in required.items():
        if key not in value:
            _fail(where, f"missing field {key}")
        check(value[key], f"{where}.{key}")
    for key, check in optional.items():
        if key in value:
            check(value[key], f"{where}.{key}")


def _text_or(fields: Mapping[str, Check], text_key: str) -> Check:
    def check(value: Any, where: str) -> None:
        if isinstance(value, str):
            return
        _fields(value, where, required={text_key: _text}, optional=fields)

    return check


def _relative_path(value: Any, where: str) -> None:
    _text(value, where)
    path = Path(value)
    if path.is_absolute() or ".." in path.parts or not value:
        _fail(where, f"must be a relative path inside the workspace, got {value!r}")


def _finding(value: Any, where: str) -> None:
    text_fields = ("title", "summary", "why_it_matters", "suggested_fix")
    _fields(
        value,
        where,
        required={name: _text for name in text_fields},
        optional={"id": _text, "severity": _text, "location": _text},
    )


def _findings(value: Any, where: str) -> None:
    if not isinstance(value, list):
        _fail(where, "must be a list of findings")
    for index, item in enumerate(value):
        _finding(item, f"{where}[{index}]")


def _events(value: Any, where: str) -> None:
    if _is_int(value):
        _count(value, where)
        return
    _fields(value, where, required={"count": _count}, optional={"interval_ms": _count})


def _usage(value: Any, where: str) -> None:
    _fields(
        value,
        where,
        optional={"input_tokens": _count, "cached_input_tokens": _count, "output_tokens": _count},
    )


def _fix_summary(value: Any, where: str) -> None:
    if isinstance(value, list):
        return
    _object(value, where)


def _crash(value: Any, where: str) -> None:
    if isinstance(value, str):
        return
    _fields(value, where, optional={"exit_code": _count, "message": _text})


def _noise(value: Any, where: str) -> None:
    if isinstance(value, str):
        return
    _fields(value, where, optional={"lines": _count, "text": _text})


def _anything(value: Any, where: str) -> None:
    return None


SPECIAL_KINDS = ("symlink", "hardlink", "fifo", "directory")


def _special_file(value: Any, where: str) -> None:
    _fields(
        value,
        where,
        required={"path": _relative_path, "kind": _text},
        optional={"target": _text},
    )
    if value["kind"] not in SPECIAL_KINDS:
        _fail(f"{where}.kind", f"must be one of {', '.join(SPECIAL_KINDS)}")
    if value["kind"] in ("symlink", "hardlink") and "target" not in value:
        _fail(where, f"a {value['kind']} needs a target")


STEP_CHECKS: dict[str, Check] = {
    "message": _text,
    "emit": _object,
    "session": _text,
    "events": _events,
    "usage": _usage,
    "sleep_ms": _count,
    "write": lambda v, w: _fields(
        v,
        w,
        required={"path": _relative_path, "content": _text},
        optional={"append": _flag},
    ),
    "commit": _text_or({"paths": _anything, "allow_empty": _flag, "amend": _flag}, "message"),
    "review": lambda v, w: _fields(
        v, w, optional={"findings": _findings, "head": _text, "overview": _text}
    ),
    "fix_summary": _fix_summary,
    "pr_description": _text,
    "blocked": _text_or({"reason": _text}, "question"),
    "result_file": lambda v, w: _fields(v, w, required={"name": _text, "content": _text}),
    "noise": _noise,
    "huge_line": _count,
    "huge_file": lambda v, w: _fields(v, w, required={"path": _relative_path, "bytes": _count}),
    "special_file": _special_file,
    "hang": _flag,
    "stall_after": _count,
    "crash": _crash,
    "exit": _count,
    "ignore_sigterm": _flag,
    "spawn": lambda v, w: _fields(
        v,
        w,
        optional={
            "count": _count,
            "ignore_sigterm": _flag,
            "new_group": _flag,
            "pids_file": _text,
        },
    ),
    "dump_env": _text,
    "save_prompt": _text,
}


def _steps(value: Any, where: str) -> tuple[Step, ...]:
    if not isinstance(value, list):
        _fail(where, "must be a list of steps")
    steps: list[Step] = []
    for index, raw in enumerate(value):
        here = f"{where}[{index}]"
        if not isinstance(raw, dict) or len(raw) != 1:
            _fail(here, "each step is a mapping with exactly one action, like {message: hi}")
        ((action, arg),) = raw.items()
        check = STEP_CHECKS.get(action)
        if check is None:
            close = difflib.get_close_matches(str(action), STEP_CHECKS, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            _fail(here, f"unknown step {action!r}{hint}")
        check(arg, f"{here}.{action}")
        steps.append(Step(action=action, arg=arg, where=here))
    return tuple(steps)


_BEHAVIOUR_KEYS = ("steps", "exit_code")


def _behaviour(
    value: Any, where: str, fallback: Behaviour | None, extra: tuple[str, ...]
) -> Behaviour:
    _object(value, where)
    for key in value:
        if key not in _BEHAVIOUR_KEYS and key not in extra:
            known = ", ".join([*_BEHAVIOUR_KEYS, *extra])
            _fail(f"{where}.{key}" if where else str(key), f"unknown key; expected one of {known}")
    prefix = f"{where}." if where else ""
    if "exit_code" in value:
        _count(value["exit_code"], f"{prefix}exit_code")
    steps = _steps(value["steps"], f"{prefix}steps") if "steps" in value else None
    if steps is None:
        steps = fallback.steps if fallback is not None else ()
    exit_code = value.get("exit_code", fallback.exit_code if fallback is not None else 0)
    return Behaviour(steps=steps, exit_code=exit_code)


def parse_scenario(document: Any, source: str = "scenario") -> Scenario:
    """Validate a loaded scenario document; raises :class:`ScenarioError` naming the entry."""
    try:
        if document is None:
            document = {}
        _object(document, "top level")
        default = _behaviour(document, "", None, ("phases",))
        phases: dict[str, Behaviour] = {}
        attempts: dict[tuple[str, int], Behaviour] = {}
        raw_phases = document.get("phases", {})
        _object(raw_phases, "phases")
        for phase, raw in raw_phases.items():
            where = f"phases.{phase}"
            behaviour = _behaviour(raw, where, default, ("attempts",))
            phases[str(phase)] = behaviour
            raw_attempts = raw.get("attempts", {})
            _object(raw_attempts, f"{where}.attempts")
            for number, entry in raw_attempts.items():
                here = f"{where}.attempts.{number}"
                try:
                    attempt = int(number)
                except (TypeError, ValueError):
                    attempt = 0
                if attempt < 1:
                    _fail(here, "attempt numbers are whole numbers from 1")
                attempts[(str(phase), attempt)] = _behaviour(entry, here, behaviour, ())
    except ScenarioError as error:
        raise ScenarioError(f"{source}: {error}") from None
    return Scenario(source=source, default=default, phases=phases, attempts=attempts)


def load_scenario(path: Path) -> Scenario:
    """Read and validate a scenario file (``.json``, or YAML for anything else)."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise ScenarioError(f"{path}: cannot be read: {error.strerror}") from None
    if len(data) > SCENARIO_LIMIT:
        raise ScenarioError(f"{path}: larger than {SCENARIO_LIMIT} bytes")
    text = data.decode("utf-8", "replace")
    if path.suffix.lower() == ".json":
        try:
            document = json.loads(text)
        except json.JSONDecodeError as error:
            raise ScenarioError(f"{path}:{error.lineno}: invalid JSON: {error.msg}") from None
    else:
        from ruamel.yaml import YAML
        from ruamel.yaml.error import YAMLError

        try:
            document = YAML(typ="safe", pure=True).load(text)
        except YAMLError as error:
            raise ScenarioError(f"{path}: invalid YAML: {error}") from None
    return parse_scenario(document, str(path))
