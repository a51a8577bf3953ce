"""The compose file: PostgreSQL, a one-shot migration, two replicas, and a valid policy for them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from orchestrator.workflow import check_workflow
from orchestrator.workflow.schema import DEFAULT_MAX_CONNECTIONS
from tests.deploy.unit_file import longest_graceful_stop_s, timespan_s

ROOT = Path(__file__).resolve().parents[2]
CONTAINER = ROOT / "deploy" / "container"
COMPOSE = CONTAINER / "compose.yaml"
INTERPOLATION = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?[-?+][^}]*)?\}")
STATE = "/var/lib/orchestrator"
WORKSPACES = "/var/lib/orchestrator/workspaces"
POLICY_MOUNT = "/etc/orchestrator/WORKFLOW.md"


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    loaded = YAML(typ="safe", pure=True).load(COMPOSE.read_text(encoding="utf-8"))
    assert isinstance(loaded, dict), "compose.yaml must be a mapping"
    return loaded


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    found = compose.get("services")
    assert isinstance(found, dict) and found, "compose.yaml has no services"
    return found


@pytest.fixture(scope="module")
def replicas(services: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {
        name: service
        for name, service in services.items()
        if "ORCHESTRATOR_REPLICA_ID" in (service.get("environment") or {})
    }


def _interpolated(value: str, variables: dict[str, str]) -> str:
    return INTERPOLATION.sub(lambda m: variables[m.group(1)], value)


def _mounts(service: dict[str, Any]) -> dict[str, str]:
    """Container path -> source (named volume or host path), from the short syntax."""
    mounts: dict[str, str] = {}
    for entry in service.get("volumes", []):
        source, target, *_ = str(entry).split(":")
        mounts[target] = source
    return mounts


def _depends(service: dict[str, Any], on: str) -> str | None:
    depends = service.get("depends_on") or {}
    assert isinstance(depends, dict), "depends_on must use the long form with a condition"
    return (depends.get(on) or {}).get("condition")


def _env_example(name: str) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for raw in (CONTAINER / name).read_text().splitlines():
        line = raw.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            pairs[key] = value
    return pairs


def test_postgres_is_healthchecked_and_persistent(services: dict[str, dict[str, Any]]) -> None:
    postgres = services["postgres"]
    assert str(postgres["image"]).startswith("postgres:")
    assert "pg_isready" in postgres["healthcheck"]["test"]
    assert _mounts(postgres)["/var/lib/postgresql/data"] == "pgdata"
    assert str(postgres["environment"]["POSTGRES_PASSWORD"]).startswith("${POSTGRES_PASSWORD:?")


def test_migrate_runs_once_after_postgres_is_healthy(services: dict[str, dict[str, Any]]) -> None:
    migrate = services["migrate"]
    assert migrate["command"] == ["db", "upgrade"]
    assert _depends(migrate, "postgres") == "service_healthy"
    assert migrate["restart"] == "no"
    assert "@postgres:5432/" in migrate["environment"]["ORCHESTRATOR_DATABASE_URL"]


def test_the_image_is_built_from_the_dockerfile(services: dict[str, dict[str, Any]]) -> None:
    build = services["migrate"]["build"]
    context = (CONTAINER / build["context"]).resolve()
    assert context == ROOT
    assert (context / build["dockerfile"]).resolve() == CONTAINER / "Dockerfile"
    images = {service["image"] for name, service in services.items() if name != "postgres"}
    assert len(images) == 1, f"the migration and the replicas run different images: {images}"


def test_two_replicas_with_distinct_ids(replicas: dict[str, dict[str, Any]]) -> None:
    ids = [r["environment"]["ORCHESTRATOR_REPLICA_ID"] for r in replicas.values()]
    assert len(ids) == 2
    assert len(set(ids)) == 2, f"replica ids repeat: {ids}"


def test_replicas_start_after_a_successful_migration(
    replicas: dict[str, dict[str, Any]],
) -> None:
    for name, replica in replicas.items():
        assert _depends(replica, "migrate") == "service_completed_successfully", name


def test_replicas_share_the_migrated_database(
    services: dict[str, dict[str, Any]], replicas: dict[str, dict[str, Any]]
) -> None:
    url = services["migrate"]["environment"]["ORCHESTRATOR_DATABASE_URL"]
    for name, replica in replicas.items():
        assert replica["environment"]["ORCHESTRATOR_DATABASE_URL"] == url, name


def test_replicas_are_healthchecked_on_healthz(replicas: dict[str, dict[str, Any]]) -> None:
    for name, replica in replicas.items():
        test = replica["healthcheck"]["test"]
        assert test == ["CMD", "/opt/orchestrator/bin/orchestrator-healthcheck"], name
        assert replica["environment"]["ORCHESTRATOR_SERVER__PORT"] == "8080", name


def test_replicas_get_the_token_from_an_env_file(replicas: dict[str, dict[str, Any]]) -> None:
    example = _env_example("orchestrator.env.example")
    assert example.get("GITHUB_TOKEN") == "", "the example must name GITHUB_TOKEN with no value"
    for name, replica in replicas.items():
        assert replica["env_file"] == ["orchestrator.env"], name
        assert "GITHUB_TOKEN" not in replica["environment"], name


def test_replicas_have_their_own_state_and_workspaces(
    replicas: dict[str, dict[str, Any]],
) -> None:
    seen: set[str] = set()
    for name, replica in replicas.items():
        mounts = _mounts(replica)
        own = {mounts[STATE], mounts[WORKSPACES]}
        assert len(own) == 2 and not own & seen, f"{name} shares its state or workspaces"
        seen |= own
        assert f"./WORKFLOW.md:{POLICY_MOUNT}:ro" in replica["volumes"], name
        assert replica["environment"]["ORCHESTRATOR_WORKSPACE__ROOT"] == WORKSPACES, name


def test_one_kill_switch_stops_every_replica(replicas: dict[str, dict[str, Any]]) -> None:
    folders = set()
    for name, replica in replicas.items():
        switch = Path(replica["environment"]["ORCHESTRATOR_ROLLOUT__KILL_SWITCH_FILE"])
        folders.add(_mounts(replica)[str(switch.parent)])
        assert switch.parent != Path(STATE), f"{name}: the switch would sit in private state"
    assert len(folders) == 1, f"the replicas watch different kill-switch volumes: {folders}"


def test_replicas_permit_the_agents_sandbox(replicas: dict[str, dict[str, Any]]) -> None:
    # bubblewrap needs user namespaces (Docker's seccomp profile), its own mounts
    # (AppArmor) and a /proc without masked paths; see deploy/README.md.
    needed = {"seccomp=unconfined", "apparmor=unconfined", "systempaths=unconfined"}
    for name, replica in replicas.items():
        assert needed <= set(replica.get("security_opt") or []), name
        assert not replica.get("privileged"), f"{name} must not run privileged"


def test_replicas_stop_after_the_agents_grace(replicas: dict[str, dict[str, Any]]) -> None:
    for name, replica in replicas.items():
        assert timespan_s(replica["stop_grace_period"]) > longest_graceful_stop_s(), name


def test_replicas_have_open_files_beyond_the_usual_default(
    replicas: dict[str, dict[str, Any]],
) -> None:
    # A runtime's default may be 1,024; the web server may take a quarter of the limit.
    for name, replica in replicas.items():
        nofile = replica["ulimits"]["nofile"]
        assert nofile["soft"] == nofile["hard"] >= 4 * 4 * DEFAULT_MAX_CONNECTIONS, name


def test_replica_ports_are_local_and_distinct(replicas: dict[str, dict[str, Any]]) -> None:
    ports = [p for replica in replicas.values() for p in replica["ports"]]
    assert all(str(p).startswith("127.0.0.1:") for p in ports), ports
    assert len({str(p).split(":")[1] for p in ports}) == len(ports)


def test_every_named_volume_is_declared(
    compose: dict[str, Any], services: dict[str, dict[str, Any]]
) -> None:
    declared = set(compose.get("volumes") or {})
    used = {
        source
        for service in services.values()
        for source in _mounts(service).values()
        if not source.startswith((".", "/"))
    }
    assert used == declared


def test_interpolated_variables_are_in_the_example(services: dict[str, dict[str, Any]]) -> None:
    used = set(INTERPOLATION.findall(COMPOSE.read_text()))
    assert used
    assert used <= set(_env_example(".env.example")), "a ${VAR} of compose.yaml is undocumented"


def test_local_secrets_are_not_committed() -> None:
    ignored = (CONTAINER / ".gitignore").read_text().split()
    assert {".env", "orchestrator.env"} <= set(ignored)


def test_the_merge_policy_is_valid_in_a_replica(
    tmp_path: Path, replicas: dict[str, dict[str, Any]]
) -> None:
    """The replica's environment overrides name real settings and keep workflows/merge.md valid."""
    values = {"POSTGRES_PASSWORD": "a1b2c3", "ORCHESTRATOR_IMAGE": "orchestrator:test"}
    for replica in replicas.values():
        env = {k: _interpolated(str(v), values) for k, v in replica["environment"].items()}
        env |= {"GITHUB_TOKEN": "token-for-tests", "ORCHESTRATOR_API_TOKEN": "api-for-tests"}
        env |= {"ANTHROPIC_API_KEY": "key-for-tests"}
        result = check_workflow(ROOT / "workflows" / "merge.md", env=env)
        assert not result.errors, [str(p) for p in result.errors]
        assert result.workflow is not None
        policy = result.workflow.policy
        assert str(policy.workspace.root) == WORKSPACES
        assert str(policy.rollout.kill_switch_file) == env["ORCHESTRATOR_ROLLOUT__KILL_SWITCH_FILE"]
        assert policy.server.host == "0.0.0.0"
