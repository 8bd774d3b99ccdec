"""`alicerce apply onprem`: generate the on-prem Ansible project and run it through ansible-runner."""

from __future__ import annotations

import os
import sys
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from alicerce.cli.common import DEFAULT_SPEC, EnvOption, ForceOption, SpecArg, choose_environment, load
from alicerce.cli.errors import UsageError, user_errors, warn
from alicerce.cli.output import Column, Format, FormatOption, JsonAlias, Table, console, print_json, print_table, wants_json
from alicerce.spec.text import escaped

if TYPE_CHECKING:
    from alicerce.run.ansible import Event, EventCollector, HostFailure, RunResult


class KubesprayPlaybook(str, Enum):
    """kubespray's playbook between the node and cluster stages."""

    cluster = "cluster"
    upgrade_cluster = "upgrade-cluster"
    scale = "scale"
    remove_node = "remove-node"
    skip = "skip"


EXIT_RUN_FAILED = 3
"""A host failed or was unreachable (2 stays the code of user mistakes)."""
EXIT_SIGNAL = 128
"""Interrupted (SIGINT, SIGTERM): 128 + the signal's number, as a shell reports it."""

apply_app = typer.Typer(name="apply", help="Apply the platform to its targets.", no_args_is_help=True, rich_markup_mode=None)

EPILOG = """\b
Examples:
  alicerce apply onprem --env prod --check              what provisioning would change, with diffs
  alicerce apply onprem --env prod -i hosts.yml --secrets secrets.vault.yml
                                                        provision: nodes, kubespray, host acceptance
  alicerce apply onprem --env prod -i hosts.yml --accept
                                                        cluster acceptance, once the GPU Operator runs
  alicerce apply onprem --env prod --kubespray scale --limit gpu-017.dc1.acme.example
                                                        add a node
  alicerce apply onprem --env prod --kubespray remove-node --limit gpu-005.dc1.acme.example [--offline]
                                                        drain and remove a node (then drop it from the spec)
  alicerce apply onprem --env prod --kubespray upgrade-cluster
                                                        change a running cluster in drained batches
  alicerce apply onprem --env prod --limit rack_dc1_r01 --tags nvidia_driver
                                                        one rack, one role
"""


def register(app: typer.Typer) -> None:
    app.add_typer(apply_app)


@apply_app.command("onprem", epilog=EPILOG)
@user_errors()
def onprem(
    *,
    env: EnvOption = None,
    spec: SpecArg = DEFAULT_SPEC,
    check: Annotated[bool, typer.Option("--check", help="Check mode with diffs: report what would change.")] = False,
    limit: Annotated[str | None, typer.Option("--limit", "-l", help="Only hosts matching this Ansible pattern.")] = None,
    tags: Annotated[str | None, typer.Option("--tags", "-t", help="Only tasks with these tags (comma separated).")] = None,
    skip_tags: Annotated[str | None, typer.Option("--skip-tags", help="Skip tasks with these tags.")] = None,
    playbook: Annotated[str, typer.Option("--playbook", help="site.yml (provision) or validate.yml (acceptance only).")] = "site.yml",
    workdir: Annotated[
        Path, typer.Option("--workdir", help="Generated project and run artifacts live here (outside generate's --out).")
    ] = Path(".alicerce-apply"),
    inventory: Annotated[
        list[Path] | None, typer.Option("--inventory", "-i", help="Extra inventory (connection details, host_vars).")
    ] = None,
    secrets: Annotated[
        list[Path] | None, typer.Option("--secrets", help="ansible-vault file with the roles' secrets (set ANSIBLE_VAULT_PASSWORD_FILE).")
    ] = None,
    kubespray: Annotated[
        KubesprayPlaybook,
        typer.Option(
            "--kubespray",
            help="kubespray playbook between the node and cluster stages: cluster (build or reconfigure), upgrade-cluster "
            "(drains in batches), scale (new nodes, with --limit), remove-node (drains and removes the --limit hosts, "
            "kubespray alone) or skip.",
        ),
    ] = KubesprayPlaybook.cluster,
    offline: Annotated[
        bool,
        typer.Option("--offline", help="With --kubespray remove-node: the node is down; remove it from the cluster without reaching it."),
    ] = False,
    accept: Annotated[
        bool,
        typer.Option(
            "--accept",
            help="Cluster acceptance only (accept.yml): every node Ready and offering its GPUs; run it once the GPU Operator is synced.",
        ),
    ] = False,
    kubespray_env: Annotated[
        Path | None, typer.Option("--kubespray-env", help="An existing environment with kubespray's Ansible and collection.")
    ] = None,
    allow_plaintext_secrets: Annotated[
        bool, typer.Option("--allow-plaintext-secrets", help="Accept a --secrets file that is not ansible-vault encrypted in CI.")
    ] = False,
    force: ForceOption = False,
    output_format: FormatOption = Format.text,
    as_json: JsonAlias = False,
) -> None:
    """Provision the on-prem site of ENV: the node stage, kubespray, then the cluster stage with acceptance.

    A --secrets file that is not ansible-vault encrypted gets a warning, and is refused in CI
    (CI=true or CI=1) unless --allow-plaintext-secrets.
    """
    from alicerce.emit.ansible.kubespray import ARTIFACTS
    from alicerce.emit.tree import check_output, render_tree, write_tree
    from alicerce.rules.validate import validated
    from alicerce.run.ansible import (
        KubesprayEnvironment,
        RunError,
        Stage,
        apply_sequence,
        kubespray_environment,
        limit_hosts,
        plaintext_secrets,
        run_playbook,
    )

    as_json = wants_json(output_format, as_json)
    document = load(spec)
    env = choose_environment(document, env)
    project = workdir / env / "project"
    check_output(project, [spec])
    for folder in (workdir / env / "runner", workdir / env / "kubespray-env"):
        _refuse_non_folder(folder)
    platform = validated(document, env)
    files = render_tree(platform, subtrees=["ansible"])
    if not any(path.startswith("ansible/") for path in files):
        raise UsageError(f"environment {env} has no on-prem node pools", hint="apply onprem needs a site with provider: onprem")
    for path in inventory or []:
        if not (path.is_file() or path.is_dir()):  # Ansible reads an inventory folder as every source in it
            raise UsageError(f"{path} is neither a regular file nor a folder", "--inventory names an inventory file or folder")
    for path in secrets or []:
        if not path.is_file():
            raise UsageError(f"{path} is not a regular file", "--secrets names a YAML file")
    for path in secrets or []:
        try:
            plaintext = plaintext_secrets(path)
        except RunError as exc:
            raise UsageError(str(exc)) from None
        _check_secrets(path, plaintext, allow_plaintext_secrets)
    write_tree(project, files, force=force, protected=[spec])
    base = workdir / env
    ansible_dir = project / "ansible"
    sites = sorted({path.split("/")[2] for path in files if path.startswith("ansible/kubespray/") and path.endswith("/inventory.yml")})
    # the whole sequence for a provisioning run; a check, a tag selection or another playbook runs alone
    if accept:
        playbook = "accept.yml"
    if offline and kubespray is not KubesprayPlaybook.remove_node:
        raise UsageError("--offline applies only to --kubespray remove-node")
    if kubespray is KubesprayPlaybook.remove_node and (limit is None or check or tags or playbook != "site.yml"):
        raise UsageError(
            "--kubespray remove-node needs --limit naming the hosts to remove, without --check, --tags, --playbook or --accept",
            "alicerce apply onprem --kubespray remove-node --limit HOST",
        )
    sequence = playbook == "site.yml" and not check and not tags
    display = _Display(enabled=not as_json)
    results: list[tuple[Stage, RunResult]] = []
    try:
        environment = None
        if sequence and kubespray is not KubesprayPlaybook.skip:
            environment = (
                KubesprayEnvironment(kubespray_env)
                if kubespray_env
                else kubespray_environment(ansible_dir / "kubespray", base / "kubespray-env")
            )
        selected = None
        if sequence and limit is not None and kubespray is not KubesprayPlaybook.skip:
            # kubespray's inventories lack alicerce's groups (sites, racks, pools' purposes): resolve the limit here
            picked = set(limit_hosts([ansible_dir / "inventory.yml", *(inventory or [])], limit))
            if not picked:
                raise UsageError(
                    f"--limit {limit} matches no host of the inventory", "name a host, site_*, pool_*, rack_* or purpose_* group"
                )
            selected = {
                site: [h for h in limit_hosts([ansible_dir / "kubespray" / site / "inventory.yml"], "all") if h in picked] for site in sites
            }
        stages = (
            apply_sequence(ansible_dir, sites, kubespray.value, environment, limit=limit, selected=selected, offline=offline)
            if sequence
            else [Stage(playbook, ansible_dir, playbook, limit=limit)]
        )
        with display:
            for stage in stages:
                result = run_playbook(
                    stage.project,
                    stage.playbook,
                    base / "runner",
                    check=check,
                    limit=stage.limit,
                    tags=tags,
                    skip_tags=skip_tags if stage.environment is None else None,
                    inventories=inventory,
                    extra_vars_files=secrets,
                    on_event=display.event,
                    inventory=stage.inventory,
                    environment=stage.environment,
                    options=stage.options,
                    ident=stage.name,
                )
                results.append((stage, result))
                if not stage.passed(result):
                    break
    except RunError as exc:
        raise UsageError(str(exc)) from None
    result = results[-1][1]
    # the hand-off follows kubespray's success, not the cluster stage's: a node that fails host acceptance
    # is that node's problem, and the GPU Operator the cluster acceptance waits for needs this kubeconfig
    built = {st.name.split(" ")[1] for st, r in results if st.environment is not None and st.playbook.endswith("/cluster.yml") and r.ok}
    kubeconfigs = [str(ansible_dir / "kubespray" / ARTIFACTS / site / "admin.conf") for site in sites if site in built]
    removed = [h for st, r in results if r.ok and st.playbook.endswith("/remove-node.yml") for h in _nodes(st.options)]
    scaled = result.ok and any(r.ok and st.playbook.endswith("/scale.yml") for st, r in results)
    accept_next = f"alicerce apply onprem {spec} --env {env} --accept" + (f" --limit {limit}" if limit else "") if scaled else ""
    if as_json:
        data = _result_data(result)
        data["stages"] = [
            {
                "stage": st.name,
                "playbook": st.playbook,
                "ok": r.ok,
                "artifacts": str(r.artifacts),
                "reason": r.reason,
                "spared": st.spared(r) if st.passed(r) else [],
            }
            for st, r in results
        ]
        data["kubeconfigs"] = kubeconfigs
        data["removed"] = removed
        data["next"] = accept_next
        data["held"] = list(dict.fromkeys(h for _, r in results for h in r.held))
        print_json(data)
    else:
        for stage, stage_result in results:
            _print_recap(stage_result, stage.name)
            spared = stage.spared(stage_result) if stage.passed(stage_result) else []
            if spared:
                print(
                    f"went on without {', '.join(spared)} (outside --limit; kubespray's facts run over every host). "
                    f"A dead node leaves with: alicerce apply onprem {spec} --env {env} --kubespray remove-node --offline --limit HOST"
                )
        held = [h for _, r in results for h in r.held]
        if not result.ok and held:
            # post-cluster.yml uncordons every node alicerce drained (its alicerce.dev/drained mark) once it passes
            # acceptance, so a plain re-run resumes; uncordoning by hand would skip the acceptance they have not passed
            print(f"still cordoned (drained by alicerce, not yet accepted): {', '.join(dict.fromkeys(held))}")
            print(f"resume: fix the failure above, then alicerce apply onprem {spec} --env {env} (acceptance uncordons them)")
        for admin in kubeconfigs:
            print(f"kubeconfig: {admin}; hand it to Pulumi with the command in {ansible_dir / 'README.md'}")
        if kubeconfigs:
            print(f"then, once the GPU Operator runs: alicerce apply onprem --env {env} --accept (cluster acceptance)")
        elif accept_next:
            # scale.yml joined new nodes with the acceptance taint: they take work once accept.yml saw their device plugins
            print(f"then: {accept_next} (the new nodes take work once they offer what their pool promises)")
        for host in removed:
            print(f"removed {host} from the cluster: delete it from {spec} (its pool's hosts) before the next apply")
    if result.signal is not None:
        raise typer.Exit(EXIT_SIGNAL + result.signal)
    if not result.ok:
        raise typer.Exit(EXIT_RUN_FAILED)


def _nodes(options: tuple[str, ...]) -> list[str]:
    """The hosts of a remove-node stage's ``-e node=a,b``."""
    return [h for o in options if o.startswith("node=") for h in o.removeprefix("node=").split(",")]


def in_ci() -> bool:
    """True under a CI system (GitHub Actions, GitLab CI and most others set CI=true)."""
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def _check_secrets(path: Path, plaintext: list[str], allowed: bool) -> None:
    """Warn about a --secrets file that is not vault-encrypted; refuse it in CI unless allowed."""
    if not plaintext:
        return
    # key names are the file's text: shown escaped, so an escape code in one never reaches the terminal raw
    names = ", ".join(escaped(name) for name in plaintext[:5]) + (f" and {len(plaintext) - 5} more" if len(plaintext) > 5 else "")
    message = f"{escaped(str(path), None)} is not encrypted with ansible-vault (plaintext: {names})"
    hint = f"encrypt it with `ansible-vault encrypt {path}`"
    if in_ci() and not allowed:
        raise UsageError(f"{message}; refused in CI", f"{hint}, or pass --allow-plaintext-secrets")
    warn(message, hint)


def _kind(failure: HostFailure) -> str:
    return "unreachable" if type(failure).__name__ == "HostUnreachable" else "failed"


def failure_groups(failures: list[HostFailure]) -> list[dict[str, Any]]:
    """One entry per distinct failure (kind, task, message) with every host it hit, each host once."""
    groups: dict[tuple[str, str, str], list[str]] = {}
    for failure in failures:
        hosts = groups.setdefault((_kind(failure), failure.task, failure.message), [])
        if failure.host not in hosts:
            hosts.append(failure.host)
    return [{"kind": kind, "task": task, "message": message, "hosts": sorted(hosts)} for (kind, task, message), hosts in groups.items()]


def _result_data(result: RunResult) -> dict[str, Any]:
    unique = list(dict.fromkeys((type(f).__name__, f.host, f.task, f.message) for f in result.failures))
    return {
        "schemaVersion": 1,
        "status": result.status,
        "rc": result.rc,
        "ok": result.ok,
        "artifacts": str(result.artifacts),
        "tasks": result.tasks,
        "hosts": {host: vars(stats) for host, stats in sorted(result.stats.items())},
        "failures": [{"kind": kind, "host": host, "task": task, "message": message} for kind, host, task, message in unique],
        "failureGroups": failure_groups(result.failures),
        "reason": result.reason,
        "held": result.held,
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
            self.counts[counter] += 1  # failures are counted here and listed once, grouped, in the recap
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
    """Per-host counters (host names whole), then each distinct failure once with the hosts it hit."""
    out = console()
    columns = ("ok", "changed", "failed", "unreachable", "skipped", "rescued", "ignored")
    title = f"{stage + ' ' if stage else ''}recap: {result.status} (log: {result.artifacts / 'stdout'})"
    table = Table(title, [Column("host", key=True), *(Column(c, numeric=True) for c in columns)])
    for host, stats in sorted(result.stats.items()):
        style = "red" if stats.failed or stats.unreachable else ("yellow" if stats.changed else "green")
        table.add(host, *(str(getattr(stats, c)) for c in columns), style=style)
    print_table(table, out)
    if result.signal is not None:
        out.print(f"interrupted by signal {result.signal}: the playbook and every Ansible worker were stopped", markup=False)
    elif result.reason:
        out.print(f"failed before any host ran: {result.reason}", markup=False, highlight=False)
    for group in failure_groups(result.failures):
        hosts = group["hosts"]
        count = f"{len(hosts)} host{'s' if len(hosts) != 1 else ''}"
        from rich.markup import escape

        out.print(f'[red]{group["kind"]}[/red] ({count}) at task "{escape(group["task"])}": {escape(group["message"])}')
        out.print(f"  hosts: {', '.join(hosts)}", markup=False)


def _refuse_non_folder(path: Path) -> None:
    """Refuse, before any work, a run folder of the workdir that exists and is not a folder (ansible-runner would fail late)."""
    if os.path.lexists(path) and not os.path.isdir(path):
        raise UsageError(f"{path} is not a folder", "apply keeps its run artifacts there: move that file away, or choose another --workdir")
