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

import contextlib
import datetime
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
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
    signal: int | None = None  # SIGINT/SIGTERM that canceled the run
    reason: str = ""  # why a run that reached no host failed (Ansible's error), for the recap
    held: list[str] = field(default_factory=list)  # hosts this run drained and did not uncordon (they stay cordoned)

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


# task names of the kubernetes_node role (tasks/drain.yml, tasks/release.yml)
DRAIN_TASK = "Drain the node ("
UNCORDON_TASK = "Uncordon the node alicerce drained"


class EventCollector:
    """Folds ansible-runner events into counters and typed failures."""

    def __init__(self, on_event: Callable[[Event, EventCollector], None] | None = None) -> None:
        self.stats: dict[str, HostStats] = {}
        self.failures: list[HostFailure] = []
        self.tasks = 0
        self.drained: list[str] = []  # in drain order; a host leaves when the run uncordons it
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
        elif kind == "runner_on_ok" and (data.get("res") or {}).get("changed"):
            # kubernetes_node's drain.yml and release.yml: what a failed run leaves cordoned, for the recap
            task = str(data.get("task", self.task))
            if task.startswith(DRAIN_TASK) and host not in self.drained:
                self.drained.append(host)
            elif task == UNCORDON_TASK and host in self.drained:
                self.drained.remove(host)
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
    The file is parsed by the spec's own loader (:func:`alicerce.spec.loader.load_text`) with its
    limits (nesting, values, alias expansion, scalar length), ``!vault`` being the one tag it keeps:
    a 300-byte alias bomb is a located error, not gigabytes. Raises :class:`RunError` when the file
    cannot be read, :class:`~alicerce.spec.errors.SpecInvalid` when it is not such a file.
    """
    from alicerce.spec.loader import Tagged, load_text
    from alicerce.spec.source import SourceTooLarge, UnreadableSource, read_regular_file

    try:
        raw = read_regular_file(path, MAX_SECRETS_BYTES)
    except UnreadableSource as exc:
        raise RunError(f"{path}: {exc} ({exc.hint})") from None
    except SourceTooLarge:
        raise RunError(f"{path} is over {MAX_SECRETS_BYTES:,} bytes; a secrets file holds a few keys") from None
    if raw.lstrip().startswith(VAULT_HEADER):
        return []
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise RunError(f"{path} is neither ansible-vault encrypted nor UTF-8 text") from None
    data = load_text(text, str(path), tags=frozenset({"!vault"})).data
    plaintext: list[str] = []

    def walk(value: Any, where: str) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                walk(item, f"{where}.{key}" if where else str(key))
        elif isinstance(value, list):
            for index, item in enumerate(value):
                walk(item, f"{where}[{index}]")
        elif not isinstance(value, Tagged) and value is not None:
            plaintext.append(where or "(the whole file)")

    walk(data, "")
    return plaintext


# What a stage's Ansible inherits from alicerce's environment, and nothing else: ansible-runner seeds a run
# with the whole process environment and writes it to artifacts/<ident>/command, so cloud keys, tokens and
# whatever else the shell holds would reach the disk (and Ansible's lookups). Locale, identity, the SSH agent
# and the Ansible settings a user points at files with (never a password itself) pass; PATH and ANSIBLE_CONFIG
# are the stage's own.
ENVIRONMENT_ALLOWLIST = (
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "TZ",
    "TMPDIR",
    "TERM",
    "SSH_AUTH_SOCK",
    "ANSIBLE_VAULT_PASSWORD_FILE",
    "ANSIBLE_PRIVATE_KEY_FILE",
    "ANSIBLE_REMOTE_USER",
    "ANSIBLE_BECOME_USER",
)
KEEP_RUNS = 30
"""Stage folders kept under the runner folder (about ten applies of three stages); older ones are deleted."""
_LEGACY = ("env", "artifacts")  # the shared layout of alicerce <= 0.x: env/ overrode later runs, artifacts/ held environments


def stage_environment(search_path: str, config: Path, collections: Path | None) -> dict[str, str]:
    """The whole environment of one stage's Ansible: the allowlist, its PATH, its ansible.cfg and collections."""
    env = {name: os.environ[name] for name in ENVIRONMENT_ALLOWLIST if os.environ.get(name)}
    env["PATH"] = search_path
    env["ANSIBLE_CONFIG"] = str(config)
    if collections is not None:
        env["ANSIBLE_COLLECTIONS_PATH"] = str(collections)
    return env


@contextlib.contextmanager
def _process_environment(env: dict[str, str]) -> Iterator[None]:
    """``os.environ`` is ``env`` for the duration: ansible-runner copies os.environ into every run (no option
    turns that off outside containers), so the allowlist holds only if the process environment is the allowlist."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _descendants(root: int) -> list[int]:
    """Every live descendant of process ``root`` (Linux /proc; [] elsewhere)."""
    children: dict[int, list[int]] = {}
    proc = Path("/proc")
    if not proc.is_dir():
        return []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    found: list[int] = []
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def stop_process_tree() -> None:
    """SIGKILL every process group below this process. ansible-runner kills only the playbook's own group, but
    ansible-core's workers each start a session of their own (and their modules with them), so they ran on
    after the playbook was gone; found through the parent links while those still exist."""
    own = os.getpgrp()
    groups: set[int] = set()
    for pid in _descendants(os.getpid()):
        with contextlib.suppress(OSError):
            groups.add(os.getpgid(pid))
    for group in groups - {own}:
        with contextlib.suppress(OSError):
            os.killpg(group, signal.SIGKILL)


class _Interrupt:
    """SIGINT/SIGTERM while a run is in flight: remembered, and handed to ansible-runner's cancel callback,
    which stops the playbook and every worker and module below it (:func:`stop_process_tree`)."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.signum: int | None = None
        self._saved: dict[int, Any] = {}

    def __enter__(self) -> _Interrupt:
        if threading.current_thread() is threading.main_thread():
            for signum in self.SIGNALS:
                self._saved[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, handler in self._saved.items():
            signal.signal(signum, handler)

    def _handle(self, signum: int, frame: object) -> None:
        self.signum = signum

    def cancel(self) -> bool:
        if self.signum is None:
            return False
        stop_process_tree()
        return True


def _private(path: Path) -> None:
    """Folders 0700, files 0600 under ``path``: a run folder holds inventories' facts and Ansible's output."""
    path.chmod(0o700)
    for root, dirs, files in os.walk(path):
        for name in dirs:
            Path(root, name).chmod(0o700)
        for name in files:
            item = Path(root, name)
            if not item.is_symlink():
                item.chmod(0o600)


def _scrub(artifacts: Path) -> None:
    """Drop the environment ansible-runner records with the command line (artifacts/<ident>/command, env.list)."""
    command = artifacts / "command"
    if command.is_file():
        try:
            recorded = json.loads(command.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            recorded = {}
        kept = {key: recorded[key] for key in ("command", "cwd") if key in recorded}
        command.write_text(json.dumps(kept, ensure_ascii=False), encoding="utf-8")
    (artifacts / "env.list").unlink(missing_ok=True)


def prune_runs(runs: Path, keep: int = KEEP_RUNS) -> None:
    """Delete all but the newest ``keep`` stage folders of ``runs`` (their names sort by time) and the old shared layout."""
    if not runs.is_dir():
        return
    for name in _LEGACY:
        legacy = runs / name
        if legacy.is_dir() and not legacy.is_symlink():
            shutil.rmtree(legacy, ignore_errors=True)
    stages = sorted(p for p in runs.iterdir() if p.is_dir() and not p.is_symlink() and _RUN_NAME.match(p.name))
    for old in stages[: max(len(stages) - keep, 0)]:
        shutil.rmtree(old, ignore_errors=True)


_RUN_NAME = re.compile(r"^\d{8}T\d{6}\.\d{6}Z(?:-[a-z0-9-]+)?$")


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _reason(stdout: Path) -> str:
    """Why a run that reached no host failed: Ansible's first error line and its origin (a missing file, a bad inventory)."""
    try:
        text = _ANSI.sub("", stdout.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return ""
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    errors = [i for i, line in enumerate(lines) if line.startswith(("ERROR!", "[ERROR]", "fatal:"))]
    chosen = lines[errors[0] : errors[0] + 2] if errors else lines[-3:]
    return "\n".join(chosen)[:2000]


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
    options: tuple[str, ...] = (),
    keep: int = KEEP_RUNS,
) -> RunResult:
    """Run ``playbook`` of the generated ``project`` folder in a private data folder of its own under ``private_dir``.

    Every call gets a new ``<private_dir>/<time>[-<ident>]/`` folder (ansible-runner's env/ files of one run
    never reach another), its Ansible sees only :func:`stage_environment`, the recorded command keeps no
    environment, everything is 0600/0700, and only the newest ``keep`` folders stay.
    ``environment``: run the ansible-playbook (and collections) of that environment instead of this
    interpreter's (kubespray's pinned ansible-core), with that project's own fact cache (its facts.yml
    feeds the limited run after it). ``options``: further ansible-playbook arguments (``--become``).
    """
    import ansible_runner  # type: ignore[import-untyped]

    project = project.absolute()
    if not (project / playbook).is_file():
        raise RunError(f"no playbook {playbook} in {project}")
    runs = private_dir.absolute()
    runs.mkdir(parents=True, exist_ok=True)
    runs.chmod(0o700)
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%S.%fZ")
    name = f"{stamp}-{_slug(ident)}" if ident and _slug(ident) else stamp
    folder = runs / name
    folder.mkdir(mode=0o700)  # new: a leftover folder of the same name is an error, never reused
    # ansible-runner reads settings only from env/settings (its settings argument is dropped without the file)
    (folder / "env").mkdir(mode=0o700)
    (folder / "env" / "settings").write_text(json.dumps({"pexpect_timeout": 0.5}), encoding="utf-8")
    cmdline: list[str] = list(options)
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
    envvars = stage_environment(search, project / "ansible.cfg", environment.collections if environment is not None else None)
    with _Interrupt() as interrupt, _process_environment(envvars):
        runner = ansible_runner.run(
            private_data_dir=str(folder),
            project_dir=str(project),
            playbook=playbook,
            inventory=str(project / inventory),
            cmdline=" ".join(_quote(c) for c in cmdline) or None,
            limit=limit,
            tags=tags,
            envvars=envvars,
            ident=name,
            event_handler=collector,
            cancel_callback=interrupt.cancel,
            suppress_env_files=True,
            fact_cache_type="jsonfile" if environment is None else "ansible.cfg",
            quiet=True,
            json_mode=False,
        )
    artifacts = folder / "artifacts" / name
    _scrub(artifacts)
    _private(folder)
    prune_runs(runs, keep)
    result = RunResult(
        status=str(runner.status),
        rc=int(runner.rc if runner.rc is not None else 1),
        ident=name,
        artifacts=artifacts,
        stats=collector.stats,
        failures=collector.failures,
        tasks=collector.tasks,
        signal=interrupt.signum,
        held=list(collector.drained),
    )
    if not result.ok and not result.stats and not result.failures:
        result.reason = _reason(artifacts / "stdout") or f"ansible-playbook exited {result.rc} before reaching any host"
    return result


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


# kubespray's documented invocation (docs/ansible/ansible_collection.md and docs/operations/*.md at the tag):
# `ansible-playbook -i INVENTORY --become --become-user=root PLAYBOOK`; its roles assume root everywhere.
KUBESPRAY_BECOME = ("--become", "--become-user=root")


@dataclass(frozen=True)
class Stage:
    """One playbook of the apply sequence."""

    name: str
    project: Path
    playbook: str
    inventory: str = "inventory.yml"
    environment: KubesprayEnvironment | None = None
    limit: str | None = None
    options: tuple[str, ...] = ()
    # None: any failure stops the sequence; otherwise only a failure on one of these hosts does
    needed: tuple[str, ...] | None = None

    def passed(self, result: RunResult) -> bool:
        """Whether the sequence goes on after this stage's run: it succeeded, or failed only on hosts it does not need."""
        if result.ok:
            return True
        if self.needed is None or result.signal is not None or not result.failures:
            return False
        return all(f.host not in self.needed for f in result.failures)

    def spared(self, result: RunResult) -> list[str]:
        """The hosts that failed this stage without stopping the sequence (outside ``needed``)."""
        if self.needed is None:
            return []
        return sorted({f.host for f in result.failures if f.host not in self.needed})


def apply_sequence(
    ansible_dir: Path,
    sites: list[str],
    kubespray: str,
    environment: KubesprayEnvironment | None,
    *,
    limit: str | None = None,
    selected: dict[str, list[str]] | None = None,
    offline: bool = False,
) -> list[Stage]:
    """The node stage, kubespray's ``kubespray`` playbook for every site (none with ``skip``), the cluster stage.

    With ``limit``, ``selected`` holds the hosts of each site's kubespray inventory that the limit picks
    in alicerce's inventory: kubespray's inventory has none of alicerce's site, rack or purpose groups,
    so kubespray gets the host names. Its facts playbook first refreshes the fact cache of every host
    (kubespray docs/operations/nodes.md: before using --limit), and a site the limit leaves empty
    gets no kubespray run.

    ``remove-node`` is kubespray's playbook alone (docs/operations/nodes.md): it drains and resets the
    selected hosts, named by ``-e node=`` (its plays target ``hosts: "{{ node }}"``; a --limit would be
    ignored) with ``skip_confirmation`` (its pause prompt has no terminal under ansible-runner); with
    ``offline`` the node is not reached (``reset_nodes=false``, ``allow_ungraceful_removal=true``). No node
    or cluster stage: the hosts are leaving.
    """
    if kubespray == "remove-node":
        if limit is None:
            raise RunError("remove-node needs --limit naming the hosts to remove")
        stages: list[Stage] = []
        for site in sites:
            leaving = (selected or {}).get(site, [])
            if not leaving:
                continue
            options: tuple[str, ...] = (*KUBESPRAY_BECOME, "-e", f"node={','.join(leaving)}", "-e", "skip_confirmation=true")
            if offline:
                options += ("-e", "reset_nodes=false", "-e", "allow_ungraceful_removal=true")
            project, inventory = ansible_dir / "kubespray", f"{site}/inventory.yml"
            stages.append(Stage(f"kubespray {site} remove-node", project, f"{site}/remove-node.yml", inventory, environment, None, options))
        return stages
    stages = [Stage("nodes", ansible_dir, "site.yml", limit=limit)]
    if kubespray != "skip":
        for site in sites:
            project, inventory = ansible_dir / "kubespray", f"{site}/inventory.yml"
            hosts = None if limit is None else (selected or {}).get(site, [])
            if hosts == []:
                continue
            if hosts is not None:
                # facts.yml runs over every host (docs/operations/nodes.md), its bootstrap play any_errors_fatal: one dead
                # node outside the limit would block every scale or replace. It runs with any_errors_fatal=false and
                # only the limited hosts and the control plane (scale.yml reaches both) must pass; a dead node is
                # removed with remove-node, reset_nodes=false and allow_ungraceful_removal=true (--offline), as the docs say.
                cluster = limit_hosts([project / inventory], "kube_control_plane:etcd") if (project / inventory).is_file() else []
                stages.append(
                    Stage(
                        f"kubespray {site} facts",
                        project,
                        f"{site}/facts.yml",
                        inventory,
                        environment,
                        options=(*KUBESPRAY_BECOME, "-e", "any_errors_fatal=false"),
                        needed=tuple(dict.fromkeys([*hosts, *cluster])),
                    )
                )
            run = Stage(
                f"kubespray {site}",
                project,
                f"{site}/{kubespray}.yml",
                inventory,
                environment,
                None if hosts is None else ",".join(hosts),
                KUBESPRAY_BECOME,
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
