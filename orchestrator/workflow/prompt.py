"""The prompt template: strict Liquid, checked when the file loads, rendered per agent turn.

Variables are ``issue``, ``phase``, ``attempt``, ``policy``, ``context`` and
``workspace``. Undefined variables and unknown filters are errors: static
analysis finds them (with their line and column) when the file loads, and
strict undefined catches anything left at render time. An empty body means the
built-in prompt of each agent phase (``orchestrator/workflow/prompts/``).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cache
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar

from liquid import BoundTemplate, Environment, StrictUndefined
from liquid.exceptions import LiquidError

from orchestrator.domain.phases import AGENT_PHASES, Phase
from orchestrator.workflow.catalog import groups, settings, suggestion
from orchestrator.workflow.problems import Location, Problem, PromptRenderError
from orchestrator.workflow.schema import Policy

PROMPT_KEY = "prompt"
PROMPT_VARIABLES: tuple[str, ...] = ("issue", "phase", "attempt", "policy", "context", "workspace")
# Phases in which an agent runs, in flow order: one prompt each.
PROMPT_PHASES: tuple[Phase, ...] = tuple(p for p in Phase if p in AGENT_PHASES)

ISSUE_FIELDS: tuple[str, ...] = (
    "number",
    "identifier",
    "title",
    "body",
    "description",
    "url",
    "state",
    "labels",
    "id",
    "priority",
    "branch_name",
    "blocked_by",
    "created_at",
    "updated_at",
)
WORKSPACE_FIELDS: tuple[str, ...] = ("path", "branch", "head_sha")
# The structured payload of a turn; every key is always present (empty when unused).
CONTEXT_FIELDS: Mapping[str, object] = MappingProxyType(
    {
        "pr": None,
        "review_threads": (),
        "untrusted_threads": (),
        "failing_checks": (),
        "human_replies": (),
        "untrusted_replies": (),
        "previous_findings": (),
        "bounce_history": (),
        "do_not_change": (),
        "previous_turn": None,
        "rework_cycles": 0,
        "expected": (),
        "expected_fix_summary": None,
    }
)
_NO_INCLUDES = frozenset({"include", "render"})

# A shape says which attribute names exist below a variable; None means "anything below".
Shape = Mapping[str, Any] | None


@dataclass(frozen=True)
class PromptIssue:
    """The issue as the prompt sees it (``description`` is the body, under Symphony's name).

    The fields after ``labels`` are Symphony's: ``id`` (the tracker's own id),
    ``priority`` (1 is the most urgent, null without a priority), the branch,
    the blockers (``id``, ``identifier``, ``state`` each) and the timestamps.
    """

    number: int
    identifier: str
    title: str
    body: str
    url: str
    state: str
    labels: tuple[str, ...] = ()
    id: str | None = None
    priority: int | None = None
    branch_name: str | None = None
    blocked_by: tuple[Mapping[str, str | None], ...] = ()
    created_at: str | None = None
    updated_at: str | None = None


@dataclass(frozen=True)
class PromptWorkspace:
    """The workspace of the turn: its path, branch and the HEAD when the turn started."""

    path: str
    branch: str
    head_sha: str | None = None


class _PromptEnvironment(Environment):
    # A template loop or output without bound would stall a dispatch: cap both.
    loop_iteration_limit: ClassVar[int | None] = 100_000
    output_stream_limit: ClassVar[int | None] = 2_000_000


def _json_filter(value: object) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


@cache
def environment() -> Environment:
    """The Liquid environment of prompts: strict undefined, strict filters, plus ``json``."""
    env = _PromptEnvironment(undefined=StrictUndefined, strict_filters=True)
    env.add_filter("json", _json_filter)
    return env


def _plain(value: object) -> object:
    if isinstance(value, StrEnum):
        return value.value
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, Mapping):
        return {str(_plain(k)): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | frozenset | set):
        return [_plain(v) for v in value]
    return value


def _context_variables(context: Mapping[str, object] | None) -> dict[str, object]:
    merged = {**CONTEXT_FIELDS, **(context or {})}
    return {key: _plain(value) for key, value in merged.items()}


def _hidden(path: str) -> bool:
    spec = settings().get(path)
    return spec is not None and (spec.secret or spec.sensitive)


def policy_variables(policy: Policy) -> dict[str, object]:
    """The policy as the prompt sees it: plain values, without secrets or sensitive values."""
    result: dict[str, object] = {}
    for path in settings():
        if _hidden(path):
            continue
        target = result
        parts = path.split(".")
        value: object = policy
        for part in parts:
            value = getattr(value, part)
        for part in parts[:-1]:
            nested = target.setdefault(part, {})
            assert isinstance(nested, dict)
            target = nested
        target[parts[-1]] = _plain(value)
    return result


@cache
def _policy_shape() -> Mapping[str, Any]:
    def build(prefix: str) -> dict[str, Any]:
        shape: dict[str, Any] = {}
        for name in groups()[prefix]:
            path = f"{prefix}.{name}" if prefix else name
            shape[name] = None if path in settings() else build(path)
        return shape

    return MappingProxyType(build(""))


def _shapes() -> dict[str, Shape]:
    return {
        "issue": dict.fromkeys(ISSUE_FIELDS),
        "phase": None,
        "attempt": None,
        "policy": _policy_shape(),
        "context": dict.fromkeys(CONTEXT_FIELDS),
        "workspace": dict.fromkeys(WORKSPACE_FIELDS),
    }


def _path_problem(segments: list[Any]) -> str | None:
    root = str(segments[0])
    shapes = _shapes()
    if root not in shapes:
        return (
            f"unknown variable '{root}'{suggestion(root, PROMPT_VARIABLES)} "
            f"(variables: {', '.join(PROMPT_VARIABLES)})"
        )
    shape: Shape = shapes[root]
    walked = [root]
    for segment in segments[1:]:
        if shape is None or not isinstance(segment, str):
            return None
        if segment not in shape:
            owner = ".".join(walked)
            return f"unknown field '{segment}' of {owner}{suggestion(segment, shape)}"
        walked.append(segment)
        if root == "policy" and _hidden(".".join(walked[1:])):
            return f"{'.'.join(walked)} is not available to the prompt (it is secret)"
        shape = shape[segment]
    return None


@dataclass(frozen=True)
class _Located:
    line: int
    column: int
    message: str


def _span_position(source: str, index: int) -> tuple[int, int]:
    line = source.count("\n", 0, index) + 1
    column = index - (source.rfind("\n", 0, index) + 1) + 1
    return line, column


def _static_problems(template: BoundTemplate, body: str) -> list[tuple[int, int, str]]:
    """Static problems of a parsed template: ``(line, column, message)`` within ``body``."""
    analysis = template.analyze(include_partials=False)
    found: list[_Located] = []
    for variables in analysis.globals.values():
        for variable in variables:
            message = _path_problem(list(variable.segments))
            if message is not None:
                line, column = _span_position(body, variable.span.index)
                found.append(_Located(line, column, message))
    known_filters = environment().filters
    for name, spans in analysis.filters.items():
        if name not in known_filters:
            for span in spans:
                line, column = _span_position(body, span.index)
                message = f"unknown filter '{name}'{suggestion(name, known_filters)}"
                found.append(_Located(line, column, message))
    for name, spans in analysis.tags.items():
        if name in _NO_INCLUDES:
            for span in spans:
                line, column = _span_position(body, span.index)
                message = f"the {name} tag is not available: a prompt is one self-contained file"
                found.append(_Located(line, column, message))
    unique = sorted({(p.line, p.column, p.message) for p in found})
    return unique


def _syntax_position(exc: LiquidError) -> tuple[int, int] | None:
    context = exc.context()
    if context is None:
        return None
    return context[0], context[1] + 1


def _message(exc: LiquidError) -> str:
    return str(exc.message if exc.message is not None else exc.__class__.__name__)


@dataclass(frozen=True)
class PromptTemplate:
    """A checked prompt: the operator's template, or the built-in one per agent phase."""

    source: str
    body: str
    first_line: int
    templates: Mapping[Phase, BoundTemplate] = field(repr=False)
    # Symphony's dialect: `attempt` is null on the first run (`{% if attempt %}` means a retry).
    first_attempt_null: bool = False

    @property
    def is_default(self) -> bool:
        """True when the file's body is empty and the built-in prompts are used."""
        return not self.body.strip()

    def render(
        self,
        *,
        phase: Phase,
        issue: PromptIssue,
        attempt: int,
        policy: Policy,
        workspace: PromptWorkspace,
        context: Mapping[str, object] | None = None,
    ) -> str:
        """The prompt of one agent turn; raises :class:`PromptRenderError` on a failure."""
        template = self.templates.get(phase)
        if template is None:
            phases = ", ".join(PROMPT_PHASES)
            raise PromptRenderError(
                Location(self.source), f"no agent runs in phase {phase} (agent phases: {phases})"
            )
        issue_variables = _plain(dataclasses.asdict(issue))
        assert isinstance(issue_variables, dict)
        issue_variables["description"] = issue.body
        first_null = self.first_attempt_null and not self.is_default
        variables = {
            "issue": issue_variables,
            "phase": phase.value,
            "attempt": None if first_null and attempt <= 1 else attempt,
            "policy": policy_variables(policy),
            "context": _context_variables(context),
            "workspace": _plain(dataclasses.asdict(workspace)),
        }
        try:
            text = template.render(**variables)
        except LiquidError as exc:
            raise PromptRenderError(self._where(phase, exc), _message(exc)) from None
        return tidy(text)

    def _where(self, phase: Phase, exc: LiquidError) -> Location:
        position = _syntax_position(exc)
        if self.is_default:
            source = f"built-in prompt {phase}"
            first = 1
        else:
            source, first = self.source, self.first_line
        if position is None:
            return Location(source, first)
        return Location(source, first + position[0] - 1, position[1])


def tidy(text: str) -> str:
    """Trim trailing spaces and collapse runs of blank lines left by template tags."""
    lines = [line.rstrip() for line in text.split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip() + "\n"


def default_prompt_source(phase: Phase) -> str:
    """The built-in Liquid prompt of an agent phase."""
    folder = resources.files("orchestrator.workflow").joinpath("prompts")
    return folder.joinpath(f"{phase.value}.md").read_text(encoding="utf-8")


@cache
def _default_templates() -> Mapping[Phase, BoundTemplate]:
    templates: dict[Phase, BoundTemplate] = {}
    for phase in PROMPT_PHASES:
        source = default_prompt_source(phase)
        template, problems = _compile(source, f"built-in prompt {phase}", 1)
        if template is None or problems:
            # The built-in prompts are part of the product; the test suite keeps them valid.
            raise RuntimeError("; ".join(str(p) for p in problems))
        templates[phase] = template
    return MappingProxyType(templates)


def _compile(body: str, source: str, first_line: int) -> tuple[BoundTemplate | None, list[Problem]]:
    def at(line: int, column: int) -> Location:
        return Location(source, first_line + line - 1, column)

    try:
        template = environment().from_string(body, name=source)
    except LiquidError as exc:
        position = _syntax_position(exc)
        where = at(*position) if position else Location(source, first_line)
        return None, [Problem(where, PROMPT_KEY, _message(exc))]
    problems = [
        Problem(at(line, column), PROMPT_KEY, message)
        for line, column, message in _static_problems(template, body)
    ]
    return template, problems


def compile_prompt(
    body: str, source: str, first_line: int, *, first_attempt_null: bool = False
) -> tuple[PromptTemplate | None, list[Problem]]:
    """Check and compile the prompt body that starts on line ``first_line`` of ``source``.

    ``first_attempt_null`` (a Symphony-dialect file) renders ``attempt`` as null
    on the first run of a phase, as Symphony does, instead of 1.
    """
    if not body.strip():
        return PromptTemplate(source, body, first_line, _default_templates()), []
    template, problems = _compile(body, source, first_line)
    if template is None or problems:
        return None, problems
    templates = MappingProxyType(dict.fromkeys(PROMPT_PHASES, template))
    return PromptTemplate(source, body, first_line, templates, first_attempt_null), []
