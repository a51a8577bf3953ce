"""`tracker.auth: app`: the App's id and key are required, and the key file is checked.

``orchestrator validate`` reads the key (a file, or the PEM in a `$VAR`), checks
that it is an RSA private key, and never prints any of it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from orchestrator.cli import cli

POLICY = """---
tracker:
  repo: acme/widgets
  auth: app
  app_id: 1234
  private_key_file: {key}
agent:
  preset: command
  command: "true"
---
Work on {{{{ issue.title }}}}.
"""


def rsa_pem() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    ).decode()


def validate(folder: Path, key: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    policy = folder / "WORKFLOW.md"
    policy.write_text(POLICY.format(key=key), encoding="utf-8")
    result = CliRunner().invoke(cli, ["validate", "--no-prompts", str(policy)], env=env or {})
    return result.exit_code, result.output


def test_a_readable_rsa_key_file_is_valid_without_a_token(tmp_path: Path) -> None:
    pem = rsa_pem()
    (tmp_path / "app.pem").write_text(pem, encoding="utf-8")

    code, output = validate(tmp_path, "app.pem", env={"GITHUB_TOKEN": ""})

    assert code == 0, output
    assert "valid" in output
    assert pem.splitlines()[1] not in output


def test_the_pem_in_a_variable_is_accepted_and_never_shown(tmp_path: Path) -> None:
    pem = rsa_pem()

    code, output = validate(tmp_path, "$APP_KEY", env={"APP_KEY": pem})

    assert code == 0, output
    for line in pem.splitlines()[1:-1]:
        assert line not in output


def test_a_missing_key_file_is_an_error_naming_the_file(tmp_path: Path) -> None:
    code, output = validate(tmp_path, "missing.pem")

    assert code == 1
    assert "tracker.private_key_file" in output
    assert f"cannot read the key file {tmp_path / 'missing.pem'}" in output


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("not a key at all\n", "is not an unencrypted PEM private key"),
        (
            ec.generate_private_key(ec.SECP256R1())
            .private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
            .decode(),
            "is not an RSA private key",
        ),
    ],
    ids=["garbage", "not_rsa"],
)
def test_a_file_that_is_not_an_rsa_key_is_refused_without_its_text(
    tmp_path: Path, content: str, reason: str
) -> None:
    (tmp_path / "app.pem").write_text(content, encoding="utf-8")

    code, output = validate(tmp_path, "app.pem")

    assert code == 1
    assert reason in output
    for line in content.splitlines()[1:-1] or content.splitlines():
        assert line not in output


def test_app_id_and_key_are_required(tmp_path: Path) -> None:
    policy = tmp_path / "WORKFLOW.md"
    policy.write_text(
        "---\ntracker:\n  repo: acme/widgets\n  auth: app\nagent:\n  preset: command\n"
        '  command: "true"\n---\nGo.\n',
        encoding="utf-8",
    )
    result = CliRunner().invoke(cli, ["validate", "--no-prompts", str(policy)], env={})

    assert result.exit_code == 1
    assert "tracker.app_id" in result.output
    assert "tracker.private_key_file" in result.output
