"""The Secrets the generated Alertmanager configuration reads, which the user creates (review obsreview23 F7).

Each receiver's credential is referenced, never written into generated files: Alertmanager reads it from the Secret
that prometheus-operator mounts (alertmanagerSpec.secrets, alicerce.emit.kube.operators). A Secret or a key missing at
a site leaves the receiver unable to send, and nothing in the generated tree says which keys to create: a heartbeat
receiver reads a key of its own per environment and site (``url-prod-aws``, ``url-prod-dc1``), which no one writes by
guessing. `alicerce plan` lists them, each with the receiver in the spec that asks for it.
"""

from __future__ import annotations

from dataclasses import dataclass

from alicerce.resolve.model import ResolvedPlatform
from alicerce.resolve.namespaces import MONITORING_NAMESPACE


@dataclass(frozen=True)
class AlertSecret:
    """One key of one Secret that one site's Alertmanager reads."""

    secret: str
    key: str
    namespace: str
    site: str
    receiver: str
    kind: str  # the receiver's channel: slack, pagerduty, webhook, email
    heartbeat: bool


def alert_secrets(rp: ResolvedPlatform) -> list[AlertSecret]:
    """Every Secret key the environment's Alertmanagers read, per site (each site runs its own), in spec order."""
    if not rp.spec.operators.monitoring.enabled:
        return []
    out = []
    for site in rp.sites:
        for receiver in rp.spec.monitoring.receivers:
            key = receiver.secret_key_at(rp.environment, site.name)
            if receiver.secret is None or key is None:
                continue
            out.append(
                AlertSecret(receiver.secret.name, key, MONITORING_NAMESPACE, site.name, receiver.name, receiver.kind, receiver.heartbeat)
            )
    return out
