"""Load WORKFLOW.md into a checked :class:`Workflow`: parse, layer, convert, validate, compile.

:func:`check_workflow` returns every problem as values (for ``validate`` and
reloads); :func:`load_workflow` raises :class:`PolicyError` with the same
messages when there is any error (for start-up).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from orchestrator.workflow.build import build_policy
from orchestrator.workflow.document import parse_document
from orchestrator.workflow.import_symphony.keys import is_symphony_dialect
from orchestrator.workflow.layers import file_location, from_document, from_environment, from_flags
from orchestrator.workflow.problems import (
    Location,
    PolicyError,
    Problem,
    PromptRenderError,
    Severity,
    sort_key,
)
from orchestrator.workflow.prompt import (
    PROMPT_KEY,
    PROMPT_PHASES,
    PromptTemplate,
    compile_prompt,
)
from orchestrator.workflow.prompt_samples import render_samples
from orchestrator.workflow.provenance import Origin
from orchestrator.workflow.rules import RuleContext, check_rules
from orchestrator.workflow.schema import Policy

# A policy is a short text file; anything bigger is a mistake (or not a policy).
MAX_FILE_BYTES = 1_000_000


@dataclass(frozen=True)
class Workflow:
    """A loaded WORKFLOW.md: the policy, its prompt, where each value came from, and warnings."""

    path: Path
    digest: str
    policy: Policy
    prompt: PromptTemplate
    origins: Mapping[str, Origin]
    # Key path (with list or mapping entries) -> the $VAR references its value was read from.
    references: Mapping[str, tuple[str, ...]]
    warnings: tuple[Problem, ...]


@dataclass(frozen=True)
class WorkflowCheck:
    """The result of checking a policy: the workflow when there is no error, and all problems."""

    workflow: Workflow | None
    problems: tuple[Problem, ...]

    @property
    def errors(self) -> tuple[Problem, ...]:
        return tuple(p for p in self.problems if p.severity is Severity.ERROR)

    @property
    def warnings(self) -> tuple[Problem, ...]:
        return tuple(p for p in self.problems if p.severity is Severity.WARNING)


def digest_of(data: bytes) -> str:
    """The content hash that identifies one version of a policy file."""
    return hashlib.sha256(data).hexdigest()


def display_name(path: Path) -> str:
    """How a policy path is named in messages: as given, relative when under the cwd."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def read_policy_bytes(path: Path, source: str) -> bytes | Problem:
    """The file's bytes, or a problem saying why it cannot be read."""
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        return Problem(Location(source), None, "file not found")
    except IsADirectoryError:
        return Problem(Location(source), None, "is a directory, not a policy file")
    except OSError as exc:
        return Problem(Location(source), None, f"cannot read the file: {exc.strerror or exc}")
    if len(data) > MAX_FILE_BYTES:
        return Problem(Location(source), None, f"larger than {MAX_FILE_BYTES} bytes")
    return data


def check_bytes(
    data: bytes,
    *,
    path: Path,
    source: str | None = None,
    env: Mapping[str, str] | None = None,
    flags: Mapping[str, object] | None = None,
) -> WorkflowCheck:
    """Check a policy's content read from ``path`` (relative paths resolve against its folder)."""
    source = source or display_name(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        return WorkflowCheck(
            None, (Problem(Location(source, line), None, f"not valid UTF-8 at byte {exc.start}"),)
        )
    return check_text(text, path=path, source=source, env=env, flags=flags, digest=digest_of(data))


def check_text(
    text: str,
    *,
    path: Path,
    source: str | None = None,
    env: Mapping[str, str] | None = None,
    flags: Mapping[str, object] | None = None,
    digest: str | None = None,
) -> WorkflowCheck:
    """Check a policy text as if read from ``path``; ``env`` defaults to ``os.environ``."""
    source = source or display_name(path)
    env = dict(os.environ) if env is None else env
    document, problems = parse_document(text, source)
    if document is None:
        return WorkflowCheck(None, tuple(problems))
    file_layer, file_problems = from_document(document, source)
    env_layer, env_problems = from_environment(env)
    flag_layer, flag_problems = from_flags(flags or {})
    locations = {key: file_location(source, pos) for key, pos in document.positions.items()}
    default_location = Location(source)
    built = build_policy(
        [flag_layer, env_layer, file_layer],
        env=env,
        base_dir=path.resolve().parent,
        default_location=default_location,
        item_locations=locations,
    )
    found = [*file_problems, *env_problems, *flag_problems, *built.problems]
    if built.policy is not None and not any(p.is_error for p in found):
        context = RuleContext(built.policy, built.origins, locations, default_location)
        found += check_rules(context)
    prompt, prompt_problems = compile_prompt(
        document.prompt,
        source,
        document.prompt_line,
        first_attempt_null=is_symphony_dialect(document.config),
    )
    found += prompt_problems
    if prompt is not None and built.policy is not None and not any(p.is_error for p in found):
        found += _sample_problems(prompt, built.policy)
    ordered = tuple(sorted(found, key=sort_key))
    if any(p.is_error for p in ordered) or built.policy is None or prompt is None:
        return WorkflowCheck(None, ordered)
    workflow = Workflow(
        path=path,
        digest=digest or digest_of(text.encode("utf-8")),
        policy=built.policy,
        prompt=prompt,
        origins=built.origins,
        references=built.references,
        warnings=tuple(p for p in ordered if not p.is_error),
    )
    return WorkflowCheck(workflow, ordered)


def _sample_problems(prompt: PromptTemplate, policy: Policy) -> list[Problem]:
    """Render the sample issue in every agent phase, so render-time failures show at load."""
    problems: dict[tuple[Location, str], Problem] = {}
    empty: list[str] = []
    for phase in PROMPT_PHASES:
        try:
            text = render_samples(prompt, policy, (phase,))[phase]
        except PromptRenderError as exc:
            detail = f"{exc.detail} (rendering phase {phase} for a sample issue)"
            problems.setdefault(
                (exc.location, exc.detail), Problem(exc.location, PROMPT_KEY, detail)
            )
            continue
        if not text.strip():
            empty.append(phase.value)
    found = list(problems.values())
    if empty:
        where = Location(prompt.source, prompt.first_line)
        plural = "s" if len(empty) > 1 else ""
        message = f"renders an empty prompt for phase{plural} {', '.join(empty)}"
        found.append(Problem(where, PROMPT_KEY, message))
    return found


def check_workflow(
    path: str | os.PathLike[str],
    *,
    env: Mapping[str, str] | None = None,
    flags: Mapping[str, object] | None = None,
) -> WorkflowCheck:
    """Read and check the policy file at ``path`` (``env`` defaults to ``os.environ``)."""
    file_path = Path(path)
    source = display_name(file_path)
    data = read_policy_bytes(file_path, source)
    if isinstance(data, Problem):
        return WorkflowCheck(None, (data,))
    return check_bytes(data, path=file_path, source=source, env=env, flags=flags)


def load_workflow(
    path: str | os.PathLike[str],
    *,
    env: Mapping[str, str] | None = None,
    flags: Mapping[str, object] | None = None,
) -> Workflow:
    """The policy file at ``path``, or :class:`PolicyError` listing every error."""
    result = check_workflow(path, env=env, flags=flags)
    if result.workflow is None:
        raise PolicyError(result.problems)
    return result.workflow
