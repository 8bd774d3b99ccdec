"""Real runs of the generated site playbook into a Debian 12 rootfs over the chroot connection.

Twice for image mode (every role whose effect can exist in a rootfs: Debian packages, config
files, fstab mounts, containerd and kubelet config, node exporter): the second run changes
nothing. Then the hardware path in check mode on a fake node (sysfs, procfs, nvidia-smi
fixtures), once healthy and once broken, where acceptance must fail with a per-host summary.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from alicerce.run.ansible import RunResult, run_playbook
from tests.ansible.conftest import CHROOT_HOST, chroot_inventory, tool
from tests.ansible.fakenode import make_fake_node

# Steps that need NVIDIA's, the Kubernetes or a parallel-fs vendor's repository (not reachable
# from the test machine), kernel modules, a running systemd, or real block devices.
IMAGE_SKIP = "vendor-packages"
HARDWARE_SKIP = "vendor-packages,kernel-modules,services,block-devices"
ROLES = ("preflight", "nvidia_driver", "nvidia_fabricmanager", "rdma", "nvme_scratch", "parallel_fs_client",
         "kubernetes_node", "nvidia_container_toolkit", "node_monitoring", "node_validation")  # fmt: skip


def _run(generated: Path, tmp: Path, root: Path, playbook: str = "site.yml", **options: Any) -> RunResult:
    return run_playbook(
        generated,
        playbook,
        tmp / "runner",
        limit=CHROOT_HOST,
        inventories=[chroot_inventory(tmp / "chroot.yml", root)],
        **options,
    )


def _host_vars(fake: Path, **extra: Any) -> dict[str, Any]:
    data: dict[str, Any] = {f"{role}_target": "host" for role in ROLES}
    for role in ("preflight", "nvidia_driver", "rdma", "nvme_scratch", "node_validation"):
        data[f"{role}_sysfs_root"] = f"{fake}/sys"
    for role in ("nvme_scratch", "parallel_fs_client", "node_validation"):
        data[f"{role}_proc_root"] = f"{fake}/proc"
    data["node_validation_nvidia_smi"] = f"{fake}/nvidia-smi"
    return {**data, **extra}


def _vault(tmp: Path, secrets: dict[str, str]) -> tuple[Path, Path]:
    password = tmp / "vault-pass"
    password.write_text("test-only-password\n")
    vault = tmp / "secrets.yml"
    vault.write_text(yaml.safe_dump(secrets))
    subprocess.run([tool("ansible-vault"), "encrypt", "--vault-password-file", str(password), str(vault)], check=True, capture_output=True)
    return vault, password


@dataclass
class Converged:
    root: Path
    first: RunResult
    second: RunResult
    first_s: float
    second_s: float


@pytest.fixture(scope="module")
def converged(generated: Path, rootfs: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Converged]:
    """The rootfs after two runs of the site playbook (image mode)."""
    tmp_path = tmp_path_factory.mktemp("converge")
    node_root = tmp_path / "rootfs"
    subprocess.run(["cp", "-a", "--reflink=auto", str(rootfs), str(node_root)], check=True)
    started = time.monotonic()
    first = _run(generated, tmp_path, node_root, skip_tags=IMAGE_SKIP)
    first_s = time.monotonic() - started
    started = time.monotonic()
    second = _run(generated, tmp_path, node_root, skip_tags=IMAGE_SKIP) if first.ok else first
    yield Converged(node_root, first, second, first_s, time.monotonic() - started)
    shutil.rmtree(node_root, ignore_errors=True)


def test_site_converges_into_a_debian_rootfs_and_a_second_run_changes_nothing(converged: Converged) -> None:
    first, second, node_root = converged.first, converged.second, converged.root
    first_s, second_s = converged.first_s, converged.second_s
    assert first.ok, [str(f) for f in first.failures]
    assert first.stats[CHROOT_HOST].changed > 10
    assert second.ok, [str(f) for f in second.failures]
    assert (second.stats[CHROOT_HOST].changed, second.stats[CHROOT_HOST].failed) == (0, 0)
    print(f"\nconverge: first run {first_s:.1f}s changed={first.stats[CHROOT_HOST].changed}; second run {second_s:.1f}s changed=0")

    # the effects are real files in the image
    dpkg = (node_root / "var/lib/dpkg/status").read_text()
    for package in ("containerd", "mdadm", "xfsprogs", "nfs-common", "rdma-core", "infiniband-diags", "prometheus-node-exporter"):
        assert f"Package: {package}\n" in dpkg
    fstab = (node_root / "etc/fstab").read_text()
    assert "/dev/md/scratch /scratch xfs defaults,noatime,nofail" in fstab
    assert "10.30.0.10@o2ib:/ai /lustre lustre" in fstab and "nfs.dc1.acme.example:/export/home /home/shared nfs4" in fstab
    kubelet = yaml.safe_load((node_root / "etc/kubernetes/kubelet.conf.d/50-alicerce.conf").read_text())
    assert (kubelet["cpuManagerPolicy"], kubelet["topologyManagerPolicy"]) == ("static", "single-numa-node")
    assert "nvidia.com/gpu.clique=dc1-spod1" in (node_root / "etc/default/kubelet").read_text()
    assert "nouveau" in (node_root / "etc/modprobe.d/alicerce-blacklist-nouveau.conf").read_text()
    assert "--collector.infiniband" in (node_root / "etc/default/prometheus-node-exporter").read_text()
    assert 'options lnet networks="o2ib(ibrail0' in (node_root / "etc/modprobe.d/alicerce-lnet.conf").read_text()
    # containerd: the distribution's own config kept, our runtimes added, and containerd accepts the result
    config = (node_root / "etc/containerd/config.toml").read_text()
    assert 'bin_dir = "/usr/lib/cni"' in config
    dump = subprocess.run(["chroot", str(node_root), "containerd", "config", "dump"], capture_output=True, text=True, check=True).stdout
    assert 'default_runtime_name = "nvidia"' in dump and "runtimes.nvidia]" in dump and "runtimes.runc]" in dump
    assert (first.artifacts / "stdout").is_file() and (first.artifacts / "status").read_text() == "successful"


def test_rerun_keeps_runtime_config_that_others_own(generated: Path, node_root: Path, tmp_path: Path) -> None:
    """The kubespray#12277 failure mode: a re-run must not drop a runtime someone else added."""
    config = node_root / "etc/containerd/config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    foreign = (
        'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "runc"\n'
        '  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata]\n    runtime_type = "io.containerd.kata.v2"\n'
        '  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n    runtime_type = "io.containerd.runc.v2"\n'
        '    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]\n      SystemdCgroup = false\n'
    )
    config.write_text(foreign)
    tags = "kubernetes_node,nvidia_container_toolkit"
    for _ in range(2):
        result = _run(generated, tmp_path, node_root, tags=tags, skip_tags=IMAGE_SKIP)
        assert result.ok, [str(f) for f in result.failures]
    assert result.stats[CHROOT_HOST].changed == 0
    text = config.read_text()
    assert "runtimes.kata]" in text and 'runtime_type = "io.containerd.kata.v2"' in text
    assert text.count("SystemdCgroup = true") == 2 and "SystemdCgroup = false" not in text
    assert text.count('default_runtime_name = "nvidia"') == 1


def _mount_proc(root: Path) -> None:
    subprocess.run(["mount", "-t", "proc", "proc", str(root / "proc")], check=True)


@pytest.fixture
def converged_copy(converged: Converged, tmp_path: Path) -> Iterator[Path]:
    """A private copy of the converged image: a provisioned node the hardware path re-runs on."""
    target = tmp_path / "node"
    subprocess.run(["cp", "-a", "--reflink=auto", str(converged.root), str(target)], check=True)
    yield target
    if os.path.ismount(target / "proc"):
        subprocess.run(["umount", "--lazy", str(target / "proc")], check=False)
    shutil.rmtree(target, ignore_errors=True)


def test_hardware_path_in_check_mode_on_a_healthy_fake_node(generated: Path, converged_copy: Path, tmp_path: Path) -> None:
    node_root = converged_copy
    fake = make_fake_node(node_root)
    _mount_proc(node_root)
    token = "abcdef.0123456789abcdef"
    vault, password = _vault(tmp_path, {"kubernetes_node_join_token": token, "kubernetes_node_ca_cert_hash": "sha256:" + "0" * 64})
    host_vars = tmp_path / "hw.yml"
    host_vars.write_text(yaml.safe_dump(_host_vars(fake)))
    os.environ["ANSIBLE_VAULT_PASSWORD_FILE"] = str(password)
    try:
        result = _run(generated, tmp_path, node_root, check=True, skip_tags=HARDWARE_SKIP, extra_vars_files=[host_vars, vault])
    finally:
        del os.environ["ANSIBLE_VAULT_PASSWORD_FILE"]
    assert result.ok, [str(f) for f in result.failures]
    stdout = (result.artifacts / "stdout").read_text()
    assert "passed 11 acceptance checks" in stdout
    assert "scratch array: keep" in stdout  # the existing array is kept, never re-created
    assert token not in stdout and token not in "".join(p.read_text() for p in (result.artifacts / "job_events").glob("*.json"))
    # check mode only reported: the rails it planned were not written
    assert not list((node_root / "etc/systemd/network").glob("*ibrail*"))
    # ... but it did plan eight rails from the fake HCAs, addressed from the fabric plan
    assert "(item=ibrail7)" in stdout and "(item=ibrail7 10.40.224.1/19)" in stdout


def test_acceptance_fails_with_a_per_host_summary_on_a_broken_node(generated: Path, converged_copy: Path, tmp_path: Path) -> None:
    node_root = converged_copy
    fake = make_fake_node(node_root, gpus=7, hcas=8, active=7, mounts=("/lustre",))
    host_vars = tmp_path / "hw.yml"
    host_vars.write_text(yaml.safe_dump(_host_vars(fake)))
    result = _run(generated, tmp_path, node_root, playbook="validate.yml", extra_vars_files=[host_vars])
    assert not result.ok
    (failure,) = result.failures
    assert failure.host == CHROOT_HOST and failure.task == "Assert that the node passes every acceptance check"
    assert "failed 3 acceptance checks" in failure.message
    for expected in ("gpu count: expected 8, found 7", "hca ports active: expected all, found mlx5_7", "mounted /home/shared"):
        assert expected in failure.message
    events = [json.loads(p.read_text()) for p in (result.artifacts / "job_events").glob("*.json")]
    assert any(e.get("event") == "runner_on_failed" for e in events)
