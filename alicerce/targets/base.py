"""What every target (a kind of site: AWS, on-prem, later others) tells the provider-neutral code.

A target is a package under :mod:`alicerce.targets` with one module per pipeline stage: ``spec``
(its sections of the spec), ``rules`` (its cross-field rules), ``resolve`` (the facts it decides:
instance types, RDMA attachment, zones, hosts by rack, storage implementations) and ``build`` (its
Pulumi resources). Each stage lists the targets explicitly (the spec's ``Site`` union, the rules'
``RULE_MODULES``, :data:`alicerce.resolve.targets.RESOLVERS`, the program's ``BUILDERS``); the
code in between reads :class:`Capabilities` and resolved facts, never the provider's name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

RdmaTechnology = Literal["efa", "infiniband", "roce"]


@dataclass(frozen=True)
class PlatformEndpoint:
    """Something outside the pod network every team pod must reach (a NetworkPolicy egress allow)."""

    name: str  # names the NetworkPolicy: allow-<name>
    cidrs: tuple[str, ...]
    ports: tuple[tuple[Literal["TCP", "UDP"], int], ...]
    why: str  # one line for the policy's annotation


@dataclass(frozen=True)
class Capabilities:
    """What a target's clusters bring and how alicerce provisions them."""

    provider: str  # the spec's `provider:` value
    label: str  # in messages: "AWS", "on-prem"
    pool_section: str  # the NodePool field that holds this target's details
    pool_section_hint: str  # how to add that section, for error hints
    nodes_by_ansible: bool  # alicerce's Ansible tree provisions the nodes (else the cloud's node groups do)
    gpu_stack_on_image: bool  # the node image already carries the NVIDIA driver and container toolkit
    storage: dict[str, str] = field(default_factory=dict)  # storage class -> implementation, where the target decides it
    storage_choices: dict[str, str] = field(default_factory=dict)  # storage class -> implementations the spec may name (hints)
    default_storage_class: dict[str, Any] | None = None  # the StorageClass pods get when they name none
    # control-plane components whose metrics Prometheus cannot reach from inside the cluster (a cloud's managed
    # control plane, a component listening on loopback): nothing scrapes them and no alert waits on them
    unscraped_control_plane: tuple[Literal["controller-manager", "scheduler", "etcd", "kube-proxy"], ...] = ()
    # Helm releases of the target's own controllers, bound to cloud identities its build creates: Pulumi installs
    # them in every delivery mode (the GitOps tree names them)
    cloud_controllers: tuple[str, ...] = ()
