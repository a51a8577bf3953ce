"""Logging: JSON and console output, context in threads, and secret redaction."""

from __future__ import annotations

import io
import json
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import click
import pytest
import structlog
from click.testing import CliRunner

from orchestrator.cli import LazyGroup
from orchestrator.logs import (
    REDACTED,
    bind_context,
    bind_process,
    clear_context,
    configure_logging,
    error_fields,
    get_logger,
    in_current_context,
    issue_key,
    read_json_log,
    redact_text,
    register_secret,
)

CLASSIC = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
FINE_GRAINED = "github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJ"
CONFIGURED = "s3cr3t-configured-value"


@pytest.fixture
def stream() -> io.StringIO:
    out = io.StringIO()
    configure_logging(fmt="json", level="debug", stream=out, secrets=[CONFIGURED])
    clear_context()
    yield out
    clear_context()
    structlog.reset_defaults()


def _lines(out: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.getvalue().splitlines() if line.strip()]


def test_token_in_an_event_never_reaches_the_output(stream: io.StringIO) -> None:
    log = get_logger("t")
    log.info(
        "dispatch",
        note=f"using {CLASSIC}",
        headers={"Authorization": f"token {CLASSIC}"},
        items=[FINE_GRAINED],
        token=CONFIGURED,
    )
    text = stream.getvalue()
    for secret in (CLASSIC, FINE_GRAINED, CONFIGURED):
        assert secret not in text
    line = _lines(stream)[0]
    assert line["event"] == "dispatch"
    assert line["headers"] == {"Authorization": REDACTED}
    assert line["token"] == REDACTED
    assert REDACTED in str(line["note"])


def test_token_in_an_exception_message_is_redacted(stream: io.StringIO) -> None:
    log = get_logger("t")
    try:
        raise RuntimeError(
            f"401 for https://x-access-token:{CONFIGURED}@github.example/repo.git "
            f"with Authorization: Bearer {CLASSIC}"
        )
    except RuntimeError:
        log.exception("side_effect_failed")
    text = stream.getvalue()
    assert CLASSIC not in text and CONFIGURED not in text
    assert "RuntimeError" in _lines(stream)[0]["exception"]


def test_token_in_a_stdlib_record_is_redacted(stream: io.StringIO) -> None:
    logging.getLogger("urllib3.connectionpool").warning("retrying with token %s", CLASSIC)
    logging.getLogger("some.library").error("auth header Authorization: token %s", FINE_GRAINED)
    try:
        raise ValueError(CONFIGURED)
    except ValueError:
        logging.getLogger("some.library").exception("failed")
    text = stream.getvalue()
    for secret in (CLASSIC, FINE_GRAINED, CONFIGURED):
        assert secret not in text
    lines = _lines(stream)
    assert [line["logger"] for line in lines] == [
        "urllib3.connectionpool",
        "some.library",
        "some.library",
    ]
    assert all("timestamp" in line and "level" in line for line in lines)


def test_context_is_carried_into_worker_threads(stream: io.StringIO) -> None:
    bind_context(repo="acme/app", issue=7, phase="implementing", run_id="r-1")

    def job() -> None:
        get_logger("worker").info("agent_exit", outcome="completed")

    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(in_current_context(job)).result()
    line = _lines(stream)[0]
    assert (line["repo"], line["issue"], line["phase"], line["run_id"]) == (
        "acme/app",
        "acme/app#7",
        "implementing",
        "r-1",
    )


def test_console_format_is_plain_text() -> None:
    out = io.StringIO()
    configure_logging(fmt="console", stream=out)
    try:
        get_logger("c").info("tick", issues=3, token=CLASSIC)
        text = out.getvalue()
        assert "tick" in text and "issues=3" in text and CLASSIC not in text
        with pytest.raises(json.JSONDecodeError):
            json.loads(text)
    finally:
        structlog.reset_defaults()


def test_auto_format_is_json_off_a_terminal() -> None:
    out = io.StringIO()
    configure_logging(fmt="auto", stream=out)
    try:
        get_logger("c").info("tick")
        assert json.loads(out.getvalue())["event"] == "tick"
    finally:
        structlog.reset_defaults()


@pytest.mark.parametrize(
    "raw",
    [
        f"https://user:{CONFIGURED}@example.org/x",
        f"Authorization: token {CLASSIC}",
        f"authorization=Bearer {CLASSIC}",
        f"ghs_{'z' * 36}",
        f"gho_{'Q' * 36}",
    ],
)
def test_redact_text_shapes(raw: str) -> None:
    register_secret(CONFIGURED)
    assert REDACTED in redact_text(raw)
    assert CLASSIC not in redact_text(raw)


def test_a_json_log_is_read_back_skipping_plain_and_cut_lines(tmp_path: Path) -> None:
    log = tmp_path / "daemon.log"
    log.write_text(
        '{"event": "tick", "issues": 3}\nINFO:     Uvicorn running\n[1, 2]\n{"event": "ti',
        encoding="utf-8",
    )
    assert read_json_log(log) == [{"event": "tick", "issues": 3}]


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        (
            f"https://user:{CONFIGURED}@example.org/api",
            "https://***@example.org/api",
        ),
        ("https://opaque-token-value@example.org/x.git", "https://***@example.org/x.git"),
        (
            "git push https://x-access-token:abc123def456@github.example/acme/app.git",
            "git push https://***@github.example/acme/app.git",
        ),
        ("user x-access-token:abc123def456 failed", "user x-access-token:*** failed"),
        (
            "GET /api/user?access_token=abc123def456&page=2",
            "GET /api/user?access_token=***&page=2",
        ),
        ("GET /hook?page=2&token=abc123def456", "GET /hook?page=2&token=***"),
        ("Authorization: Bearer abc123def456", "Authorization: ***"),
    ],
)
def test_every_url_embedded_credential_is_masked_and_the_rest_kept(raw: str, shown: str) -> None:
    register_secret(CONFIGURED)
    assert redact_text(raw) == shown


def test_plain_urls_and_issue_names_are_left_alone() -> None:
    for text in ("https://github.example/acme/app/pull/3", "acme/app#7", "git@github.com:a/b"):
        assert redact_text(text) == text


def test_a_credential_in_a_traceback_is_masked(stream: io.StringIO) -> None:
    try:
        raise ConnectionError("GET https://bot:tok3n-in-url@ghe.example/api/v3/user failed")
    except ConnectionError:
        get_logger("t").exception("tick_failed")
    assert "tok3n-in-url" not in stream.getvalue()
    assert "https://***@ghe.example/api/v3/user" in str(_lines(stream)[0]["exception"])


def test_process_fields_reach_library_threads_and_context_wins(stream: io.StringIO) -> None:
    bind_process(replica="replica-a")
    try:
        thread = threading.Thread(
            target=lambda: logging.getLogger("uvicorn.error").warning("Started server process")
        )
        thread.start()
        thread.join()
        bind_context(replica="replica-b")
        get_logger("t").info("tick")
    finally:
        bind_process(replica=None)
    first, second = _lines(stream)
    assert (first["logger"], first["replica"]) == ("uvicorn.error", "replica-a")
    assert second["replica"] == "replica-b"


def test_a_bare_issue_number_is_named_with_its_repository(stream: io.StringIO) -> None:
    log = get_logger("t")
    log.info("claim_lost", repo="acme/app", issue=7)
    log.info("claim_lost", repo="acme/app", issue="8")
    log.info("claim_lost", repo="acme/app", issue="acme/app#9")
    assert [line["issue"] for line in _lines(stream)] == ["acme/app#7", "acme/app#8", "acme/app#9"]
    assert issue_key("acme/app", 3) == "acme/app#3"


def test_a_cli_error_is_shown_without_the_credential_it_quotes() -> None:
    group = LazyGroup(lazy={})

    @group.command("fail")
    def fail() -> None:
        raise click.ClickException("cannot reach https://bot:s3cr3t-in-url@ghe.example/api")

    result = CliRunner().invoke(group, ["fail"])
    assert result.exit_code == 1
    assert "s3cr3t-in-url" not in result.output
    assert "https://***@ghe.example/api" in result.output


def test_error_fields_are_redacted_as_they_are_also_stored() -> None:
    try:
        raise OSError("push to https://x-access-token:tok3n-in-push@git.example/a.git failed")
    except OSError as error:
        fields = error_fields(error)
    assert "tok3n-in-push" not in fields["error"]
    assert "https://***@git.example/a.git" in fields["error"]
