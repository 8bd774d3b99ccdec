"""The in-cluster layer, decided as plain data: operator releases and Kubernetes objects.

Pure functions of :class:`~alicerce.resolve.platform.ResolvedPlatform`: no Pulumi, no I/O. Pulumi
applies what they return (``alicerce/emit/pulumi``); the GitOps writer renders the very same
data to files. One source of truth.
"""
