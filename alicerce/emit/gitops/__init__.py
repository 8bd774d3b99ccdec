"""The GitOps subtrees of the generated tree: kubernetes/ (plain objects and Argo CD Applications),
monitoring/ (rule files and dashboards), ci/ (GitHub Actions workflows) and reports/ (PLATFORM.md).

Every emitter here is pure (resolved platform in, ``{path: text}`` out) and renders the very data the
Pulumi layer applies (:mod:`alicerce.emit.kube`), never a copy of its decisions.
"""
