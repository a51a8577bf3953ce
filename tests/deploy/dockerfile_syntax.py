"""A reader for Dockerfiles and .dockerignore rules, enough to lint the shipped image.

No container engine runs here, so the image is checked by reading its
instructions the way the builder does: parser directives, comments, line
continuations, stages, ARG defaults in FROM, exec and shell forms.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

_DIRECTIVE = re.compile(r"^#\s*([a-zA-Z]+)\s*=\s*(\S+)\s*$")
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")


class DockerfileSyntaxError(ValueError):
    """An instruction the reader does not understand, with its line."""


@dataclass(frozen=True)
class Instruction:
    """One instruction: its keyword (upper case), the raw arguments and its first line."""

    keyword: str
    arguments: str
    line: int

    def exec_form(self) -> list[str] | None:
        """The JSON array form (``["a", "b"]``) as a list, or None for the shell form."""
        text = self.arguments.strip()
        if not text.startswith("["):
            return None
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            return None
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            return None
        return value

    def flags_and_words(self) -> tuple[dict[str, str], list[str]]:
        """Leading ``--flag=value`` options and the remaining words (shell-split)."""
        flags: dict[str, str] = {}
        words = shlex.split(self.arguments)
        while words and words[0].startswith("--"):
            name, _, value = words.pop(0)[2:].partition("=")
            flags[name] = value
        return flags, words

    def pairs(self) -> dict[str, str]:
        """``ENV``/``ARG``/``LABEL`` assignments as a mapping (``KEY=value`` or ``KEY value``)."""
        words = shlex.split(self.arguments)
        if len(words) >= 2 and "=" not in words[0]:
            return {words[0]: " ".join(words[1:])}
        result: dict[str, str] = {}
        for word in words:
            name, sep, value = word.partition("=")
            result[name] = value if sep else ""
        return result


@dataclass
class Stage:
    """A ``FROM`` and the instructions after it."""

    base: str
    name: str | None
    line: int
    instructions: list[Instruction] = field(default_factory=list)

    def all(self, keyword: str) -> list[Instruction]:
        return [i for i in self.instructions if i.keyword == keyword]

    def last(self, keyword: str) -> Instruction | None:
        found = self.all(keyword)
        return found[-1] if found else None

    def env(self) -> dict[str, str]:
        merged: dict[str, str] = {}
        for instruction in self.all("ENV"):
            merged.update(instruction.pairs())
        return merged


@dataclass
class Dockerfile:
    """The parsed file: global ``ARG`` defaults and the stages in order."""

    directives: dict[str, str]
    global_args: dict[str, str]
    stages: list[Stage]

    @property
    def final(self) -> Stage:
        return self.stages[-1]

    def stage(self, name: str) -> Stage:
        for stage in self.stages:
            if stage.name == name:
                return stage
        raise KeyError(name)

    def instructions(self) -> list[Instruction]:
        return [i for stage in self.stages for i in stage.instructions]


def substitute(text: str, variables: dict[str, str]) -> str:
    return _VARIABLE.sub(lambda m: variables.get(m.group(1) or m.group(2), m.group(0)), text)


def _logical_lines(text: str) -> tuple[dict[str, str], list[tuple[int, str]]]:
    directives: dict[str, str] = {}
    lines: list[tuple[int, str]] = []
    in_header = True
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if in_header:
            match = _DIRECTIVE.match(stripped)
            if match:
                directives[match.group(1).lower()] = match.group(2)
                continue
            in_header = False
        # Comment lines are dropped even inside a continued instruction.
        if stripped.startswith("#") or (not stripped and not pending):
            continue
        if not pending:
            start = number
        if stripped.endswith("\\"):
            pending.append(stripped[:-1].strip())
            continue
        pending.append(stripped)
        lines.append((start, " ".join(part for part in pending if part)))
        pending = []
    if pending:
        raise DockerfileSyntaxError(f"line {start}: the file ends inside a continued instruction")
    return directives, lines


def parse_dockerfile(path: Path) -> Dockerfile:
    directives, lines = _logical_lines(path.read_text(encoding="utf-8"))
    global_args: dict[str, str] = {}
    stages: list[Stage] = []
    for number, line in lines:
        keyword, _, arguments = line.partition(" ")
        keyword = keyword.upper()
        instruction = Instruction(keyword, arguments.strip(), number)
        if keyword == "FROM":
            _, words = instruction.flags_and_words()
            if len(words) not in (1, 3) or (len(words) == 3 and words[1].upper() != "AS"):
                raise DockerfileSyntaxError(f"{path}:{number}: expected FROM IMAGE [AS NAME]")
            stages.append(
                Stage(
                    base=substitute(words[0], global_args),
                    name=words[2] if len(words) == 3 else None,
                    line=number,
                )
            )
        elif not stages:
            if keyword != "ARG":
                raise DockerfileSyntaxError(f"{path}:{number}: only ARG may come before FROM")
            global_args.update(instruction.pairs())
        else:
            stages[-1].instructions.append(instruction)
    if not stages:
        raise DockerfileSyntaxError(f"{path}: no FROM instruction")
    return Dockerfile(directives, global_args, stages)


@dataclass(frozen=True)
class IgnoreRules:
    """``.dockerignore`` patterns: the last matching pattern decides, ``!`` re-includes."""

    patterns: tuple[tuple[bool, re.Pattern[str]], ...]

    def excludes(self, relative: str) -> bool:
        parts = Path(relative).parts
        # A path is excluded when it or one of its parent folders matches.
        candidates = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        excluded = False
        for negated, pattern in self.patterns:
            if any(pattern.fullmatch(candidate) for candidate in candidates):
                excluded = not negated
        return excluded


def _pattern_regex(pattern: str) -> re.Pattern[str]:
    pattern = pattern.strip("/")
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out))


def parse_dockerignore(path: Path) -> IgnoreRules:
    patterns: list[tuple[bool, re.Pattern[str]]] = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        patterns.append((negated, _pattern_regex(line[1:] if negated else line)))
    return IgnoreRules(tuple(patterns))
