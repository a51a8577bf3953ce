"""Reading the result files an agent leaves in ``.orchestrator/``, safely and with size limits.

The content is validated by the pure parsers of :mod:`orchestrator.domain.results`;
this module only gets the bytes there without following links, blocking on
special files or reading more than the limit.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from orchestrator.domain.results import (
    BLOCKED_FILE,
    FIX_SUMMARY_FILE,
    PR_DESCRIPTION_FILE,
    REVIEW_FILE,
    BlockedQuestion,
    FixSummary,
    PRDescription,
    ResultError,
    ResultErrorKind,
    Review,
    parse_blocked,
    parse_fix_summary,
    parse_pr_description,
    parse_review,
)

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
    """Remove result files left by an earlier turn, so nothing stale is read as this turn's."""
    for name in ResultFile:
        path = result_dir / name.value
        if path.is_symlink() or path.is_file():
            path.unlink()
        elif path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()


def read_file_limited(path: Path, *, name: str, max_bytes: int) -> str | ResultError | None:
    """The UTF-8 text of ``path``; None when absent; an error when unsafe, too big or not text.

    A symbolic link is refused (it could point at any file on the machine), as
    is anything that is not a regular file.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as error:
        if error.errno == errno.ELOOP:
            return ResultError(
                name,
                None,
                None,
                "is a symbolic link; result files must be regular files",
                ResultErrorKind.INVALID_VALUE,
            )
        return ResultError(
            name, None, None, f"cannot be read: {error.strerror}", ResultErrorKind.INVALID_VALUE
        )
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return ResultError(
                name, None, None, "is not a regular file", ResultErrorKind.INVALID_VALUE
            )
        if info.st_size > max_bytes:
            return _too_large(name, info.st_size, max_bytes)
        chunks: list[bytes] = []
        size = 0
        while size <= max_bytes:
            chunk = os.read(fd, min(65536, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > max_bytes:
            return _too_large(name, size, max_bytes)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        return ResultError(
            name, line, None, f"is not valid UTF-8 (byte {error.start})", ResultErrorKind.SYNTAX
        )


def _too_large(name: str, size: int, max_bytes: int) -> ResultError:
    return ResultError(
        name,
        None,
        None,
        f"file is {size} bytes, more than the limit of {max_bytes}",
        ResultErrorKind.TOO_LARGE,
    )


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
    for name in ResultFile:
        text = read_file_limited(result_dir / name.value, name=name.value, max_bytes=max_bytes)
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
