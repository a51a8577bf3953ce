"""The container image's essentials, read from the Dockerfile (no container engine runs here)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from tests.deploy.dockerfile_syntax import (
    Dockerfile,
    IgnoreRules,
    Instruction,
    Stage,
    parse_dockerfile,
    parse_dockerignore,
)

ROOT = Path(__file__).resolve().parents[2]
CONTAINER = ROOT / "deploy" / "container"
DOCKERFILE = CONTAINER / "Dockerfile"
# BuildKit reads <Dockerfile>.dockerignore next to the Dockerfile; the context is the repo root.
DOCKERIGNORE = CONTAINER / "Dockerfile.dockerignore"
HEALTHCHECK_SCRIPT = CONTAINER / "healthcheck.py"
INITS = {"tini", "dumb-init", "docker-init", "catatonit"}
SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|API_KEY|PRIVATE_KEY|CREDENTIAL", re.I)


@pytest.fixture(scope="module")
def dockerfile() -> Dockerfile:
    return parse_dockerfile(DOCKERFILE)


@pytest.fixture(scope="module")
def final(dockerfile: Dockerfile) -> Stage:
    return dockerfile.final


@pytest.fixture(scope="module")
def ignore() -> IgnoreRules:
    return parse_dockerignore(DOCKERIGNORE)


def _required(stage: Stage, keyword: str) -> Instruction:
    instruction = stage.last(keyword)
    assert instruction is not None, f"the final stage has no {keyword}"
    return instruction


def _copy_sources(stage: Stage) -> list[str]:
    sources: list[str] = []
    for instruction in stage.all("COPY") + stage.all("ADD"):
        flags, words = instruction.flags_and_words()
        if "from" not in flags:
            sources.extend(words[:-1])
    return sources


def _volumes(stage: Stage) -> list[str]:
    paths: list[str] = []
    for instruction in stage.all("VOLUME"):
        paths.extend(instruction.exec_form() or instruction.arguments.split())
    return paths


def _project() -> dict[str, object]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_every_stage_is_a_slim_python_image(dockerfile: Dockerfile) -> None:
    names = {stage.name for stage in dockerfile.stages}
    bases = [stage.base for stage in dockerfile.stages if stage.base not in names]
    assert bases
    for base in bases:
        assert re.fullmatch(r"python:3\.\d+-slim(-\w+)?", base), f"{base} is not a slim Python"


def test_python_version_meets_the_project(dockerfile: Dockerfile) -> None:
    project = _project()["project"]
    assert isinstance(project, dict)
    needed = re.fullmatch(r">=\s*3\.(\d+)", str(project["requires-python"]))
    assert needed, project["requires-python"]
    minor = re.match(r"python:3\.(\d+)", dockerfile.final.base)
    assert minor and int(minor.group(1)) >= int(needed.group(1))


def test_runs_as_a_non_root_user(final: Stage) -> None:
    user = _required(final, "USER").arguments.split(":")[0]
    assert user not in ("", "root", "0"), f"USER {user} is root"


def test_an_init_is_pid_1_and_starts_the_daemon(final: Stage) -> None:
    entrypoint = _required(final, "ENTRYPOINT").exec_form()
    # The shell form would make /bin/sh PID 1, which neither forwards signals nor reaps.
    assert entrypoint, "ENTRYPOINT must use the exec (JSON) form"
    init = Path(entrypoint[0]).name
    assert init in INITS, f"{entrypoint[0]} is not an init"
    assert entrypoint[-1].endswith("/orchestrator")
    if init == "tini":
        assert entrypoint[1] == "--"
    installs = " ".join(i.arguments for i in final.all("RUN"))
    assert re.search(rf"apt-get install[^&;]*\b{init}\b", installs), f"{init} is not installed"


def test_the_default_command_runs_the_mounted_policy(final: Stage) -> None:
    assert _required(final, "CMD").exec_form() == ["run", "/etc/orchestrator/WORKFLOW.md"]


def test_healthcheck_calls_the_script_that_asks_healthz(final: Stage) -> None:
    healthcheck = _required(final, "HEALTHCHECK")
    flags, _ = healthcheck.flags_and_words()
    command = healthcheck.arguments.split("CMD", 1)[1].strip()
    argv = Instruction("CMD", command, healthcheck.line).exec_form()
    assert argv, "HEALTHCHECK CMD must use the exec form"
    copied = {
        words[-1]: words[0]
        for i in final.all("COPY")
        for words in [i.flags_and_words()[1]]
        if "from" not in i.flags_and_words()[0]
    }
    assert copied.get(argv[0]) == "deploy/container/healthcheck.py"
    assert "/healthz" in HEALTHCHECK_SCRIPT.read_text()
    assert {"interval", "timeout", "retries"} <= flags.keys()


def test_logs_are_json(final: Stage) -> None:
    assert final.env().get("ORCHESTRATOR_LOG_FORMAT") == "json"


def test_volumes_hold_the_state_and_the_workspaces(final: Stage) -> None:
    volumes = _volumes(final)
    assert "/var/lib/orchestrator" in volumes
    assert "/var/lib/orchestrator/workspaces" in volumes
    # The default SQLite file is $XDG_STATE_HOME/orchestrator/orchestrator.db.
    assert final.env().get("XDG_STATE_HOME", "") + "/orchestrator" in volumes
    assert final.env().get("HOME") == "/var/lib/orchestrator", "the agents' home must persist"


def test_no_secret_is_baked_in(dockerfile: Dockerfile) -> None:
    names = [
        name
        for instruction in dockerfile.instructions()
        if instruction.keyword in ("ENV", "ARG")
        for name in instruction.pairs()
    ] + list(dockerfile.global_args)
    assert not [n for n in names if SECRET_NAME.search(n)], names
    for instruction in dockerfile.instructions():
        if instruction.keyword in ("COPY", "ADD"):
            for source in instruction.flags_and_words()[1][:-1]:
                assert not source.endswith(".env"), f"line {instruction.line} copies {source}"


def test_copied_files_exist_and_pass_the_dockerignore(
    dockerfile: Dockerfile, ignore: IgnoreRules
) -> None:
    sources = [s for stage in dockerfile.stages for s in _copy_sources(stage)]
    assert sources
    for source in sources:
        relative = source.rstrip("/")
        assert (ROOT / relative).exists(), f"COPY {source}: no such file in the repository"
        assert not ignore.excludes(relative), f"COPY {source}: excluded by {DOCKERIGNORE.name}"


@pytest.mark.parametrize(
    "path",
    [
        ".git/config",
        ".venv/bin/python",
        ".cache/contracts/openapi/api.github.com.json",
        "tests/conftest.py",
        "deploy/container/orchestrator.env",
        "deploy/container/.env",
        "orchestrator/__pycache__/cli.cpython-311.pyc",
    ],
)
def test_the_dockerignore_keeps_out(ignore: IgnoreRules, path: str) -> None:
    assert ignore.excludes(path)


def test_the_build_stage_copies_what_the_package_build_reads(dockerfile: Dockerfile) -> None:
    build = dockerfile.stages[0]
    copied = {s.rstrip("/").removeprefix("./") for s in _copy_sources(build)}
    project = _project()
    needed = {"pyproject.toml", str(project["project"]["readme"])}  # type: ignore[index]
    setuptools = project["tool"]["setuptools"]  # type: ignore[index]
    needed |= {p.rstrip("*").rstrip(".") for p in setuptools["packages"]["find"]["include"]}
    for files in setuptools["data-files"].values():
        needed |= {f.split("/")[0] for f in files}
    assert needed <= copied, f"the build stage misses {sorted(needed - copied)}"


def test_the_release_is_a_regular_install_in_its_own_environment(
    dockerfile: Dockerfile, final: Stage
) -> None:
    build = dockerfile.stages[0]
    installs = [i.arguments for i in build.all("RUN") if "pip install" in i.arguments]
    assert installs, "the build stage installs nothing"
    # An editable install would leave the migrations outside share/orchestrator.
    assert not any(re.search(r"\s(-e|--editable)\s", f" {i} ") for i in installs)
    assert any("/opt/orchestrator" in i for i in installs)
    copied_from_build = [
        i.flags_and_words()[1] for i in final.all("COPY") if i.flags_and_words()[0].get("from")
    ]
    assert ["/opt/orchestrator", "/opt/orchestrator"] in copied_from_build
    assert final.env().get("PATH", "").startswith("/opt/orchestrator/bin:")


def test_stop_signal_is_the_graceful_one(final: Stage) -> None:
    stop = final.last("STOPSIGNAL")
    assert stop is None or stop.arguments == "SIGTERM"


def test_the_agents_sandbox_is_installed(final: Stage) -> None:
    installs = " ".join(i.arguments for i in final.all("RUN"))
    assert re.search(r"apt-get install[^&;]*\bbubblewrap\b", installs), "bubblewrap is missing"
