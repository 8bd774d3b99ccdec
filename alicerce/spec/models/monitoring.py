"""Monitoring: retention, service level objectives and alert overrides."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, StrictBool

from alicerce.spec.base import Name, SpecModel
from alicerce.spec.text import Email, HostPort, SecretKeyName, SlackChannel, Word
from alicerce.spec.units import ByteSize, Duration, parse_duration


def _threshold(value: Any) -> Any:
    """A threshold is a finite, positive number or duration: ``.inf`` silently disabled its alert (no
    latency is above infinity) and 0 fires it at once. Checked before the duration-or-fraction union,
    so that the error is one sentence; the value goes on to the union unchanged."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return value  # the union names the types it takes
    if parse_duration(value) <= 0:  # refuses non-finite, negative, malformed and over a century
        raise ValueError("a threshold must be greater than 0 (an alert on a zero threshold fires at once)")
    return value


class Slo(SpecModel):
    """A service level objective that becomes recording and alerting rules."""

    name: Name = Field(description="SLO name.")
    kind: Literal["inference-latency", "queue-wait", "gpu-utilization", "availability"] = Field(description="What is measured.")
    workload: Name | None = Field(default=None, description="Workload the SLO applies to (inference-latency, availability).")
    team: Name | None = Field(
        default=None,
        description=("Team the SLO applies to (queue-wait; gpu-utilization: the team's own GPUs, busy over held, instead of the site's)."),
    )
    percentile: float | None = Field(
        default=None,
        gt=0,
        lt=100,
        description="Percentile for latency SLOs: the share of requests any five minutes must hold under the threshold "
        "(p99: at most 1% slower), which the SLO's own alert watches. The month's error budget is the objective's.",
        examples=[99],
    )
    threshold: Annotated[Duration | float, BeforeValidator(_threshold)] | None = Field(
        default=None,
        description="Latency or wait threshold (duration) or utilisation fraction: finite and greater than 0. An "
        "availability SLO takes none: it counts the requests the serving pods answer with a server error, as the engine "
        "counts them (vLLM's API server, Ray Serve's proxy): a failure in front of it (a gateway's timeout, a route to no "
        "ready endpoint) reaches no engine and is not in it; the gateway's own SLO is its operator's.",
    )
    objective: float = Field(
        gt=0,
        lt=100,
        description="Percent that must meet the threshold: of the 30-day window's requests (inference-latency: a request "
        "slower than the threshold is an error; availability), or of the jobs admitted (queue-wait). 100 - objective is "
        "the error budget the burn-rate alerts spend: percentile 99 with objective 99.5 allows 0.5% of the month's "
        "requests slower, and 1% in any five minutes. A gpu-utilization SLO alerts on its threshold alone.",
        examples=[99.5],
    )

    @property
    def limit(self) -> float:
        """The threshold as a number (seconds, or a fraction): every kind but availability states one (AL261)."""
        if self.threshold is None:
            raise ValueError(f"SLO {self.name} ({self.kind}) has no threshold")
        return float(self.threshold)


class AlertOverride(SpecModel):
    alert: Word = Field(description="Alert name from alicerce's rule set.", examples=["GPUXidError"])
    enabled: StrictBool = Field(default=True, description="Keep or drop the alert.")
    severity: Literal["critical", "warning", "info"] | None = Field(default=None, description="Override severity.")
    for_: Duration | None = Field(default=None, alias="for", description="Override the pending duration.")


class SecretKey(SpecModel):
    """A key of a Kubernetes Secret in the monitoring namespace, made by you (never written into generated files)."""

    name: Name = Field(description="Secret name, in the monitoring namespace.", examples=["alertmanager-pagerduty"])
    key: SecretKeyName = Field(description="Key in the Secret.", examples=["routing-key"])


def heartbeat_key(key: str, environment: str, site: str) -> str:
    """The Secret key a heartbeat receiver reads at one site: its own dead man's switch. One URL for every site let the
    live site's Watchdog keep the switch quiet while another site's Prometheus or Alertmanager was down, the very
    failure the heartbeat is for (review obsreview22 F8). A key per environment and site (``url-prod-aws``) makes each
    site read its own check; one Secret holding every site's keys may go to every cluster."""
    return f"{key}-{environment}-{site}"


# the receiver kinds that can wake someone: PagerDuty, and a webhook (how incident tools take Alertmanager's alerts)
PAGING_KINDS = ("pagerduty", "webhook")


class AlertReceiver(SpecModel):
    """Where Alertmanager sends alerts: a channel, with the credential it needs referenced by Secret, never inlined."""

    name: Name = Field(description="Receiver name.", examples=["oncall"])
    kind: Literal["email", "slack", "pagerduty", "webhook"] = Field(description="The channel.")
    secret: SecretKey | None = Field(
        default=None,
        description="The credential: the Slack webhook URL, the PagerDuty routing key, the webhook URL, or the SMTP "
        "password (email). Required but for email without authentication.",
    )
    to: Email | None = Field(default=None, description="Email: the address alerts go to.", examples=["ml-oncall@acme.example"])
    sender: Email | None = Field(default=None, description="Email: the From address.", examples=["alertmanager@acme.example"])
    smarthost: HostPort | None = Field(default=None, description="Email: the SMTP server, host:port.", examples=["smtp.acme.example:587"])
    channel: SlackChannel | None = Field(
        default=None, description="Slack: the channel (default: the webhook's own).", examples=["#ml-alerts"]
    )
    severities: list[Literal["critical", "warning", "info"]] = Field(
        default_factory=list, description="Only alerts of these severities (default: every severity)."
    )
    teams: list[Name] = Field(default_factory=list, description="Only alerts from these teams' namespaces (default: every alert).")
    heartbeat: StrictBool = Field(
        default=False,
        description="A dead man's switch (a webhook to a heartbeat check, which pages through your pager when the pings "
        "stop; a PagerDuty routing key would open an incident for Watchdog at once, rule AL321): it gets only Watchdog, the alert "
        "that always fires, once a minute, and the service pages you when it stops coming (Prometheus, Alertmanager or "
        "their network down, which no alert can report). It gets no other alert. Each site reads its own check: the "
        "Secret's key is suffixed with the environment and site (key url: url-prod-aws, url-prod-dc1), so that a dead "
        "site is noticed while another still pings; give each a URL of its own. Production needs one (rule AL325).",
    )

    @property
    def pages(self) -> bool:
        """It can wake someone (PagerDuty, a webhook to an incident tool), which a chat channel or a mailbox cannot."""
        return self.kind in PAGING_KINDS

    def secret_key_at(self, environment: str, site: str) -> str | None:
        """The key of its Secret the receiver reads at ``site`` of ``environment`` (None: it reads none)."""
        if self.secret is None:
            return None
        return heartbeat_key(self.secret.key, environment, site) if self.heartbeat else self.secret.key


class Monitoring(SpecModel):
    # 31 days, the longest month: budgets (their alerts and guard) and showback sum the calendar month from Prometheus's
    # own samples, and time retention deletes what is older (review obsreview6 DEFECT 6: 30d lost a 31-day month's first day)
    retention: Duration = Field(
        default=31 * 86400,
        gt=0,
        description="Prometheus retention. The default keeps the longest month (31 days), which budgets and showback sum; "
        "a team budget needs at least that much (rule AL363).",
        examples=["31d"],
    )
    storage: ByteSize = Field(
        default=100 * 2**30,
        ge=2**30,
        description="Size of Prometheus's persistent volume; samples older than the retention, or beyond 90% of this size, are dropped. "
        "A larger size does not grow the volumes that exist: `alicerce diff` lists the claims to grow before it syncs.",
        examples=["100GiB"],
    )
    storage_class: Word | None = Field(
        default=None,
        description="StorageClass of Prometheus's volume (default: the class alicerce creates for the site, else the cluster's default).",
    )
    slos: list[Slo] = Field(default_factory=list, description="Service level objectives.")
    alerts: list[AlertOverride] = Field(default_factory=list, description="Changes to alicerce's alert rules.")
    receivers: list[AlertReceiver] = Field(
        default_factory=list,
        description="Where alerts go. Without one, Alertmanager routes every alert to nowhere (rule AL321 refuses that in "
        "production). Each alert goes to every receiver whose severities and teams match.",
    )
