"""The in-cluster layer, decided as plain data: operator releases and Kubernetes objects.

Pure functions of :class:`~alicerce.resolve.model.ResolvedPlatform`: no Pulumi, no I/O. Pulumi
applies what they return (``alicerce/emit/pulumi``); any other delivery (plain manifests, GitOps)
must render this very data, never a copy of its decisions.
"""
