"""Who owns the platform, and the versions it pins."""

from __future__ import annotations

from pydantic import Field

from alicerce.spec.base import LabelValue, Name, PlatformLabels, ShortText, SpecModel
from alicerce.spec.text import Version
from alicerce.targets.aws.spec import EksAddon


class Metadata(SpecModel):
    """Who owns the platform and how its cost is attributed."""

    name: Name = Field(description="Platform name; prefixes every resource it creates.", examples=["acme-ml"])
    owner: ShortText = Field(description="Owning team or contact address.", examples=["ml-platform@acme.example"])
    cost_center: LabelValue = Field(description="Default cost center for showback (a Kubernetes label value).", examples=["CC-4410"])
    labels: PlatformLabels = Field(default_factory=dict, description="Labels applied to every resource for showback.")


class Versions(SpecModel):
    """Pinned component versions. Each one left out comes from the catalog's tested bill of materials."""

    kubernetes: Version | None = Field(default=None, description="Kubernetes minor version.", examples=["1.33"])
    driver_branch: Version | None = Field(default=None, description="NVIDIA datacenter driver branch.", examples=["580"])
    driver_version: Version | None = Field(
        default=None, description="Exact driver version within the branch (on-prem installs).", examples=["580.95.05"]
    )
    gpu_operator: Version | None = Field(default=None, description="NVIDIA GPU Operator version.", examples=["v25.10.0"])
    network_operator: Version | None = Field(default=None, description="NVIDIA Network Operator version.")
    kueue: Version | None = Field(default=None, description="Kueue version.", examples=["0.15.1"])
    kuberay: Version | None = Field(default=None, description="KubeRay operator version.")
    training_operator: Version | None = Field(default=None, description="Kubeflow training operator version.")
    kube_prometheus_stack: Version | None = Field(default=None, description="kube-prometheus-stack chart version.")
    efa_device_plugin: Version | None = Field(default=None, description="AWS EFA device plugin chart version.")
    fsx_csi_driver: Version | None = Field(default=None, description="AWS FSx for Lustre CSI driver chart version.")
    cluster_autoscaler: Version | None = Field(default=None, description="cluster-autoscaler chart version (EKS clusters).")
    aws_load_balancer_controller: Version | None = Field(
        default=None, description="AWS Load Balancer Controller chart version (EKS clusters that serve inference)."
    )
    cloudwatch_exporter: Version | None = Field(
        default=None,
        description="prometheus-yet-another-cloudwatch-exporter chart version (EKS clusters with FSx for Lustre or EFS tiers).",
    )
    eks_addons: dict[EksAddon, Version] = Field(
        default_factory=dict,
        description="EKS managed add-on versions by add-on name; each one left out comes from the catalog for the cluster's"
        " Kubernetes minor (`alicerce catalog versions`), else AWS's default version when `pulumi up` runs.",
        examples=[{"aws-ebs-csi-driver": "v1.66.0-eksbuild.1"}],
    )
