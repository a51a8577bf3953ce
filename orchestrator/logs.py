"""Structured logging for the daemon and its tools.

Every log line, whether it comes from structlog or from a stdlib logger
(apscheduler, alembic, urllib3, uvicorn), goes through the same processors:
context variables (repo, issue, phase, run_id), the process's own fields
(``replica``), a timestamp, exception formatting, and then secret redaction,
which runs last before rendering so nothing that looks like a token is ever
written. :func:`redact_text` is the one redaction every output path uses: log
lines, the command line's error messages and exception messages.
"""

from __future__ import annotations

import contextvars
import json
import logging
import re
import sys
import threading
from collections.abc import Callable, Iterable, MutableMapping
from pathlib import Path
from typing import Any, TypeVar

import structlog
from structlog.types import EventDict, Processor

REDACTED = "***"

# Each pattern's first group (when it has one) is kept, the rest of the match masked.
_TOKEN_PATTERNS = [
    # GitHub token shapes: classic, OAuth, user-to-server, server-to-server, refresh,
    # fine-grained.
    re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{16,255}\b"),
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{22,255}\b"),
    # Authorization headers, whatever their scheme.
    re.compile(r"(?i)\b(authorization\s*[:=]\s*[\"']?)(?:token|bearer|basic)\s+[^\s\"',}]+"),
    re.compile(r"(?i)\b((?:token|bearer)\s+)[A-Za-z0-9_\-\.=]{16,}"),
    # The user information of a URL (``https://user:TOKEN@host``, ``https://TOKEN@host``).
    re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/\s@\"'<>]+(?=@)"),
    # Git's basic-auth user for tokens, wherever it is written (``x-access-token:TOKEN``).
    re.compile(r"(?i)\b(x-access-token:)[^\s@/\"',}]+"),
    # Tokens in a query string (``?access_token=...``, ``&token=...``).
    re.compile(
        r"(?i)([?&;](?:access_token|token|private_token|client_secret|password|sig)=)[^&\s#\"'<>]+"
    ),
]
_SENSITIVE_KEYS = frozenset({"authorization", "token", "password", "secret", "github_token"})

_secrets_lock = threading.Lock()
_secret_values: set[str] = set()
# The registered secrets, longest first (a secret inside another is masked after it);
# sorted once per registration, not for every string of every log line.
_secrets_by_length: list[tuple[str, ...]] = [()]


def register_secret(value: str | None) -> None:
    """Redact this exact value wherever it appears in a log line from now on."""
    if value and len(value) >= 4:
        with _secrets_lock:
            if value not in _secret_values:
                _secret_values.add(value)
                _secrets_by_length[0] = tuple(sorted(_secret_values, key=len, reverse=True))


def redact_text(text: str) -> str:
    """Return ``text`` with token shapes, auth headers and registered secrets masked."""
    for secret in _secrets_by_length[0]:
        if secret in text:
            text = text.replace(secret, REDACTED)
    for pattern in _TOKEN_PATTERNS:
        if pattern.groups:
            text = pattern.sub(lambda m: (m.group(1) or "") + REDACTED, text)
        else:
            text = pattern.sub(REDACTED, text)
    return text


def _redact_value(value: Any) -> Any:
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {
            k: (REDACTED if str(k).lower() in _SENSITIVE_KEYS and v else _redact_value(v))
            for k, v in value.items()
        }
    if isinstance(value, list | tuple | set | frozenset):
        return (
            type(value)(_redact_value(v) for v in value)
            if not isinstance(value, set)
            else {_redact_value(v) for v in value}
        )
    if isinstance(value, int | float | bool) or value is None:
        return value
    return redact_text(str(value))


def redact_secrets(_logger: Any, _method: str, event_dict: EventDict) -> EventDict:
    """structlog processor: mask secrets in every value of the event."""
    for key in list(event_dict):
        value = event_dict[key]
        if key.lower() in _SENSITIVE_KEYS and value:
            event_dict[key] = REDACTED
        else:
            event_dict[key] = _redact_value(value)
    return event_dict


_process_fields: dict[str, Any] = {}


def bind_process(**values: Any) -> None:
    """Fields on every line this process writes from now on, whatever thread writes it.

    Context variables do not reach the threads of libraries (the web server's,
    the scheduler's); these do. A value bound in the context wins over one bound
    here; binding None removes the field.
    """
    for key, value in values.items():
        if value is None:
            _process_fields.pop(key, None)
        else:
            _process_fields[key] = value


def _add_process_fields(_logger: Any, _method: str, event_dict: EventDict) -> EventDict:
    for key, value in _process_fields.items():
        event_dict.setdefault(key, value)
    return event_dict


def issue_key(repo: str, number: int) -> str:
    """An issue as every log line names it: ``owner/repo#N``."""
    return f"{repo}#{number}"


def _qualify_issue(_logger: Any, _method: str, event_dict: EventDict) -> EventDict:
    # A bare issue number is named with its repository, so that filtering on one
    # ``issue="owner/repo#N"`` finds every line about it.
    issue, repo = event_dict.get("issue"), event_dict.get("repo")
    bare = isinstance(issue, int) and not isinstance(issue, bool)
    if (bare or (isinstance(issue, str) and issue.isdigit())) and isinstance(repo, str):
        event_dict["issue"] = issue_key(repo, int(issue))  # type: ignore[arg-type]
    return event_dict


def _drop_color_message(_logger: Any, _method: str, event_dict: EventDict) -> EventDict:
    # uvicorn duplicates its message with ANSI colours under this key.
    event_dict.pop("color_message", None)
    return event_dict


def _shared_processors() -> list[Processor]:
    return [
        structlog.contextvars.merge_contextvars,
        _add_process_fields,
        _qualify_issue,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        _drop_color_message,
    ]


def configure_logging(
    fmt: str = "auto",
    level: str = "info",
    stream: Any = None,
    secrets: Iterable[str] = (),
) -> None:
    """Route structlog and stdlib logging to ``stream`` (stderr by default).

    ``fmt`` is ``json``, ``console`` or ``auto`` (JSON unless the stream is a TTY).
    """
    stream = stream if stream is not None else sys.stderr
    for secret in secrets:
        register_secret(secret)
    use_json = fmt == "json" or (fmt == "auto" and not _isatty(stream))
    renderer: Processor = (
        structlog.processors.JSONRenderer(sort_keys=True)
        if use_json
        else structlog.dev.ConsoleRenderer(colors=_isatty(stream), exception_formatter=_plain)
    )
    final: list[Processor] = [
        structlog.processors.format_exc_info,
        structlog.processors.UnicodeDecoder(),
        redact_secrets,
    ]
    structlog.configure(
        processors=[
            *_shared_processors(),
            structlog.stdlib.PositionalArgumentsFormatter(),
            *final,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[*_shared_processors(), structlog.stdlib.ExtraAdder()],
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            *final,
            renderer,
        ],
    )
    handler = logging.StreamHandler(stream)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    for old in list(root.handlers):
        if getattr(old, "_orchestrator", False):
            root.removeHandler(old)
    handler._orchestrator = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(level.upper())
    for noisy in ("urllib3", "github", "apscheduler", "alembic", "uvicorn.access"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))


def _plain(sio: Any, exc_info: Any) -> None:
    # exc_info is already formatted (and redacted) text by the time the renderer runs.
    sio.write("\n" + str(exc_info))


def _isatty(stream: Any) -> bool:
    isatty: Callable[[], bool] | None = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:
        return False


def get_logger(name: str | None = None, **initial: Any) -> Any:
    """A structlog logger, optionally with initial bound values."""
    return (
        structlog.stdlib.get_logger(name).bind(**initial)
        if initial
        else (structlog.stdlib.get_logger(name))
    )


def bind_context(**values: Any) -> None:
    """Bind stable keys (repo, issue, phase, run_id) for the current context."""
    structlog.contextvars.bind_contextvars(**values)


def unbind_context(*keys: str) -> None:
    """Drop keys bound for the current context."""
    structlog.contextvars.unbind_contextvars(*keys)


def clear_context() -> None:
    structlog.contextvars.clear_contextvars()


T = TypeVar("T")


def in_current_context(fn: Callable[..., T]) -> Callable[..., T]:
    """Wrap ``fn`` so it runs with a copy of the caller's context variables.

    Thread pools do not inherit contextvars; submit ``in_current_context(job)``
    so the worker's log lines keep the repo/issue/phase/run_id of the caller.
    """
    ctx = contextvars.copy_context()

    def run(*args: Any, **kwargs: Any) -> T:
        return ctx.copy().run(fn, *args, **kwargs)

    return run


def current_context() -> MutableMapping[str, Any]:
    return structlog.contextvars.get_contextvars()


ERROR_TEXT_LIMIT = 500


def error_fields(error: BaseException) -> dict[str, str]:
    """One unexpected exception as three short log fields, instead of a traceback.

    ``error_type`` is the class name, ``error`` the message cut to
    :data:`ERROR_TEXT_LIMIT` characters (an agent can make it huge), and
    ``error_at`` the innermost frame as ``file:line in function``. The message is
    redacted: these fields are also stored (a run's ``error``) and shown.
    """
    text = redact_text(str(error))
    if len(text) > ERROR_TEXT_LIMIT:
        text = f"{text[:ERROR_TEXT_LIMIT]}... ({len(text)} characters)"
    where = ""
    tb = error.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is not None:
        code = tb.tb_frame.f_code
        where = f"{code.co_filename.rsplit('/', 1)[-1]}:{tb.tb_lineno} in {code.co_name}"
    return {"error_type": type(error).__name__, "error": text, "error_at": where}


def read_json_log(path: Path) -> list[dict[str, Any]]:
    """The JSON entries of a log written with ``--log-format json``, oldest first.

    Lines that are not JSON objects (a server's plain lines, a line cut short by a
    killed process) are skipped.
    """
    entries = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if not line.startswith("{"):
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(entry, dict):
            entries.append(entry)
    return entries
