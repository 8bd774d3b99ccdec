"""Security posture: production encrypts and stays private unless a waiver says otherwise."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from typing import Any

from alicerce.catalog.alerts import ALERTMANAGER_HA_REPLICAS, alertmanager_replicas
from alicerce.rules.base import Finding, RuleContext, RuleSet, S
from alicerce.rules.naming import all_names
from alicerce.spec.errors import did_you_mean
from alicerce.spec.models import PlatformSpec
from alicerce.spec.models.operators import Operator, unsafe_values
from alicerce.spec.paths import SpecPath
from alicerce.spec.text import INVISIBLE, SECRET_HINT, char_name, confusable, escaped, secret_shape

rules = RuleSet()

# plan checks (alicerce/plan/findings.py) are waived in the same list; `alicerce plan` validates those ids
PLAN_CHECK = re.compile(r"^PL3[0-9]{2}$")


@rules.rule("AL270", "production-encryption", "Production environments encrypt data at rest.", waivable=True)
def production_encryption(ctx: RuleContext) -> Iterable[Finding]:
    if ctx.env.tier == "production" and not ctx.spec.security.encryption.at_rest:
        yield Finding(
            S.security.encryption.at_rest,
            f"production environment {ctx.env_name} must encrypt at rest",
            "set atRest: true, or add a waiver for AL270 with a justification and expiry",
            False,
        )


@rules.rule("AL271", "production-private-endpoint", "Production Kubernetes API endpoints are private.", waivable=True)
def production_private(ctx: RuleContext) -> Iterable[Finding]:
    access = ctx.spec.security.endpoint_access
    if ctx.env.tier != "production":
        return
    if not access.private:
        yield Finding(
            S.security.endpoint_access.private,
            f"production environment {ctx.env_name} needs a private API endpoint",
            "set private: true, or add a waiver for AL271",
            False,
        )
    if access.public:
        yield Finding(
            S.security.endpoint_access.public,
            f"production environment {ctx.env_name} exposes a public API endpoint",
            "set public: false, or add a waiver for AL271",
            True,
        )


@rules.rule("AL272", "public-endpoint-cidrs", "A public API endpoint is limited to allow-listed ranges, never the whole internet.")
def public_cidrs(ctx: RuleContext) -> Iterable[Finding]:
    access = ctx.spec.security.endpoint_access
    if not access.public:
        return
    if not access.public_cidrs:
        yield Finding(
            S.security.endpoint_access.public,
            "a public endpoint needs publicCidrs (an allow-list)",
            "add publicCidrs: [203.0.113.0/24]",
            True,
        )
    for i, cidr in enumerate(access.public_cidrs):
        if cidr.prefixlen == 0 or cidr in (ipaddress.ip_network("0.0.0.0/0"), ipaddress.ip_network("::/0")):
            yield Finding(
                S.security.endpoint_access.public_cidrs[i],
                f"{cidr} opens the API to the whole internet",
                "list your office or VPN ranges instead",
                str(cidr),
            )


@rules.rule("AL273", "production-pod-security", "Production team namespaces do not run privileged pods.", waivable=True)
def production_pod_security(ctx: RuleContext) -> Iterable[Finding]:
    if ctx.env.tier == "production" and ctx.spec.security.pod_security == "privileged":
        yield Finding(
            S.security.pod_security,
            "production team namespaces must enforce baseline or restricted",
            "set podSecurity: restricted, or add a waiver for AL273",
            "privileged",
        )


@rules.rule("AL274", "waivers-valid", "Waivers name a waivable rule and known environments, and have not expired.")
def waivers_valid(ctx: RuleContext) -> Iterable[Finding]:
    waivable = sorted(r.id for r in ctx.rules.values() if r.waivable)
    for i, waiver in enumerate(ctx.spec.waivers):
        path = S.waivers[i]
        if PLAN_CHECK.match(waiver.rule):
            pass  # a plan check (PL3xx): `alicerce plan` checks it exists and may be waived (PL300)
        elif waiver.rule not in ctx.rules:
            yield Finding(
                path.rule, f'no rule "{waiver.rule}"', did_you_mean(waiver.rule, ctx.rules) or "see `alicerce rules`", waiver.rule
            )
        elif waiver.rule not in waivable:
            yield Finding(
                path.rule,
                f"rule {waiver.rule} cannot be waived (it guards correctness, not policy)",
                f"waivable rules: {', '.join(waivable)}",
                waiver.rule,
            )
        for j, env in enumerate(waiver.environments):
            if env not in ctx.spec.environments:
                yield Finding(path.environments[j], f'no environment "{env}"', did_you_mean(env, ctx.spec.environments), env)
        if waiver.expires < ctx.today:
            yield Finding(
                path.expires,
                f"the waiver for {waiver.rule} expired on {waiver.expires.isoformat()}",
                "renew it with a new justification, or fix what it waived",
                waiver.expires.isoformat(),
            )


@rules.rule("AL294", "groups-carry-idp-prefix", "With an identity provider, every team group carries its prefix (others can never match).")
def groups_prefixed(ctx: RuleContext) -> Iterable[Finding]:
    """The API server prefixes every group from an OIDC provider with its groups prefix (EKS API,
    OidcIdentityProviderConfigRequest.groupsPrefix; kube-apiserver --oidc-groups-prefix): a RoleBinding to a
    group without it matches nobody."""
    idp = ctx.spec.security.identity_provider
    if idp is None:
        return
    for t, team in enumerate(ctx.spec.tenancy.teams):
        for g, group in enumerate(team.groups):
            if not group.startswith(idp.prefix):
                yield Finding(
                    S.tenancy.teams[t].groups[g],
                    f'group "{group}" lacks the identity provider\'s prefix "{idp.prefix}", so no user ever matches it',
                    f'write "{idp.prefix}{group}"',
                    group,
                )


TEMPLATE_MARKERS = ("{{", "{%", "{#")
"""What starts Jinja in a string: Ansible templates every variable holding one (group_vars,
inventory), Prometheus every alert annotation; text from the spec must never be run as code."""


def _texts(data: Any, parts: tuple[str | int, ...]) -> Iterable[tuple[tuple[str | int, ...], str, bool]]:
    """Every string of the spec with its path, and whether it is a mapping key (keys are text too)."""
    if isinstance(data, str):
        yield parts, data, False
    elif isinstance(data, dict):
        for key, value in data.items():
            if isinstance(key, str):
                yield (*parts, key), key, True
            yield from _texts(value, (*parts, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from _texts(value, (*parts, index))


def _spec_texts(ctx: RuleContext) -> list[tuple[tuple[str | int, ...], str, bool]]:
    """Every string of this environment's spec. The spec of each environment holds every environment's
    section (CI spans them all), so each check reads its own section only: a document checked whole reads
    each section once (linear in the number of environments, not quadratic). Nothing of another
    environment's section but its name, tier and region (each with a grammar) reaches this
    environment's files. Listed once per environment for the three rules that read them."""

    def collect() -> list[tuple[tuple[str | int, ...], str, bool]]:
        spec = ctx.spec.model_dump(by_alias=True, mode="json", exclude_unset=True, exclude={"environments"})
        own = ctx.env.model_dump(by_alias=True, mode="json", exclude_unset=True)
        return [*_texts(spec, ()), *_texts(own, ("environments", ctx.env_name))]

    return ctx.once("spec-texts", collect)


@rules.rule("AL275", "no-template-text", "No key or value holds template syntax ({{, {% or {#), which Ansible would run.")
def no_template_text(ctx: RuleContext) -> Iterable[Finding]:
    for parts, text, _ in _spec_texts(ctx):
        marker = next((m for m in TEMPLATE_MARKERS if m in text), None)
        if marker is None:
            continue
        yield Finding(
            SpecPath(PlatformSpec, parts),
            f"{text[:80]!r} holds {marker!r}, which Ansible and Prometheus read as a template and would run",
            "remove the braces; a platform spec holds plain values, never templates",
            text,
        )


@rules.rule("AL276", "no-secret-material", "No key or value holds secret material (a private key, kubeconfig, AWS key or token).")
def no_secret_material(ctx: RuleContext) -> Iterable[Finding]:
    for parts, text, is_key in _spec_texts(ctx):
        kind = secret_shape(text)
        if kind is None:
            continue
        yield Finding(
            SpecPath(PlatformSpec, parts),
            f"this {'key' if is_key else 'value'} looks like {kind}; a spec is committed and copied into generated files, "
            "so it never holds a secret",
            SECRET_HINT,
            "<redacted>",  # the value itself is never echoed
            key=is_key,
        )


FREE_TEXT = frozenset({"justification", "owner", "title", "note"})
"""Keys whose values are prose for people (they reach reports, escaped, and nothing that runs): they
may hold any printable character, non-ASCII letters included, and line breaks."""


@rules.rule("AL277", "plain-text", "Text holds no control, invisible or bidi characters, and names only ASCII.")
def plain_text(ctx: RuleContext) -> Iterable[Finding]:
    """A terminal escape (ESC), NUL, a line break in a one-line value, a zero-width or bidi character hides
    what a value really is from the person reading it, and ends lines in the files it reaches; a look-alike
    letter (Cyrillic 'а' for 'a') makes a name that matches nothing while looking right."""
    names = {path.path for path, _ in all_names(ctx)}  # AL201 reports those, naming the character
    for parts, text, is_key in _spec_texts(ctx):
        if parts in names or (text.isascii() and text.isprintable()):
            continue  # printable ASCII holds no invisible or look-alike character (INVISIBLE lies outside it)
        prose = not is_key and len(parts) > 0 and parts[-1] in FREE_TEXT
        for index, char in enumerate(text):
            if prose and char in "\n\t":
                continue
            invisible = INVISIBLE.match(char) is not None
            if not invisible and (char.isascii() or prose):
                continue
            what = "a control or invisible character" if invisible else "a non-ASCII character"
            looks = confusable(char)
            hint = (
                f"write '{looks}' instead (it only looks the same)"
                if looks and not invisible
                else "delete it; spec text is plain printable ASCII (prose fields may use any printable letters)"
            )
            yield Finding(
                SpecPath(PlatformSpec, parts),
                f'"{escaped(text)}" holds {what}: {char_name(char)} at position {index + 1}',
                hint,
                escaped(text),
                key=is_key,
            )
            break


@rules.rule(
    "AL321",
    "alert-receivers",
    "Production environments send alerts somewhere; each receiver names the credential and addresses its channel needs.",
    waivable=True,
)
def alert_receivers(ctx: RuleContext) -> Iterable[Finding]:
    monitoring = ctx.spec.monitoring
    if ctx.env.tier == "production" and ctx.spec.operators.monitoring.enabled and all(r.heartbeat for r in monitoring.receivers):
        # kube-prometheus-stack's default Alertmanager config routes every alert to the `null` receiver
        yield Finding(
            S.monitoring,
            f"production environment {ctx.env_name} has no alert receiver: Alertmanager would drop every alert",
            "add monitoring.receivers (email, slack, pagerduty or webhook, its credential a Secret by name), "
            "or a waiver for AL321 with a justification and expiry",
            key=True,
        )
    teams = {t.name for t in ctx.spec.tenancy.teams}
    for i, receiver in enumerate(monitoring.receivers):
        path = S.monitoring.receivers[i]
        if receiver.name == "null":
            yield Finding(path.name, 'receiver name "null" is the chart\'s own, which drops alerts', "choose another name", receiver.name)
        if receiver.kind != "email" and receiver.secret is None:
            yield Finding(path, f"a {receiver.kind} receiver needs the Secret holding its credential", "add secret: {name: ..., key: ...}")
        if receiver.kind == "email":
            for field in ("to", "sender", "smarthost"):
                if getattr(receiver, field) is None:
                    yield Finding(path, f"an email receiver needs {field}", f"add {field}")
        for j, team in enumerate(receiver.teams):
            if team not in teams:
                yield Finding(path.teams[j], f'unknown team "{team}"', did_you_mean(team, sorted(teams)), team)
        if receiver.heartbeat and (receiver.kind == "email" or receiver.severities or receiver.teams):
            # a heartbeat receives Watchdog alone, every minute: a mailbox would fill, a filter would have nothing to filter
            yield Finding(
                path.heartbeat,
                f"heartbeat receiver {receiver.name} gets only Watchdog, every minute: it takes no severities or teams and is no mailbox",
                "make it a webhook receiver without severities and teams, and keep a separate receiver for alerts",
                True,
            )
        if receiver.heartbeat and receiver.kind == "pagerduty":
            # Alertmanager sends PagerDuty a `trigger` for Watchdog and a `resolve` only when it resolves, which it never
            # does (v0.34.0 notify/pagerduty/pagerduty.go): behind an Events API routing key that is one incident, open
            # from install on. PagerDuty pages on a missing event only through Event Orchestration rules the operator
            # builds (pagerduty.com prompt-library/heartbeat-event-monitoring), which nothing here can see (obsreview22 F10)
            yield Finding(
                path.kind,
                f"heartbeat receiver {receiver.name} is a PagerDuty routing key: Watchdog always fires, so it opens an "
                "incident at install that never resolves, and a missing heartbeat pages nobody",
                "make it a webhook to a dead man's switch (a heartbeat check URL) that pages through PagerDuty when the "
                "pings stop, or waive AL321 where the PagerDuty service's Event Orchestration turns missing events into alerts",
                receiver.kind,
            )
        if receiver.heartbeat and receiver.kind == "slack":
            # Alertmanager re-posts the firing Watchdog every repeat_interval (1m on the heartbeat route) through the
            # Slack incoming webhook: 1,440 messages a day per site, and Slack raises nothing when they stop. Only a
            # service that alarms on a missing ping (a dead man's switch check) turns silence into a page (review
            # obsreview25 G4)
            yield Finding(
                path.kind,
                f"heartbeat receiver {receiver.name} is a Slack channel: Watchdog posts there every minute, 1,440 "
                "messages a day per site, and nothing notices or pages when the posts stop",
                "make it kind: webhook whose Secret holds a dead man's switch check URL per site (key url-<environment>-<site>) "
                "that pages when the pings stop; keep Slack as an alert receiver",
                receiver.kind,
            )


def _production_alerting(ctx: RuleContext) -> bool:
    """Whether the production receiver rules apply: a production environment that runs monitoring and declares a
    receiver other than heartbeats (no receiver at all, or heartbeats only, is AL321's finding, said once)."""
    receivers = ctx.spec.monitoring.receivers
    return ctx.env.tier == "production" and ctx.spec.operators.monitoring.enabled and not all(r.heartbeat for r in receivers)


@rules.rule(
    "AL364",
    "every-severity-routed",
    "In production, alerts of every severity alicerce emits reach a receiver that takes every team's.",
    waivable=True,
)
def every_severity_routed(ctx: RuleContext) -> Iterable[Finding]:
    """Platform-wide alerts (GPU health, fabric and storage diagnoses, exporters down) belong to no team: a receiver
    limited to some teams never gets them, and one limited to some severities drops the others. Each severity alicerce
    emits (critical, warning, info) needs a receiver for all teams that takes it, or Alertmanager sends it to null."""
    if not _production_alerting(ctx):
        return
    monitoring = ctx.spec.monitoring
    for severity in ("critical", "warning", "info"):
        if not any(not r.heartbeat and not r.teams and (not r.severities or severity in r.severities) for r in monitoring.receivers):
            yield Finding(
                S.monitoring.receivers,
                f"no receiver takes every team's {severity} alerts: platform-wide ones (GPU health, diagnoses) would reach nobody",
                f"add {severity} to the severities of a receiver without teams, or add one",
            )


@rules.rule(
    "AL387",
    "criticals-page",
    "In production, every team's critical alerts reach a receiver that pages (PagerDuty, or a webhook to an incident tool).",
    waivable=True,
)
def criticals_page(ctx: RuleContext) -> Iterable[Finding]:
    """The critical alerts are the ones that cannot wait for a ticket: a GPU node lost, a serving workload down, an
    SLO's fast burn. A Slack channel or a mailbox is read in office hours, so a production site whose criticals go only
    there has no on-call at night (review obsreview27 N2). A webhook counts: it is how Opsgenie, incident.io and the
    like take alerts, which alicerce cannot tell from a chat bridge."""
    if not _production_alerting(ctx):
        return
    monitoring = ctx.spec.monitoring
    if not any(
        not r.heartbeat and not r.teams and r.pages and (not r.severities or "critical" in r.severities) for r in monitoring.receivers
    ):
        yield Finding(
            S.monitoring.receivers,
            f"production environment {ctx.env_name} sends its critical alerts (a GPU node lost, a serving workload "
            "down, an SLO's fast burn) to no receiver that pages: a channel or a mailbox is not read at night",
            "add a pagerduty receiver with severities: [critical] and no teams (or a webhook to your incident tool), "
            "or a waiver for AL387 with a justification and expiry",
        )


@rules.rule(
    "AL325",
    "dead-mans-switch",
    "In production, a heartbeat receiver gets Watchdog: a Prometheus or Alertmanager that is down pages someone.",
    waivable=True,
)
def dead_mans_switch(ctx: RuleContext) -> Iterable[Finding]:
    """Every alert, pages included, comes from the site's one Prometheus through its one Alertmanager: an OOM on a large
    cluster, a full volume, a lost system node silence them all, and no alert can say so (the chart's own
    PrometheusDown-style alerts need the Prometheus that is down). kube-prometheus-stack's Watchdog "is meant to ensure
    that the entire alerting pipeline is functional" and always fires, for an outside dead man's switch to miss
    (88.5.3 templates/prometheus/rules-1.14/general.rules.yaml, from kube-prometheus); without a `heartbeat` receiver
    alicerce routes it to null only, and an outage pages nobody (review obsreview24 F5)."""
    if not _production_alerting(ctx):
        return
    monitoring = ctx.spec.monitoring
    if not any(r.heartbeat for r in monitoring.receivers):
        yield Finding(
            S.monitoring.receivers,
            f"production environment {ctx.env_name} has no heartbeat receiver: a Prometheus or Alertmanager that is "
            "down (OOM, its volume full, its node lost) silences every alert, pages included, and nothing notices",
            "add a webhook receiver with heartbeat: true whose Secret holds a dead man's switch check URL per site "
            "(key url reads url-<environment>-<site>), or a waiver for AL325 with a justification and expiry",
        )


@rules.rule(
    "AL326",
    "alertmanager-redundancy",
    "In production, each site's system pools keep at least two nodes, so Alertmanager runs two replicas on two nodes.",
    waivable=True,
)
def alertmanager_redundancy(ctx: RuleContext) -> Iterable[Finding]:
    """Production runs two Alertmanager replicas that gossip their silences and notification log, each required on its
    own node (alicerce.catalog.alerts.alertmanager_replicas). A site whose system pools may shrink to one node gets one
    replica, not a second one left Pending: a restart or replacement of that node stops every notification until it is
    back, and nothing else says so."""
    if ctx.env.tier != "production" or not ctx.spec.operators.monitoring.enabled:
        return
    for s, site in enumerate(ctx.env.sites):
        system = [p for _, p in ctx.indexed_pools() if p.site == site.name and p.purpose == "system"]
        nodes = sum(p.scaling.min for p in system)
        if system and alertmanager_replicas(ctx.env.tier, nodes) < ALERTMANAGER_HA_REPLICAS:
            yield Finding(
                S.environments[ctx.env_name].sites[s],
                f'site "{site.name}" keeps {nodes} system node(s): Alertmanager runs one replica there, and a restart '
                "of its node stops every notification until it is back",
                f"raise the scaling.min of the site's system pools to {ALERTMANAGER_HA_REPLICAS} or more in total, or "
                "a waiver for AL326 with a justification and expiry",
                resource=site.name,
            )


@rules.rule(
    "AL340",
    "pager-takes-pages",
    "A PagerDuty receiver takes critical alerts only; warnings and info go to a channel that does not wake anyone.",
    waivable=True,
)
def pager_takes_pages(ctx: RuleContext) -> Iterable[Finding]:
    """Only the critical alerts alicerce emits page: an SLO's burn-rate pair, GPU health, an exporter gone on a GPU
    node. Warnings (an SLO's threshold, a budget's projection, a KPI source missing) and info (an idle GPU every quiet
    night) are tickets: a PagerDuty receiver without severities pages on all of them (review obsreview3 DEFECT D)."""
    if not ctx.spec.operators.monitoring.enabled:
        return
    for i, receiver in enumerate(ctx.spec.monitoring.receivers):
        if receiver.kind != "pagerduty" or receiver.heartbeat:
            continue
        quiet = [s for s in ("warning", "info") if not receiver.severities or s in receiver.severities]
        if quiet:
            path = S.monitoring.receivers[i]
            yield Finding(
                path.severities if receiver.severities else path,
                f"PagerDuty receiver {receiver.name} pages on {' and '.join(quiet)} alerts"
                + ("" if receiver.severities else " (it takes every severity)"),
                "give it severities: [critical] and send warning and info to a slack, email or webhook receiver",
                receiver.severities or None,
                resource=receiver.name,
            )


# each operator by field, its name and what its chart runs, for the message of AL322 (kube-prometheus-stack's node
# exporter mounts the host's / with hostPID and hostNetwork; the GPU and Network Operators' DaemonSets run
# privileged, and where a pool time-slices the GPU Operator's dcgm-exporter shares the host's PIDs, which its per-pod
# attribution reads (alicerce.emit.kube.operators, review obsreview21 F3); the others are controllers with
# cluster-wide permissions)
OPERATOR_POWER = {
    "gpu_operator": (
        "the GPU Operator",
        "runs privileged on every GPU node (its exporter with the host's PIDs where a pool time-slices)",
        "as root on every GPU node",
    ),
    "network_operator": ("the Network Operator", "runs privileged on every RDMA node", "as root on every RDMA node"),
    "monitoring": ("kube-prometheus-stack", "runs its node exporter with the host's /, PIDs and network", "as root on every node"),
    "kueue": ("Kueue", "runs a controller with cluster-wide permissions", "with those permissions"),
    "kuberay": ("the KubeRay operator", "runs a controller with cluster-wide permissions", "with those permissions"),
    "training_operator": ("the Kubeflow Trainer", "runs a controller with cluster-wide permissions", "with those permissions"),
}


@rules.rule(
    "AL322",
    "chart-values-keep-pins",
    "Operator values never pick an image, registry or tag, add containers or objects, or loosen a pod's isolation.",
    waivable=True,
)
def chart_values_keep_pins(ctx: RuleContext) -> Iterable[Finding]:
    """``operators.<name>.values`` is free-form Helm values merged last over alicerce's own, so without this rule a
    value such as gpuOperator ``driver.repository`` would swap the image of a privileged DaemonSet (the pinned
    chart's own image, checked against the release's component matrix, replaced by any registry's), and
    ``securityContext``, ``hostPath`` or ``extraObjects`` would hand spec text root on every node. Waivable, with a
    justification and an expiry (an air-gapped mirror the container runtime cannot redirect), scoped by operator."""
    for field_name, (chart, power, runs) in OPERATOR_POWER.items():
        operator = getattr(ctx.spec.operators, field_name)
        assert isinstance(operator, Operator)
        alias = type(ctx.spec.operators).model_fields[field_name].alias or field_name
        for parts, what in unsafe_values(operator.values):
            yield Finding(
                SpecPath(PlatformSpec, ("operators", alias, "values", *parts)),
                f'"{escaped(str(parts[-1]))}" picks {what} in {chart}, which {power}: a value written here would run {runs}',
                "remove it; alicerce pins each chart and its images. To pull through a mirror, configure the container "
                "runtime's registry mirror (containerd registry hosts), which keeps the pinned names; else a waiver for "
                f"AL322 with resources: [{alias}], a justification and an expiry",
                key=True,
                resource=alias,
            )
