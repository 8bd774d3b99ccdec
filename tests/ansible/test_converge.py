"""Real runs of the generated node stage (site.yml) into a Debian 12 x86_64 rootfs over the chroot connection.

Twice for image mode, vendor packages included: NVIDIA's, the toolkit's and the Lustre mirror's
repositories are a local signed repository on loopback (tests/ansible/aptrepo.py), so keys,
Signed-By, the refresh after each new repository, pins and holds all run for real; the second run
changes nothing. Check mode on a fresh rootfs runs to the end. Then the hardware path in check
mode on a fake node (sysfs, procfs, nvidia-smi fixtures), and acceptance (post-cluster's
node_validation) once healthy and once broken, where it must fail with a per-host summary.
"""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
import yaml

from alicerce.run.ansible import RunResult, run_playbook
from tests.ansible.conftest import CHROOT_HOST, chroot_inventory, private_copy
from tests.ansible.fakenode import make_fake_node, tools
from tests.ansible.test_storage_counters import fake_lctl

# Steps that need kernel modules, a running systemd, or real block devices (the hardware path in check mode).
HARDWARE_SKIP = "kernel-modules,services,block-devices"
ROLES = ("preflight", "nvidia_driver", "nvidia_fabricmanager", "rdma", "nvme_scratch", "parallel_fs_client",
         "kubernetes_node", "nvidia_container_toolkit", "node_monitoring", "node_validation")  # fmt: skip


def _run(
    generated: Path, tmp: Path, root: Path, playbook: str = "site.yml", repos: dict[str, str] | None = None, **options: Any
) -> RunResult:
    extra = list(options.pop("extra_vars_files", []))
    if repos:
        path = tmp / "repos.yml"
        path.write_text(yaml.safe_dump(repos))
        extra.append(path)
    return run_playbook(
        generated,
        playbook,
        tmp / "runner",
        limit=CHROOT_HOST,
        inventories=[chroot_inventory(tmp / "chroot.yml", root)],
        extra_vars_files=extra,
        **options,
    )


def _host_vars(fake: Path, **extra: Any) -> dict[str, Any]:
    data: dict[str, Any] = {f"{role}_target": "host" for role in ROLES}
    for role in ("preflight", "nvidia_driver", "rdma", "nvme_scratch", "node_validation"):
        data[f"{role}_sysfs_root"] = f"{fake}/sys"
    for role in ("nvme_scratch", "parallel_fs_client", "node_validation"):
        data[f"{role}_proc_root"] = f"{fake}/proc"
    data["node_validation_tools"] = tools(fake)
    data["node_validation_allocatable"] = {}  # no cluster in a chroot: kubespray's node is checked on hardware only
    # the fake ib_write_bw has no server to wait for: the role's 2 s per rail before each client (16 s a burn-in) is skipped
    data["node_validation_ib_server_wait_s"] = 0
    return {**data, **extra}


@dataclass
class Converged:
    root: Path
    first: RunResult
    second: RunResult
    first_s: float
    second_s: float


@pytest.fixture(scope="module")
def converged(generated: Path, rootfs: Path, aptrepo: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Converged]:
    """The rootfs after two runs of the node stage (image mode), vendor packages from the local signed repositories."""
    tmp_path = tmp_path_factory.mktemp("converge")
    with private_copy(rootfs, tmp_path / "rootfs") as node_root:
        started = time.monotonic()
        first = _run(generated, tmp_path, node_root, repos=aptrepo)
        first_s = time.monotonic() - started
        started = time.monotonic()
        second = _run(generated, tmp_path, node_root, repos=aptrepo) if first.ok else first
        yield Converged(node_root, first, second, first_s, time.monotonic() - started)


def test_site_converges_into_a_debian_rootfs_and_a_second_run_changes_nothing(converged: Converged) -> None:
    first, second, node_root = converged.first, converged.second, converged.root
    first_s, second_s = converged.first_s, converged.second_s
    assert first.ok, [str(f) for f in first.failures]
    assert first.stats[CHROOT_HOST].changed > 10
    assert second.ok, [str(f) for f in second.failures]
    assert (second.stats[CHROOT_HOST].changed, second.stats[CHROOT_HOST].failed) == (0, 0)
    print(f"\nconverge: first run {first_s:.1f}s changed={first.stats[CHROOT_HOST].changed}; second run {second_s:.1f}s changed=0")

    # the effects are real files and packages in the image
    dpkg = (node_root / "var/lib/dpkg/status").read_text()
    for package in ("mdadm", "xfsprogs", "nfs-common", "rdma-core", "infiniband-diags"):
        assert f"Package: {package}\n" in dpkg
    installed = _installed(dpkg)
    # the pin keeps the spec's driver although the repository has a newer 580 build; packages are held
    assert installed["nvidia-open"] == ("580.173.02-1", "hold ok installed")
    assert installed["nvidia-fabricmanager"] == ("580.173.02-1", "hold ok installed")
    assert installed["libnvidia-nscq"] == ("580.173.02-1", "hold ok installed")
    for package in ("nvidia-container-toolkit", "nvidia-container-toolkit-base", "libnvidia-container-tools", "libnvidia-container1"):
        assert installed[package] == ("1.18.2-1", "hold ok installed"), package
    assert installed["lustre-client-utils"][0] == "2.15.1-1"
    assert "containerd" not in installed and "kubelet" not in installed  # kubespray's own binaries, never the distribution's
    sources = {p.name: p.read_text() for p in (node_root / "etc/apt/sources.list.d").glob("alicerce-*.sources")}
    assert set(sources) == {"alicerce-nvidia-cuda.sources", "alicerce-nvidia-container-toolkit.sources", "alicerce-lustre.sources"}
    assert all("Signed-By: /etc/apt/keyrings/alicerce-" in text and "Trusted" not in text for text in sources.values())
    assert "/cuda/debian12/x86_64/" in sources["alicerce-nvidia-cuda.sources"]
    assert "Pin: version 580.173.02-*" in (node_root / "etc/apt/preferences.d/alicerce-nvidia-driver.pref").read_text()
    persistenced = (node_root / "etc/systemd/system/nvidia-persistenced.service.d/alicerce.conf").read_text()
    assert [line for line in persistenced.splitlines() if line.startswith("ExecStart")][-1].endswith("--persistence-mode --verbose")
    wants = node_root / "etc/systemd/system/multi-user.target.wants"
    for unit in ("nvidia-persistenced.service", "nvidia-fabricmanager.service", "nvidia-cdi-refresh.path", "nvidia-cdi-refresh.service"):
        assert (wants / unit).is_symlink(), unit
    fabric = (node_root / "usr/share/nvidia/nvswitch/fabricmanager.cfg").read_text()
    assert "TRUNK_LINK_FAILURE_MODE=0" in fabric and "NVSWITCH_FAILURE_MODE=0" in fabric
    assert not (node_root / "etc/cdi/nvidia.yaml").exists()  # nvidia-cdi-refresh writes /var/run/cdi on the host
    fstab = (node_root / "etc/fstab").read_text()
    assert "/dev/md/scratch /scratch xfs defaults,noatime,nofail" in fstab
    toolkit = (node_root / "etc/nvidia-container-runtime/config.toml").read_text().splitlines()
    assert "accept-nvidia-visible-devices-envvar-when-unprivileged = false" in toolkit  # only the device plugin's mounts
    assert "10.40.31.250@o2ib:/ai /lustre lustre" in fstab and "nfs.dc1.acme.example:/export/home /home/shared nfs4" in fstab
    assert "nouveau" in (node_root / "etc/modprobe.d/alicerce-blacklist-nouveau.conf").read_text()
    assert 'options lnet networks="o2ib(ibrail0' in (node_root / "etc/modprobe.d/alicerce-lnet.conf").read_text()
    modules = (node_root / "etc/modules-load.d/alicerce-rdma.conf").read_text()
    assert "ib_ipoib" in modules and "nvidia_peermem" not in modules  # DMA-BUF with the open modules and inbox rdma-core
    assert not (node_root / "etc/containerd").exists()  # containerd's config is kubespray's alone
    assert (first.artifacts / "stdout").is_file() and (first.artifacts / "status").read_text() == "successful"

    # the storage tiers' client counters: the collector, the tiers it reads and its timer, started at boot
    collector = "/usr/local/libexec/alicerce/alicerce_storage_stats.py"
    assert (node_root / collector.lstrip("/")).stat().st_mode & 0o777 == 0o755
    assert json.loads((node_root / "etc/alicerce/storage-tiers.json").read_text()) == [
        {"tier": "dc1-lustre", "path": "/lustre", "type": "lustre"},
        {"tier": "home", "path": "/home/shared", "type": "nfs"},
    ]
    assert (node_root / "etc/systemd/system/timers.target.wants/alicerce-storage-stats.timer").is_symlink()
    service = (node_root / "etc/systemd/system/alicerce-storage-stats.service").read_text()
    assert f"ExecStart=/usr/bin/python3 {collector} --config /etc/alicerce/storage-tiers.json" in service
    # ... and the node's own python3 runs it as the service would, here over a recorded procfs and lctl
    check = node_root / "tmp" / "storage-check"
    shutil.rmtree(check, ignore_errors=True)
    proc, textfile = check / "proc" / "self", node_root / "var/lib/prometheus/node-exporter"
    proc.mkdir(parents=True)
    fixtures = Path(__file__).parent / "fixtures" / "storage"
    shutil.copy(fixtures / "mounts.txt", proc / "mounts")
    shutil.copy(fixtures / "mountstats.txt", proc / "mountstats")
    shutil.copy(fixtures / "lctl-llite-stats.txt", check / "llite-stats")
    (check / "lctl").write_text(fake_lctl("/tmp/storage-check"))
    (check / "lctl").chmod(0o755)
    command = [*service.split("ExecStart=", 1)[1].splitlines()[0].split(), "--proc-root", "/tmp/storage-check/proc"]
    command += ["--lctl", "/tmp/storage-check/lctl"]
    # the collector statfs-es each tier's mount point first (a hung mount reads as down): the recorded mounts' points
    made = [node_root / p for p in ("lustre", "home/shared") if not (node_root / p).exists()]
    for point in made:
        point.mkdir(parents=True)
    ran = subprocess.run(["chroot", str(node_root), *command], check=False, capture_output=True, text=True)
    shutil.rmtree(check)
    for point in made:
        point.rmdir()
    assert ran.returncode == 0, ran.stderr
    written = (textfile / "alicerce_storage.prom").read_text()
    (textfile / "alicerce_storage.prom").unlink()
    assert 'alicerce_storage_client_up{tier="dc1-lustre",mountpoint="/lustre",fstype="lustre"} 1' in written
    assert 'alicerce_storage_client_read_bytes_total{tier="home",mountpoint="/home/shared",fstype="nfs"} 1052672000' in written


# The roles whose variables the driver owner (nodeSoftware.gpuDriver) sets in the generated node stage.
OPERATOR_ROLES = ("nvidia_driver", "nvidia_fabricmanager", "nvidia_container_toolkit")


@functools.cache  # rendered once per process for the two tests that read it (read-only)
def _operator_tree() -> Mapping[str, str]:
    """The prod tree of the reference platform with the GPU Operator owning the driver."""
    from alicerce.emit.tree import render_tree
    from alicerce.rules.validate import validated
    from alicerce.spec.loader import load_text
    from tests.conftest import ROOT

    text = (ROOT / "platform.yaml").read_text()
    assert "nodeSoftware: {gpuDriver: host}" in text
    text = text.replace("nodeSoftware: {gpuDriver: host}", "nodeSoftware: {gpuDriver: operator}")
    return MappingProxyType(render_tree(validated(load_text(text, "platform.yaml"), "prod")))


def test_the_driver_owner_changes_only_the_driver_roles(prod_files: Mapping[str, str]) -> None:
    """What lets the operator-owned converge run only OPERATOR_ROLES: every other file of the node stage (site.yml,
    its group and host variables, every other role) is the same byte for byte whoever owns the driver, and the
    variables that differ are read by no role outside OPERATOR_ROLES."""
    operator = _operator_tree()
    node_stage = {p for p in {*prod_files, *operator} if p.startswith("ansible/") and not p.startswith("ansible/kubespray/")}
    changed = sorted(p for p in node_stage if prod_files.get(p) != operator.get(p))
    assert changed and all(p.startswith("ansible/group_vars/") for p in changed), changed
    names = set()
    for path in changed:
        before, after = yaml.safe_load(prod_files[path]), yaml.safe_load(operator[path])
        names |= {name for name in {*before, *after} if before.get(name) != after.get(name)}
    assert names and all(name.startswith(OPERATOR_ROLES) for name in names), names
    readers = {p.split("/")[2] for p in node_stage if p.startswith("ansible/roles/") and any(name in operator.get(p, "") for name in names)}
    assert readers and readers <= set(OPERATOR_ROLES), readers
    for playbook in ("ansible/site.yml", "ansible/validate.yml", "ansible/post-cluster.yml"):
        assert not any(name in operator[playbook] for name in names), playbook


def test_site_converges_with_an_operator_owned_driver(
    rootfs: Path, aptrepo: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Issue 20 (done when): the node stage for the other driver owner. With gpuDriver operator the host installs
    no driver, no Fabric Manager and loads no NVIDIA module; it owns the toolkit, pointed at the driver container's
    root, with NVIDIA_VISIBLE_DEVICES ignored for unprivileged pods; a second run changes nothing.

    Only the roles the owner changes run (OPERATOR_ROLES), with rdma, whose module list is asserted: the switch changes
    nothing else in the node stage (test_the_driver_owner_changes_only_the_driver_roles), and the host-owner converge
    above runs every role twice already. The whole stage here cost ~40 s of the suite for no assertion of its own."""
    from alicerce.emit.tree import write_tree

    tmp_path = tmp_path_factory.mktemp("operator")
    write_tree(tmp_path / "out", dict(_operator_tree()))
    generated = tmp_path / "out" / "ansible"
    tags = ",".join((*OPERATOR_ROLES, "rdma"))
    with private_copy(rootfs, tmp_path / "rootfs") as node_root:
        first = _run(generated, tmp_path, node_root, repos=aptrepo, tags=tags)
        assert first.ok, [str(f) for f in first.failures]
        assert first.stats[CHROOT_HOST].changed > 5  # the toolkit's repository, packages, hold and config did run
        second = _run(generated, tmp_path, node_root, repos=aptrepo, tags=tags)
        assert second.ok, [str(f) for f in second.failures]
        assert (second.stats[CHROOT_HOST].changed, second.stats[CHROOT_HOST].failed) == (0, 0)
        installed = _installed((node_root / "var/lib/dpkg/status").read_text())
        assert not [p for p in installed if p.startswith(("nvidia-open", "nvidia-persistenced", "nvidia-fabricmanager", "libnvidia-nscq"))]
        assert installed["nvidia-container-toolkit"] == ("1.18.2-1", "hold ok installed")
        assert not (node_root / "etc/apt/sources.list.d/alicerce-nvidia-cuda.sources").exists()
        assert not (node_root / "etc/modules-load.d/alicerce-nvidia.conf").exists()
        config = (node_root / "etc/nvidia-container-runtime/config.toml").read_text().splitlines()
        assert 'root = "/run/nvidia/driver"' in config
        assert "accept-nvidia-visible-devices-envvar-when-unprivileged = false" in config
        assert "accept-nvidia-visible-devices-as-volume-mounts = true" in config
        modules = (node_root / "etc/modules-load.d/alicerce-rdma.conf").read_text()
        assert "ib_ipoib" in modules and "nvidia_peermem" not in modules


def _installed(status: str) -> dict[str, tuple[str, str]]:
    found: dict[str, tuple[str, str]] = {}
    for stanza in status.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in stanza.splitlines() if ": " in line and not line.startswith(" "))
        if "Package" in fields:
            found[fields["Package"]] = (fields.get("Version", ""), fields.get("Status", ""))
    return found


def test_check_mode_on_a_fresh_node_runs_to_the_end(generated: Path, node_root: Path, aptrepo: dict[str, str], tmp_path: Path) -> None:
    """Defect 12: repositories not added yet, units not installed, no array: check mode reports and finishes."""
    result = _run(generated, tmp_path, node_root, repos=aptrepo, check=True)
    assert result.ok, [str(f) for f in result.failures]
    stdout = (result.artifacts / "stdout").read_text()
    assert "would install nvidia-open, nvidia-persistenced (580.173.02) from the CUDA repository" in stdout
    assert not (node_root / "etc/apt/sources.list.d/alicerce-nvidia-cuda.sources").exists()  # nothing changed


def _mount_proc(root: Path) -> None:
    subprocess.run(["mount", "-t", "proc", "proc", str(root / "proc")], check=True)


@pytest.fixture
def converged_copy(converged: Converged, tmp_path: Path) -> Iterator[Path]:
    """A private copy of the converged image: a provisioned node the hardware path re-runs on."""
    with private_copy(converged.root, tmp_path / "node") as target:
        yield target


def test_a_changed_driver_version_upgrades_the_installed_driver(
    generated: Path, converged_copy: Path, aptrepo: dict[str, str], tmp_path: Path
) -> None:
    """Issue 20, 5 (day 2): the spec moves the driver to a newer build of the branch; the next run installs it (a bare
    package name with state present never moved an installed package), moves the pin and keeps the hold."""
    newer = tmp_path / "newer.yml"
    newer.write_text(yaml.safe_dump({"nvidia_driver_version": "580.999.01"}))
    result = _run(generated, tmp_path, converged_copy, repos=aptrepo, tags="nvidia_driver", extra_vars_files=[newer])
    assert result.ok, [str(f) for f in result.failures]
    installed = _installed((converged_copy / "var/lib/dpkg/status").read_text())
    assert installed["nvidia-open"] == ("580.999.01-1", "hold ok installed")
    assert installed["nvidia-persistenced"][0] == "580.999.01-1"
    assert "Pin: version 580.999.01-*" in (converged_copy / "etc/apt/preferences.d/alicerce-nvidia-driver.pref").read_text()


def test_hardware_path_in_check_mode_on_a_healthy_fake_node(
    generated: Path, converged_copy: Path, aptrepo: dict[str, str], tmp_path: Path
) -> None:
    node_root = converged_copy
    fake = make_fake_node(node_root)
    _mount_proc(node_root)
    host_vars = tmp_path / "hw.yml"
    host_vars.write_text(yaml.safe_dump(_host_vars(fake)))
    # the roles that decide from hardware facts (the rest ran in check mode on the fresh rootfs already)
    tags = "preflight,rdma,nvidia_driver,nvme_scratch"
    result = _run(
        generated, tmp_path, node_root, repos=aptrepo, check=True, tags=tags, skip_tags=HARDWARE_SKIP, extra_vars_files=[host_vars]
    )
    assert result.ok, [str(f) for f in result.failures]
    stdout = (result.artifacts / "stdout").read_text()
    assert "scratch array: keep" in stdout  # the existing array is kept, never re-created
    # check mode only reported: the rails it planned were not written
    assert not list((node_root / "etc/systemd/network").glob("*ibrail*"))
    # ... but it did plan eight rails from the fake HCAs, addressed from the fabric plan
    assert "(item=ibrail7)" in stdout and "(item=ibrail7 10.40.224.1/19)" in stdout


def test_acceptance_and_burn_in_pass_on_a_healthy_node_and_keep_a_report(generated: Path, converged_copy: Path, tmp_path: Path) -> None:
    node_root = converged_copy
    fake = make_fake_node(node_root)
    host_vars = tmp_path / "hw.yml"
    host_vars.write_text(yaml.safe_dump(_host_vars(fake)))
    result = _run(generated, tmp_path, node_root, playbook="validate.yml", extra_vars_files=[host_vars])
    assert result.ok, [str(f) for f in result.failures]
    report = json.loads((node_root / "var/lib/alicerce/acceptance/acceptance.json").read_text())
    checks = {c["check"]: c for c in report["checks"]}
    assert all(c["ok"] for c in checks.values()) and len(checks) >= 20
    # thresholds derived from the fabric and the GPU's links, next to what the recorded tools measured
    assert checks["nccl all-reduce busbw in node"] == {
        **checks["nccl all-reduce busbw in node"],
        "expected": ">= 315.0 GB/s",
        "actual": "418.14 GB/s",
    }
    assert checks["ib_write_bw per rail"]["expected"] == ">= 360.0 Gb/s"
    assert checks["dcgmi diag level 2"]["actual"] == "pass"
    fetched = json.loads((generated / "acceptance" / f"{CHROOT_HOST}.json").read_text())
    assert fetched == report


def test_acceptance_fails_with_a_per_host_summary_on_a_broken_node(generated: Path, converged_copy: Path, tmp_path: Path) -> None:
    node_root = converged_copy
    # no journal on this node: the XIDs come from the kernel's ring buffer, which holds a GPU that fell off the bus
    fake = make_fake_node(node_root, gpus=7, hcas=8, active=7, mounts=("/lustre",), journal=False, ring_buffer="journal-kernel-xid.txt")
    host_vars = tmp_path / "hw.yml"
    host_vars.write_text(yaml.safe_dump(_host_vars(fake)))
    result = _run(generated, tmp_path, node_root, playbook="validate.yml", extra_vars_files=[host_vars])
    assert not result.ok
    (failure,) = result.failures
    assert failure.host == CHROOT_HOST and failure.task == "Assert that the node passes every acceptance check"
    assert "failed 4 acceptance checks" in failure.message
    for expected in (
        "gpu count: expected 8, found 7",
        "xid since boot: expected none (hardware or driver), found 0000:5d:00: Xid 79",
        "hca ports active: expected all, found mlx5_7",
        "mounted /home/shared",
    ):
        assert expected in failure.message
    events = [json.loads(p.read_text()) for p in (result.artifacts / "job_events").glob("*.json")]
    assert any(e.get("event") == "runner_on_failed" for e in events)
