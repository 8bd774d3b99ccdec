"""`alicerce apply onprem`: generate the on-prem Ansible project and run it through ansible-runner."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from alicerce.cli.common import DEFAULT_SPEC, EnvOption, JsonOption, SpecArg, load
from alicerce.cli.errors import UsageError, user_errors

if TYPE_CHECKING:
    from alicerce.run.ansible import Event, EventCollector, RunResult

EXIT_RUN_FAILED = 3
"""A host failed or was unreachable (2 stays the code of user mistakes)."""

apply_app = typer.Typer(name="apply", help="Apply the platform to its targets.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(apply_app)


@apply_app.command("onprem")
@user_errors(json_flag="as_json")
def onprem(
    *,
    env: EnvOption,
    spec: SpecArg = DEFAULT_SPEC,
    check: Annotated[bool, typer.Option("--check", help="Check mode with diffs: report what would change.")] = False,
    limit: Annotated[str | None, typer.Option("--limit", "-l", help="Only hosts matching this Ansible pattern.")] = None,
    tags: Annotated[str | None, typer.Option("--tags", "-t", help="Only tasks with these tags (comma separated).")] = None,
    skip_tags: Annotated[str | None, typer.Option("--skip-tags", help="Skip tasks with these tags.")] = None,
    playbook: Annotated[str, typer.Option("--playbook", help="site.yml (provision) or validate.yml (acceptance only).")] = "site.yml",
    workdir: Annotated[Path, typer.Option("--workdir", help="Generated project and run artifacts live here.")] = Path("out/apply"),
    inventory: Annotated[
        list[Path] | None, typer.Option("--inventory", "-i", help="Extra inventory (connection details, host_vars).")
    ] = None,
    secrets: Annotated[
        list[Path] | None, typer.Option("--secrets", help="ansible-vault file with the roles' secrets (set ANSIBLE_VAULT_PASSWORD_FILE).")
    ] = None,
    kubespray: Annotated[
        str,
        typer.Option(
            "--kubespray",
            help="kubespray playbook between the node and cluster stages: cluster (build or reconfigure), upgrade-cluster "
            "(drains in batches), scale (new nodes, with --limit) or skip.",
        ),
    ] = "cluster",
    kubespray_env: Annotated[
        Path | None, typer.Option("--kubespray-env", help="An existing environment with kubespray's Ansible and collection.")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Provision the on-prem nodes of ENV: the node stage, kubespray, then the cluster stage with acceptance."""
    from alicerce.emit.tree import EmitError, render_tree, write_tree
    from alicerce.rules.validate import validated
    from alicerce.run.ansible import KubesprayEnvironment, RunError, Stage, apply_sequence, kubespray_environment, run_playbook

    platform = validated(load(spec), env)
    try:
        files = render_tree(platform, subtrees=["ansible"])
    except EmitError as exc:
        raise UsageError(str(exc)) from None
    if not any(path.startswith("ansible/") for path in files):
        raise UsageError(f"environment {env} has no on-prem node pools", hint="apply onprem needs a site with provider: onprem")
    for path in [*(inventory or []), *(secrets or [])]:
        if not path.is_file():
            raise UsageError(f"{path} is not a file")
    if kubespray not in ("cluster", "upgrade-cluster", "scale", "skip"):
        raise UsageError(f"--kubespray {kubespray}: choose cluster, upgrade-cluster, scale or skip")
    base = workdir / env
    write_tree(base / "project", files)
    ansible_dir = base / "project" / "ansible"
    sites = sorted({path.split("/")[2] for path in files if path.startswith("ansible/kubespray/") and path.endswith("/inventory.yml")})
    # the whole sequence for a provisioning run; a check, a tag selection or another playbook runs alone
    sequence = playbook == "site.yml" and not check and not tags
    display = _Display(enabled=not as_json)
    results: list[tuple[Stage, RunResult]] = []
    try:
        environment = None
        if sequence and kubespray != "skip":
            environment = (
                KubesprayEnvironment(kubespray_env)
                if kubespray_env
                else kubespray_environment(ansible_dir / "kubespray", base / "kubespray-env")
            )
        stages = apply_sequence(ansible_dir, sites, kubespray, environment) if sequence else [Stage(playbook, ansible_dir, playbook)]
        with display:
            for stage in stages:
                result = run_playbook(
                    stage.project,
                    stage.playbook,
                    base / "runner",
                    check=check,
                    limit=limit,
                    tags=tags,
                    skip_tags=skip_tags if stage.environment is None else None,
                    inventories=inventory,
                    extra_vars_files=secrets,
                    on_event=display.event,
                    inventory=stage.inventory,
                    environment=stage.environment,
                )
                results.append((stage, result))
                if not result.ok:
                    break
    except RunError as exc:
        raise UsageError(str(exc)) from None
    result = results[-1][1]
    kubeconfigs = [str(ansible_dir / "kubespray" / site / "artifacts" / "admin.conf") for site in sites] if sequence and result.ok else []
    if as_json:
        data = _result_data(result)
        data["stages"] = [{"stage": st.name, "playbook": st.playbook, "ok": r.ok, "artifacts": str(r.artifacts)} for st, r in results]
        data["kubeconfigs"] = kubeconfigs
        print(json.dumps(data, indent=2))
    else:
        for stage, stage_result in results:
            _print_recap(stage_result, stage.name)
        for admin in kubeconfigs:
            print(f"kubeconfig: {admin}; hand it to Pulumi with the command in {ansible_dir / 'README.md'}")
    if not result.ok:
        raise typer.Exit(EXIT_RUN_FAILED)


def _result_data(result: RunResult) -> dict[str, object]:
    return {
        "status": result.status,
        "rc": result.rc,
        "ok": result.ok,
        "artifacts": str(result.artifacts),
        "tasks": result.tasks,
        "hosts": {host: vars(stats) for host, stats in sorted(result.stats.items())},
        "failures": [{"kind": type(f).__name__, "host": f.host, "task": f.task, "message": f.message} for f in result.failures],
    }


class _Display:
    """Live progress on stderr: the current play and task and the running host counters."""

    def __init__(self, enabled: bool) -> None:
        from rich.console import Console

        self.enabled = enabled and sys.stderr.isatty()
        self.plain = enabled and not self.enabled
        self.console = Console(stderr=True)
        self.live: object | None = None
        self.counts = {"ok": 0, "changed": 0, "failed": 0, "unreachable": 0, "skipped": 0}

    def __enter__(self) -> _Display:
        if self.enabled:
            from rich.live import Live

            live = Live(console=self.console, refresh_per_second=8, transient=True)
            live.__enter__()
            self.live = live
        return self

    def __exit__(self, *exc: object) -> None:
        if self.live is not None:
            self.live.__exit__(None, None, None)  # type: ignore[attr-defined]

    def event(self, event: Event, collector: EventCollector) -> None:
        kind = event.get("event", "")
        counter = {
            "runner_on_ok": "ok",
            "runner_on_failed": "failed",
            "runner_on_unreachable": "unreachable",
            "runner_on_skipped": "skipped",
        }.get(kind)
        if counter:
            data = event.get("event_data", {}) or {}
            if counter == "ok" and (data.get("res") or {}).get("changed"):
                counter = "changed"
            self.counts[counter] += 1
            if counter in ("failed", "unreachable") and (self.plain or self.live is not None):
                failure = collector.failures[-1] if collector.failures else None
                if failure is not None:
                    self.console.print(f"[red]{counter}[/red] {failure}")
        if kind == "playbook_on_play_start" and self.plain:
            self.console.print(f"PLAY {collector.play}")
        if kind == "playbook_on_task_start" and self.plain:
            self.console.print(f"  task {collector.tasks}: {collector.task}", highlight=False)
        if self.live is not None:
            from rich.text import Text

            c = self.counts
            self.live.update(  # type: ignore[attr-defined]
                Text.assemble(
                    (f"{collector.play}\n", "bold"),
                    f"task {collector.tasks}: {collector.task}\n",
                    (f"ok {c['ok']}  ", "green"),
                    (f"changed {c['changed']}  ", "yellow"),
                    (f"failed {c['failed']}  ", "red"),
                    (f"unreachable {c['unreachable']}  ", "magenta"),
                    f"skipped {c['skipped']}",
                )
            )


def _print_recap(result: RunResult, stage: str = "") -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    table = Table(title=f"{stage + ' ' if stage else ''}recap: {result.status} (artifacts: {result.artifacts})")
    for column in ("host", "ok", "changed", "failed", "unreachable", "skipped", "rescued", "ignored"):
        table.add_column(column, justify="left" if column == "host" else "right")
    for host, stats in sorted(result.stats.items()):
        style = "red" if stats.failed or stats.unreachable else ("yellow" if stats.changed else "green")
        table.add_row(
            host,
            *(str(getattr(stats, c)) for c in ("ok", "changed", "failed", "unreachable", "skipped", "rescued", "ignored")),
            style=style,
        )
    console.print(table)
    for failure in result.failures:
        kind = "unreachable" if type(failure).__name__ == "HostUnreachable" else "failed"
        console.print(f"[red]{kind}[/red]: {failure}", highlight=False)
