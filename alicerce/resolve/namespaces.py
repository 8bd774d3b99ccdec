"""The namespaces the platform itself runs in: decided here, read by the in-cluster emitters (where each
component goes) and by the tenancy rules (no team may claim one)."""

from __future__ import annotations

MONITORING_NAMESPACE = "monitoring"
KUEUE_NAMESPACE = "kueue-system"
GPU_OPERATOR_NAMESPACE = "gpu-operator"
NETWORK_OPERATOR_NAMESPACE = "nvidia-network-operator"
TRAINER_NAMESPACE = "kubeflow-system"
KUBERAY_NAMESPACE = "kuberay-system"
SYSTEM_NAMESPACE = "alicerce-system"  # alicerce's own jobs (team directories on shared file systems)
ARGOCD_NAMESPACE = "argocd"

KUBERNETES_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})
"""Made by Kubernetes itself: kube-system runs the control plane's add-ons (CNI, kube-proxy, CoreDNS)."""

RESERVED_NAMESPACES = KUBERNETES_NAMESPACES | {
    MONITORING_NAMESPACE,
    KUEUE_NAMESPACE,
    GPU_OPERATOR_NAMESPACE,
    NETWORK_OPERATOR_NAMESPACE,
    TRAINER_NAMESPACE,
    KUBERAY_NAMESPACE,
    SYSTEM_NAMESPACE,
    ARGOCD_NAMESPACE,
}
"""No team may own one of these: a team's RoleBinding there would reach privileged pods and service
accounts, and its restricted Pod Security label and default-deny policy would stop the platform."""
