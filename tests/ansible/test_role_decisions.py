"""What the roles write and decide, rendered by Ansible's own templating from the roles' files.

Templates and private variables are rendered with ansible-core's Templar and the roles' filter
plugins, so each assertion is about the bytes a node would get; the role structure checks cover
the ordering defects (refresh after a repository change, handlers flushed per role).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import filter_loader, init_plugin_loader
from ansible.template import Templar, trust_as_template

from alicerce.catalog.onprem import load_onprem
from alicerce.emit.tree import render_tree
from alicerce.resolve.model import ResolvedPlatform
from tests.ansible.conftest import tool
from tests.conftest import DATA, ROOT

ANSIBLE = ROOT / "alicerce" / "ansible"
ROLES = ANSIBLE / "roles"

init_plugin_loader()
filter_loader.add_directory(str(ANSIBLE / "filter_plugins"))


def _defaults(role: str) -> dict[str, Any]:
    return yaml.safe_load((ROLES / role / "defaults" / "main.yml").read_text()) or {}


def _trusted(value: Any) -> Any:
    """Role files are trusted templates, as Ansible trusts them when it loads a role."""
    if isinstance(value, str):
        return trust_as_template(value)
    if isinstance(value, dict):
        return {k: _trusted(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_trusted(v) for v in value]
    return value


def _render(role: str, text: str, **variables: Any) -> Any:
    """Render ``text`` with the role's defaults and private vars, the given variables winning."""
    private = _trusted(yaml.safe_load((ROLES / role / "vars" / "main.yml").read_text()) or {})
    facts = {"architecture": "x86_64", "distribution": "Ubuntu", "distribution_release": "jammy", "is_chroot": False}
    merged = {"ansible_managed": "managed by alicerce", "ansible_facts": facts, **_defaults(role), **private, **variables}
    return Templar(loader=DataLoader(), variables=merged).template(trust_as_template(text))


def _template(role: str, name: str, **variables: Any) -> str:
    return str(_render(role, (ROLES / role / "templates" / name).read_text(), **variables))


def _tasks(role: str) -> list[dict[str, Any]]:
    tasks: list[dict[str, Any]] = []
    for path in sorted((ROLES / role / "tasks").glob("*.yml")):
        tasks += yaml.safe_load(path.read_text()) or []
    return tasks


def test_nvidia_peermem_is_loaded_only_on_the_doca_path_and_only_after_the_driver() -> None:
    """Defect 1: inbox rdma-core gets DMA-BUF (no module); peermem only with DOCA-OFED.

    Issue 20, 7: the rdma role runs before the driver exists, so it never loads nvidia_peermem (a module of the
    driver package that needs nvidia.ko); nvidia_driver loads it after the driver, at boot after nvidia."""
    modules = "{{ _rdma_modules }}"
    assert "nvidia_peermem" not in _render("rdma", modules, rdma_gpudirect="dmabuf", rdma_stack="rdma-core")
    assert "nvidia_peermem" not in _render("rdma", modules, rdma_gpudirect="peermem", rdma_stack="doca-ofed")
    names = [t["name"] for t in _tasks("rdma")]
    assert "Refuse nvidia-peermem without DOCA-OFED" in names
    assert names.index("Refuse nvidia-peermem without DOCA-OFED") < names.index("Load the RDMA modules now")
    boot = _template("nvidia_driver", "nvidia-modules.conf.j2", nvidia_driver_peermem=True).split()
    assert boot.index("nvidia") < boot.index("nvidia_peermem")
    assert "nvidia_peermem" not in _template("nvidia_driver", "nvidia-modules.conf.j2", nvidia_driver_peermem=False)
    activate = [t["name"] for t in yaml.safe_load((ROLES / "nvidia_driver" / "tasks" / "activate.yml").read_text())]
    assert activate.index("Load the NVIDIA kernel modules now") < activate.index("Load nvidia-peermem for GPUDirect RDMA against DOCA-OFED")
    verify = [t["name"] for t in yaml.safe_load((ROLES / "nvidia_driver" / "tasks" / "verify.yml").read_text())]
    assert "Assert that nvidia-peermem is loaded for GPUDirect RDMA" in verify


@pytest.mark.parametrize(
    ("stack", "modules", "path"),
    [
        ("rdma-core", "open", "dmabuf"),
        ("doca-ofed", "open", "dmabuf"),
        ("doca-ofed", "proprietary", "peermem"),
        ("rdma-core", "proprietary", "none"),
    ],
)
def test_one_gpudirect_path_per_pool_for_both_driver_owners(stack: str, modules: str, path: str) -> None:
    """Issue 20, 7: DMA-BUF wherever the open modules run; nvidia-peermem only against DOCA-OFED; never DMA-BUF
    with proprietary modules. The host role and the GPU Operator read the one decision: rdma.enabled only for
    peermem, useHostMofed where the host's rdma role installs DOCA-OFED (cloud-native-docs gpu-operator-rdma.rst)."""
    from alicerce.emit.kube.operators import operator_releases
    from alicerce.rules.validate import validated
    from alicerce.spec.loader import load_text

    base = (ROOT / "platform.yaml").read_text().replace("kernelModuleType: open", f"kernelModuleType: {modules}")
    base = base.replace("        subnetManager: external\n", f"        subnetManager: external\n        stack: {stack}\n")
    for owner in ("host", "operator"):
        text = base.replace("nodeSoftware: {gpuDriver: host}", f"nodeSoftware: {{gpuDriver: {owner}}}")
        rp = validated(load_text(text, "platform.yaml"), "prod")
        pool = yaml.safe_load(render_tree(rp, subtrees=["ansible"])["ansible/group_vars/pool_onprem_h100.yml"])
        assert pool["rdma_gpudirect"] == path
        assert pool["nvidia_driver_peermem"] is (owner == "host" and path == "peermem")
        values = next(r for r in operator_releases(rp, "dc1") if r.key == "gpu-operator").values
        if owner == "operator":
            assert values["driver"]["rdma"] == {"enabled": path == "peermem", "useHostMofed": stack == "doca-ofed"}
        else:
            assert values["driver"] == {"enabled": False}


def test_generated_pools_use_dmabuf_with_the_open_modules(prod: ResolvedPlatform) -> None:
    pool = yaml.safe_load(render_tree(prod, subtrees=["ansible"])["ansible/group_vars/pool_onprem_h100.yml"])
    assert (pool["rdma_stack"], pool["rdma_gpudirect"], pool["nvidia_driver_rebuild_for_ofed"]) == ("rdma-core", "dmabuf", False)
    site = yaml.safe_load(render_tree(prod, subtrees=["ansible"])["ansible/site.yml"])
    roles = [t["ansible.builtin.import_role"]["name"] for t in site[1]["tasks"][0]["block"] if "ansible.builtin.import_role" in t]
    assert roles.index("rdma") < roles.index("nvidia_driver") < roles.index("parallel_fs_client")  # DOCA before the driver's DKMS build


@pytest.mark.parametrize(("arch", "path"), [("x86_64", "x86_64"), ("aarch64", "arm64-sbsa")])
def test_doca_repository_is_signed_pinned_and_per_architecture(arch: str, path: str) -> None:
    """Defect 2: Signed-By, a versioned directory (never latest), the repository's own architecture name."""
    text = _template(
        "rdma", "doca.sources.j2", _rdma_os_doca_distro="ubuntu22.04", ansible_facts={"architecture": arch}, rdma_doca_version="3.2.1"
    )
    assert f"URIs: https://linux.mellanox.com/public/repo/doca/3.2.1/ubuntu22.04/{path}/" in text
    assert "Signed-By: /etc/apt/keyrings/alicerce-doca.asc" in text and "Trusted" not in text and "latest" not in text
    names = [t["name"] for t in _tasks("rdma")]
    assert names.index("Install the DOCA repository signing key") < names.index(
        "Install DOCA-OFED and the headers of the running kernel (its modules build with DKMS)"
    )
    assert "Reboot into the DOCA-OFED kernel modules" in names


def test_cuda_repository_uses_sbsa_on_arm_servers() -> None:
    """Defect 11: the CUDA repository path is sbsa for aarch64, never the architecture fact itself."""
    url = "{{ _nvidia_driver_repository }}"
    assert _render("nvidia_driver", url, _nvidia_driver_os_repository="ubuntu2404", ansible_facts={"architecture": "aarch64"}).endswith(
        "/ubuntu2404/sbsa"
    )
    assert _defaults("preflight")["preflight_architectures"] == ["x86_64"]  # the only architecture a converge exercises


def test_every_repository_change_refreshes_the_package_lists() -> None:
    """Defect 3: cache_valid_time skips the refresh; each task that adds a repository or key triggers one."""
    checked = 0
    for role in sorted(p.name for p in ROLES.iterdir()):
        tasks = _tasks(role)
        for task in tasks:
            module = task.get("ansible.builtin.template") or task.get("ansible.builtin.get_url") or task.get("alicerce_apt_key") or {}
            dest = str(module.get("dest", ""))
            if "/etc/apt/" not in dest:
                continue
            checked += 1
            register = task.get("register")
            assert register, f"{role}: {task['name']} registers nothing"
            refresh = [
                t
                for t in tasks
                if (t.get("ansible.builtin.apt") or {}).get("update_cache") and f"{register} is changed" in str(t.get("when", ""))
            ]
            assert refresh, f"{role}: nothing refreshes the package lists after {task['name']!r}"
    assert checked >= 9


def test_handlers_run_before_the_next_role_and_on_failure(prod: ResolvedPlatform) -> None:
    """Defect 8: handlers are flushed at the end of every role that has them, and forced when a later task fails."""
    for role in ROLES.iterdir():
        if (role / "handlers" / "main.yml").is_file():
            main = yaml.safe_load((role / "tasks" / "main.yml").read_text())
            assert main[-1].get("ansible.builtin.meta") == "flush_handlers", role.name
    files = render_tree(prod, subtrees=["ansible"])
    for playbook in ("ansible/site.yml", "ansible/post-cluster.yml"):
        for play in yaml.safe_load(files[playbook]):
            assert play.get("force_handlers") is True or play["name"].startswith("Check every node"), play["name"]


def test_beegfs_client_config_uses_only_keys_beegfs_knows_and_authenticates() -> None:
    """Defect 5: connRDMAEnabled is no BeeGFS key (7.4 rejects unknown keys); connAuthFile is required."""
    keys = json.loads((DATA / "upstream" / "beegfs" / load_onprem().nodeSoftware.beegfs.version / "client-keys.json").read_text())["keys"]
    text = _template("parallel_fs_client", "beegfs-client.conf.j2", item={"name": "home", "source": "mgmt.dc1"})
    written = {
        line.split("=", 1)[0].strip(): line.split("=", 1)[1].strip()
        for line in text.splitlines()
        if "=" in line and not line.startswith("#")
    }
    assert set(written) <= set(keys)
    assert written["connAuthFile"] == "/etc/beegfs/home.auth" and written["connUseRDMA"] == "true"
    tasks = {t["name"]: t for t in _tasks("parallel_fs_client")}
    secret = tasks["Write each BeeGFS file system's authentication secret (from ansible-vault)"]
    assert secret["no_log"] is True and secret["ansible.builtin.copy"]["mode"] == "0400"
    repo = _template("parallel_fs_client", "beegfs.sources.j2")
    assert "Suites: jammy" in repo and "Signed-By: /etc/apt/keyrings/alicerce-beegfs.asc" in repo


def test_lustre_comes_only_from_a_signed_pinned_repository_with_routes() -> None:
    """Defect 4: a pinned, signed repository; LNet routes to servers on other networks."""
    repo = _template("parallel_fs_client", "lustre.sources.j2", _parallel_fs_client_os_lustre_path="ubuntu2204/client")
    assert "lustre-2.15.1/ubuntu2204/client/" in repo and "Signed-By" in repo and "latest" not in repo
    lnet = _template(
        "parallel_fs_client",
        "lnet.conf.j2",
        parallel_fs_client_lnet_networks="o2ib(ibrail0,ibrail1)",
        parallel_fs_client_lnet_routes=["o2ib1 10.40.31.1@o2ib"],
    )
    assert 'options lnet networks="o2ib(ibrail0,ibrail1)" routes="o2ib1 10.40.31.1@o2ib"' in lnet
    names = [t["name"] for t in _tasks("rdma")]
    assert names.index("Rename the rails now") < names.index("Bring the rails up with their addresses before anything mounts over them")


def test_a_node_is_drained_before_a_rail_interface_goes_down_to_be_renamed() -> None:
    """Renaming a rail's interface takes its link down (RoCE RDMA traffic, IPoIB): on a running node that cut jobs'
    collectives. The node is drained first where a rail will be renamed, and only then; the batch's end releases it."""
    tasks = _tasks("rdma")
    names = [t["name"] for t in tasks]
    drain = tasks[names.index("Drain the node before its rails' interfaces are renamed")]
    assert names.index("Drain the node before its rails' interfaces are renamed") < names.index("Rename the rails now")
    assert drain["ansible.builtin.include_role"] == {"name": "kubernetes_node", "tasks_from": "drain.yml"}
    named = {"rail": 0, "name": "ibrail0", "ibdev": "ibp24s0", "pci": "0000:18:00.0", "netdev": "ibrail0", "address": None}
    unnamed = {**named, "netdev": "ibp24s0"}
    none = {**named, "netdev": None}  # a device with no interface (an IB port without IPoIB)

    def drains(*plan: dict[str, Any], live: bool = True) -> bool:
        return bool(_render("rdma", "{{ " + drain["when"] + " }}", _rdma_plan=list(plan), _rdma_live=live))

    assert drains(named, unnamed) and drains(unnamed)
    assert not drains(named, none) and not drains(none) and not drains(unnamed, live=False)


def test_roce_settings_touch_only_the_rails_and_carry_qos_and_addresses() -> None:
    """Defect 16: no MTU or PFC on the management NIC; traffic class and ECN; RoCE rails get addresses."""
    plan = [
        {"rail": 0, "name": "rorail0", "ibdev": "mlx5_0", "pci": "0000:1a:00.0", "netdev": "ens1f0np0", "address": "10.40.0.1/19"},
        {"rail": 1, "name": "rorail1", "ibdev": "mlx5_1", "pci": "0000:2a:00.0", "netdev": "ens2f0np0", "address": "10.40.32.1/19"},
    ]
    script = _template("rdma", "roce-qos.sh.j2", _rdma_plan=plan, rdma_technology="roce")
    assert "/sys/class/infiniband/*" not in script  # never every RDMA netdev
    assert "configure rorail0\n" in script and "configure rorail1\n" in script
    assert "mlx5_0" not in script  # the RDMA device is read at run time, after the PCI-based rename
    assert "default_roce_tos" in script and "TOS=106" in script and "DSCP=26" in script
    network = _template("rdma", "rail.network.j2", item=plan[1], rdma_technology="roce")
    assert "Address=10.40.32.1/19" in network and "MTUBytes=9000" in network
    assert "NCCL_IB_TC=106" in _template("rdma", "nccl.conf.j2")


def _fake_rails(root: Path, rails: dict[str, str], ecn: bool) -> Path:
    sysfs = root / "sys"
    for dev, ibdev in rails.items():
        (sysfs / "class" / "net" / dev / "device" / "infiniband" / ibdev).mkdir(parents=True)
        if ecn:
            for point in ("roce_np", "roce_rp"):
                (sysfs / "class" / "net" / dev / "ecn" / point / "enable").mkdir(parents=True)
                (sysfs / "class" / "net" / dev / "ecn" / point / "enable" / "3").write_text("0\n")
        # configfs: mkdir rdma_cm/<ibdev> makes the kernel create its ports/<n> directories
        (sysfs / "kernel" / "config" / "rdma_cm" / ibdev / "ports" / "1").mkdir(parents=True)
    return sysfs


@pytest.mark.parametrize("stack", ["inbox", "doca"])
def test_roce_qos_script_applies_on_inbox_and_doca_stacks(tmp_path: Path, stack: str) -> None:
    """Issue 20, 8: the script ran `dcb apptrust` first (absent from Ubuntu 22.04's iproute2 5.15, not implemented by
    mlx5) under set -e and aborted; ECN sysfs exists only with DOCA/MLNX-OFED; the RDMA device names were the ones
    read before the PCI-based rename. Run for real with the tools of each stack faked."""
    plan = [{"rail": i, "name": f"rorail{i}", "ibdev": f"mlx5_{i}", "pci": "", "netdev": "", "address": ""} for i in range(2)]
    script = tmp_path / "roce-qos"
    script.write_text(_template("rdma", "roce-qos.sh.j2", _rdma_plan=plan, rdma_technology="roce"))
    sysfs = _fake_rails(tmp_path, {"rorail0": "ibp26s0", "rorail1": "ibp42s0"}, ecn=stack == "doca")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "calls"
    fakes = {"ip": "exit 0", "dcb": '[ "$1" = apptrust ] && { echo "Object \\"apptrust\\" is unknown" >&2; exit 255; }; exit 0'}
    if stack == "doca":
        fakes["mlnx_qos"] = "exit 0"
    for name, body in fakes.items():
        (bin_dir / name).write_text(f'#!/bin/sh\necho "{name} $*" >> {log}\n{body}\n')
        (bin_dir / name).chmod(0o755)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "ALICERCE_SYSFS": str(sysfs)}
    result = subprocess.run(["sh", str(script)], capture_output=True, text=True, env=env, check=False)
    assert result.returncode == 0, result.stderr
    calls = log.read_text().splitlines()
    assert "ip link set dev rorail1 mtu 9000" in calls and not [c for c in calls if "apptrust" in c]
    if stack == "doca":
        assert "mlnx_qos -i rorail0 --trust dscp --pfc 0,0,0,1,0,0,0,0" in calls
        assert (sysfs / "class/net/rorail0/ecn/roce_np/enable/3").read_text().strip() == "1"
    else:
        assert "dcb app replace dev rorail0 dscp-prio 26:3" in calls and "dcb pfc set dev rorail0 prio-pfc all:off 3:on" in calls
        assert "no roce_np ECN knob" in result.stdout
    for ibdev in ("ibp26s0", "ibp42s0"):  # the renamed devices, found through each rail's netdev
        assert (sysfs / f"kernel/config/rdma_cm/{ibdev}/ports/1/default_roce_tos").read_text().strip() == "106"


def test_roce_fabrics_get_rail_addresses(prod: ResolvedPlatform, tmp_path: Path) -> None:
    from alicerce.rules.validate import validated
    from alicerce.spec.loader import load_file

    text = (ROOT / "platform.yaml").read_text().replace("technology: infiniband", "technology: roce")
    spec = tmp_path / "platform.yaml"
    spec.write_text(text)
    files = render_tree(validated(load_file(spec, "platform.yaml"), "prod"), subtrees=["ansible"])
    host = yaml.safe_load(files["ansible/inventory.yml"])["all"]["children"]["site_dc1"]["children"]["pool_onprem_h100"]["children"]
    assert host["rack_dc1_r01"]["hosts"]["gpu-001.dc1.acme.example"]["rdma_addresses"][0] == "10.40.0.1/19"


def test_cdi_follows_the_driver() -> None:
    """Defect 14: no one-shot spec (creates:); nvidia-cdi-refresh regenerates it on driver changes."""
    tasks = _tasks("nvidia_container_toolkit")
    assert not [t for t in tasks if "creates" in str(t)]
    enable = next(t for t in tasks if t["name"] == "Enable the CDI refresh on driver changes and at boot")
    assert enable["loop"] == ["nvidia-cdi-refresh.path", "nvidia-cdi-refresh.service"]
    assert not [t for t in tasks if "containerd" in str(t.get("ansible.builtin.lineinfile", t.get("ansible.builtin.template", "")))]


def test_an_operator_owned_driver_points_the_host_toolkit_at_the_driver_container() -> None:
    """The GPU Operator runs with toolkit.enabled=false: the host toolkit reads the driver under /run/nvidia/driver."""
    import re

    facts = json.loads((DATA / "upstream" / "nvidia-container-toolkit" / "v1.18.2" / "config-defaults.json").read_text())
    tasks = _tasks("nvidia_container_toolkit")
    edit = next(t for t in tasks if t["name"] == "Point the runtime at the driver container's root")["ansible.builtin.lineinfile"]
    assert edit["path"] == facts["file"] and re.search(edit["insertafter"], f"[{facts['section']}]")
    lines = [("#" if k["commented"] else "") + f"{k['key']} = {json.dumps(k['value'])}" for k in facts["keys"]]
    assert [line for line in lines if re.search(edit["regexp"], line)] == ['#root = "/run/nvidia/driver"']  # only root, not user
    cdi = [t for t in tasks if "nvidia-cdi-refresh" in str(t.get("loop", t.get("ansible.builtin.systemd_service", "")))]
    assert cdi and all("_nvidia_container_toolkit_host_driver" in str(t["when"]) for t in cdi)  # no host driver to read


def test_fabric_manager_failure_modes_are_the_documented_keys() -> None:
    """Defect 15: degraded operation is TRUNK_LINK_FAILURE_MODE / NVSWITCH_FAILURE_MODE, not FABRIC_MODE_RESTART."""
    settings = _render("nvidia_fabricmanager", "{{ _nvidia_fabricmanager_settings }}", nvidia_fabricmanager_degraded_mode=True)
    assert {k: str(v) for k, v in settings.items()} == {"TRUNK_LINK_FAILURE_MODE": "1", "NVSWITCH_FAILURE_MODE": "1"}
    assert "FABRIC_MODE_RESTART" not in json.dumps(_tasks("nvidia_fabricmanager"))
    packages = _render("nvidia_fabricmanager", "{{ _nvidia_fabricmanager_packages }}")
    assert packages == ["nvidia-fabricmanager=580.173.02-*", "libnvidia-nscq=580.173.02-*"]


def test_persistence_mode_is_really_on() -> None:
    """Defect 10: the packaged unit passes --no-persistence-mode; the drop-in replaces its ExecStart."""
    text = _template("nvidia_driver", "nvidia-persistenced.conf.j2")
    exec_start = [line for line in text.splitlines() if line.startswith("ExecStart=")]
    assert exec_start == ["ExecStart=", "ExecStart=/usr/bin/nvidia-persistenced --user root --persistence-mode --verbose"]


def test_no_role_installs_the_distributions_containerd() -> None:
    """Defect 9: Debian's containerd 1.6 is retired; kubespray installs the runtime."""
    for role in ROLES.iterdir():
        for task in _tasks(role.name):
            apt = task.get("ansible.builtin.apt") or {}
            if apt.get("state", "present") == "present":
                assert "containerd" not in str(apt.get("name", "")), f"{role.name}: {task['name']}"
    assert "containerd" in _render("kubernetes_node", "{{ _kubernetes_node_retired }}")


def _secure_boot_sysfs(root: Path, enabled: bool) -> Path:
    efivars = root / "sys" / "firmware" / "efi" / "efivars"
    efivars.mkdir(parents=True)
    # EFI variable: 4 bytes of attributes, then the value (1: Secure Boot on)
    (efivars / "SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c").write_bytes(b"\x06\x00\x00\x00" + (b"\x01" if enabled else b"\x00"))
    return root / "sys"


@pytest.mark.parametrize(("source", "ok"), [("nvidia", False), ("distribution", True)])
def test_secure_boot_refuses_unsigned_modules(tmp_path: Path, source: str, ok: bool) -> None:
    """Defect 10: with Secure Boot on, only Ubuntu's signed prebuilt modules are accepted (real Ansible run)."""
    sysfs = _secure_boot_sysfs(tmp_path / "node", enabled=True)
    playbook = tmp_path / "play.yml"
    task = {"ansible.builtin.include_role": {"name": "nvidia_driver", "tasks_from": "preflight.yml"}}
    facts = {"distribution": "Ubuntu", "distribution_version": "24.04", "distribution_major_version": "24"}
    variables = {"nvidia_driver_target": "host", "nvidia_driver_sysfs_root": str(sysfs), "nvidia_driver_source": source}
    include_vars = {"ansible.builtin.include_vars": str(ROLES / "nvidia_driver" / "vars" / "Ubuntu-24.04.yml")}
    play = {"name": "Secure Boot", "hosts": "localhost", "gather_facts": False, "vars": variables}
    play["tasks"] = [
        {"name": "Pretend Ubuntu 24.04", "ansible.builtin.set_fact": {"ansible_facts": facts}},
        {"name": "OS vars", **include_vars},
        {"name": "Check", **task},
    ]
    playbook.write_text(yaml.safe_dump([play]))
    result = subprocess.run(
        [tool("ansible-playbook"), "-i", "localhost,", "-c", "local", str(playbook)],
        check=False,
        capture_output=True,
        text=True,
        env={"ANSIBLE_CONFIG": str(ANSIBLE / "ansible.cfg"), "PATH": "/usr/bin:/bin", "ANSIBLE_NOCOLOR": "1"},
        cwd=ANSIBLE,
    )
    assert (result.returncode == 0) is ok, result.stdout[-2000:]
    if not ok:
        assert "NVIDIA's DKMS modules are unsigned" in result.stdout


def test_a_changed_driver_version_drains_upgrades_reboots_verifies_and_releases_one_batch_at_a_time(prod: ResolvedPlatform) -> None:
    """Issue 20, 5: packages at the spec's version (a bare name never upgrades), drained before they change, the
    node rebooted and verified, then accepted and uncordoned before the next batch (not after the whole site)."""
    specs = _render(
        "nvidia_driver",
        "{{ _nvidia_driver_install_specs }}",
        _nvidia_driver_os_packages=_trusted(
            yaml.safe_load((ROLES / "nvidia_driver" / "vars" / "Ubuntu-22.04.yml").read_text())["_nvidia_driver_os_packages"]
        ),
        nvidia_driver_source="distribution",
    )
    assert specs == [
        "linux-modules-nvidia-580-server-open-generic",
        "nvidia-headless-no-dkms-580-server-open=580.173.02-*",
        "nvidia-utils-580-server=580.173.02-*",
    ]
    install = {t["name"]: i for i, t in enumerate(yaml.safe_load((ROLES / "nvidia_driver" / "tasks" / "install.yml").read_text()))}
    tasks = yaml.safe_load((ROLES / "nvidia_driver" / "tasks" / "install.yml").read_text())
    apt = tasks[install["Install the driver packages at the spec's version"]]["ansible.builtin.apt"]
    assert apt["name"] == "{{ _nvidia_driver_install_specs }}" and apt["allow_change_held_packages"] is True
    assert install["Drain the node before its driver is upgraded"] < install["Install the driver packages at the spec's version"]
    site = yaml.safe_load(render_tree(prod, subtrees=["ansible"])["ansible/site.yml"])
    rolling = site[1]
    assert rolling["serial"] == [1, "25%"] and rolling["max_fail_percentage"] == 0
    batch_end = rolling["tasks"][0]["block"][-1]  # inside the block whose rescue holds a failed node
    assert rolling["tasks"][0]["rescue"] and rolling["tasks"][1]["name"] == "Stop the roll before the next batch"
    assert "always" in batch_end["tags"] and "_kubernetes_node_drained_now" in batch_end["when"]
    steps = [(t["ansible.builtin.include_role"]["name"], t["ansible.builtin.include_role"].get("tasks_from")) for t in batch_end["block"]]
    assert steps == [("node_validation", None), ("kubernetes_node", "release.yml")]  # accepted before released
    assert all(t["ansible.builtin.include_role"]["apply"]["tags"] == ["always"] for t in batch_end["block"])  # --tags never strands it


def test_acceptance_gates_the_node_before_it_takes_work(prod: ResolvedPlatform) -> None:
    """Issue 20, 4: nothing uncordons or untaints a node before node_validation passed; the post-cluster stage
    releases it last, even under --tags."""
    post = yaml.safe_load(render_tree(prod, subtrees=["ansible"])["ansible/post-cluster.yml"])
    block = post[0]["tasks"][0]["block"]
    steps = [(t["ansible.builtin.import_role"]["name"], t["ansible.builtin.import_role"].get("tasks_from")) for t in block]
    assert steps == [("kubernetes_node", "post-cluster.yml"), ("node_validation", None), ("kubernetes_node", "release.yml")]
    assert post[0]["tasks"][0]["block"][-1]["tags"] == ["always"]
    before = json.dumps(yaml.safe_load((ROLES / "kubernetes_node" / "tasks" / "post-cluster.yml").read_text()))
    assert "uncordon" not in before and "alicerce.dev/drained-" not in before
    release = yaml.safe_load((ROLES / "kubernetes_node" / "tasks" / "release.yml").read_text())
    assert [t["name"] for t in release if "argv" in str(t)][1:] == [
        "Remove the acceptance taint the node joined with",
        "Uncordon the node alicerce drained",
        "Clear the drained mark",
    ]
    argv = _render(
        "kubernetes_node", release[2]["ansible.builtin.command"]["argv"], inventory_hostname="gpu-001", _kubernetes_node_release={}
    )
    assert argv[-3:] == ["node", "gpu-001", "alicerce.dev/acceptance:NoSchedule-"]
    burn_in = yaml.safe_load((ROLES / "node_validation" / "tasks" / "burn-in.yml").read_text())
    assert all("not _node_validation_busy" in str(t["when"]) for t in burn_in if "when" in t and "timeout" in t)
    from alicerce.emit.kube.operators import operator_releases

    values = next(r for r in operator_releases(prod, "dc1") if r.key == "gpu-operator").values
    held = {"key": "alicerce.dev/acceptance", "operator": "Exists", "effect": "NoSchedule"}
    assert held in values["daemonsets"]["tolerations"] and held in values["node-feature-discovery"]["worker"]["tolerations"]
    aws = next(r for r in operator_releases(prod, "aws") if r.key == "gpu-operator").values
    assert held not in aws["daemonsets"]["tolerations"]


def _play(tmp_path: Path, tasks: list[dict[str, Any]], variables: dict[str, Any], check: bool) -> subprocess.CompletedProcess[str]:
    playbook = tmp_path / "play.yml"
    play = {"name": "Role steps", "hosts": "localhost", "gather_facts": False, "vars": variables, "tasks": tasks}
    playbook.write_text(yaml.safe_dump([play]))
    return subprocess.run(
        [tool("ansible-playbook"), "-i", "localhost,", "-c", "local", *(["--check"] if check else []), str(playbook)],
        check=False,
        capture_output=True,
        text=True,
        env={"ANSIBLE_CONFIG": str(ANSIBLE / "ansible.cfg"), "PATH": "/usr/bin:/bin:/usr/sbin:/sbin", "ANSIBLE_NOCOLOR": "1"},
        cwd=ANSIBLE,
    )


def test_check_mode_on_a_fresh_running_node_loads_nothing_it_has_not_installed(tmp_path: Path) -> None:
    """Issue 20, 6: with the driver packages only simulated, check mode must not run `modprobe -n nvidia` (no
    module yet) nor start nvidia-persistenced (no unit yet); it reports what it would do (real Ansible run)."""
    sysfs = tmp_path / "sys"
    (sysfs / "module").mkdir(parents=True)  # no module/nvidia: no driver loaded
    variables = {"nvidia_driver_target": "host", "nvidia_driver_sysfs_root": str(sysfs), "nvidia_driver_peermem": True}
    simulate = {
        "name": "Simulate the package install",
        "ansible.builtin.command": {"argv": ["true"]},
        "register": "_nvidia_driver_packages",
    }
    simulate["check_mode"] = True  # skipped in check mode, as apt is when the repository is added by the same run
    rebuilt = {
        "name": "No DOCA rebuild",
        "ansible.builtin.command": {"argv": ["true"]},
        "register": "_nvidia_driver_rebuilt",
        "when": False,
    }
    tasks = [
        simulate,
        rebuilt,
        {"name": "Activate", "ansible.builtin.include_role": {"name": "nvidia_driver", "tasks_from": "activate.yml"}},
    ]
    result = _play(tmp_path, tasks, variables, check=True)
    assert result.returncode == 0, result.stdout[-3000:]
    assert "would install NVIDIA driver 580.173.02 and load nvidia, nvidia_uvm, nvidia_modeset" in result.stdout


def test_verify_steps_wait_for_what_check_mode_only_simulated() -> None:
    """Issue 20, 6: Fabric Manager, scratch, file system and toolkit verification are skipped for a change check
    mode only reported (nothing is installed, created or mounted), never asserted against a fresh node."""
    mains = {role: yaml.safe_load((ROLES / role / "tasks" / "main.yml").read_text()) for role in ROLES.iterdir() for role in [role.name]}
    verify = {
        role: next(t for t in tasks if "verify.yml" in str(t.get("ansible.builtin.import_tasks", "")))["when"]
        for role, tasks in mains.items()
        if any("verify.yml" in str(t.get("ansible.builtin.import_tasks", "")) for t in tasks)
    }
    assert "_nvidia_fabricmanager_pending" in verify["nvidia_fabricmanager"]
    assert "_nvme_scratch_pending" in verify["nvme_scratch"]
    assert "_parallel_fs_client_pending" in verify["parallel_fs_client"]
    for role, variable in (
        ("nvidia_fabricmanager", "_nvidia_fabricmanager_install"),
        ("parallel_fs_client", "_parallel_fs_client_install"),
    ):
        pending = "{{ _" + role + "_pending }}"
        assert _render(role, pending, ansible_check_mode=True, **{variable: {"changed": True}}) is True
        assert _render(role, pending, ansible_check_mode=False, **{variable: {"changed": True}}) is False
    toolkit = yaml.safe_load((ROLES / "nvidia_container_toolkit" / "tasks" / "verify.yml").read_text())
    assert "_nvidia_container_toolkit_pending" in toolkit[0]["when"]
    for task in yaml.safe_load((ROLES / "nvidia_fabricmanager" / "tasks" / "configure.yml").read_text()):
        assert "_nvidia_fabricmanager_pending" in task["when"], task["name"]


def test_fourth_generation_nvswitches_get_nvlsm_and_ib_umad_from_the_catalog() -> None:
    """Issue 20, 9: HGX B200's Fabric Manager cannot start without the NVLink Subnet Manager and ib_umad (Fabric
    Manager user guide, "Systems Using Fourth Generation NVSwitches"); decided from the GPU's NVLink data."""
    from alicerce.catalog import load_catalog
    from alicerce.rules.validate import validated
    from alicerce.spec.loader import load_text

    catalog = load_catalog()
    assert [catalog.gpu(g).interconnect.nvswitch_generation for g in ("A100-SXM4-80GB", "H100-SXM5-80GB", "B200", "H100-NVL-94GB")] == [
        2,
        3,
        4,
        None,
    ]
    text = (ROOT / "platform.yaml").read_text()
    declared = 'accelerator: "H100-SXM5-80GB:8"\n    onprem:'
    assert declared in text
    for model, nvlsm in (("H100-SXM5-80GB", False), ("B200-SXM-180GB", True)):
        rp = validated(load_text(text.replace(declared, declared.replace("H100-SXM5-80GB", model)), "platform.yaml"), "prod")
        pool = yaml.safe_load(render_tree(rp, subtrees=["ansible"])["ansible/group_vars/pool_onprem_h100.yml"])
        assert (pool["nvidia_fabricmanager_enabled"], pool["nvidia_fabricmanager_nvlsm"]) == (True, nvlsm), model
    assert _render("nvidia_fabricmanager", "{{ _nvidia_fabricmanager_extra_packages }}", nvidia_fabricmanager_nvlsm=True) == ["nvlsm"]
    assert _render("nvidia_fabricmanager", "{{ _nvidia_fabricmanager_modules }}", nvidia_fabricmanager_nvlsm=True) == ["ib_umad"]
    assert _render("nvidia_fabricmanager", "{{ _nvidia_fabricmanager_extra_packages }}") == []
    tasks = [t["name"] for t in yaml.safe_load((ROLES / "nvidia_fabricmanager" / "tasks" / "configure.yml").read_text())]
    assert tasks.index("Load ib_umad now, before Fabric Manager starts NVLSM") < tasks.index("Enable Fabric Manager")
    install = yaml.safe_load((ROLES / "nvidia_fabricmanager" / "tasks" / "install.yml").read_text())[0]
    assert "_nvidia_fabricmanager_extra_packages" in install["ansible.builtin.apt"]["name"]


def test_smaller_node_stage_defects(prod: ResolvedPlatform) -> None:
    """Issue 20, 10: the preflight play stops the whole run on one unfit node (any_errors_fatal), LNet runs only on
    the rail whose subnet holds the Lustre server (10.40.31.250 is in rail 0's /19), and the headers are installed
    for the kernel read afresh, not from a fact cache up to a day old."""
    files = render_tree(prod, subtrees=["ansible"])
    site = yaml.safe_load(files["ansible/site.yml"])
    assert site[0]["name"].startswith("Check every node") and site[0]["any_errors_fatal"] is True
    pool = yaml.safe_load(files["ansible/group_vars/pool_onprem_h100.yml"])
    assert pool["parallel_fs_client_lnet_networks"] == "o2ib(ibrail0)"
    for role, header in (
        ("nvidia_driver", "Install the headers of the running kernel (the driver's DKMS build needs them)"),
        ("parallel_fs_client", "Install the headers of the running kernel (the Lustre client modules build with DKMS)"),
        ("rdma", "Install DOCA-OFED and the headers of the running kernel (its modules build with DKMS)"),
    ):
        names = [t["name"] for t in _tasks(role)]
        refresh = next(t for t in _tasks(role) if t["name"] == "Read the running kernel afresh")
        assert refresh["ansible.builtin.setup"]["filter"] == ["ansible_kernel"]
        assert names.index("Read the running kernel afresh") == names.index(header) - 1, role


def test_lustre_over_a_roce_fabric_runs_lnet_on_the_roce_rails() -> None:
    """o2iblnd runs over RoCE too: a pool whose fabric changes from InfiniBand to RoCE keeps its LNet networks, on the
    rails the rdma role names rorailN (before, the networks went empty and the clients could not reach @o2ib servers)."""
    from alicerce.emit.ansible.site import RAIL_PREFIX
    from alicerce.rules.validate import validated
    from alicerce.spec.loader import load_text

    text = (ROOT / "platform.yaml").read_text().replace("technology: infiniband", "technology: roce")
    roce = validated(load_text(text.replace("        subnetManager: external\n", ""), "platform.yaml"), "prod")
    pool = yaml.safe_load(render_tree(roce, subtrees=["ansible"])["ansible/group_vars/pool_onprem_h100.yml"])
    assert pool["parallel_fs_client_lnet_networks"] == "o2ib(rorail0)"
    assert pool["rdma_online_rails"] == ["rorail0"]
    # the names LNet is told are the names the rdma role gives the rails, per transport
    for technology, prefix in RAIL_PREFIX.items():
        assert _render("rdma", "{{ _rdma_link_prefix }}", rdma_technology=technology) == prefix


def test_burn_in_floors_of_nvlink_bridged_pcie_gpus_are_reachable() -> None:
    """Issue 20, 10: H100 NVL pairs are bridged, not switched: an 8-GPU all-reduce runs at PCIe speed, never at the
    bridge's NVLink figure (the old floor, 210 GB/s, no such node can reach)."""
    from alicerce.rules.validate import validated
    from alicerce.spec.loader import load_text

    text = (ROOT / "platform.yaml").read_text()
    declared = 'accelerator: "H100-SXM5-80GB:8"\n    onprem:'
    rp = validated(load_text(text.replace(declared, declared.replace("H100-SXM5-80GB", "H100-NVL-94GB")), "platform.yaml"), "prod")
    pool = yaml.safe_load(render_tree(rp, subtrees=["ansible"])["ansible/group_vars/pool_onprem_h100.yml"])
    assert (pool["node_validation_nccl_busbw_gbps"], pool["node_validation_p2p_bw_gbps"]) == (44.8, 44.8)  # PCIe gen5 x16 x 0.7


def test_an_unprivileged_pod_cannot_claim_every_gpu_through_the_environment(prod: ResolvedPlatform) -> None:
    """Issue 20, 10: nvidia is containerd's default runtime on GPU nodes, and by default the toolkit honours
    NVIDIA_VISIBLE_DEVICES=all from any pod. The host toolkit ignores the variable for unprivileged containers and
    takes the device plugin's volume mounts instead; the device plugin hands GPUs over that way."""
    import re

    from alicerce.emit.kube.operators import operator_releases

    facts = json.loads((DATA / "upstream" / "nvidia-container-toolkit" / "v1.18.2" / "config-defaults.json").read_text())
    defaults = ["#" + f"{k['key']} = {json.dumps(k['value'])}" for k in facts["top_level_keys"]]
    task = next(t for t in _tasks("nvidia_container_toolkit") if t["name"] == "Take the GPUs a container gets only from the device plugin")
    wanted = _render("nvidia_container_toolkit", "{{ _nvidia_container_toolkit_device_selection }}")
    assert wanted == {
        "accept-nvidia-visible-devices-envvar-when-unprivileged": "false",
        "accept-nvidia-visible-devices-as-volume-mounts": "true",
    }
    for key in wanted:  # each setting replaces the packaged, commented default line in place
        regexp = _render("nvidia_container_toolkit", task["ansible.builtin.lineinfile"]["regexp"], item={"key": key})
        assert [line for line in defaults if re.search(regexp, line)] == [next(d for d in defaults if key in d)]
    values = next(r for r in operator_releases(prod, "dc1") if r.key == "gpu-operator").values
    assert {"name": "DEVICE_LIST_STRATEGY", "value": "volume-mounts"} in values["devicePlugin"]["env"]
    assert "env" not in next(r for r in operator_releases(prod, "aws") if r.key == "gpu-operator").values["devicePlugin"]


def test_the_beegfs_helper_daemon_gets_the_authentication_file() -> None:
    """Issue 20, 10: beegfs-helperd needs connAuthFile as the client does, and restarts before the client."""
    tasks = {t["name"]: t for t in _tasks("parallel_fs_client")}
    helper = tasks["Give the BeeGFS helper daemon the authentication file"]
    edit = helper["ansible.builtin.lineinfile"]
    assert edit["path"] == "/etc/beegfs/beegfs-helperd.conf"
    line = _render("parallel_fs_client", edit["line"], _parallel_fs_client_beegfs=[{"name": "home"}])
    assert line == "connAuthFile = /etc/beegfs/home.auth"
    handlers = [h["name"] for h in yaml.safe_load((ROLES / "parallel_fs_client" / "handlers" / "main.yml").read_text())]
    assert handlers.index("Restart the BeeGFS helper daemon") < handlers.index("Restart the BeeGFS client")


@pytest.mark.parametrize("unsigned", [[], ["lustre (lustre-client-modules-dkms)"]])
def test_secure_boot_stops_the_run_for_every_unsigned_module_not_only_the_driver(
    tmp_path: Path, unsigned: list[str], prod: ResolvedPlatform
) -> None:
    """Issue 20, 10: Lustre's and DOCA-OFED's DKMS modules (and BeeGFS's, built at start) are unsigned too: the
    preflight play (any_errors_fatal) stops before anything changes (real Ansible run)."""
    sysfs = _secure_boot_sysfs(tmp_path / "node", enabled=True)
    (sysfs / "bus" / "pci" / "devices").mkdir(parents=True)
    variables = {"preflight_target": "host", "preflight_sysfs_root": str(sysfs), "preflight_unsigned_modules": unsigned}
    tasks = [{"name": "Hardware", "ansible.builtin.include_role": {"name": "preflight", "tasks_from": "hardware.yml"}}]
    result = _play(tmp_path, tasks, variables, check=False)
    assert (result.returncode == 0) is (not unsigned), result.stdout[-3000:]
    if unsigned:
        assert "would build unsigned modules the kernel refuses: lustre (lustre-client-modules-dkms)" in result.stdout
    pool = yaml.safe_load(render_tree(prod, subtrees=["ansible"])["ansible/group_vars/pool_onprem_h100.yml"])
    assert pool["preflight_unsigned_modules"] == ["lustre (lustre-client-modules-dkms)"]


def test_rail_addresses_stay_with_their_host_when_another_node_leaves() -> None:
    """Issue 20, 10: addresses were positional: removing gpu-017 from the range moved gpu-018..032 to other addresses
    under their mounted Lustre. Each host keeps the address of its own number."""
    from alicerce.rules.validate import validated
    from alicerce.spec.loader import load_text

    text = (ROOT / "platform.yaml").read_text()
    declared = '{hosts: "gpu-[017:032].dc1.acme.example", rack: r02}'
    assert declared in text

    def addresses(spec: str) -> dict[str, Any]:
        rp = validated(load_text(spec, "platform.yaml"), "prod")
        inventory = yaml.safe_load(render_tree(rp, subtrees=["ansible"])["ansible/inventory.yml"])
        racks = inventory["all"]["children"]["site_dc1"]["children"]["pool_onprem_h100"]["children"]
        return {h: v["rdma_addresses"] for rack in racks.values() for h, v in rack["hosts"].items()}

    before = addresses(text)
    assert before["gpu-001.dc1.acme.example"][0] == "10.40.0.1/19" and before["gpu-018.dc1.acme.example"][0] == "10.40.0.18/19"
    # gpu-017 leaves, gpu-033 replaces it
    after = addresses(text.replace(declared, '{hosts: "gpu-[018:033].dc1.acme.example", rack: r02}'))
    assert "gpu-017.dc1.acme.example" not in after and after["gpu-033.dc1.acme.example"][0] == "10.40.0.33/19"
    assert all(after[h] == before[h] for h in after if h in before)


def test_lustre_mounts_wait_for_the_rail_they_run_over(prod: ResolvedPlatform) -> None:
    """Issue 20, 10: the rails were RequiredForOnline=no, so network-online.target (which _netdev mounts wait for)
    came before their addresses and the Lustre mount raced them at boot."""
    pool = yaml.safe_load(render_tree(prod, subtrees=["ansible"])["ansible/group_vars/pool_onprem_h100.yml"])
    assert pool["rdma_online_rails"] == ["ibrail0"]
    rail = {"name": "ibrail0", "address": "10.40.0.1/19"}
    assert "RequiredForOnline=yes" in _template("rdma", "rail.network.j2", item=rail, rdma_online_rails=["ibrail0"])
    assert "RequiredForOnline=no" in _template("rdma", "rail.network.j2", item={**rail, "name": "ibrail3"}, rdma_online_rails=["ibrail0"])
    assert "_netdev" in next(m for m in pool["parallel_fs_client_mounts"] if m["type"] == "lustre")["options"]


def _clock_check(
    tmp_path: Path, behind: int, synchronised: str | None, node_vars: dict[str, object] | None = None
) -> subprocess.CompletedProcess[str]:
    """preflight's clock check (real Ansible) on a node whose ``date`` is ``behind`` seconds behind this machine's (the
    controller's) and whose ``timedatectl show -p NTPSynchronized --value`` says ``synchronised`` (None: no
    timedatectl, as in an image). The node is a local host whose Python runs with the fakes first on its PATH."""
    fakes = tmp_path / "node-bin"
    fakes.mkdir()
    scripts = {"date": f"echo $(( $(/usr/bin/date -u +%s) - {behind} ))\n"}
    if synchronised is not None:
        scripts["timedatectl"] = f'[ "$*" = "show -p NTPSynchronized --value" ] && echo {synchronised}\n'
    for name, body in scripts.items():
        (fakes / name).write_text("#!/bin/sh\n" + body)
        (fakes / name).chmod(0o755)
    python = tmp_path / "node-python"
    python.write_text(f'#!/bin/sh\nPATH={fakes}:$PATH exec {sys.executable} "$@"\n')
    python.chmod(0o755)
    inventory = tmp_path / "hosts.yml"
    node = {"ansible_python_interpreter": str(python), **(node_vars or {})}
    hosts = {"node": node, "localhost": {"ansible_python_interpreter": sys.executable}}
    inventory.write_text(yaml.safe_dump({"all": {"vars": {"ansible_connection": "local"}, "hosts": hosts}}))
    check = {"name": "Check", "ansible.builtin.include_role": {"name": "preflight", "tasks_from": "clock.yml"}}
    playbook = tmp_path / "play.yml"
    playbook.write_text(yaml.safe_dump([{"name": "Clock", "hosts": "node", "gather_facts": False, "tasks": [check]}]))
    return subprocess.run(
        [tool("ansible-playbook"), "-i", str(inventory), "--check", str(playbook)],
        check=False,
        capture_output=True,
        text=True,
        env={"ANSIBLE_CONFIG": str(ANSIBLE / "ansible.cfg"), "PATH": "/usr/bin:/bin:/usr/sbin:/sbin", "ANSIBLE_NOCOLOR": "1"},
        cwd=ANSIBLE,
    )


@pytest.mark.parametrize(
    ("behind", "synchronised", "ok"),
    [(0, "no", True), (290, "no", True), (6 * 3600, "no", False), (6 * 3600, None, False), (6 * 3600, "yes", True)],
)
def test_a_node_clock_far_behind_stops_the_run_before_apt(tmp_path: Path, behind: int, synchronised: str | None, ok: bool) -> None:
    """The node roles run apt before kubespray installs chrony: a clock hours behind (an RTC kept in local time) makes
    apt reject every recent Release file as not valid yet. preflight compares the node's clock with the controller's
    and stops the run before any change, saying how to set it. A node whose own time client reports it synchronised is
    not stopped (obsreview38 G-1): a controller hours fast would otherwise stop every run on a healthy fleet; it is
    warned about, and the controller is named first."""
    result = _clock_check(tmp_path, behind, synchronised)
    assert (result.returncode == 0) is ok, result.stdout[-2000:]
    if not ok:
        message = result.stdout[result.stdout.index("behind this controller's") :]
        assert message.index("this controller's own clock") < message.index("apt would reject")
        assert "date -u -s @$(date -u +%s)" in message and "ssh node sudo" in message  # N-3: works without ansible's inventory
    if synchronised == "yes":
        assert "reports itself synchronised" in result.stdout
        # obsreview40 N-3 (a): both causes are named, the node's time servers as well as the controller's clock
        warning = result.stdout[result.stdout.index("reports itself synchronised") :]
        assert "this controller's clock is ahead" in warning and "time servers" in warning and "not valid yet" in warning


def test_the_clock_fix_command_reaches_the_node_as_ansible_does(tmp_path: Path) -> None:
    """Before (obsreview40 N-3 b): `ssh <host> sudo ...` ignored ansible_user and ansible_port."""
    result = _clock_check(tmp_path, 6 * 3600, "no", {"ansible_user": "admin", "ansible_port": 2222})
    assert result.returncode != 0
    assert "ssh -p 2222 admin@node sudo date -u -s @$(date -u +%s)" in result.stdout, result.stdout[-2000:]
    assert "as you reach the node" in result.stdout


def test_the_clock_check_runs_before_the_first_role_that_uses_apt(generated: Path) -> None:
    """The site's check play (preflight, every node, before any change) comes before the provisioning play whose roles
    run apt; and preflight's clock check is part of it."""
    site = yaml.safe_load((generated / "site.yml").read_text())
    assert [r["role"] for r in site[0]["roles"]] == ["preflight"] and "serial" not in site[0]
    assert "roles" not in site[1] and site[1]["serial"]
    tasks = yaml.safe_load((ROLES / "preflight" / "tasks" / "main.yml").read_text())
    assert any(t.get("ansible.builtin.import_tasks") == "clock.yml" for t in tasks)
    # obsreview38 N-2: the controller's clock is read once, before any node's, so the time the node reads take (forks,
    # a bastion) only makes a node look ahead, never behind; before, it was read after every node's read
    clock = yaml.safe_load((ROLES / "preflight" / "tasks" / "clock.yml").read_text())
    controller = next(i for i, t in enumerate(clock) if t.get("delegate_to") == "localhost")
    assert clock[controller]["run_once"] is True and clock[controller]["check_mode"] is False
    assert clock[controller]["become"] is False  # the check play becomes root on the nodes, never on the controller
    assert controller < next(i for i, t in enumerate(clock) if t.get("register") == "_preflight_clock")
