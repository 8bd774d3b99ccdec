"""Run a generated Ansible project through ansible-runner, with typed results and live events.

:func:`run_playbook` is the one place alicerce starts Ansible. It keeps every run's artifacts
(``<private dir>/artifacts/<ident>/``: stdout, events, the final status), turns the event stream
into per-host counters and typed failures (:class:`TaskFailed`, :class:`HostUnreachable`), and
calls ``on_event`` for a live display.

:func:`apply_sequence` is what ``alicerce apply onprem`` runs: the node stage (``site.yml``),
kubespray's playbook per site from kubespray's own environment (:func:`kubespray_environment`:
its playbooks refuse alicerce's ansible-core), then the cluster stage (``post-cluster.yml``),
stopping at the first stage that fails.
"""

from __future__ import annotations

import datetime
import hashlib
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Event = dict[str, Any]


@dataclass
class HostStats:
    ok: int = 0
    changed: int = 0
    failed: int = 0
    unreachable: int = 0
    skipped: int = 0
    rescued: int = 0
    ignored: int = 0


@dataclass(frozen=True)
class HostFailure:
    """One host that failed: the task, and Ansible's message."""

    host: str
    task: str
    message: str

    def __str__(self) -> str:
        return f"{self.host}: {self.task}: {self.message}"


class TaskFailed(HostFailure):
    """A task failed on a host."""


class HostUnreachable(HostFailure):
    """Ansible could not reach the host."""


@dataclass
class RunResult:
    status: str  # successful, failed, timeout, canceled
    rc: int
    ident: str
    artifacts: Path
    stats: dict[str, HostStats] = field(default_factory=dict)
    failures: list[HostFailure] = field(default_factory=list)
    tasks: int = 0

    @property
    def ok(self) -> bool:
        return self.rc == 0 and self.status == "successful" and not self.failures


class RunError(Exception):
    """ansible-runner could not start the run (missing project, playbook or inventory)."""


def _message(res: dict[str, Any]) -> str:
    for key in ("msg", "stderr", "reason", "module_stderr"):
        value = res.get(key)
        if value:
            return str(value).strip().splitlines()[0] if key != "msg" else str(value).strip()
    return "failed"


class EventCollector:
    """Folds ansible-runner events into counters and typed failures."""

    def __init__(self, on_event: Callable[[Event, EventCollector], None] | None = None) -> None:
        self.stats: dict[str, HostStats] = {}
        self.failures: list[HostFailure] = []
        self.tasks = 0
        self.play = ""
        self.task = ""
        self._on_event = on_event

    def __call__(self, event: Event) -> bool:
        kind = event.get("event", "")
        data: dict[str, Any] = event.get("event_data", {}) or {}
        host = str(data.get("host", ""))
        if kind == "playbook_on_play_start":
            self.play = str(data.get("play", ""))
        elif kind == "playbook_on_task_start":
            self.tasks += 1
            self.task = str(data.get("task", ""))
        elif kind == "runner_on_failed" and not data.get("ignore_errors"):
            self.failures.append(TaskFailed(host, str(data.get("task", self.task)), _message(data.get("res", {}) or {})))
        elif kind == "runner_on_unreachable":
            self.failures.append(HostUnreachable(host, str(data.get("task", self.task)), _message(data.get("res", {}) or {})))
        elif kind == "playbook_on_stats":
            for key, attr in (
                ("ok", "ok"),
                ("changed", "changed"),
                ("failures", "failed"),
                ("dark", "unreachable"),
                ("skipped", "skipped"),
                ("rescued", "rescued"),
                ("ignored", "ignored"),
            ):
                for name, count in (data.get(key) or {}).items():
                    setattr(self.stats.setdefault(name, HostStats()), attr, int(count))
        if self._on_event is not None:
            self._on_event(event, self)
        return True  # keep the event in the artifacts


VAULT_HEADER = b"$ANSIBLE_VAULT;"
MAX_SECRETS_BYTES = 1 << 20


def plaintext_secrets(path: Path) -> list[str]:
    """The keys of ``path`` whose values are not ansible-vault encrypted; [] when all of it is.

    A whole file encrypted by ``ansible-vault encrypt`` starts with ``$ANSIBLE_VAULT;``; a vars
    file may instead hold inline ``!vault |`` values. Only key paths are returned, never values.
    Raises :class:`RunError` when the file cannot be read.
    """
    import yaml

    from alicerce.spec.source import SourceTooLarge, UnreadableSource, read_regular_file

    try:
        raw = read_regular_file(path, MAX_SECRETS_BYTES)
    except UnreadableSource as exc:
        raise RunError(f"{path}: {exc} ({exc.hint})") from None
    except SourceTooLarge:
        raise RunError(f"{path} is over {MAX_SECRETS_BYTES:,} bytes; a secrets file holds a few keys") from None
    if raw.lstrip().startswith(VAULT_HEADER):
        return []
    sealed = object()

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!vault", lambda loader, node: sealed)
    try:
        data = yaml.load(raw, Loader=Loader)
    except yaml.YAMLError:
        return ["(the whole file: it is not YAML)"]
    plaintext: list[str] = []

    def walk(value: Any, where: str) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                walk(item, f"{where}.{key}" if where else str(key))
        elif isinstance(value, list):
            for index, item in enumerate(value):
                walk(item, f"{where}[{index}]")
        elif value is not sealed and value is not None:
            plaintext.append(where or "(the whole file)")

    walk(data, "")
    return plaintext


def run_playbook(
    project: Path,
    playbook: str,
    private_dir: Path,
    *,
    check: bool = False,
    limit: str | None = None,
    tags: str | None = None,
    skip_tags: str | None = None,
    inventories: list[Path] | None = None,
    extra_vars_files: list[Path] | None = None,
    on_event: Callable[[Event, EventCollector], None] | None = None,
    ident: str | None = None,
    inventory: str = "inventory.yml",
    environment: KubesprayEnvironment | None = None,
) -> RunResult:
    """Run ``playbook`` of the generated ``project`` folder; every run's artifacts stay under ``private_dir``.

    ``environment``: run the ansible-playbook (and collections) of that environment instead of this
    interpreter's (kubespray's pinned ansible-core).
    """
    import ansible_runner  # type: ignore[import-untyped]

    project = project.absolute()
    if not (project / playbook).is_file():
        raise RunError(f"no playbook {playbook} in {project}")
    private_dir = private_dir.absolute()
    private_dir.mkdir(parents=True, exist_ok=True)
    ident = ident or datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%S.%fZ")
    cmdline: list[str] = []
    for extra in inventories or []:
        cmdline += ["-i", str(extra.absolute())]
    for path in extra_vars_files or []:
        cmdline += ["-e", f"@{path.absolute()}"]
    if check:
        cmdline += ["--check", "--diff"]
    if skip_tags:
        cmdline += ["--skip-tags", skip_tags]
    collector = EventCollector(on_event)
    # the ansible-playbook of this interpreter's environment, whatever PATH the caller has
    first = environment.bin if environment is not None else Path(sys.executable).parent
    search = os.pathsep.join([str(first), os.environ.get("PATH", "/usr/bin:/bin")])
    envvars = {"ANSIBLE_CONFIG": str(project / "ansible.cfg"), "PATH": search}
    if environment is not None:
        envvars["ANSIBLE_COLLECTIONS_PATH"] = str(environment.collections)
    if os.environ.get("ANSIBLE_VAULT_PASSWORD_FILE"):
        envvars["ANSIBLE_VAULT_PASSWORD_FILE"] = os.environ["ANSIBLE_VAULT_PASSWORD_FILE"]
    runner = ansible_runner.run(
        private_data_dir=str(private_dir),
        project_dir=str(project),
        playbook=playbook,
        inventory=str(project / inventory),
        cmdline=" ".join(_quote(c) for c in cmdline) or None,
        limit=limit,
        tags=tags,
        envvars=envvars,
        ident=ident,
        event_handler=collector,
        quiet=True,
        json_mode=False,
    )
    return RunResult(
        status=str(runner.status),
        rc=int(runner.rc if runner.rc is not None else 1),
        ident=ident,
        artifacts=private_dir / "artifacts" / ident,
        stats=collector.stats,
        failures=collector.failures,
        tasks=collector.tasks,
    )


@dataclass(frozen=True)
class KubesprayEnvironment:
    """A Python environment with kubespray's pinned Ansible and the kubespray collection."""

    root: Path

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    @property
    def collections(self) -> Path:
        return self.root / "collections"


def kubespray_environment(
    kubespray_dir: Path, root: Path, run: Callable[..., subprocess.CompletedProcess[str]] = subprocess.run
) -> KubesprayEnvironment:
    """The environment kubespray runs in, built once from the generated requirements (rebuilt when they change).

    ``python -m venv``, ``pip install --require-hashes -r requirements.lock`` (its ansible and Python
    pins and all they install, each checked against its sha256), then ``ansible-galaxy collection
    install -r requirements.yml`` (the collection at the pinned commit).
    """
    requirements = [kubespray_dir / "requirements.lock", kubespray_dir / "requirements.yml"]
    digest = hashlib.sha256(b"".join(path.read_bytes() for path in requirements)).hexdigest()
    environment = KubesprayEnvironment(root.absolute())
    stamp = environment.root / ".alicerce-kubespray"
    if stamp.is_file() and stamp.read_text(encoding="utf-8") == digest:
        return environment
    steps = [
        [sys.executable, "-m", "venv", "--clear", str(environment.root)],
        [str(environment.bin / "pip"), "install", "--quiet", "--require-hashes", "-r", str(requirements[0])],
        [
            str(environment.bin / "ansible-galaxy"),
            "collection",
            "install",
            "-r",
            str(requirements[1]),
            "-p",
            str(environment.collections),
        ],
    ]
    for step in steps:
        done = run(step, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            why = (done.stderr or done.stdout).strip()[-400:]
            raise RunError(f"building kubespray's environment failed at `{' '.join(step[:3])}`: {why}")
    stamp.write_text(digest, encoding="utf-8")
    return environment


@dataclass(frozen=True)
class Stage:
    """One playbook of the apply sequence."""

    name: str
    project: Path
    playbook: str
    inventory: str = "inventory.yml"
    environment: KubesprayEnvironment | None = None
    limit: str | None = None


def apply_sequence(
    ansible_dir: Path,
    sites: list[str],
    kubespray: str,
    environment: KubesprayEnvironment | None,
    *,
    limit: str | None = None,
    selected: dict[str, list[str]] | None = None,
) -> list[Stage]:
    """The node stage, kubespray's ``kubespray`` playbook for every site (none with ``skip``), the cluster stage.

    With ``limit``, ``selected`` holds the hosts of each site's kubespray inventory that the limit picks
    in alicerce's inventory: kubespray's inventory has none of alicerce's site, rack or purpose groups,
    so kubespray gets the host names. Its facts playbook first refreshes the fact cache of every host
    (kubespray docs/operations/nodes.md: before using --limit), and a site the limit leaves empty
    gets no kubespray run.
    """
    stages = [Stage("nodes", ansible_dir, "site.yml", limit=limit)]
    if kubespray != "skip":
        for site in sites:
            project, inventory = ansible_dir / "kubespray", f"{site}/inventory.yml"
            hosts = None if limit is None else (selected or {}).get(site, [])
            if hosts == []:
                continue
            if hosts is not None:
                stages.append(Stage(f"kubespray {site} facts", project, f"{site}/facts.yml", inventory, environment))
            run = Stage(
                f"kubespray {site}", project, f"{site}/{kubespray}.yml", inventory, environment, None if hosts is None else ",".join(hosts)
            )
            stages.append(run)
    stages.append(Stage("cluster", ansible_dir, "post-cluster.yml", limit=limit))
    return stages


def limit_hosts(inventories: list[Path], pattern: str) -> list[str]:
    """The hosts ``--limit pattern`` selects from ``inventories``, in inventory order (Ansible's own matching)."""
    from ansible.inventory.manager import InventoryManager  # type: ignore[import-untyped]
    from ansible.parsing.dataloader import DataLoader  # type: ignore[import-untyped]

    manager = InventoryManager(loader=DataLoader(), sources=[str(path.absolute()) for path in inventories])
    manager.subset(pattern)
    return [host.name for host in manager.get_hosts()]


def _quote(arg: str) -> str:
    import shlex

    return shlex.quote(arg)
