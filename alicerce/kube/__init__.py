"""The in-cluster layer, decided as plain data: operator releases and Kubernetes objects.

Pure functions of :class:`~alicerce.spec.resolve.ResolvedPlatform`: no Pulumi, no I/O. Pulumi
applies what they return (``components/kubernetes``); the GitOps writer renders the very same
data to files. One source of truth.
"""
