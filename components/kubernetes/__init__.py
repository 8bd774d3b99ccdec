"""Kubernetes components: operators (Helm releases) and the cluster's desired objects."""
