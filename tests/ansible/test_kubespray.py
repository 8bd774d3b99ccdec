"""The generated kubespray project checked against the facts of the pinned kubespray release.

tests/data/upstream/kubespray/<tag>/ holds facts read from the release (variables with their types
and where they are defined, inventory groups, supported Kubernetes patches, the keys its kubelet
config template renders, the runtime fields its containerd templates read): every group and
variable alicerce writes must exist there with the right type, and a pin without a vendored copy
fails.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from alicerce.catalog.onprem import load_onprem
from alicerce.emit.ansible.kubespray import PLAYBOOKS, PURPOSE_KUBELET, topology_admits
from alicerce.emit.kube.operators import gpu_operator_values
from alicerce.emit.tree import render_tree
from alicerce.rules.validate import validated
from alicerce.spec.loader import load_file
from tests.conftest import DATA, ROOT

RELEASE = load_onprem().kubespray
UPSTREAM = DATA / "upstream" / "kubespray" / RELEASE.tag
TYPES: dict[str, type | tuple[type, ...]] = {"str": str, "bool": bool, "int": int, "list": list, "dict": dict}


def _facts(name: str) -> Any:
    return json.loads((UPSTREAM / name).read_text())


def _yaml(files: Mapping[str, str], path: str) -> Any:
    return yaml.safe_load(files[path])


@pytest.fixture(scope="module")
def files(prod_files: Mapping[str, str]) -> Mapping[str, str]:
    return prod_files


def _variables(files: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Every kubespray variable file of the generated tree."""
    return {p: _yaml(files, p) for p in files if p.startswith("ansible/kubespray/") and "/group_vars/" in p}


def test_the_pinned_release_has_vendored_facts() -> None:
    """A new kubespray pin needs its facts vendored first (and they must name the same commit)."""
    assert (UPSTREAM / "SOURCE.yaml").is_file(), f"vendor the facts of kubespray {RELEASE.tag} under {UPSTREAM}"
    source = yaml.safe_load((UPSTREAM / "SOURCE.yaml").read_text())
    assert (source["tag"], source["commit"]) == (RELEASE.tag, RELEASE.commit)
    facts = _facts("facts.json")
    assert facts["commit"] == _facts("variables.json")["commit"] == RELEASE.commit
    pins = {k: v for k, v in RELEASE.python.items() if k != "ansible-core"}
    assert pins == facts["ansible"]["requirements.txt"]  # kubespray's requirements.txt, exactly


def test_the_environment_lock_pins_the_release_requirements_each_with_a_hash(files: dict[str, str]) -> None:
    """kubespray's environment installs with ``pip install --require-hashes``: every package (the release's
    requirements.txt and all they install) is pinned exactly, with the sha256 of its file (issue 22)."""
    from packaging.requirements import Requirement

    from alicerce.catalog.onprem import kubespray_lock

    lock = kubespray_lock(RELEASE)
    entries = [e for e in lock.replace("\\\n", " ").splitlines() if e.strip() and not e.startswith("#")]
    pins = {}
    for entry in entries:
        requirement, *hashes = entry.split("--hash=")
        parsed = Requirement(requirement.strip())
        (spec,) = parsed.specifier
        assert spec.operator == "==", entry
        assert hashes and all(re.fullmatch(r"sha256:[0-9a-f]{64}", h.strip()) for h in hashes), entry
        pins[str(parsed.name).lower()] = spec.version
    assert {k: pins.get(k) for k in RELEASE.python} == RELEASE.python
    assert len(pins) > len(RELEASE.python)  # and what they install (jinja2, PyYAML, cffi, ...)
    generated = files["ansible/kubespray/requirements.lock"]
    assert generated.endswith(lock) and generated.startswith("# ")
    source = yaml.safe_load((ROOT / "alicerce/catalog/data/kubespray" / RELEASE.tag / "SOURCE.yaml").read_text())
    assert source["tag"] == RELEASE.tag and source["commit"] == RELEASE.commit


def test_every_kubernetes_patch_alicerce_installs_is_in_the_release() -> None:
    supported = _facts("facts.json")["supported_kubernetes"]
    for minor, patch in RELEASE.kubernetes.items():
        assert patch in supported[minor] and patch == supported[minor][-1], minor  # the newest patch of the minor


def test_inventory_uses_kubespray_groups_with_the_control_plane_and_pools(files: dict[str, str]) -> None:
    groups = _facts("facts.json")["groups"]
    inventory = _yaml(files, "ansible/kubespray/dc1/inventory.yml")["all"]["children"]
    assert set(inventory) <= set(groups)
    required = [name for name, group in groups.items() if group["required"] is True]
    assert required == ["kube_control_plane"] and inventory["kube_control_plane"]["hosts"]
    masters = list(inventory["kube_control_plane"]["hosts"])
    assert masters == [f"cp-{i}.dc1.acme.example" for i in (1, 2, 3)] and len(masters) % 2 == 1  # etcd quorum
    assert inventory["etcd"] == {"children": {"kube_control_plane": None}}
    workers = inventory["kube_node"]["children"]["pool_onprem_h100"]["hosts"]
    assert len(workers) == 32 and not set(workers) & set(masters)


def test_every_variable_written_exists_at_the_pinned_release_with_its_type(files: dict[str, str]) -> None:
    known = _facts("variables.json")["variables"]
    written = _variables(files)
    assert set(written) == {
        "ansible/kubespray/dc1/group_vars/all.yml",
        "ansible/kubespray/dc1/group_vars/pool_dc1_system.yml",
        "ansible/kubespray/dc1/group_vars/pool_onprem_h100.yml",
    }
    for path, variables in written.items():
        for name, value in variables.items():
            assert name in known, f"{path}: {name} is not a kubespray {RELEASE.tag} variable"
            assert isinstance(value, TYPES[known[name]["type"]]), f"{path}: {name} should be a {known[name]['type']}"
    cluster = written["ansible/kubespray/dc1/group_vars/all.yml"]
    assert cluster["kube_version"] == "1.35.4"
    assert (cluster["kube_pods_subnet"], cluster["kube_service_addresses"]) == ("10.128.0.0/14", "172.20.0.0/16")
    assert cluster["kubeconfig_localhost"] is True and cluster["nvidia_accelerator_enabled"] is False


def test_kubelet_extra_args_never_repeat_a_key_the_template_renders(files: dict[str, str]) -> None:
    """kubelet_config_extra_args is dumped verbatim after the templated keys: a repeated key is a duplicate YAML key."""
    templated = set(_facts("facts.json")["kubelet_config_template_keys"])
    pool = _yaml(files, "ansible/kubespray/dc1/group_vars/pool_onprem_h100.yml")
    extra = pool["kubelet_config_extra_args"]
    assert not set(extra) & templated
    assert extra["registerWithTaints"] == [
        {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},
        # issue 20, 4: a new node joins held for acceptance (only at registration: kubespray re-applies node_taints)
        {"key": "alicerce.dev/acceptance", "value": "pending", "effect": "NoSchedule"},
    ]
    assert pool["node_taints"] == ["nvidia.com/gpu=true:NoSchedule"]  # and after join, by kubectl


def test_the_nvidia_runtime_renders_as_kubespray_reads_it(files: dict[str, str]) -> None:
    fields = _facts("facts.json")["containerd_runtime_fields"]
    pool = _yaml(files, "ansible/kubespray/dc1/group_vars/pool_onprem_h100.yml")
    (runtime,) = pool["containerd_additional_runtimes"]
    for template, read in fields.items():
        assert set(read) <= set(runtime), template  # containerd 2 and 1 templates both find every field they read
    # kubespray writes a value bare only when its string form is exactly true/false: a YAML boolean would be "True"
    assert all(isinstance(v, str) for v in runtime["options"].values())
    assert str(runtime["options"]["SystemdCgroup"]) == "true"
    assert pool["containerd_default_runtime"] == "nvidia" and pool["enable_cdi"] is True
    assert pool["kubelet_systemd_wants_dependencies"] == ["nvidia-persistenced.service", "nvidia-fabricmanager.service"]


def test_operator_owned_drivers_still_get_the_host_toolkit_and_kubespray_runtime(tmp_path: Path, prod_files: Mapping[str, str]) -> None:
    """gpuDriver: operator (the default) runs the GPU Operator with toolkit.enabled=false, so the host owns the toolkit.

    NVIDIA cloud-native-docs gpu-operator/getting-started.rst "Pre-Installed NVIDIA Container Toolkit (but no
    drivers)": the host toolkit reads the driver from /run/nvidia/driver, where the driver container mounts it;
    kubespray, the one owner of config.toml, names the nvidia runtime (nothing writes a conf.d drop-in).
    """
    text = (ROOT / "platform.yaml").read_text().replace("nodeSoftware: {gpuDriver: host}", "nodeSoftware: {gpuDriver: operator}")
    spec = tmp_path / "platform.yaml"
    spec.write_text(text)
    platform = validated(load_file(spec, "platform.yaml"), "prod")
    files = render_tree(platform, subtrees=["ansible"])
    pool = _yaml(files, "ansible/kubespray/dc1/group_vars/pool_onprem_h100.yml")
    assert "containerd_extra_args" not in pool
    assert pool["containerd_default_runtime"] == "nvidia" and pool["containerd_additional_runtimes"][0]["name"] == "nvidia"
    assert "kubelet_systemd_wants_dependencies" not in pool  # persistenced and Fabric Manager run in the driver container
    roles = _yaml(files, "ansible/group_vars/pool_onprem_h100.yml")
    assert not roles["nvidia_driver_enabled"] and not roles["nvidia_fabricmanager_enabled"]
    assert roles["nvidia_container_toolkit_enabled"] and roles["nvidia_container_toolkit_driver_root"] == "/run/nvidia/driver"
    values = gpu_operator_values(platform, platform.site("dc1"))
    assert values["toolkit"] == {"enabled": False} and values["driver"]["enabled"]
    host = _yaml(
        prod_files,
        "ansible/group_vars/pool_onprem_h100.yml",
    )
    assert host["nvidia_container_toolkit_driver_root"] == "/"


@pytest.mark.parametrize(
    ("balancer", "expected"),
    [
        (
            "{kind: kube-vip, address: 10.30.0.5, interface: eno1}",
            {"kube_vip_enabled": True, "kube_vip_address": "10.30.0.5", "kube_vip_interface": "eno1", "kube_proxy_strict_arp": True},
        ),
        ("{kind: external, address: 10.30.0.6}", {"loadbalancer_apiserver": {"address": "10.30.0.6", "port": 6443}}),
    ],
)
def test_ha_control_plane_from_the_load_balancer(tmp_path: Path, balancer: str, expected: dict[str, Any]) -> None:
    text = (ROOT / "platform.yaml").read_text().replace("{kind: kube-vip, address: 10.30.0.5, interface: eno1}", balancer)
    spec = tmp_path / "platform.yaml"
    spec.write_text(text)
    files = render_tree(validated(load_file(spec, "platform.yaml"), "prod"), subtrees=["ansible"])
    cluster = _yaml(files, "ansible/kubespray/dc1/group_vars/all.yml")
    assert expected.items() <= cluster.items()
    assert cluster["apiserver_loadbalancer_domain_name"] == "k8s.dc1.acme.example"
    assert cluster["loadbalancer_apiserver_localhost"] is False
    assert "kube_vip_enabled" in cluster or "kube_vip_enabled" not in expected


def test_pinned_collection_and_environment(files: dict[str, str]) -> None:
    requirements = _yaml(files, "ansible/kubespray/requirements.yml")
    (collection,) = requirements["collections"]
    assert collection == {"name": f"{RELEASE.repository}.git", "type": "git", "version": RELEASE.commit}
    pins = [line for line in files["ansible/kubespray/requirements.txt"].splitlines() if not line.startswith("#")]
    assert sorted(pins) == sorted(f"{k}=={v}" for k, v in RELEASE.python.items())
    for playbook, name in PLAYBOOKS.items():
        (play,) = _yaml(files, f"ansible/kubespray/dc1/{playbook}")
        assert play["ansible.builtin.import_playbook"] == f"{RELEASE.collection}.{name}"
        assert f"{RELEASE.collection}.{name}" in _facts("facts.json")["collection"]["playbooks"]
    ee = _yaml(files, "ansible/kubespray/execution-environment.yml")
    assert ee["dependencies"]["ansible_core"]["package_pip"] == "ansible-core==2.18.12"


def test_training_pools_admit_their_eight_gpu_pods() -> None:
    """Defect 6: an HGX board hangs four GPUs off each socket; single-numa-node rejects every 8-GPU pod."""
    hgx = [4, 4]
    assert not topology_admits("single-numa-node", hgx, 8)
    assert topology_admits("single-numa-node", hgx, 4)
    for purpose in ("training", "fine-tuning"):
        managers = PURPOSE_KUBELET[purpose]
        assert topology_admits(managers.topology_manager, hgx, 8), purpose
        assert (managers.topology_manager, managers.scope) == ("restricted", "pod")
    assert not topology_admits("restricted", hgx, 9)


def test_the_artifacts_folder_is_a_template_ansible_renders(files: dict[str, str], tmp_path: Path) -> None:
    """alicerce's own template (artifacts_dir) stays live while spec text is written !unsafe: loaded as Ansible loads
    group_vars, it renders to the kept kubespray/artifacts/<site> folder; written inert it would name a folder
    literally called '{{ inventory_dir }}'."""
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar

    path = tmp_path / "all.yml"
    path.write_text(files["ansible/kubespray/dc1/group_vars/all.yml"])
    loader = DataLoader()
    data = loader.load_from_file(str(path), trusted_as_template=True)
    rendered = Templar(loader=loader, variables={**data, "inventory_dir": "/p/kubespray/dc1"}).template(data["artifacts_dir"])
    assert rendered == "/p/kubespray/dc1/../artifacts/dc1"


@pytest.mark.parametrize("storage_class", [None, "ceph-rbd"])
def test_monitoring_claims_bind_on_a_kubespray_cluster(storage_class: str | None, tmp_path: Path) -> None:
    """A default kubespray cluster has no StorageClass: Prometheus's claim, naming none at an on-prem site, would stay
    Pending. kubespray's local-path provisioner (its default class) is turned on exactly then; a spec that names its
    own class (monitoring.storageClass) gets no second default."""
    from alicerce.emit.kube.operators import monitoring_values
    from alicerce.spec.loader import load_text

    text = (ROOT / "platform.yaml").read_text()
    if storage_class:
        assert "\nmonitoring:\n" in text
        text = text.replace("\nmonitoring:\n", f"\nmonitoring:\n  storageClass: {storage_class}\n", 1)
    rp = validated(load_text(text, "platform.yaml"), "prod")
    claim = monitoring_values(rp, rp.site("dc1"))["prometheus"]["prometheusSpec"]["storageSpec"]["volumeClaimTemplate"]["spec"]
    cluster = _yaml(render_tree(rp, subtrees=["ansible"]), "ansible/kubespray/dc1/group_vars/all.yml")
    assert claim.get("storageClassName") == storage_class
    assert cluster["local_path_provisioner_enabled"] is (storage_class is None)
    assert _facts("variables.json")["variables"]["local_path_provisioner_enabled"]["default"] == "false"


def test_kubespray_gets_privilege_escalation_and_remove_node_its_variables(files: dict[str, str]) -> None:
    """Issue 20 defect 1: nothing passed --become; kubespray's documented invocation is --become --become-user=root."""
    import configparser

    from alicerce.run.ansible import KUBESPRAY_BECOME, apply_sequence

    facts = _facts("facts.json")
    assert list(KUBESPRAY_BECOME) == facts["invocation"]["become"]
    config = configparser.ConfigParser()
    config.read_string(files["ansible/kubespray/ansible.cfg"].split("\n", 1)[1])
    assert config.getboolean("privilege_escalation", "become") and config.get("privilege_escalation", "become_user") == "root"
    ansible = Path("/p/ansible")
    picked = {"dc1": ["gpu-005.dc1.acme.example"]}
    (stage,) = apply_sequence(ansible, ["dc1"], "remove-node", None, limit="gpu-005.dc1.acme.example", selected=picked, offline=True)
    given = dict(o.split("=", 1) for o in stage.options if "=" in o and not o.startswith("--"))
    assert set(facts["remove_node"]["required_extra_vars"]) <= set(given)
    assert facts["remove_node"]["offline_extra_vars"].items() <= given.items() and given["skip_confirmation"] == "true"
    for stage in apply_sequence(ansible, ["dc1"], "upgrade-cluster", None):
        assert stage.options == (KUBESPRAY_BECOME if stage.environment is not None or "kubespray" in stage.name else ())


def test_the_api_server_keeps_an_audit_log_for_the_audit_retention(files: dict[str, str]) -> None:
    """Issue 24 item 6: kubespray's own audit switch (off by default at the pinned release) and its log rotation."""
    known = _facts("variables.json")["variables"]
    assert known["kubernetes_audit"]["default"] == "false"
    cluster = _variables(files)["ansible/kubespray/dc1/group_vars/all.yml"]
    assert cluster["kubernetes_audit"] is True
    assert cluster["audit_log_maxage"] == 365  # security.audit.retention: 365d
    assert cluster["audit_log_maxsize"] * cluster["audit_log_maxbackups"] == 10_000  # MB on each control-plane host
    assert "kubernetes_audit_webhook" not in cluster  # kubespray's default (false) unless the spec names a collector


def test_audit_events_leave_the_control_plane_hosts_when_the_spec_names_a_collector() -> None:
    """Review obsreview11 F4: the on-prem audit log stayed on each control-plane host, 10 GB at most. With
    security.audit.webhook, kubespray's audit webhook sends the same policy's events, batched, to that collector
    (variables vendored from kubespray v2.31.0 roles/kubernetes/control-plane: off and "https://audit.app" by
    default); the local log stays. An http:// endpoint is refused: audit events name users and resources."""
    from alicerce.emit.tree import render_tree
    from alicerce.rules.validate import validated
    from alicerce.spec.errors import SpecInvalid
    from alicerce.spec.loader import load_text
    from tests.conftest import ROOT

    known = _facts("variables.json")["variables"]
    assert known["kubernetes_audit_webhook"]["default"] == "false" and known["audit_webhook_server_url"]["type"] == "str"
    declared = "  audit: {enabled: true, retention: 365d}\n"
    text = (ROOT / "platform.yaml").read_text()
    assert declared in text
    url = "https://audit.dc1.example.com/k8s"
    with_collector = text.replace(declared, f"  audit: {{enabled: true, retention: 365d, webhook: {url}}}\n")
    tree = render_tree(validated(load_text(with_collector, "p.yaml"), "prod"))
    cluster = _variables(dict(tree))["ansible/kubespray/dc1/group_vars/all.yml"]
    assert cluster["kubernetes_audit_webhook"] is True and cluster["audit_webhook_server_url"] == url
    assert cluster["kubernetes_audit"] is True
    assert set(cluster) <= set(known)  # every variable the tree sets is one the pinned kubespray reads
    plain = text.replace(declared, "  audit: {enabled: true, retention: 365d, webhook: http://audit.dc1.example.com}\n")
    with pytest.raises(SpecInvalid) as refused:
        validated(load_text(plain, "p.yaml"), "prod")
    [error] = refused.value.errors
    assert tuple(error.path)[-2:] == ("audit", "webhook") and "https://" in error.message


def test_kubespray_owns_the_hosts_clocks_with_chrony_and_the_sites_servers(files: dict[str, str]) -> None:
    """Issue 24: kubespray installs, configures and starts chrony on every host (ntp_enabled is off by default at the
    pinned release, and its package defaults to ntp except on RedHat), from the site's timeSync.servers; its chrony
    template renders rtcsync, without which the node exporter's timex collector never reads the clock as synchronised
    (node_exporter v1.12.1 docs/TIME.md)."""
    known = _facts("variables.json")["variables"]
    chrony = _facts("facts.json")["time_sync"]["chrony"]
    assert (known["ntp_enabled"]["default"], known["ntp_manage_config"]["default"]) == ("false", "false")
    assert known["ntp_package"]["default"].startswith("chrony on ansible_os_family RedHat, else ntp")
    cluster = _variables(files)["ansible/kubespray/dc1/group_vars/all.yml"]
    assert cluster["ntp_enabled"] is True and cluster["ntp_package"] == "chrony" and cluster["ntp_manage_config"] is True
    # platform.yaml's dc1 timeSync.servers, each a `server <entry>` line of chrony.conf with kubespray's iburst
    assert cluster["ntp_servers"] == [f"ntp{i}.dc1.acme.example iburst" for i in (1, 2, 3)]
    assert chrony["server_line"] == "server <ntp_servers entry>" and "rtcsync" in chrony["directives"]
    assert chrony["package_installed_when"] == ["ntp_enabled", "ntp_package == 'chrony'"]
    # the zone and the forced sync keep kubespray's defaults (unset): no variable here changes them
    assert not {"ntp_timezone", "ntp_force_sync_immediately"} & set(cluster)


def test_a_site_without_time_servers_keeps_the_packages_chrony_configuration() -> None:
    """Without timeSync.servers kubespray still installs and starts chrony, over its package's own configuration
    (ntp_manage_config and ntp_servers keep kubespray's defaults: kubespray's pool.ntp.org list is never rendered)."""
    text = (ROOT / "platform.yaml").read_text()
    declared = "        timeSync: {servers: [ntp1.dc1.acme.example, ntp2.dc1.acme.example, ntp3.dc1.acme.example]}\n"
    assert declared in text
    from alicerce.spec.loader import load_text

    rp = validated(load_text(text.replace(declared, ""), "platform.yaml"), "prod")
    cluster = _yaml(render_tree(rp, subtrees=["ansible"]), "ansible/kubespray/dc1/group_vars/all.yml")
    assert {k: v for k, v in cluster.items() if k.startswith("ntp_")} == {"ntp_enabled": True, "ntp_package": "chrony"}


TIME_DAEMON = re.compile(r"chrony|\bntpd?\b|ntpsec|ntp\.conf|\bntp_|timesyncd|timedatectl|hwclock|adjtimex|date\s+(-u\s+)?-s", re.I)
# what a task may do with time: read whether the node's time client reports it synchronised (the preflight clock
# check, before apt runs ahead of kubespray's chrony); prose (a task's name, a message to the operator) may name anything
TIME_READS = re.compile(r"timedatectl show -p NTPSynchronized --value")
MESSAGES = frozenset({"msg", "fail_msg", "success_msg"})


def _actions(node: Any) -> list[str]:
    """Every string a task or variable file acts on, less the prose an operator reads: messages, and a task's name (a
    mapping naming a module, such as ansible.builtin.command; a module's own name argument, a service's, is an action).
    A list of strings (a command's argv) is read as the command line it runs."""
    if isinstance(node, Mapping):
        task = any("." in str(k) for k in node)
        return [s for k, v in node.items() if k not in MESSAGES and not (task and k == "name") for s in _actions(v)]
    if isinstance(node, list):
        if node and all(isinstance(v, str) for v in node):
            return [" ".join(node)]
        return [s for v in node for s in _actions(v)]
    return [node] if isinstance(node, str) else []


def _yaml_actions(text: str) -> list[str] | None:
    """A YAML file's actions, or None for a template that is YAML only once rendered (read line by line then)."""
    try:
        return _actions(yaml.safe_load(text))
    except yaml.YAMLError:
        return None


def test_no_alicerce_role_configures_a_time_daemon() -> None:
    """One owner of the hosts' clocks: kubespray (above). No role or template alicerce ships installs, configures or
    restarts chrony, ntpd, ntpsec or systemd-timesyncd, nor sets the clock. YAML is judged by what its tasks do (not
    its comments or messages, which may tell the operator how to set a clock); templates and scripts line by line."""
    roots = [ROOT / "alicerce" / "ansible", ROOT / "alicerce" / "emit" / "templates", ROOT / "alicerce" / "targets" / "aws" / "files"]
    found: list[str] = []
    reads: list[str] = []
    for path in sorted(p for root in roots for p in root.rglob("*") if p.is_file()):
        text = path.read_text(errors="replace")
        if path.suffix in {".yml", ".yaml"} and (acts := _yaml_actions(text)) is not None:
            reads += [path.name for s in acts if TIME_READS.search(s)]
            lines = [TIME_READS.sub("", s) for s in acts]
        elif path.suffix in {".yml", ".yaml", ".j2", ".py", ".sh", ".cfg", ".service", ".timer", ".json"}:
            lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
        else:
            continue
        found += [f"{path.relative_to(ROOT)}: {line.strip()[:80]}" for line in lines if TIME_DAEMON.search(line)]
    assert found == []
    assert reads == ["clock.yml"]  # the one read allowed is where it is meant to be
    assert len([p for root in roots for p in root.rglob("*.yml")]) > 20  # the roles are there to be searched
