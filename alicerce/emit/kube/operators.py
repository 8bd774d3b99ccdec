"""The operators each cluster runs: Helm charts pinned to the catalog, with values from the resolved platform.

A :class:`Release` is plain data. Pulumi installs it (``alicerce/emit/pulumi/operators.py``) with
``helm.v4.Chart``, which renders the chart and applies its objects but runs no Helm hook
(pulumi-kubernetes ``provider/pkg/provider/helm/v4/chart.go``: ``DisableHooks = true``). So every
release here gets values under which nothing it needs comes from a hook; the hook facts of each
chart at its pinned version live in ``tests/data/upstream/<chart>/<version>/hooks.json`` and a test
evaluates their guards against these values.

Ownership: the node software of a site has one owner each (``ResolvedSite.software``). The GPU
Operator installs the driver only where the spec gives it the driver, never the container toolkit
(the node image or the host owns it), and kube-prometheus-stack runs the node exporter only where
the host role does not.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from alicerce.catalog.alerts import (
    ALERT_SCOPE_LABELS,
    CHART_CLOCK_UNSYNCHRONISED,
    GROUPED_ACROSS_NODES,
    NODE_OUTAGE_GROUP_BY,
    SLACK_TEXT,
    alertmanager_replicas,
    chart_clock_unsynchronised_description,
    pool_alert_name,
)
from alicerce.emit.kube.cloud_metrics import exporter_values
from alicerce.emit.kube.common import (
    GPU,
    POOL_LABEL,
    content_name,
    deep_merge,
    held_tolerations,
    host_rdma_pools,
    system_placement,
    system_pools,
    tolerate,
)
from alicerce.emit.kube.dcgm_counters import counters_configmap, counters_csv
from alicerce.emit.kube.kpi import (
    CONTROLLER_REVISION_LABEL,
    JOB_UID_LABEL,
    JOBSET_UID_LABEL,
    LWS_WORKER_INDEX_LABEL,
    MODEL_REVISION_LABEL,
    POD_TEMPLATE_HASH_LABEL,
    RAY_CLUSTER_LABEL,
    RAY_NODE_TYPE_LABEL,
    RAY_SERVE_LABEL,
)
from alicerce.emit.kube.kueue import kueue_configuration
from alicerce.emit.storage_counters import TEXTFILE_DIRECTORY, node_exporter_drops, reads_textfiles
from alicerce.resolve.gpu import DEVICE_PLUGIN_DEFAULT_CONFIG, device_plugin_config_name, mig_config_name
from alicerce.resolve.model import ResolvedPlatform, ResolvedPool, ResolvedSite
from alicerce.resolve.namespaces import (
    GPU_OPERATOR_NAMESPACE,
    KUBERAY_NAMESPACE,
    KUEUE_NAMESPACE,
    MONITORING_NAMESPACE,
    NETWORK_OPERATOR_NAMESPACE,
    TRAINER_NAMESPACE,
)
from alicerce.resolve.operators import OPERATORS, PRIVILEGED_OPERATOR_NAMESPACES
from alicerce.spec.models import AlertReceiver, MigSharing, TimeSlicing
from alicerce.targets.base import EtcdMetrics

MIG_CONFIGMAP = "alicerce-mig-parted"
DEVICE_PLUGIN_CONFIGMAP = "alicerce-device-plugin"

# Chart defaults alicerce extends: Helm replaces a list value, so alicerce's list repeats them
# (gpu-operator v26.3.3 values.yaml 41-44 and 560-567; a test compares them with the vendored defaults).
GPU_OPERATOR_DAEMONSET_TOLERATIONS = ({"key": GPU, "operator": "Exists", "effect": "NoSchedule"},)
# The Network Operator chart's own node-feature-discovery.worker.tolerations (values.yaml at v26.1.0): a list
# given in values replaces it, so alicerce's list starts from it.
NETWORK_NFD_WORKER_TOLERATIONS = (
    {"key": "node-role.kubernetes.io/master", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"},
    {"key": GPU, "operator": "Exists", "effect": "NoSchedule"},
)
NFD_WORKER_TOLERATIONS = (
    {"key": "node-role.kubernetes.io/control-plane", "operator": "Equal", "value": "", "effect": "NoSchedule"},
    {"key": GPU, "operator": "Exists", "effect": "NoSchedule"},
)
# Target labels that prometheus-operator puts on every ServiceMonitor target before the endpoint's
# own relabelings run (prometheus-operator v0.93.0 pkg/prometheus/promcfg.go generateServiceMonitorConfig).
# Dropped for DCGM: a GPU no pod holds carries no pod/namespace (dcgm-exporter 4.5.3-4.8.2
# transformation/kubernetes.go 398-401), and must not inherit the exporter pod's own.
DCGM_TARGET_LABELS_DROPPED = "namespace|pod|container"
# kube-prometheus-stack's switch of each control-plane scrape (its Service, Endpoints, ServiceMonitor and rules)
CONTROL_PLANE_SCRAPES = {
    "controller-manager": "kubeControllerManager",
    "scheduler": "kubeScheduler",
    "etcd": "kubeEtcd",
    "kube-proxy": "kubeProxy",
}


@dataclass(frozen=True)
class Release:
    """One Helm release: which chart, at which pinned version, where, with which values."""

    key: str  # catalog chart key, e.g. "gpu-operator"
    chart: str
    repository: str  # https Helm repository or oci:// registry
    version: str
    namespace: str
    values: dict[str, Any] = field(default_factory=dict)
    depends_on: tuple[str, ...] = ()  # keys of releases that must be installed first (CRDs, node labels, scrapers)

    @property
    def chart_ref(self) -> str:
        """What `helm` takes as the chart argument: repo-relative name, or a full OCI reference."""
        return f"{self.repository.rstrip('/')}/{self.chart}" if self.repository.startswith("oci://") else self.chart

    @property
    def repo_url(self) -> str | None:
        return None if self.repository.startswith("oci://") else self.repository


def _dump(data: Any) -> str:
    return yaml.safe_dump(data, sort_keys=True, default_flow_style=False)


def duration_text(seconds: float) -> str:
    """Prometheus-style duration: whole days when exact, else hours."""
    return f"{int(seconds // 86400)}d" if seconds % 86400 == 0 else f"{max(1, round(seconds / 3600))}h"


# Where each chart takes the placement of its controllers (Deployments, StatefulSets; never the node agents'
# DaemonSets), as value paths checked against tests/data/upstream/<chart>/<version>/values.json. "" is the root.
# The GPU Operator's values.yaml declares no operator.nodeSelector, but its templates/operator.yaml reads one (v26.3.3).
CONTROLLER_PLACEMENT: dict[str, tuple[str, ...]] = {
    "kube-prometheus-stack": (
        "prometheus.prometheusSpec",
        "alertmanager.alertmanagerSpec",
        "prometheusOperator",
        "grafana",
        "kube-state-metrics",
    ),
    "gpu-operator": ("operator", "node-feature-discovery.master", "node-feature-discovery.gc"),
    "network-operator": ("operator", "node-feature-discovery.master", "node-feature-discovery.gc"),
    "aws-fsx-csi-driver": ("controller",),
    "prometheus-yet-another-cloudwatch-exporter": ("",),
    "kueue": ("controllerManager",),
    "kuberay-operator": ("",),
    # the Trainer's JobSet controller comes with it as the jobset subchart (0.12.0)
    "training-operator": ("manager", "jobset.controller"),
}


def _nested(path: str, value: dict[str, Any]) -> dict[str, Any]:
    out = value
    for part in reversed([p for p in path.split(".") if p]):
        out = {part: out}
    return out


def controller_placement(key: str, site: ResolvedSite) -> dict[str, Any]:
    """The values that pin a chart's controllers to the site's system pool (nodeSelector and the system pool's
    tolerations); its DaemonSets keep reaching every node they serve."""
    placement = system_placement(site.pools)
    if not placement:
        return {}
    values: dict[str, Any] = {}
    for path in CONTROLLER_PLACEMENT.get(key, ()):
        values = deep_merge(values, _nested(path, placement))
    return values


def _with_defaults(defaults: tuple[dict[str, str], ...], extra: list[dict[str, str]]) -> list[dict[str, str]]:
    out = [dict(t) for t in defaults]
    out += [t for t in extra if not any(t["key"] == d["key"] and t["effect"] == d["effect"] for d in defaults)]
    return out


def _driver_rdma(pools: list[ResolvedPool]) -> dict[str, bool]:
    """``driver.rdma`` of an operator-owned driver, from the GPUDirect path resolve decided per pool.

    DMA-BUF (NVIDIA's recommendation) needs no module: ``rdma.enabled`` stays false. The legacy
    nvidia-peermem is built and loaded by the driver pod only with ``rdma.enabled: true``; either way
    ``useHostMofed`` tells the driver pod that DOCA/MLNX-OFED is installed on the host (alicerce's rdma role)
    rather than by the Network Operator (cloud-native-docs gpu-operator-rdma.rst, "Installing the GPU Operator
    and Enabling GPUDirect RDMA"; values.yaml ``driver.rdma``).
    """
    paths = [p for p in pools if p.rdma is not None and p.rdma.gpudirect != "none"]
    return {
        "enabled": any(p.rdma.gpudirect == "peermem" for p in paths if p.rdma is not None),
        "useHostMofed": any(p.rdma.host_stack == "doca-ofed" for p in paths if p.rdma is not None),
    }


def network_operator_values(site: ResolvedSite, *, own_nfd: bool) -> dict[str, Any]:
    """Network Operator values: its own Node Feature Discovery only where no GPU Operator brings one."""
    values: dict[str, Any] = {"nfd": {"enabled": own_nfd, "deployNodeFeatureRules": own_nfd}, "upgradeCRDs": False}
    if own_nfd:
        # its worker labels the adapters (pci-15b3) the RDMA device plugin's DaemonSet selects: it must reach the
        # RDMA nodes, their taints and the acceptance taint they join with, or acceptance waits for rdma/* forever
        held = tolerate(host_rdma_pools(site.pools)) + held_tolerations(site.capabilities.nodes_by_ansible)
        values["node-feature-discovery"] = {"worker": {"tolerations": _with_defaults(NETWORK_NFD_WORKER_TOLERATIONS, held)}}
    return values


def gpu_operator_values(rp: ResolvedPlatform, site: ResolvedSite) -> dict[str, Any]:
    """GPU Operator values for one site: the driver only where the operator owns it, never the toolkit."""
    op = rp.spec.operators.gpu_operator
    pools = [p for p in site.pools if p.gpu is not None]
    driver: dict[str, Any] = {"enabled": site.software.gpu_driver == "operator"}
    if driver["enabled"]:
        modules = {p.kernel_modules for p in pools if p.kernel_modules is not None}
        driver |= {
            "version": rp.versions.driverVersion,  # in the release's component matrix (rule AL254)
            # one value per cluster: the pools' own choice when they agree, else the operator decides per node
            "kernelModuleType": modules.pop() if len(modules) == 1 else "auto",
            "rdma": _driver_rdma(pools),
        }
    # the device plugin, DCGM and NFD must run on a node still held for acceptance: acceptance checks what they offer
    taints = tolerate(pools) + held_tolerations(site.capabilities.nodes_by_ansible)
    values: dict[str, Any] = {
        "driver": driver,
        # the toolkit's owner is the node image or the host (NodeSoftwareOwners.container_toolkit), never the operator
        "toolkit": {"enabled": False},
        # every operand DaemonSet (device plugin, DCGM, MIG manager, validator) and NFD's worker must reach the GPU nodes
        "daemonsets": {"tolerations": _with_defaults(GPU_OPERATOR_DAEMONSET_TOLERATIONS, taints)},
        "node-feature-discovery": {
            "worker": {"tolerations": _with_defaults(NFD_WORKER_TOLERATIONS, taints)},
            "postDeleteCleanup": False,  # a post-delete hook, which helm.v4.Chart never runs
        },
        "operator": {"upgradeCRD": False},  # a pre-upgrade hook; helm.v4.Chart applies crds/ itself
        "mig": {"strategy": op.mig_strategy},
        "dcgmExporter": {
            "serviceMonitor": {
                "enabled": op.dcgm_service_monitor and rp.spec.operators.monitoring.enabled,
                "honorLabels": True,
                # the exporter's own pod/namespace/container leave the target, so only a GPU's workload ever names them
                "relabelings": [{"action": "labeldrop", "regex": DCGM_TARGET_LABELS_DROPPED}],
            },
            # alicerce's counters list: the image's own plus the XID count per code (alicerce.emit.kube.dcgm_counters)
            # named after its content: the exporter reads it at start only, so a new list must roll the DaemonSet
            "config": {"name": counters_configmap(), "create": True, "data": counters_csv()},
        },
    }
    if site.capabilities.nodes_by_ansible:
        # the host toolkit ignores NVIDIA_VISIBLE_DEVICES from unprivileged pods (nvidia_container_toolkit role): the
        # device plugin hands the allocated GPUs over as volume mounts (k8s-device-plugin v0.20.0 DEVICE_LIST_STRATEGY)
        values["devicePlugin"] = {"env": [{"name": "DEVICE_LIST_STRATEGY", "value": "volume-mounts"}]}

    # each layout under the config name its nodes' label selects (the label is one fact: resolve.gpu). And every config
    # name a node of the site may still select (review obsreview32 G-1): the label moves with the node's own pipeline
    # (kubespray's node-label role and post-cluster.yml on-prem, the EKS node group at aws), the ConfigMaps with the
    # GitOps sync, and nothing orders the two. A label naming a config the ConfigMap lacks stops the node: the device
    # plugin's config-manager init exits ("specified config ... does not exist", NVIDIA/k8s-device-plugin
    # cmd/config-manager/main.go updateConfigName), so the node offers 0 and the DaemonSet's roll (maxUnavailable 1)
    # stalls there for every GPU node of the site; mig-parted finds no config and leaves the GPUs partitioned. So a GPU
    # pool that does not share keeps its key, at whole GPUs or MIG disabled (what a node without the label gets), and a
    # sharing mode removed, or not yet labelled, works in either order
    def disabled() -> list[dict[str, Any]]:  # a new list each time: a shared one is dumped as a YAML alias
        return [{"devices": "all", "mig-enabled": False}]

    mig = {mig_config_name(p.name): p.spec.sharing for p in pools if p.gpu is not None and p.gpu.mig is not None}
    if mig:  # a MIG-capable pool: it may have had MIG (the last pool to drop it leaves its nodes labelled)
        configs: dict[str, Any] = {"all-disabled": disabled()}
        for name, sharing in mig.items():
            if not isinstance(sharing, MigSharing):
                configs[name] = disabled()
                continue
            configs[name] = [{"devices": "all", "mig-enabled": True, "mig-devices": dict(sorted(sharing.profiles.items()))}]
        mig_data = {"config.yaml": _dump({"version": "v1", "mig-configs": configs})}
        values["migManager"] = {
            "enabled": True,
            # named after its content: the MIG manager applies a layout at start and on a change of the node's
            # nvidia.com/mig.config label only (mig-parted v0.14.2 cmd/nvidia-mig-manager/main.go, the informer's
            # UpdateFunc compares the label), and the label stays alicerce-<pool>: a new layout must roll it
            "config": {
                "create": True,
                "name": content_name(MIG_CONFIGMAP, mig_data["config.yaml"]),
                "default": "all-disabled",
                "data": mig_data,
            },
        }
    # without any time-sliced pool the plugin gets no config and reads no node label, so a label left behind is moot
    if any(isinstance(p.spec.sharing, TimeSlicing) for p in pools):
        whole = _dump({"version": "v1"})
        data = {DEVICE_PLUGIN_DEFAULT_CONFIG: whole}
        for p in pools:
            if not isinstance(ts := p.spec.sharing, TimeSlicing):
                data[device_plugin_config_name(p.name)] = whole
                continue
            resources = [{"name": GPU, "replicas": ts.replicas}]
            data[device_plugin_config_name(p.name)] = _dump({"version": "v1", "sharing": {"timeSlicing": {"resources": resources}}})
        # named after its content: the plugin's config-manager switches configs when the node's
        # nvidia.com/device-plugin.config label changes, not when the file does, and the operator does not watch the
        # ConfigMap (GPU Operator docs, "Updating a Time-Slicing Config Map"): edited in place, every node kept its
        # old replicas and GPUsMissing<Pool> paged on each (review obsreview29 D-2). A new name rolls the plugin
        name = content_name(DEVICE_PLUGIN_CONFIGMAP, _dump(data))
        values.setdefault("devicePlugin", {})["config"] = {
            "create": True,
            "name": name,
            "default": DEVICE_PLUGIN_DEFAULT_CONFIG,
            "data": data,
        }
        # a time-sliced GPU is shared by several pods: without this the exporter attributes it to none of them
        # (dcgm-exporter pkg/cmd/app.go, flag kubernetes-virtual-gpus, env KUBERNETES_VIRTUAL_GPUS; chart default env: [])
        values["dcgmExporter"]["env"] = [{"name": "KUBERNETES_VIRTUAL_GPUS", "value": "true"}]
        # In that mode the exporter sends each holder's use per pod from NVML's per-process samples, mapped to pods
        # through /proc/<host pid>/cgroup (dcgm-exporter 4.5.3-4.8.2 internal/pkg/transformation/pidmapper.go): in the
        # pod's own PID namespace it maps none and sends every holder 0, exclusive GPUs too (process_metrics.go). One
        # exporter DaemonSet serves the whole cluster, so the host's PIDs go with the mode wherever it is on
        # (gpu-operator v26.3.3: values.yaml:289 dcgmExporter.hostPID, default false, rendered into the ClusterPolicy by
        # templates/clusterpolicy.yaml:580-581 and set on the exporter's DaemonSet by controllers/object_controls.go:
        # 1831-1834; review obsreview21 F3). A privilege: the exporter's container, privileged already
        # (assets/state-dcgm-exporter/0800_daemonset.yaml:71-72), then sees and could signal every process of the node;
        # it runs in the GPU Operator's namespace, Pod Security privileged already (alicerce.resolve.operators
        # PRIVILEGED_OPERATOR_NAMESPACES), beside the privileged driver and toolkit pods.
        values["dcgmExporter"]["hostPID"] = True
    return deep_merge(values, op.values)


# prometheus-operator mounts each Secret of alertmanagerSpec.secrets at /etc/alertmanager/secrets/<name>
# (prometheus-operator v0.93.0 pkg/alertmanager/statefulset.go secretsDir)
ALERTMANAGER_SECRETS = "/etc/alertmanager/secrets"
NULL_RECEIVER = "null"  # kube-prometheus-stack's default receiver, which drops what reaches it


def _receiver(receiver: AlertReceiver, rp: ResolvedPlatform, site: ResolvedSite) -> dict[str, Any]:
    """One Alertmanager receiver; its credential is read from the mounted Secret (the *_file fields), never inlined."""
    secret = receiver.secret
    key = receiver.secret_key_at(rp.environment, site.name)
    file = f"{ALERTMANAGER_SECRETS}/{secret.name}/{key}" if secret else None
    config: dict[str, Any] = {"send_resolved": True}
    if receiver.kind == "slack":
        # the text lists each alert of the group with its node or pod (SLACK_TEXT): the default names none
        config |= {"api_url_file": file, "text": SLACK_TEXT} | ({"channel": receiver.channel} if receiver.channel else {})
        return {"name": receiver.name, "slack_configs": [config]}
    if receiver.kind == "pagerduty":
        return {"name": receiver.name, "pagerduty_configs": [config | {"routing_key_file": file}]}
    if receiver.kind == "webhook":
        return {"name": receiver.name, "webhook_configs": [config | {"url_file": file}]}
    config |= {"to": receiver.to, "from": receiver.sender, "smarthost": receiver.smarthost}
    if file:
        config |= {"auth_username": receiver.sender, "auth_password_file": file}
    return {"name": receiver.name, "email_configs": [config]}


def _inhibit_rules(rp: ResolvedPlatform) -> list[dict[str, Any]]:
    """kube-prometheus-stack 88.5.3's inhibit rules (values.yaml 556-578), but for its InfoInhibitor: that alert fires
    in a namespace where only info alerts fire, and mutes them there, so an info alert is never sent. alicerce's own
    info alerts (GPUIdleWhileAllocated, a gpu-utilization SLO) are meant to reach someone: they carry the platform
    label, and the InfoInhibitor no longer mutes them. The chart's own info alerts stay muted as before."""
    return [
        {"source_matchers": ["severity = critical"], "target_matchers": ["severity =~ warning|info"], "equal": ["namespace", "alertname"]},
        {"source_matchers": ["severity = warning"], "target_matchers": ["severity = info"], "equal": ["namespace", "alertname"]},
        {
            "source_matchers": ["alertname = InfoInhibitor"],
            "target_matchers": ["severity = info", f'platform != "{rp.name}"'],
            "equal": ["namespace"],
        },
        {"target_matchers": ["alertname = InfoInhibitor"]},
    ]


# What makes two notifications separate incidents. The chart groups by namespace alone (values.yaml
# alertmanager.config.route), and alicerce's GPU, SLO, budget and node alerts carry none: an XID on one node, a burn on
# an SLO and a budget would share one group, one PagerDuty incident (its dedup key is the group key), resolved only
# when all are (review DEFECT 11). Each alert name on each node, GPU host, pool, team or namespace is its own group, and
# each site's (ALERT_SCOPE_LABELS: one site's resolve no longer closes another's page). And each serving workload's,
# each Ray Serve application's and each deployment's (one per model in a multi-model Ray Serve LLM app, whose ingress
# has one name in every application; the chart's KubeDeployment* alerts carry the Kubernetes Deployment's): two models
# down in one namespace were one incident, the second outage a re-trigger of the first's open page, resolved only when
# both were (reviews obsreview48 G-1, obsreview49 G-1, obsreview51 N-3).
ALERT_GROUP_BY = (*ALERT_SCOPE_LABELS, "alertname", "namespace", "workload", "application", "deployment", "team", "pool", "node",
                  "Hostname")  # fmt: skip


def external_labels(rp: ResolvedPlatform, site: ResolvedSite) -> dict[str, str]:
    """The labels the site's Prometheus adds to every alert it sends (prometheusSpec.externalLabels, kube-prometheus-
    stack 88.5.3 values.yaml; the chart sets none): the chart's own alerts carry the site too. Not the platform label:
    the InfoInhibitor carve-out (``platform != ...``) would then stop muting the chart's own info alerts."""
    scope = {"environment": rp.environment, "site": site.name}
    return {label: scope[label] for label in ALERT_SCOPE_LABELS}


def alertmanager_values(rp: ResolvedPlatform, site: ResolvedSite) -> dict[str, Any]:
    """Alertmanager's receivers and routes from the spec. The chart's default config sends every alert to ``null``;
    here each alert also goes to every receiver whose severities and teams (the teams' namespaces) match."""
    receivers = rp.spec.monitoring.receivers
    if not receivers:
        return {}
    namespaces = {t.name: t.namespaces for t in site.teams}
    # Watchdog, the always-firing heartbeat, goes to the dead man's switches, sent again every minute so that its
    # absence is what pages; then, as the chart's own first route does (values.yaml alertmanager.config), nowhere else
    watchdog = ['alertname = "Watchdog"']
    heartbeat = {"group_wait": "0s", "group_interval": "1m", "repeat_interval": "1m", "continue": True}
    first: list[dict[str, Any]] = [{"receiver": r.name, "matchers": watchdog, **heartbeat} for r in receivers if r.heartbeat]
    first.append({"receiver": NULL_RECEIVER, "matchers": watchdog})
    routes: list[dict[str, Any]] = []
    for r in (r for r in receivers if not r.heartbeat):
        matchers = [f'severity =~ "{"|".join(r.severities)}"'] if r.severities else []
        if not r.teams:
            routes.append({"receiver": r.name, "matchers": matchers, "continue": True})
            continue
        # a team's alerts carry its namespace (what its pods do) or, without one, its team label (its budget, SLOs,
        # queue): one route each, the second only for alerts without a namespace, so none is sent twice
        own = sorted(ns for t in r.teams for ns in namespaces.get(t, ()))
        if own:
            routes.append({"receiver": r.name, "matchers": [*matchers, f'namespace =~ "{"|".join(own)}"'], "continue": True})
        teams = "|".join(sorted(r.teams))
        routes.append({"receiver": r.name, "matchers": [*matchers, f'team =~ "{teams}"', 'namespace = ""'], "continue": True})
    # the alerts an outage raises on many nodes at once, and a job's diagnoses on each of its nodes: grouped per alert,
    # pool, tier and namespace (not node), then sent to the same receivers (the child routes inherit the group_by); no
    # continue, so they are not sent again ungrouped below
    # with each GPU pool's lost-GPU page, which a rack outage raises on every node it takes (review obsreview27 D1)
    lost = [pool_alert_name(p.name) for p in site.pools if p.gpu is not None and p.gpu_units is not None]
    names = "|".join([*GROUPED_ACROSS_NODES, *lost])
    paging = {r.name: r for r in receivers if r.pages}
    outages = {
        "matchers": [f'alertname =~ "{names}"'],
        "group_by": list(NODE_OUTAGE_GROUP_BY),
        "routes": [grouped for route in routes for grouped in _outage_routes(route, paging.get(route["receiver"]))],
    }
    secrets = sorted({r.secret.name for r in receivers if r.secret is not None})
    return {
        "alertmanager": {
            "config": {
                "route": {"group_by": list(ALERT_GROUP_BY), "routes": [*first, outages, *routes]},
                "receivers": [{"name": NULL_RECEIVER}] + [_receiver(r, rp, site) for r in receivers],
                "inhibit_rules": _inhibit_rules(rp),
            },
            "alertmanagerSpec": {"secrets": secrets} if secrets else {},
        }
    }


def _outage_routes(route: dict[str, Any], paging: AlertReceiver | None) -> list[dict[str, Any]]:
    """A receiver's route under the outage grouping. A critical sent to a receiver that pages keeps its node in the
    group key: PagerDuty's dedup_key is the group key's hash (Alertmanager v0.34.0 notify/pagerduty/pagerduty.go
    `DedupKey: key.Hash()`), and PagerDuty (Events API v2) folds an event whose dedup_key matches an open incident,
    acknowledged ones included, into it without notifying again: grouped per pool, a second node lost while the first
    one's page was acknowledged woke nobody (review obsreview29 G-1). A rack outage is then a page per node; its
    warnings, and everything sent to a chat channel or a mailbox, stay one notification per alert and pool."""
    per_node = list(ALERT_GROUP_BY)
    if paging is None or (paging.severities and "critical" not in paging.severities):
        return [route]
    if set(paging.severities) == {"critical"}:
        return [{**route, "group_by": per_node}]
    critical = {**route, "matchers": [*route["matchers"], 'severity = "critical"'], "group_by": per_node}
    return [critical, {**route, "matchers": [*route["matchers"], 'severity != "critical"']}]


# kube-prometheus-stack 88.5.3's prometheus-node-exporter.extraArgs (values.yaml): the file systems its filesystem
# collector skips. Setting extraArgs replaces the list, so alicerce's extension starts from these.
NODE_EXPORTER_CHART_ARGS = (
    "--collector.filesystem.mount-points-exclude=^/(dev|proc|sys|run/containerd/.+|var/lib/docker/.+|var/lib/kubelet/.+)($|/)",
    "--collector.filesystem.fs-types-exclude=^(autofs|binfmt_misc|bpf|cgroup2?|configfs|debugfs|devpts|devtmpfs|fusectl|hugetlbfs"
    "|iso9660|mqueue|nsfs|overlay|proc|procfs|pstore|rpc_pipefs|securityfs|selinuxfs|squashfs|sysfs|tracefs|erofs)$",
)


# Alertmanager's volume (GiB): its silences and notification log are snapshots of kilobytes to a few megabytes
# (Alertmanager's --data.retention, 120h by default, bounds the log); 2 GiB leaves room and is above any provider's
# smallest volume (EBS gp3: 1 GiB)
ALERTMANAGER_STORAGE_GIB = 2


def alertmanager_ha(rp: ResolvedPlatform, site: ResolvedSite) -> dict[str, Any]:
    """kube-prometheus-stack 88.5.3 values for a second Alertmanager replica (alicerce.catalog.alerts
    ALERTMANAGER_HA_REPLICAS): ``alertmanagerSpec.replicas``; ``podAntiAffinity: hard``, which the chart's
    templates/alertmanager/alertmanager.yaml renders as a required anti-affinity on ``podAntiAffinityTopologyKey``
    against the pods of this Alertmanager; and the chart's PodDisruptionBudget (``podDisruptionBudget``, off by
    default, minAvailable 1), so a node drain waits for the other replica. Nothing where the site runs one."""
    system_nodes = sum(p.spec.scaling.min for p in system_pools(site.pools))
    replicas = alertmanager_replicas(rp.tier, system_nodes)
    if replicas < 2:
        return {}
    spec = {"replicas": replicas, "podAntiAffinity": "hard", "podAntiAffinityTopologyKey": "kubernetes.io/hostname"}
    return {"alertmanagerSpec": spec, "podDisruptionBudget": {"enabled": True, "minAvailable": 1}}


def _claim(size_gib: int, storage_class: str | None) -> dict[str, Any]:
    """A volume claim's spec: one writer, the size, and the storage class where the spec or the site names one (else
    the cluster's default class)."""
    claim: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": f"{size_gib}Gi"}}}
    if storage_class:
        claim["storageClassName"] = storage_class
    return claim


# grafana 12.11.1 (kube-prometheus-stack 88.5.3's subchart) `admin.*`: the Secret's name and its two keys
GRAFANA_ADMIN_SECRET: Mapping[str, str] = {"existingSecret": "grafana-admin", "userKey": "admin-user", "passwordKey": "admin-password"}


def monitoring_values(rp: ResolvedPlatform, site: ResolvedSite) -> dict[str, Any]:
    """kube-prometheus-stack values: installable without hooks, persistent, scraping only what the cluster exposes."""
    mon = rp.spec.monitoring
    size_gib = max(1, mon.storage // 2**30)
    default_class = site.capabilities.default_storage_class
    storage_class = mon.storage_class or (default_class["name"] if default_class else None)
    prometheus = {
        "retention": duration_text(mon.retention),
        # stop before the volume fills: Prometheus drops the oldest blocks past this size. It follows the declared claim,
        # not the claim that exists: a StatefulSet never resizes the claims it made, so a larger monitoring.storage would
        # set a retention size the disk cannot hold. This generator sees only the spec; `alicerce diff`, which sees both
        # specs, lists the claims to grow before the change merges (alicerce.run.diff.diff_prometheus_storage), so the
        # first sync finds the disk already grown (review obsreview24 F8)
        "retentionSize": f"{max(1, size_gib * 9 // 10)}GiB",
        "storageSpec": {"volumeClaimTemplate": {"spec": _claim(size_gib, storage_class)}},
        # pick up ServiceMonitors, PodMonitors, ScrapeConfigs and rules from every namespace, not only the chart's own
        "serviceMonitorSelectorNilUsesHelmValues": False,
        "podMonitorSelectorNilUsesHelmValues": False,
        "ruleSelectorNilUsesHelmValues": False,
        "scrapeConfigSelectorNilUsesHelmValues": False,
        # which site and environment an alert comes from, in its Alertmanager group key (ALERT_GROUP_BY)
        "externalLabels": external_labels(rp, site),
    }
    values: dict[str, Any] = {
        "prometheus": {"prometheusSpec": prometheus},
        # Alertmanager keeps its silences and notification log under /alertmanager, an emptyDir unless the spec has
        # storage (kube-prometheus-stack 88.5.3 alertmanager.alertmanagerSpec.storage, passed as the Alertmanager's
        # spec.storage, which prometheus-operator makes the StatefulSet's volumeClaimTemplate): a restart of its system
        # node forgot every silence of a maintenance and re-sent every firing alert (review obsreview24 F4). Its state
        # is a few snapshots; ALERTMANAGER_STORAGE_GIB on Prometheus's storage class, one claim per replica (the
        # StatefulSet's volumeClaimTemplate). In production, two replicas on two system nodes (alertmanager_ha)
        "alertmanager": deep_merge(
            {"alertmanagerSpec": {"storage": {"volumeClaimTemplate": {"spec": _claim(ALERTMANAGER_STORAGE_GIB, storage_class)}}}},
            alertmanager_ha(rp, site),
        ),
        # Hook-free (research 1b, rendered): the admission webhooks' certificate Secret exists only through a hook
        # Job, and the operator mounts it whenever its TLS listener is on; grafana's test objects are hooks too.
        "prometheusOperator": {"admissionWebhooks": {"enabled": False}, "tls": {"enabled": False}},
        # The admin login comes from a Secret the user creates (README): without it the grafana chart draws a random
        # password at every render, so each regenerate or Argo CD sync rewrites it; none is ever in generated files.
        "grafana": {"testFramework": {"enabled": False}, "admin": GRAFANA_ADMIN_SECRET},
        "crds": {"upgradeJob": {"enabled": False}},
        # node labels alicerce sets, as kube_node_labels series for the per-pool GPU alerts and KPIs, and the instance
        # type the kubelet sets on cloud nodes (GPUsMissing<Pool> holds a node to its own type's GPUs); the workload label
        # of pods, as kube_pod_labels, for the per-workload KPIs (alicerce.emit.kube.kpi)
        "kube-state-metrics": {
            "metricLabelsAllowlist": [
                "nodes=[alicerce.dev/pool,alicerce.dev/purpose,alicerce.dev/accelerator,node.kubernetes.io/instance-type]",
                # and LeaderWorkerSet's worker index and KubeRay's node type, which tell the pod that serves a
                # multi-node model (a group's leader, a RayService's head) from its workers; KubeRay's cluster name,
                # which tells a RayJob's pods, and the Job's and JobSet's uids, which tell a run's incarnation (the
                # cost per run); and the model's and the controllers' pod-template revisions, which tell a rollout from
                # a drain
                f"pods=[alicerce.dev/workload,{LWS_WORKER_INDEX_LABEL},{RAY_NODE_TYPE_LABEL},{RAY_CLUSTER_LABEL},"
                f"{RAY_SERVE_LABEL},{JOB_UID_LABEL},{JOBSET_UID_LABEL},{MODEL_REVISION_LABEL},{POD_TEMPLATE_HASH_LABEL},"
                f"{CONTROLLER_REVISION_LABEL}]",
            ]
        },
        # the chart owns the unsynchronised-clock alert (its node-exporter group, on by default, selects the job both node
        # exporter owners give); alicerce gives it the site's runbook: defaultRules.additionalRuleAnnotations.<alert>
        # replaces the chart's description (88.5.3 templates/prometheus/rules-1.14/node-exporter.yaml)
        "defaultRules": {
            "additionalRuleAnnotations": {
                CHART_CLOCK_UNSYNCHRONISED: {"description": chart_clock_unsynchronised_description(site.capabilities.clock_sync_action)}
            }
        },
        # one owner of port 9100 per node: the chart's DaemonSet, or the host role (scraped through a ScrapeConfig)
        "nodeExporter": {"enabled": site.software.node_exporter == "cluster"},
        # the node name on every node exporter series (endpoints discovery of the DaemonSet's pods gives it), so the
        # fabric and storage KPIs join nodes to pools as the GPU ones do
        "prometheus-node-exporter": {
            "prometheus": {"monitor": {"relabelings": [{"sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "node"}]}}
        },
    }
    if drops := node_exporter_drops(site):
        values["prometheus-node-exporter"]["prometheus"]["monitor"]["metricRelabelings"] = drops
    if site.software.node_exporter == "cluster" and reads_textfiles(site):
        # the storage tiers' client counters the host writes (node_monitoring) and the EFA ports' counters (the EFA
        # pools' launch template installs their writer), read through the chart's host root mount
        # (prometheus-node-exporter 4.56.1 mounts / at /host/root); a list value replaces the chart's, so its own come first
        values["prometheus-node-exporter"] |= {
            "hostRootFsMount": {"enabled": True},
            "extraArgs": [*NODE_EXPORTER_CHART_ARGS, f"--collector.textfile.directory=/host/root{TEXTFILE_DIRECTORY}"],
        }
    # what the site's cluster does not expose: its Services, ServiceMonitors and Down/TargetDown alerts would never
    # see a healthy target
    values |= {CONTROL_PLANE_SCRAPES[c]: {"enabled": False} for c in site.capabilities.unscraped_control_plane}
    if site.capabilities.etcd_metrics is not None:
        values["kubeEtcd"] = etcd_scrape_values(site.capabilities.etcd_metrics)
    values = deep_merge(values, alertmanager_values(rp, site))
    return deep_merge(values, rp.spec.operators.monitoring.values)


def etcd_scrape_values(etcd: EtcdMetrics) -> dict[str, Any]:
    """kube-prometheus-stack's kubeEtcd scrape of an etcd that runs on the hosts (88.5.3 templates/exporters/kube-etcd):
    the Service and Endpoints are the cluster builder's (it knows the hosts' addresses), so the chart's own Service is
    off and its ServiceMonitor selects the builder's by its labels; kubeEtcd.enabled stays on, which its etcd rules and
    dashboard also need (rules-1.14/etcd.yaml). No bearer token: the chart's default sends Prometheus's service account
    token to every target, here over plain HTTP to a listener that reads none."""
    monitor: dict[str, Any] = {
        "scheme": etcd.scheme,
        "port": etcd.port_name,
        "jobLabel": "jobLabel",
        "selector": {"matchLabels": dict(etcd.service_labels)},
        "bearerTokenFile": "",
    }
    return {"enabled": True, "service": {"enabled": False, "port": etcd.port, "targetPort": etcd.port}, "serviceMonitor": monitor}


def kuberay_values(monitoring: bool) -> dict[str, Any]:
    """The KubeRay operator's own metrics, scraped where monitoring is on: kuberay_cluster_info and kuberay_job_info say
    which RayCluster a RayJob built and the RayJob's uid, a run's pods and incarnation (alicerce.emit.kube.kpi
    pod_runs). kuberay-operator chart 1.7.0 (helm-chart/kuberay-operator values.yaml metrics.*, templates/
    deployment.yaml, servicemonitor.yaml): metrics.enabled passes --enable-metrics, which the operator's own flag
    leaves off (ray-operator/main.go), so it is set whatever the chart's default; its ServiceMonitor is off by default.
    honorLabels stays true (the chart's default, said here): the operator labels each series with the namespace of
    the RayCluster or RayJob it describes, which the target's own namespace (the operator's) would otherwise rename
    exported_namespace, and every KPI joins on namespace."""
    metrics: dict[str, Any] = {"enabled": True}
    if monitoring:
        metrics["serviceMonitor"] = {"enabled": True, "honorLabels": True}
    return {"metrics": metrics}


def efa_device_plugin_values(efa_pools: list[ResolvedPool]) -> dict[str, Any]:
    """The EFA device plugin on the EFA pools only: the chart has no `affinity` value; it builds its node affinity
    from supportedInstanceLabels (aws-efa-k8s-device-plugin v0.5.30 templates/daemonset.yaml 49-63)."""
    return {
        "supportedInstanceLabels": {"keys": [POOL_LABEL], "values": sorted(p.name for p in efa_pools)},
        "tolerations": tolerate(efa_pools),
    }


def _release(rp: ResolvedPlatform, key: str, namespace: str, values: Mapping[str, Any], depends_on: tuple[str, ...] = ()) -> Release:
    chart = rp.charts[key]
    return Release(key, chart.chart, chart.repository, chart.version, namespace, dict(values), depends_on)


def _pinned(rp: ResolvedPlatform, site: ResolvedSite, release: Release) -> Release:
    """The release with its controllers on the system pool; the spec's own values for the chart still win."""
    placement = controller_placement(release.key, site)
    own = _OWN_VALUES.get(release.key)
    user = own(rp) if own else {}
    values = deep_merge(deep_merge(release.values, placement), user)
    return Release(release.key, release.chart, release.repository, release.version, release.namespace, values, release.depends_on)


def operator_releases(rp: ResolvedPlatform, site_name: str) -> list[Release]:
    """The Helm releases one site's cluster runs, in install order (dependencies first)."""
    site = rp.site(site_name)
    ops = rp.spec.operators
    pools = site.pools
    monitoring = ops.monitoring.enabled
    after_monitoring = ("kube-prometheus-stack",) if monitoring else ()
    out: list[Release] = []
    if monitoring:
        out.append(_release(rp, "kube-prometheus-stack", MONITORING_NAMESPACE, monitoring_values(rp, site)))
    gpu_operator = ops.gpu_operator.enabled and any(p.gpu is not None for p in pools)
    if gpu_operator:
        out.append(_release(rp, "gpu-operator", GPU_OPERATOR_NAMESPACE, gpu_operator_values(rp, site), after_monitoring))
    if ops.network_operator.enabled and host_rdma_pools(pools):
        # One Node Feature Discovery per cluster: the GPU Operator's where it runs. Its worker labels PCI class 02 by
        # vendor (gpu-operator values 571-578), so adapters get the pci-15b3 label the Network Operator selects on and
        # the chart's own NodeFeatureRule (whose CRD only an NFD brings) is not needed; installed after it regardless.
        values = network_operator_values(site, own_nfd=not gpu_operator)
        depends = ("gpu-operator",) if gpu_operator else ()
        out.append(_release(rp, "network-operator", NETWORK_OPERATOR_NAMESPACE, deep_merge(values, ops.network_operator.values), depends))
    # the target's own charts: the device plugin of its pools' cloud RDMA interfaces, the CSI drivers of its storage
    plugin = site.capabilities.rdma_device_plugin
    rdma_pools = [p for p in pools if p.efa_interfaces]
    if plugin is not None and rdma_pools:
        out.append(_release(rp, plugin, "kube-system", DEVICE_PLUGIN_VALUES[plugin](rdma_pools)))
    csi = site.capabilities.csi_charts
    for chart in sorted({csi[i] for t in site.storage if (i := t.implementations.get(site_name, "")) in csi}):
        out.append(_release(rp, chart, "kube-system", copy.deepcopy(CSI_CHART_VALUES.get(chart, {}))))
    # the exporter of the site's cloud file systems' I/O, in the monitoring namespace (its ServiceMonitor needs the CRD
    # kube-prometheus-stack brings): only with monitoring, which cloud_metric_tiers requires
    exporter = site.capabilities.storage_metrics
    metrics_values = exporter_values(rp, site)
    if exporter is not None and metrics_values:
        out.append(_release(rp, exporter.chart, MONITORING_NAMESPACE, metrics_values, after_monitoring))
    if ops.kueue.enabled:
        # the whole Configuration document: the chart replaces its default with this string, no merge (values.yaml 115-208)
        config = yaml.safe_dump(kueue_configuration(rp, site), sort_keys=False)
        values = {"enablePrometheus": monitoring, "enableCertManager": False, "managerConfig": {"controllerManagerConfigYaml": config}}
        out.append(_release(rp, "kueue", KUEUE_NAMESPACE, deep_merge(values, ops.kueue.values), after_monitoring))
    if ops.kuberay.enabled:
        # its ServiceMonitor (kuberay_values, with monitoring) needs the CRD kube-prometheus-stack brings: a first sync
        # beside it failed on the missing kind (review obsreview20 F1)
        values = deep_merge(kuberay_values(monitoring), ops.kuberay.values)
        out.append(_release(rp, "kuberay-operator", KUBERAY_NAMESPACE, values, after_monitoring))
    if ops.training_operator.enabled:
        # every built-in runtime stays off: the chart creates them only from a post-install hook; alicerce emits its own
        # ClusterTrainingRuntimes (alicerce.emit.kube.training), applied once the Trainer's CRDs and webhook exist
        out.append(_release(rp, "training-operator", TRAINER_NAMESPACE, deep_merge({}, ops.training_operator.values)))
    return [_pinned(rp, site, r) for r in out]


# the values of each device-plugin and CSI-driver chart a target names (Capabilities.rdma_device_plugin, csi_charts)
DEVICE_PLUGIN_VALUES: dict[str, Callable[[list[ResolvedPool]], dict[str, Any]]] = {"aws-efa-k8s-device-plugin": efa_device_plugin_values}
CSI_CHART_VALUES: dict[str, dict[str, Any]] = {"aws-fsx-csi-driver": {"node": {"tolerateAllTaints": True}}}  # every pool's nodes


# the spec's own values of each operator's chart (operators.<switch>.values, its record's switch)
def _own_values(switch: str) -> Callable[[ResolvedPlatform], Mapping[str, Any]]:
    def values(rp: ResolvedPlatform) -> Mapping[str, Any]:
        own: Mapping[str, Any] = getattr(rp.spec.operators, switch).values
        return own

    return values


_OWN_VALUES: dict[str, Callable[[ResolvedPlatform], Mapping[str, Any]]] = {o.chart: _own_values(o.switch) for o in OPERATORS}


# Namespaces of operators that run privileged host agents (drivers, device plugins, node exporters).
PRIVILEGED_NAMESPACES = PRIVILEGED_OPERATOR_NAMESPACES | {"kube-system"}


def operator_namespace_labels(namespace: str, kubernetes_version: str) -> dict[str, str]:
    """Labels of the namespace an operator release installs into: privileged Pod Security for host agents."""
    level = "privileged" if namespace in PRIVILEGED_NAMESPACES else "baseline"
    return {
        "pod-security.kubernetes.io/enforce": level,
        "pod-security.kubernetes.io/enforce-version": f"v{kubernetes_version}",
        "alicerce.dev/managed": "true",
    }
