"""Several repositories: `tracker.repos` and `tracker.repo_opt_in_label` are checked where they
are written, and the daemon's list of repositories is the policy's, each once."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from orchestrator.cli import cli
from orchestrator.repos.discovery import tracked_repos
from orchestrator.wiring.policy_view import first_view, policy_repos
from orchestrator.workflow import load_workflow

from .test_app_auth_keys import rsa_pem


def write(folder: Path, tracker: str) -> Path:
    (folder / "app.pem").write_text(rsa_pem(), encoding="utf-8")
    policy = folder / "WORKFLOW.md"
    policy.write_text(
        f'---\ntracker:\n{tracker}agent:\n  preset: command\n  command: "true"\n---\n'
        "Work on {{ issue.title }}.\n",
        encoding="utf-8",
    )
    return policy


def validate(folder: Path, tracker: str) -> tuple[int, str]:
    policy = write(folder, tracker)
    env = {"GITHUB_TOKEN": "t"}
    result = CliRunner().invoke(cli, ["validate", "--no-prompts", str(policy)], env=env)
    return result.exit_code, result.output


APP = "  auth: app\n  app_id: 7\n  private_key_file: app.pem\n"


@pytest.mark.parametrize(
    ("tracker", "expected"),
    [
        (
            "  repos: [acme/widgets, nope]\n",
            "tracker.repos[1]: expected owner/name, got 'nope'",
        ),
        (
            "  repo: acme/widgets\n  repos: [acme/gadgets, ACME/Widgets]\n",
            "tracker.repos[1]: ACME/Widgets is named twice (tracker.repo and tracker.repos count)",
        ),
        (
            "  repo_opt_in_label: orchestrated\n",
            "tracker.repo_opt_in_label: needs tracker.auth: app",
        ),
        (
            f"{APP}  repo_opt_in_label: orchestrated\n",
            "tracker.installation_id: required with tracker.repo_opt_in_label when no repository",
        ),
        (
            f"{APP}  repo: acme/widgets\n  repo_opt_in_label: orchestrated\n"
            "  repo_discovery_interval_ms: 1000\n",
            "tracker.repo_discovery_interval_ms: at least 60000",
        ),
        (
            "  kind: linear\n  repo: acme/widgets\n  team_key: ENG\n  api_key: k\n"
            "  repos: [acme/gadgets]\n",
            "tracker.repos: only for tracker kind github",
        ),
        (
            "  token: t\n",
            "tracker.repo: required for tracker kind github (owner/name), unless tracker.repos",
        ),
    ],
)
def test_a_bad_repository_setting_is_named_where_it_is_written(
    tmp_path: Path, tracker: str, expected: str
) -> None:
    code, output = validate(tmp_path, tracker)
    assert code != 0
    assert expected in output.replace("\n", " ").replace("  ", " ") or expected in output, output


@pytest.mark.parametrize(
    "tracker",
    [
        "  repos: [acme/widgets, acme/gadgets]\n",
        "  repo: acme/widgets\n  repos: [acme/gadgets]\n",
        f"{APP}  repo_opt_in_label: orchestrated\n  installation_id: 12\n",
        f"{APP}  repos: [acme/widgets]\n  repo_opt_in_label: orchestrated\n",
    ],
)
def test_good_repository_settings_validate(tmp_path: Path, tracker: str) -> None:
    code, output = validate(tmp_path, tracker)
    assert code == 0, output


def test_the_repositories_are_the_policys_then_the_discovered_each_once(tmp_path: Path) -> None:
    policy = write(tmp_path, "  repo: acme/widgets\n  repos: [acme/gadgets]\n")
    workflow = load_workflow(policy, env={"GITHUB_TOKEN": "t"})
    assert policy_repos(workflow.policy) == ("acme/widgets", "acme/gadgets")
    view = first_view(workflow)
    assert view.repo == "acme/widgets"
    assert view.of_repo("acme/gadgets").repo == "acme/gadgets"
    assert tracked_repos(view, ["ACME/Gadgets", "acme/gizmos"]) == (
        "acme/widgets",
        "acme/gadgets",
        "acme/gizmos",
    )


def test_with_only_an_opt_in_label_the_first_view_has_no_repository(tmp_path: Path) -> None:
    policy = write(tmp_path, f"{APP}  repo_opt_in_label: orchestrated\n  installation_id: 12\n")
    workflow = load_workflow(policy, env={})
    assert policy_repos(workflow.policy) == ()
    assert first_view(workflow).repo == ""
