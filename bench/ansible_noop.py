"""No-op re-run of a playbook over 50 hosts reached by SSH: the generated ansible.cfg vs Ansible's defaults.

Starts a private sshd on loopback (127.0.0.2 .. 127.0.0.51, port 2222; every inventory host is an
alias of this machine with its own address, so each has its own SSH connection), generates the
Ansible project of a 50-host on-prem variant of the reference platform, converges a playbook
shaped like the generated site.yml (a check play over all nodes, then a provisioning play in the
same rolling batches) once per configuration, then times no-op re-runs side by side.

The hosts log in as a throw-away account with a stock shell profile, as on a freshly installed
node: this machine's own root profile does work on every SSH session that a node's would not.
Needs root (sshd, the account) and only ever uses loopback addresses.

    .venv/bin/python bench/ansible_noop.py [--hosts 50] [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from alicerce.emit.ansible.site import ROLLING_BATCH  # noqa: E402
from alicerce.emit.tree import render_tree  # noqa: E402
from alicerce.rules.validate import validated  # noqa: E402
from alicerce.spec.loader import load_text  # noqa: E402

PORT = 2222
USER = "alicerce-bench"
# The play settings of the generated site.yml (alicerce/emit/templates/ansible/site.yml.j2), role-like tasks.
PLAYBOOK = """---
- name: Check every node before changing any
  hosts: bench
  gather_facts: true
  gather_subset: [min, is_chroot]
  tasks:
    - name: Check the operating system
      ansible.builtin.assert:
        that: [ansible_facts.os_family == 'Debian']
        quiet: true

- name: Re-apply node configuration in rolling batches (no-op when converged)
  hosts: bench
  gather_facts: true
  gather_subset: [min, is_chroot]
  serial: [1, "@BATCH@"]
  max_fail_percentage: 0
  tasks:
    - name: Create the node's state directory
      ansible.builtin.file:
        path: "{{ state }}"
        state: directory
        mode: "0755"
    - name: Write the kubelet drop-in
      ansible.builtin.copy:
        content: "{{ {'kind': 'KubeletConfiguration', 'cpuManagerPolicy': 'static', 'node': inventory_hostname} | to_nice_yaml }}"
        dest: "{{ state }}/kubelet.conf"
        mode: "0644"
    - name: Write the sysctl settings
      ansible.builtin.copy:
        content: "net.ipv4.ip_forward = 1\\nnet.bridge.bridge-nf-call-iptables = 1\\n"
        dest: "{{ state }}/sysctl.conf"
        mode: "0644"
    - name: Write the module list
      ansible.builtin.copy:
        content: "overlay\\nbr_netfilter\\nnvidia\\nnvidia_uvm\\n"
        dest: "{{ state }}/modules.conf"
        mode: "0644"
    - name: Pin the driver in the fstab-like file
      ansible.builtin.lineinfile:
        path: "{{ state }}/fstab"
        line: "/dev/md/scratch /scratch xfs defaults,noatime,nofail 0 0"
        create: true
        mode: "0644"
    - name: Add the runtime block
      ansible.builtin.blockinfile:
        path: "{{ state }}/config.toml"
        block: "[plugins.nvidia]\\n  runtime_type = \\"io.containerd.runc.v2\\""
        create: true
        mode: "0644"
    - name: Read the state directory
      ansible.builtin.stat:
        path: "{{ state }}/kubelet.conf"
      register: kubelet
    - name: Read the kernel release
      ansible.builtin.command: uname -r
      register: kernel
      changed_when: false
    - name: Assert that the node is configured
      ansible.builtin.assert:
        that: [kubelet.stat.exists, kernel.rc == 0]
        quiet: true
"""


def _spec(hosts: int) -> str:
    text = (ROOT / "platform.yaml").read_text(encoding="utf-8")
    half = hosts // 2
    text = text.replace('"gpu-[001:016].dc1.acme.example"', f'"gpu-[001:{half:03d}].dc1.acme.example"')
    text = text.replace('"gpu-[017:032].dc1.acme.example"', f'"gpu-[{half + 1:03d}:{hosts:03d}].dc1.acme.example"')
    return text.replace("scaling: {min: 32, max: 32}", f"scaling: {{min: {hosts}, max: {hosts}}}")


def _create_account(work: Path) -> None:
    """A node-like login: stock profile from /etc/skel (it returns at once for non-interactive shells)."""
    home = work / "home"
    subprocess.run(["useradd", "--create-home", "--home-dir", str(home), "--shell", "/bin/bash", USER], check=True)
    subprocess.run(["usermod", "--password", "*", USER], check=True)  # unlocked for key logins, no password
    work.chmod(0o755)
    (work / "nodes").mkdir()
    shutil.chown(work / "nodes", USER)


def _delete_account() -> None:
    # its SSH sessions outlive sshd's listener (ControlPersist); ending them also ends our masters
    subprocess.run(["pkill", "--signal", "KILL", "--uid", USER], check=False, capture_output=True)
    time.sleep(0.5)
    subprocess.run(["userdel", "--remove", USER], check=False, capture_output=True)


def _start_sshd(work: Path, hosts: int) -> tuple[list[subprocess.Popen[bytes]], Path]:
    """One sshd per 16 loopback addresses (sshd's listen socket limit), all on port 2222."""
    sshd = shutil.which("sshd") or "/usr/sbin/sshd"
    if not Path(sshd).exists() or os.geteuid() != 0:
        sys.exit("bench/ansible_noop.py needs root and openssh-server (make rootfs installs it)")
    for name in ("host", "client"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(work / name)], check=True)
    (work / "authorized_keys").write_text((work / "client.pub").read_text())
    Path("/run/sshd").mkdir(exist_ok=True)
    processes = []
    for first in range(0, hosts, 16):
        listen = "\n".join(f"ListenAddress 127.0.0.{2 + i}:{PORT}" for i in range(first, min(first + 16, hosts)))
        config = work / f"sshd_config.{first}"
        config.write_text(
            f"{listen}\nHostKey {work / 'host'}\nAuthorizedKeysFile {work / 'authorized_keys'}\nPidFile {work / f'sshd.{first}.pid'}\n"
            "PermitRootLogin no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n"
            "StrictModes no\nMaxStartups 500:30:1000\nMaxSessions 200\nLogLevel ERROR\nSubsystem sftp internal-sftp\n"
        )
        log = work / f"sshd.{first}.log"
        processes.append(subprocess.Popen([sshd, "-D", "-e", "-f", str(config)], stderr=log.open("wb")))
    time.sleep(1.0)
    for process in processes:
        if process.poll() is not None:
            sys.exit("sshd did not start: " + " ".join(p.read_text() for p in work.glob("sshd.*.log")))
    return processes, work / "client"


def _inventory(work: Path, hosts: int, key: Path) -> Path:
    entries = {}
    for i in range(hosts):
        name = f"bench-{i + 1:02d}"
        entries[name] = {"ansible_host": f"127.0.0.{2 + i}", "state": str(work / "nodes" / name)}
    inventory = {
        "all": {
            "vars": {
                "ansible_port": PORT,
                "ansible_user": USER,
                "ansible_ssh_private_key_file": str(key),
                "ansible_ssh_common_args": "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR",
                "ansible_python_interpreter": "/usr/bin/python3",
            },
            "children": {"bench": {"hosts": entries}},
        }
    }
    path = work / "inventory.yml"
    path.write_text(yaml.safe_dump(inventory))
    return path


def _run(config: Path, project: Path, inventory: Path, playbook: Path) -> tuple[float, str]:
    env = {**os.environ, "ANSIBLE_CONFIG": str(config), "ANSIBLE_NOCOLOR": "1"}
    started = time.monotonic()
    result = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory), str(playbook)],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.monotonic() - started
    if result.returncode != 0:
        sys.exit(f"ansible-playbook failed with {config}:\n{result.stdout[-3000:]}\n{result.stderr[-2000:]}")
    recap = [line for line in result.stdout.splitlines() if "changed=" in line]
    changed = sum(int(line.split("changed=")[1].split()[0]) for line in recap)
    return elapsed, f"{len(recap)} hosts, changed={changed}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=50)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="alicerce-bench-"))
    sshd: list[subprocess.Popen[bytes]] = []
    try:
        _delete_account()  # left over from an interrupted run
        _create_account(work)
        sshd, key = _start_sshd(work, args.hosts)
        platform = validated(load_text(_spec(max(args.hosts, 32)), "bench-platform.yaml"), "prod")
        generated = render_tree(platform, subtrees=["ansible"])["ansible/ansible.cfg"]
        project = work / "project"
        project.mkdir()
        tuned = project / "ansible.cfg"
        tuned.write_text(generated)
        defaults = work / "defaults.cfg"
        defaults.write_text("# Ansible's defaults\n")
        playbook = project / "noop.yml"
        playbook.write_text(PLAYBOOK.replace("@BATCH@", ROLLING_BATCH))
        inventory = _inventory(work, args.hosts, key)
        configs = {"ansible defaults": defaults, "generated ansible.cfg": tuned}
        print(
            f"{args.hosts} hosts over SSH on loopback, 2 plays (rolling batches of {ROLLING_BATCH}),"
            f" 10 tasks + fact gathering; {os.cpu_count()} CPUs"
        )
        for name, config in configs.items():
            elapsed, summary = _run(config, project, inventory, playbook)
            print(f"  warm-up converge, {name}: {elapsed:.1f}s ({summary})")
        times: dict[str, list[float]] = {name: [] for name in configs}
        for _ in range(args.runs):
            for name, config in configs.items():  # side by side, alternating
                elapsed, summary = _run(config, project, inventory, playbook)
                assert "changed=0" in summary, summary
                times[name].append(elapsed)
        base = statistics.median(times["ansible defaults"])
        tuned_s = statistics.median(times["generated ansible.cfg"])
        print(f"\nno-op re-run (median of {args.runs}):")
        for name, values in times.items():
            print(f"  {name:<22} {statistics.median(values):6.1f}s   runs: {', '.join(f'{v:.1f}' for v in values)}")
        print(f"  speed-up: {base / tuned_s:.1f}x")
        print(
            "generated settings:",
            ", ".join(
                line for line in generated.splitlines() if line.split(" =")[0] in ("forks", "gathering", "fact_caching", "pipelining")
            ),
        )
        return 0
    finally:
        for process in sshd:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=10)
        _delete_account()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
