"""``orchestrator validate``: check policy files and show the effective policy with its origins."""

from __future__ import annotations

from pathlib import Path

import click

from orchestrator.workflow.display import effective_policy_lines
from orchestrator.workflow.loader import Workflow, WorkflowCheck, check_workflow, display_name
from orchestrator.workflow.problems import PromptRenderError
from orchestrator.workflow.prompt import PROMPT_PHASES, render_samples, sample_issue
from orchestrator.workflow.provenance import PRECEDENCE


def _parse_sets(values: tuple[str, ...]) -> dict[str, object]:
    flags: dict[str, object] = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"expected KEY=VALUE, got {item!r}", param_hint="--set")
        flags[key.strip()] = value
    return flags


def _report_problems(check: WorkflowCheck) -> None:
    for problem in check.problems:
        click.echo(f"  {problem}")


def _report_sandbox(workflow: Workflow, *, quiet: bool) -> bool:
    """The agents' sandbox on this machine; False when the daemon would refuse to start here."""
    from orchestrator.agent.presets import build_command, permissions_summary
    from orchestrator.agent.settings import AgentPreset
    from orchestrator.runtime.containment import SandboxRefused, decide, probe_for
    from orchestrator.runtime.wiring import agent_settings

    policy = workflow.policy
    try:
        decision = decide(policy, probe_for(policy.agent.sandbox))
    except SandboxRefused as refused:
        click.echo(f"  on this machine the daemon would refuse to start: {refused}")
        return False
    if not quiet:
        click.echo(f"\n  agent sandbox on this machine: {decision.mode} ({decision.reason})")
        settings = agent_settings(policy)
        command = build_command(
            settings, prompt_file=Path(".orchestrator/prompt.md"), resume_session_id=None
        )
        how = (
            "spoken to in JSON-RPC; the prompt goes in its turn/start request"
            if settings.preset is AgentPreset.CODEX_APP_SERVER
            else "prompt on stdin"
        )
        click.echo(f"  agent command: {command} ({how})")
        sandboxed = decision.mode != "none"
        click.echo(f"  the agent may: {permissions_summary(settings, sandboxed=sandboxed)}")
    return True


def _report_policy(workflow: Workflow) -> None:
    order = " > ".join(kind.value for kind in PRECEDENCE)
    click.echo(f"\n  effective policy (precedence: {order}):")
    for line in effective_policy_lines(workflow):
        click.echo(f"    {line}")


def _report_prompts(workflow: Workflow) -> bool:
    prompt = workflow.prompt
    if prompt.is_default:
        click.echo("\n  prompt: empty body, built-in prompt for each agent phase")
    else:
        click.echo(f"\n  prompt: template from line {prompt.first_line}")
    try:
        rendered = render_samples(prompt, workflow.policy)
    except PromptRenderError as exc:
        click.echo(f"  {exc}")
        return False
    issue = sample_issue()
    for phase in PROMPT_PHASES:
        click.echo(f"\n  --- prompt for phase {phase}, sample issue {issue.identifier} ---")
        for line in rendered[phase].rstrip("\n").split("\n"):
            click.echo(f"    {line}" if line else "")
    return True


@click.command("validate")
@click.argument("paths", nargs=-1, type=click.Path(dir_okay=True, path_type=str))
@click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a setting by its dotted key (strongest layer), e.g. agent.max_turns=5.",
)
@click.option(
    "--prompts/--no-prompts",
    default=True,
    show_default=True,
    help="Render the prompt of each agent phase for a sample issue.",
)
@click.option("-q", "--quiet", is_flag=True, help="Print only the verdict and the problems.")
def validate(paths: tuple[str, ...], sets: tuple[str, ...], prompts: bool, quiet: bool) -> None:
    """Check WORKFLOW.md files (default: ./WORKFLOW.md).

    Prints the errors of an invalid file and exits with status 1; for a valid
    file prints its warnings, the agents' sandbox on this machine, every
    effective setting with where it came from (flag, env, file or default), and
    the prompt of each agent phase. A valid file the daemon would refuse to
    start with here (its agent sandbox cannot be had) also exits with status 1.
    """
    flags = _parse_sets(sets)
    failed = False
    for index, path in enumerate(paths or ("WORKFLOW.md",)):
        if index:
            click.echo("")
        check = check_workflow(path, flags=flags)
        name = display_name(Path(path))
        if check.workflow is None:
            failed = True
            count = len(check.errors)
            click.echo(f"{name}: invalid ({count} error{'s' if count != 1 else ''})")
            _report_problems(check)
            continue
        warnings = len(check.warnings)
        suffix = f" ({warnings} warning{'s' if warnings != 1 else ''})" if warnings else ""
        click.echo(f"{name}: valid{suffix}")
        _report_problems(check)
        if not _report_sandbox(check.workflow, quiet=quiet):
            failed = True
        if quiet:
            continue
        _report_policy(check.workflow)
        if prompts and not _report_prompts(check.workflow):
            failed = True
    if failed:
        raise SystemExit(1)
