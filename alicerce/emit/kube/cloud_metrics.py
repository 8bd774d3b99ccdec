"""The exporter of a cloud site's file-system I/O (FSx for Lustre and EFS on AWS): the values of its chart.

Pure: :func:`exporter_values` returns the Helm values of the chart the target names (``Capabilities.storage_metrics``:
prometheus-community's yet-another-cloudwatch-exporter on AWS, chart 0.47.0, exporter v0.67.0; why that one is said
beside the pin in alicerce/targets/aws/resolve.py). It runs in the monitoring namespace under the service account the
target's build binds a read-only cloud role to (EKS Pod Identity), so nothing here is a secret or a build output: it finds
the site's file systems by the tags the build puts on them, not by their ids, which exist only after ``pulumi up``.

The KPI rules over its series are in alicerce.emit.kube.kpi (``cloud_tier_rules``), the alert when a tier's series are
missing in alicerce.emit.kube.sources. Config format: the exporter's pkg/config/scrapeconf.go at v0.67.0 (discovery jobs,
searchTags matched all together as regular expressions, exportedTagsOnMetrics, job-level period/length/delay/nilToZero).
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from alicerce.emit.errors import EmitError
from alicerce.emit.storage_counters import cloud_metric_tiers
from alicerce.resolve.model import ResolvedPlatform, ResolvedSite
from alicerce.targets import target
from alicerce.targets.base import StorageMetricsExporter

FULLNAME = "cloudwatch-exporter"  # the chart's objects (Deployment, Service, ServiceMonitor) and so the scrape job


def _exact(*values: str) -> str:
    """A searchTags value: the exporter matches it as a regular expression anywhere in the tag's value."""
    return "^(" + "|".join(re.escape(v) for v in sorted(values)) + ")$"


def exporter_config(rp: ResolvedPlatform, site: ResolvedSite, exporter: StorageMetricsExporter) -> dict[str, Any]:
    """The exporter's configuration: one discovery job per kind of file system the site has, in the site's region."""
    tiers = cloud_metric_tiers(rp, site)
    cloud = target(site.spec.provider).cloud
    if cloud is None:  # a target with a cloud metrics exporter is a cloud with a region
        raise EmitError(f"site {site.name}: target {site.spec.provider} names a storage metrics exporter but no cloud region")
    region = cloud.region(site.spec)
    platform = {k: v for k, v in rp.tags.items() if k in ("alicerce.dev/platform", "alicerce.dev/environment")}
    jobs = []
    exported: dict[str, list[str]] = {}
    for namespace in sorted({s.namespace for s in tiers.values()}):
        source = next(s for s in tiers.values() if s.namespace == namespace)
        names = [t for t, s in tiers.items() if s.namespace == namespace]
        search = [{"key": k, "value": _exact(v)} for k, v in sorted(platform.items())]
        search += [{"key": exporter.site_tag, "value": _exact(site.name)}, {"key": exporter.tier_tag, "value": _exact(*names)}]
        jobs.append(
            {
                "type": namespace,
                "regions": [region],
                "searchTags": search,
                # the file-system-wide series only: a series with more dimensions is a part of one (a server, a target)
                "dimensionNameRequirements": [source.dimension],
                "period": exporter.period_seconds,
                # how many periods back one request reaches: the newest datapoint in it is exported (GetMetricData
                # scans newest first, one datapoint per series unless exportAllDataPoints); why per kind of file system:
                # FileSystemMetrics.window_periods in the target
                "length": exporter.period_seconds * source.window_periods,
                "delay": exporter.delay_seconds,
                # a file system that moved nothing in the window is idle (0), not unknown (the exporter's NaN)
                "nilToZero": True,
                "metrics": [{"name": m, "statistics": list(stats)} for m, stats in source.requested.items()],
            }
        )
        exported[namespace] = [exporter.tier_tag]
    return {"apiVersion": "v1alpha1", "sts-region": region, "discovery": {"exportedTagsOnMetrics": exported, "jobs": jobs}}


def exporter_values(rp: ResolvedPlatform, site: ResolvedSite) -> dict[str, Any]:
    """The chart's values for ``site`` (empty where it has no tier the exporter reads)."""
    exporter = site.capabilities.storage_metrics
    if exporter is None or not cloud_metric_tiers(rp, site):
        return {}
    return {
        "fullnameOverride": FULLNAME,
        # the name the cloud role is bound to (alicerce/targets/aws/components/identity.py)
        "serviceAccount": {"create": True, "name": exporter.service_account[1]},
        "testConnection": False,  # a helm.sh/hook: test Pod, which neither helm.v4.Chart nor Argo CD runs
        # read CloudWatch once a period: each series then holds the newest whole minute, none skipped (the default, 300 s,
        # would export one minute in five)
        "extraArgs": {"scraping-interval": exporter.period_seconds},
        "serviceMonitor": {"enabled": True},
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "readOnlyRootFilesystem": True,
            "runAsNonRoot": True,  # the image runs as nobody (Dockerfile USER nobody at v0.67.0)
            "runAsUser": 65534,
        },
        "podSecurityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
        "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}},
        # the chart renders it through `tpl`: nothing in it may read as a template action ({{ }}: none here)
        "config": yaml.safe_dump(exporter_config(rp, site, exporter), sort_keys=False),
    }
