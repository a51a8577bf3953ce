"""Reading the result files an agent leaves in ``.orchestrator/``, safely and with size limits.

The content is validated by the pure parsers of :mod:`orchestrator.domain.agent_files`;
this module only gets the bytes there, through :mod:`orchestrator.agent.safe_files`:
without following links, blocking on special files or reading more than the limit.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from orchestrator.agent.safe_files import UnsafeFile, open_folder, read_at, read_file, remove_at
from orchestrator.agent.workspace import RESULT_DIR
from orchestrator.domain.agent_files.errors import ResultError, ResultErrorKind
from orchestrator.domain.agent_files.fix_summary import (
    FIX_SUMMARY_FILE,
    FixSummary,
    parse_fix_summary,
)
from orchestrator.domain.agent_files.questions import (
    BLOCKED_FILE,
    PR_DESCRIPTION_FILE,
    BlockedQuestion,
    PRDescription,
    parse_blocked,
    parse_pr_description,
)
from orchestrator.domain.agent_files.review import REVIEW_FILE, Review, parse_review

PROMPT_FILE = "prompt.md"
CONTEXT_FILE = "context.json"


class ResultFile(StrEnum):
    """The files an agent may write for the runtime."""

    REVIEW = REVIEW_FILE
    FIX_SUMMARY = FIX_SUMMARY_FILE
    PR_DESCRIPTION = PR_DESCRIPTION_FILE
    BLOCKED = BLOCKED_FILE


@dataclass(frozen=True)
class ResultFiles:
    """The parsed result files of one turn, and a located error for each bad or missing one."""

    review: Review | None = None
    fix_summary: FixSummary | None = None
    pr_description: PRDescription | None = None
    blocked: BlockedQuestion | None = None
    errors: tuple[ResultError, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def present(self) -> frozenset[ResultFile]:
        """The files that were written and parsed."""
        found = {
            ResultFile.REVIEW: self.review,
            ResultFile.FIX_SUMMARY: self.fix_summary,
            ResultFile.PR_DESCRIPTION: self.pr_description,
            ResultFile.BLOCKED: self.blocked,
        }
        return frozenset(name for name, value in found.items() if value is not None)

    def error_for(self, name: ResultFile) -> ResultError | None:
        """The first error about the file ``name``, if it had one."""
        return next((e for e in self.errors if e.file == name.value), None)


def clear_outputs(result_dir: Path) -> None:
    """Remove result files left by an earlier turn, so nothing stale is read as this turn's.

    Whatever stands under a result file's name (a link, a FIFO, a directory) is
    removed without being followed. An absent folder has nothing to clear.
    """
    try:
        with open_folder(result_dir) as dir_fd:
            for name in ResultFile:
                remove_at(dir_fd, name.value)
    except FileNotFoundError:
        return


def _as_error(name: str, problem: UnsafeFile) -> ResultError:
    kind = ResultErrorKind.TOO_LARGE if problem.too_large else ResultErrorKind.INVALID_VALUE
    return ResultError(name, None, None, problem.problem, kind)


def _decode(name: str, data: bytes) -> str | ResultError:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        return ResultError(
            name, line, None, f"is not valid UTF-8 (byte {error.start})", ResultErrorKind.SYNTAX
        )


def read_file_limited(path: Path, *, name: str, max_bytes: int) -> str | ResultError | None:
    """The UTF-8 text of ``path``; None when absent; an error when unsafe, too big or not text.

    Read through :mod:`orchestrator.agent.safe_files`: a symbolic link, a FIFO,
    a directory or any other non-regular file is refused without blocking, as is
    a folder on the way that was replaced by a link.
    """
    try:
        data = read_file(path.parent, path.name, max_bytes=max_bytes)
    except UnsafeFile as problem:
        return _as_error(name, problem)
    return None if data is None else _decode(name, data)


def _read_all(result_dir: Path, max_bytes: int) -> dict[ResultFile, str | ResultError | None]:
    """Each result file's text, error or absence; one folder error when the folder is unsafe."""
    texts: dict[ResultFile, str | ResultError | None] = {}
    try:
        with open_folder(result_dir) as dir_fd:
            for name in ResultFile:
                try:
                    data = read_at(
                        dir_fd, name.value, path=result_dir / name.value, max_bytes=max_bytes
                    )
                except UnsafeFile as problem:
                    texts[name] = _as_error(name.value, problem)
                    continue
                texts[name] = None if data is None else _decode(name.value, data)
    except FileNotFoundError:
        return dict.fromkeys(ResultFile)
    return texts


def read_results(
    result_dir: Path,
    *,
    expected_head: str | None,
    max_bytes: int,
    required: frozenset[ResultFile] = frozenset(),
) -> ResultFiles:
    """Read and validate every result file present in ``result_dir``.

    ``expected_head`` is the workspace HEAD after the turn: a review of any
    other commit is an error. A file in ``required`` that is absent is an
    error too.
    """
    errors: list[ResultError] = []
    values: dict[ResultFile, object] = {}
    try:
        texts = _read_all(result_dir, max_bytes)
    except UnsafeFile as problem:
        folder = ResultError(RESULT_DIR, None, None, problem.problem)
        return ResultFiles(errors=(folder,))
    for name in ResultFile:
        text = texts[name]
        if text is None:
            if name in required:
                errors.append(
                    ResultError(
                        name.value,
                        None,
                        None,
                        "the agent did not write this file, which this phase needs",
                        ResultErrorKind.MISSING_FIELD,
                    )
                )
            continue
        if isinstance(text, ResultError):
            errors.append(text)
            continue
        parsed: object
        if name is ResultFile.REVIEW:
            parsed = parse_review(text, expected_head=expected_head, max_bytes=max_bytes)
        elif name is ResultFile.FIX_SUMMARY:
            parsed = parse_fix_summary(text, max_bytes=max_bytes)
        elif name is ResultFile.PR_DESCRIPTION:
            parsed = parse_pr_description(text, max_bytes=max_bytes)
        else:
            parsed = parse_blocked(text, max_bytes=max_bytes)
        if isinstance(parsed, ResultError):
            errors.append(parsed)
        else:
            values[name] = parsed
    review = values.get(ResultFile.REVIEW)
    fix_summary = values.get(ResultFile.FIX_SUMMARY)
    pr_description = values.get(ResultFile.PR_DESCRIPTION)
    blocked = values.get(ResultFile.BLOCKED)
    return ResultFiles(
        review=review if isinstance(review, Review) else None,
        fix_summary=fix_summary if isinstance(fix_summary, FixSummary) else None,
        pr_description=pr_description if isinstance(pr_description, PRDescription) else None,
        blocked=blocked if isinstance(blocked, BlockedQuestion) else None,
        errors=tuple(errors),
    )
