"""The on-prem target, declared once: its spec sections and where its later stages live."""

from __future__ import annotations

from alicerce.targets.base import Section, Target
from alicerce.targets.onprem.spec import OnpremBlock, OnpremFabric, OnpremNfs, OnpremObject, OnpremParallelFs, OnpremPool, OnpremSite

TARGET = Target(
    name="onprem",
    label="on-prem",
    site=OnpremSite,
    sections={
        "pool": Section(OnpremPool, "On-prem details; required when the site is on-prem."),
        "parallel-fs": Section(OnpremParallelFs, "On-prem implementation."),
        "shared-nfs": Section(OnpremNfs, "On-prem implementation (NFS)."),
        "object": Section(OnpremObject, "On-prem implementation."),
        "block": Section(OnpremBlock, "On-prem implementation."),
        "fabric": Section(OnpremFabric, "On-prem transport details."),
    },
    resolver="alicerce.targets.onprem.resolve",
    rules="alicerce.targets.onprem.rules",
    build="alicerce.targets.onprem.build",
    capacity="owned",  # bought servers: plan amortises them (TCO) from costs.owned
    # `alicerce apply onprem` provisions the nodes and the cluster (kubespray); the Pulumi stack holds its Kubernetes layer
    deploy=("apply", "pulumi"),
    starter="onprem",  # templates/starters/onprem.yaml: kubespray control plane, InfiniBand, a GPU pool
)
