"""The rdma role names the RDMA devices after their PCI address on the node it runs on, without a reboot (issue 24,
obsreview38 D-4): real Ansible over the chroot connection into a copy of the Debian rootfs, on a fake node whose
udevadm does what rdma-core's udev rule does on an infiniband add event (rdma_rename NAME_PCI)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from tests.ansible.conftest import CHROOT_HOST, chroot_inventory, tool
from tests.ansible.fakenode import make_fake_node
from tests.conftest import ROOT

ANSIBLE = ROOT / "alicerce" / "ansible"
# the rails of the fake node (0000:1a:00.0, 0000:2a:00.0, ...) under NAME_PCI: ib, p<bus>s<slot> in decimal, no f (single function)
NAMED = [f"ibp{0x1A + i * 0x10}s0" for i in range(8)]

# An infiniband add event runs the naming rule's program: rdma_rename <kernel name> NAME_PCI renames the device
# (kernel-boot/rdma_rename.c by_pci: domain 0, single-function adapters here). Every call is logged.
FAKE_UDEVADM = """#!/bin/sh
echo "$*" >> /fake/udevadm.log
case " $* " in
  *" --subsystem-match=infiniband "*)
    for dev in /fake/sys/class/infiniband/*; do
      [ -e "$dev" ] || continue
      pci=$(basename "$(readlink -f "$dev/device")")
      bus=$((0x$(echo "$pci" | cut -d: -f2)))
      slot=$((0x$(echo "$pci" | cut -d: -f3 | cut -d. -f1)))
      case "$(cat "$dev/ports/1/link_layer")" in InfiniBand) prefix=ib;; *) prefix=roce;; esac
      [ "$(basename "$dev")" = "${prefix}p${bus}s${slot}" ] || mv "$dev" "/fake/sys/class/infiniband/${prefix}p${bus}s${slot}"
    done;;
esac
exit 0
"""
NAMING_EVENT = "/fake/bin/udevadm trigger --action=add --subsystem-match=infiniband"


def _inventory(tmp_path: Path, root: Path) -> Path:
    """The chroot node, and the control plane kubectl runs on for a drain as the site's inventory has it (kubespray's
    kube_control_plane group): the controller itself here."""
    inventory = chroot_inventory(tmp_path / "chroot.yml", root)
    hosts = yaml.safe_load(inventory.read_text())
    control_plane = {"cp-1": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}}
    hosts["all"]["children"] = {"kube_control_plane": {"hosts": control_plane}}
    inventory.write_text(yaml.safe_dump(hosts))
    return inventory


def _run(
    tmp_path: Path, root: Path, check: bool, rail_devices: list[str] | None = None, rebooted: bool = False
) -> subprocess.CompletedProcess[str]:
    role = {"name": "rdma"}
    # DOCA-OFED's install reboots the node after preflight read the adapters: the boot applies the names
    reboot = [{"name": "The boot names the devices", "ansible.builtin.command": NAMING_EVENT, "changed_when": False}] if rebooted else []
    verify = [{"name": "Verify", "ansible.builtin.include_role": {**role, "tasks_from": "verify.yml"}}] if rail_devices else []
    play = {
        "name": "The rdma role's configuration on a running node",
        "hosts": CHROOT_HOST,
        "gather_facts": False,
        "environment": {"PATH": "/fake/bin:/usr/bin:/bin:/usr/sbin:/sbin"},
        "vars": {
            "rdma_target": "host",
            "rdma_enabled": True,
            "rdma_sysfs_root": "/fake/sys",
            "rdma_rails": 8,
            "rdma_rate_gbps": 400,
            "rdma_rail_devices": rail_devices or [],
            # a kubectl that logs each call, with how many interfaces the fake ip had taken down by then
            "kubernetes_node_kubectl": str(_fake_kubectl(tmp_path, root)),
        },
        "tasks": [
            {"name": "Read and plan", "ansible.builtin.include_role": {**role, "tasks_from": "preflight.yml"}},
            *reboot,
            {"name": "Configure", "ansible.builtin.include_role": {**role, "tasks_from": "configure.yml"}},
            *verify,
        ],
    }
    playbook = tmp_path / "play.yml"
    playbook.write_text(yaml.safe_dump([play]))
    inventory = _inventory(tmp_path, root)
    # modprobe and systemd need the host's kernel and a running systemd: as the converge tests' hardware path skips them
    skip = ["--skip-tags", "kernel-modules,services"]
    return subprocess.run(
        [tool("ansible-playbook"), "-i", str(inventory), *skip, *(["--check"] if check else []), str(playbook)],
        check=False,
        capture_output=True,
        text=True,
        env={"ANSIBLE_CONFIG": str(ANSIBLE / "ansible.cfg"), "PATH": "/usr/bin:/bin:/usr/sbin:/sbin", "ANSIBLE_NOCOLOR": "1"},
        cwd=ANSIBLE,
    )


def _status(stdout: str, task: str) -> str | None:
    """What the default callback said of ``task`` on the host: ok, changed, skipping (None: the task never ran)."""
    lines = stdout.splitlines()
    for index, line in enumerate(lines):
        if line.startswith(f"TASK [rdma : {task}]"):
            return lines[index + 1].split(":", 1)[0]
    return None


def _fake_node(node_root: Path, udevadm: str = FAKE_UDEVADM) -> Path:
    """The fake node with the naming rule's udevadm; returns its /sys/class/infiniband."""
    make_fake_node(node_root)
    fake_bin = node_root / "fake" / "bin"
    fake_bin.mkdir()
    (fake_bin / "udevadm").write_text(udevadm)
    (fake_bin / "udevadm").chmod(0o755)
    (fake_bin / "ip").write_text('#!/bin/sh\necho "$*" >> /fake/ip.log\n' + (node_root / "fake" / "ip").read_text().split("\n", 1)[1])
    (fake_bin / "ip").chmod(0o755)
    return node_root / "fake" / "sys" / "class" / "infiniband"


def _fake_kubectl(tmp_path: Path, root: Path) -> Path:
    kubectl = tmp_path / "kubectl"
    downs = f"$(cat {root}/fake/ip.log 2>/dev/null | grep -c 'link set')"
    kubectl.write_text(f'#!/bin/sh\necho "$* | links down before: {downs}" >> {tmp_path}/kubectl.log\n')
    kubectl.chmod(0o755)
    return kubectl


def test_a_node_the_run_does_not_reboot_gets_its_rdma_devices_named_now(node_root: Path, tmp_path: Path) -> None:
    """Before: the role renamed the rails' netdevs at once but never the RDMA devices (rdma_rename runs only on an
    infiniband add event), so a node not rebooted kept mlx5_N, which railDevices (AL392) and the fabric alerts never
    name. Now the add event is replayed, the adapters are read again, the rails' files carry the new names; a second
    run changes no name, and check mode replays nothing."""
    devices = _fake_node(node_root)
    task = "Name the RDMA devices after their PCI address now"

    checked = _run(tmp_path, node_root, check=True)
    assert checked.returncode == 0, checked.stdout[-3000:]
    # check mode renames nothing but lists what the run will rename (obsreview40 G-2)
    assert "mlx5_0 at 0000:1a:00.0 -> ibp26s0" in checked.stdout, checked.stdout[-3000:]
    assert sorted(p.name for p in devices.iterdir()) == [f"mlx5_{i}" for i in range(8)]
    assert not (node_root / "fake" / "udevadm.log").exists()

    first = _run(tmp_path, node_root, check=False)
    assert first.returncode == 0, first.stdout[-3000:]
    assert sorted(p.name for p in devices.iterdir()) == sorted(NAMED)
    assert _status(first.stdout, task) == "changed"
    link = (node_root / "etc/systemd/network/10-alicerce-ibrail0.link").read_text()
    assert "# Rail 0: ibp26s0 at PCI 0000:1a:00.0" in link
    assert "--action=add --subsystem-match=infiniband" in (node_root / "fake" / "udevadm.log").read_text()

    second = _run(tmp_path, node_root, check=False)
    assert second.returncode == 0, second.stdout[-3000:]
    assert _status(second.stdout, task) == "ok"
    assert sorted(p.name for p in devices.iterdir()) == sorted(NAMED)
    assert (node_root / "etc/systemd/network/10-alicerce-ibrail0.link").read_text() == link


def test_verify_names_the_rail_devices_the_spec_expects_and_the_node_lacks(node_root: Path, tmp_path: Path) -> None:
    """Before (obsreview40 G-1): railDevices never reached Ansible, and rdma_rename exits 0 when the kernel refuses a
    rename (rdma-core kernel-boot/rdma_rename.c device_rename sends RDMA_NLDEV_CMD_SET and never reads the reply), so a
    node whose names differ from the spec's went green and FabricRailsNeverUp fired 30 min later. Now verify stops the
    run naming the missing devices and those the node has; a node that has them all passes."""
    _fake_node(node_root)
    wanted = [*NAMED[:7], "ibp999s0"]
    failed = _run(tmp_path, node_root, check=False, rail_devices=wanted)
    assert failed.returncode != 0
    assert "ibp999s0" in failed.stdout and "FabricRailsNeverUp" in failed.stdout, failed.stdout[-3000:]
    assert "ibp26s0" not in failed.stdout.split("ibp999s0", 1)[0].rsplit("\n", 1)[-1]  # a present device is not named missing
    passed = _run(tmp_path, node_root, check=False, rail_devices=NAMED)
    assert passed.returncode == 0, passed.stdout[-3000:]


def test_verify_catches_a_rename_the_kernel_refused(node_root: Path, tmp_path: Path) -> None:
    """The rename fails silently (exit 0, names unchanged): the run stops at verify, not at the alert."""
    _fake_node(node_root, udevadm='#!/bin/sh\necho "$*" >> /fake/udevadm.log\nexit 0\n')
    failed = _run(tmp_path, node_root, check=False, rail_devices=NAMED)
    assert failed.returncode != 0
    assert "ibp26s0" in failed.stdout and "mlx5_0" in failed.stdout, failed.stdout[-3000:]


def test_a_node_named_by_the_reboot_after_preflight_reports_no_rename(node_root: Path, tmp_path: Path) -> None:
    """Before (obsreview40 N-2): the naming step compared with the names preflight read before DOCA-OFED's reboot, so
    it reported "changed" although the boot had named the devices and the replay renamed none."""
    devices = _fake_node(node_root)
    run = _run(tmp_path, node_root, check=False, rebooted=True)
    assert run.returncode == 0, run.stdout[-3000:]
    assert sorted(p.name for p in devices.iterdir()) == sorted(NAMED)
    assert _status(run.stdout, "Name the RDMA devices after their PCI address now") == "ok"


def test_a_node_without_rdma_devices_is_told_by_verify_not_by_a_template_error(node_root: Path, tmp_path: Path) -> None:
    """Review obsreview42 G-2: with /sys/class/infiniband empty (mlx5_ib not loaded, a failed DKMS build) the naming
    step printed two empty lines, stdout_lines was [] and its changed_when failed the host on a missing element. It now
    reads as unchanged, and verify stops the run naming the rails the node lacks."""
    devices = _fake_node(node_root)
    shutil.rmtree(devices)
    devices.mkdir()
    run = _run(tmp_path, node_root, check=False, rail_devices=NAMED)
    assert run.returncode != 0
    assert "Error while evaluating conditional" not in run.stdout, run.stdout[-3000:]
    assert _status(run.stdout, "Name the RDMA devices after their PCI address now") == "ok", run.stdout[-3000:]


def test_a_joined_node_is_drained_before_its_rails_interfaces_go_down_to_be_renamed(node_root: Path, tmp_path: Path) -> None:
    """Renaming a rail's interface takes its link down (a RoCE rail's RDMA traffic, IPoIB): on a node running jobs
    (day 2: a fabric added to a running pool) that cut their collectives. A joined node is drained through the
    control plane first, and marked so the batch's end accepts and uncordons it; a node that has not joined is not."""
    _fake_node(node_root)
    first = _run(tmp_path, node_root, check=False)
    assert first.returncode == 0, first.stdout[-3000:]
    assert not (tmp_path / "kubectl.log").exists()  # not joined: nothing to drain
    assert "link set dev" in (node_root / "fake" / "ip.log").read_text()

    (node_root / "fake" / "ip.log").unlink()
    (node_root / "etc" / "kubernetes").mkdir(parents=True, exist_ok=True)
    (node_root / "etc" / "kubernetes" / "kubelet.conf").write_text("apiVersion: v1\nkind: Config\n")
    joined = _run(tmp_path, node_root, check=False)
    assert joined.returncode == 0, joined.stdout[-3000:]
    calls = (tmp_path / "kubectl.log").read_text().splitlines()
    assert calls[0].startswith(f"drain {CHROOT_HOST} --ignore-daemonsets") and calls[0].endswith("links down before: 0"), calls
    assert calls[1].startswith(f"annotate --overwrite node {CHROOT_HOST} alicerce.dev/drained=true"), calls
    assert "link set dev" in (node_root / "fake" / "ip.log").read_text()
