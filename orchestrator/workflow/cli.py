"""``orchestrator validate``: check policy files and show the effective policy with its origins."""

from __future__ import annotations

from pathlib import Path

import click

from orchestrator.workflow.display import effective_policy_lines
from orchestrator.workflow.import_symphony.keys import FOREIGN_KEYS
from orchestrator.workflow.loader import Workflow, WorkflowCheck, check_workflow, display_name
from orchestrator.workflow.problems import PromptRenderError
from orchestrator.workflow.prompt import PROMPT_PHASES
from orchestrator.workflow.prompt_samples import render_samples, sample_issue
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
    from orchestrator.wiring.agents import agent_settings
    from orchestrator.wiring.containment import SandboxRefused, decide, probe_for

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


def _report_descriptors(workflow: Workflow, *, quiet: bool) -> None:
    """The descriptors the daemon would have here, and the web server's share of them."""
    from orchestrator.daemon.descriptors import expected_limit, web_connection_cap

    limit = expected_limit()
    wanted = workflow.policy.server.max_connections
    cap = web_connection_cap(wanted, limit)
    if cap < wanted:
        click.echo(
            f"  server.max_connections {wanted} is more than a quarter of the {limit.soft} "
            f"descriptors the daemon can have here: it holds {cap} connections at most "
            "(raise the hard limit, LimitNOFILE= under systemd, or lower the key)"
        )
    elif not quiet:
        raised = (
            f", raised by the daemon to its hard limit {limit.soft}"
            if limit.soft > limit.started_with
            else ""
        )
        click.echo(
            f"  open files on this machine: {limit.started_with}{raised}; the web server holds "
            f"up to {cap} connections (server.max_connections, at most a quarter)"
        )


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
        if any(p.key in FOREIGN_KEYS for p in check.warnings):
            click.echo(
                f"  written for Symphony: `orchestrator migrate-workflow {path}` writes the "
                "native file"
            )
        if not _report_sandbox(check.workflow, quiet=quiet):
            failed = True
        _report_descriptors(check.workflow, quiet=quiet)
        if quiet:
            continue
        _report_policy(check.workflow)
        if prompts and not _report_prompts(check.workflow):
            failed = True
    if failed:
        raise SystemExit(1)


@click.command("migrate-workflow")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the native file here (default: standard output).",
)
@click.option("--force", is_flag=True, help="Replace the output file when it exists.")
def migrate_workflow(path: Path, output: Path | None, force: bool) -> None:
    """Rewrite a Symphony or pi-symphony WORKFLOW.md in this product's own keys.

    Symphony's keys become ours (codex: and pi: choose the agent preset,
    pr.repo_slug becomes tracker.repo, ...); keys with no equivalent are
    dropped and listed in a comment at the top with the reason; a `git clone`
    in hooks.after_create is kept as a shell comment (the runtime checks the
    repository out itself); `{% if attempt %}` in the prompt becomes
    `{% if attempt > 1 %}`. Prompt lines that ask the agent to run `gh`, push
    or move tracker states are listed as warnings: here the runtime does that.
    The notes go to standard error. Exits with status 1 when the file has
    errors (nothing is written then).
    """
    from orchestrator.workflow.import_symphony.migrate import migrate_text
    from orchestrator.workflow.loader import read_policy_bytes
    from orchestrator.workflow.problems import Problem

    source = display_name(path)
    data = read_policy_bytes(path, source)
    if isinstance(data, Problem):
        click.echo(f"{source}: cannot migrate\n  {data}", err=True)
        raise SystemExit(1)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        click.echo(f"{source}: cannot migrate: not valid UTF-8", err=True)
        raise SystemExit(1) from None
    target = display_name(output) if output is not None else "<stdout>"
    migration = migrate_text(text, source=source, output=target)
    if migration.text is None:
        count = len(migration.errors)
        click.echo(f"{source}: cannot migrate ({count} error{'s' if count != 1 else ''})", err=True)
        for problem in migration.errors:
            click.echo(f"  {problem}", err=True)
        raise SystemExit(1)
    if output is None:
        click.echo(migration.text, nl=False)
    else:
        if output.exists() and not force:
            click.echo(f"{target}: exists; choose another file or add --force", err=True)
            raise SystemExit(1)
        output.write_text(migration.text, encoding="utf-8")
        click.echo(f"{source}: migrated to {target}", err=True)
    for note in migration.notes:
        click.echo(f"  {note}", err=True)
