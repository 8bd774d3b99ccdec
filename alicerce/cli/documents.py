"""The JSON documents alicerce prints, as models: their JSON Schemas are committed under ``schema/output/``.

Every ``--format json`` output is one object with ``schemaVersion`` (an integer, raised on any
incompatible change of that document) and camelCase keys, like the spec. A command that fails on
a user mistake prints the ``validate`` document (spec errors) or the ``error`` document (a wrong
option, a refused path) instead, with exit code 2. ``alicerce schema --document NAME`` prints a
document's schema; ``make schema`` writes them all, and a test fails when a committed one is stale
or an output does not validate against its schema.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from alicerce.catalog.models import BillOfMaterials, Gpu, InstanceType, Versions


class Document(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Versioned(Document):
    schemaVersion: Literal[1] = Field(description="Version of this document's shape; raised on any incompatible change.")


# -- validate (also what every command prints under --format json when the spec has errors)


class SpecErrorItem(Document):
    file: str = Field(description="The file the error is in, as given on the command line.")
    line: int = Field(description="1-based line.")
    column: int = Field(description="1-based column.")
    path: str = Field(description="Dotted path into the spec, e.g. nodePools[2].aws.zone; <root> for the document.")
    message: str
    hint: str | None = Field(description="What to do about it, e.g. a did-you-mean.")
    rule: str = Field(description="Error id: AL0xx the file, AL1xx the schema and overrides, AL2xx cross-field (`alicerce rules ID`).")
    value: Any = Field(description="The offending value (long text shortened).")
    environment: str | None = Field(
        description="Environments the error was found in, comma-separated; null when every environment has it (the base spec)."
    )


class ValidateDocument(Versioned):
    """`alicerce validate --format json`, and any command's JSON output when the spec has errors."""

    valid: bool
    environments: list[str] | None = Field(default=None, description="The environments checked (present when valid).")
    errors: list[SpecErrorItem]
    notes: list[SpecErrorItem] | None = Field(
        default=None,
        description="What a valid spec's author should know that is no error: with rule empty, e.g. a GPU alias and the part "
        "it resolves to; with a rule's id, a warning rule's finding, e.g. AL393 on LoRA adapters the plan can only "
        "estimate; present only when there are notes.",
    )


class ErrorDocument(Versioned):
    """A user mistake other than spec errors (a wrong option, a refused output path), under --format json."""

    error: str
    hint: str | None
    changes: dict[str, Any] | None = Field(default=None, description="generate and apply: files changed in the output tree.")


# -- plan


class Range(Document):
    min: int
    max: int


class Factor(Document):
    name: str
    value: float | None
    source: str = Field(description="Where the figure comes from: a public source, `spec`, or the catalog entry.")
    why: str


class Figure(Document):
    name: str
    value: float | None
    unit: str
    formula: str
    inputs: dict[str, Any] = Field(description="The formula's inputs by name (names are words, not keys).")
    factors: list[Factor] | None = Field(default=None, description="The factors the figure applies, each with its source.")


class WorkloadSizing(Document):
    name: str
    kind: str
    team: str
    pool: str | None = Field(description="The pool the workload is placed on.")
    accelerator: str | None = Field(description="Catalog GPU id.")
    gpus: int | None = Field(description="GPUs, or on a shared pool the MIG instances or time slices its replicas run in.")
    gpuShare: float = Field(
        description="The GPU each of gpus is: 1 on whole GPUs; a MIG instance by its compute slices, "
        "a time slice 1 / the slices a GPU (what the cost rules charge it as)."
    )
    minGpus: int | None = Field(description="The fewest GPUs that hold the job.")
    modelStateGib: float | None
    memoryPerGpuGib: float | None
    gpuHours: float | None = Field(description="GPU-hours of whole GPUs: gpus x gpuShare x hours.")
    wallClockDays: float | None
    costUsd: float | None
    showbackUsd: float | None = Field(description="The same GPU-hours at the pool's billed rate: what showback charges the team.")
    costCapped: bool = Field(
        description="A service its pool cannot hold (PL305): cost and showback are the pool's month, "
        "what its GPUs bill, where its GPU-hours are the sized ones."
    )
    checkpointGib: float | None
    checkpointWriteGbps: float | None
    datasetReadGbps: float | None
    networkGbpsPerGpu: float | None = Field(
        description="Gbit/s each GPU of a training run sends to other nodes (data-parallel and expert traffic); 0 for a run "
        "inside one node, whose traffic NVLink or PCIe carries (--explain shows it)."
    )
    rdmaRequired: bool | None
    replicas: int | None
    tokensPerSecondPerReplica: float | None
    mfu: float | None = Field(description="Model FLOPs utilisation on the dense BF16 peak.")
    gpusPerReplica: int | None
    tensorParallel: int | None
    sharing: str | None
    cpuCores: int | None
    fits: dict[str, int | None] = Field(description="Candidate GPU id -> the smallest count that holds the job (null: none does).")
    notes: list[str]
    figures: list[Figure] | None = Field(default=None, description="Every figure with its formula (--explain).")


class OwnedCost(Document):
    pool: str
    site: str
    nodes: int
    gpus: int
    racks: int
    nodeKw: float | None
    utilization: float | None
    monthlyUsd: float | None
    items: dict[str, float | None] = Field(description="Monthly USD by cost item: capex, support, space, power, staff, licences.")
    usdPerGpuHour: float | None
    complete: bool = Field(description="False when some item has no figure (neither in the spec nor the catalog).")
    factors: list[Factor]


class PoolSizing(Document):
    name: str
    site: str
    accelerator: str | None
    gpusPerNode: int
    gpuUnits: int
    declared: Range
    recommended: Range
    peakGpus: int
    gpuHoursPerMonth: float
    utilization: float | None
    demandRatio: float | None
    monthlyCostUsd: float | None
    owned: bool
    capacityType: str | None
    region: str | None
    usdPerGpuHour: float | None = Field(
        description="What a used GPU-hour costs: the node price; owned: the month over the forecast busy GPU-hours."
    )
    billedUsdPerGpuHour: float | None = Field(
        description="What showback and `alicerce costs` charge an allocated GPU-hour: rented, the node price; owned, the month "
        "over the installed GPU-hours."
    )
    workloads: list[str]
    priceFactors: list[Factor] | None = Field(default=None, description="How the node price was found (--explain).")
    tco: OwnedCost | None = Field(default=None, description="An owned pool's monthly cost of ownership (--explain).")


class FsxSizing(Document):
    storageCapacityGiB: int
    perUnitStorageThroughput: int | None
    throughputMBps: float
    usdPerMonth: float
    capacityTiB: float


class StoredSizing(Document):
    implementation: str
    site: str
    capacityGB: float | None = Field(description="The tier's declared capacity in decimal GB; null: none declared (PL328).")
    usdPerGBMonth: float
    usdPerMonth: float | None = Field(description="Null where the plan cannot price it (PL328 says why).")
    basis: str = Field(description="The storage class the price is for, what it leaves out, and its date.")


class TierSizing(Document):
    name: str
    declaredGbps: float | None
    readGbps: float
    writeGbps: float
    fsx: FsxSizing | None
    stored: StoredSizing | None = Field(description="Billed by the GB it holds (an object store, an elastic file system); null otherwise.")


class PlanFinding(Document):
    id: str = Field(description="The check's id (PL3xx); `alicerce plan --checks` lists them.")
    severity: Literal["error", "warning", "info"]
    subject: str
    message: str
    path: str | None = Field(description="The spec field the finding is about, where it is one declared field (workloads[0].gpus).")
    location: str | None = Field(description="Where that field is written, file:line:column; null when the finding names no field.")


class Rental(Document):
    instance: str | None
    region: str
    usdPerGpuHour: float | None
    factors: list[Factor]


class OwningWins(Document):
    from_: float | None = Field(alias="from", description="Lowest utilisation (0-1) at which owning costs less.")
    to: float | None = Field(description="Highest utilisation (0-1) at which owning costs less.")


class RentalOption(Document):
    purchase: Literal["on-demand", "savings-plan", "capacity-reservation", "capacity-block", "spot"]
    instance: str
    usdPerGpuHour: float | None
    billed: Literal["used", "held"] = Field(description="`held`: billed every hour whether used or not.")
    interruptible: bool = Field(
        description="Reclaimable by the provider (Spot): listed, but not among the options cheapestByUtilization and the verdict weigh."
    )
    owningWins: OwningWins | None = Field(description="Utilisations at which owning costs less than this option; null: never.")
    factors: list[Factor]


class UnpricedOption(Document):
    purchase: Literal["capacity-block", "savings-plan"]
    instance: str
    why: str = Field(
        description="capacity-block: where AWS sells it and which regions its price table lists; savings-plan: the instance "
        "families the spec's discounts are declared for, none the rented instance's."
    )
    short: str = Field(description="The same in a few words, as the own-vs-rent table and verdict print it.")


class CheapestBand(Document):
    from_: float | None = Field(alias="from", description="Utilisation (0-1) where the band starts.")
    to: float | None = Field(description="Utilisation (0-1) where the band ends.")
    option: str = Field(description="`owned` or the purchase option that costs least in this band.")


class OwnVsRent(Document):
    pool: str
    gpu: str
    owned: OwnedCost
    rental: Rental = Field(description="The cheapest on-demand rental of the same GPU in the region.")
    options: list[RentalOption] = Field(description="Every purchase option the catalog and the spec price for the same GPU.")
    unpricedOptions: list[UnpricedOption] = Field(
        description="Options AWS sells for the same GPU in the region with no price to weigh (no published price, or a "
        "discount the spec declares only for other instance families): cheapestByUtilization and the verdict do not "
        "weigh them."
    )
    cheapestByUtilization: list[CheapestBand]
    breakEvenUtilization: float | None
    cheaperFromQuarter: int | None = Field(description="The first forecast quarter from which owning wins (0: today).")
    verdict: str


class UnitCost(Document):
    workload: str
    team: str
    pool: str | None
    costPerRunUsd: float | None
    monthlyUsd: float | None
    usdPerMillionTokens: float | None


class SiteCost(Document):
    site: str
    storageTb: float | None
    storageGbps: float | None
    storageUsd: float | None
    connectivityUsd: float | None
    factors: list[Factor] = Field(description="The figures the site's month was computed from, each with its source.")


class QuarterPool(Document):
    quarter: int
    pool: str
    peakGpus: int
    capacityGpus: int
    utilization: float | None
    monthlyUsd: float | None
    demandUsd: float | None


class RunsOut(Document):
    pool: str
    quarter: int
    gpusNeeded: int
    capacityGpus: int


class Forecast(Document):
    horizonQuarters: int
    growingWorkloads: list[str]
    monthlyUsd: list[float] = Field(description="The pools as declared, per quarter (index 0: today).")
    demandUsd: list[float] = Field(description="The pools grown to meet the forecast demand, per quarter.")
    pools: list[QuarterPool]
    runsOut: list[RunsOut]


class Tco(Document):
    ownVsRent: list[OwnVsRent]
    unitCosts: list[UnitCost]
    showback: dict[str, float] = Field(description="Monthly USD per team; platform rows in parentheses.")
    budgets: dict[str, float] = Field(description="Monthly budget per team that declares one.")
    sites: list[SiteCost]
    forecast: Forecast | None


class KpiTarget(Document):
    kpi: str = Field(description="The recorded series (or alert) that measures it, as the generated rules name it.")
    subject: str = Field(description="The pool, team or workload it applies to.")
    op: Literal["<=", ">="]
    target: float
    unit: str
    source: str = Field(description="Where the target comes from: an SLO, a budget, the plan's forecast.")


class AlertSecret(Document):
    secret: str = Field(description="The Secret's name.")
    key: str = Field(description="The key in it (a heartbeat receiver's is suffixed with the environment and site).")
    namespace: str = Field(description="Where the Secret lives: Alertmanager's namespace.")
    site: str = Field(description="The site whose Alertmanager reads it.")
    receiver: str
    kind: Literal["email", "slack", "pagerduty", "webhook"]
    heartbeat: bool
    location: str = Field(description="file:line:column of the receiver's secret key in the spec.")


class PlanDocument(Versioned):
    """`alicerce plan --format json`: the platform sized from its workloads."""

    environment: str
    units: dict[str, str] = Field(description="The unit of each workload figure, by key.")
    workloads: list[WorkloadSizing]
    placements: dict[str, str] = Field(description="Workload -> where it is placed and why.")
    pools: list[PoolSizing]
    storage: list[TierSizing]
    findings: list[PlanFinding]
    waived: list[PlanFinding] = Field(description="Findings a waiver in the spec silences.")
    monthlyCostUsd: float
    costBreakdown: dict[str, float] = Field(
        description="Monthly USD by item (rented pools, owned pools, FSx, storage by the GB, owned sites)."
    )
    unpricedWorkloads: list[str]
    kpiTargets: list[KpiTarget] = Field(description="What the KPI recording rules should read, derived from the spec and the plan.")
    tco: Tco | None = Field(default=None, description="Total cost of ownership (--tco).")
    userCatalog: list[str] = Field(description="Entries of the spec's own catalog this plan relies on (GPU ids, instance types).")
    alertSecrets: list[AlertSecret] = Field(
        description="Every Secret key the generated Alertmanager configuration reads, per site: create them before the first sync."
    )


class PlanCheck(Document):
    id: str
    name: str
    severity: Literal["error", "warning", "info"]
    summary: str
    waivable: bool


class PlanChecksDocument(Versioned):
    """`alicerce plan --checks --format json`: the plan's checks."""

    checks: list[PlanCheck]


# -- versions


class VersionRow(Document):
    kind: str
    component: str
    version: str | None = Field(description="null: unpinned; `source` says who picks it.")
    pinned: bool
    source: str
    sites: list[str] = Field(description="The sites it applies to; empty: every site.")


class VersionsDocument(Versioned):
    """`alicerce versions --format json`: the environment's bill of materials."""

    environment: str
    versions: list[VersionRow]


# -- diff


class PoolChange(Document):
    pool: str
    site: str
    change: Literal["added", "removed", "resized", "changed"]
    details: list[str]
    gpuUnitsBefore: int
    gpuUnitsAfter: int
    gpusBefore: int
    gpusAfter: int
    gpuUnitsDelta: int


class QuotaChange(Document):
    team: str
    pool: str
    unitsBefore: int | None = Field(description="null: no quota.")
    unitsAfter: int | None
    borrowingBefore: int | None
    borrowingAfter: int | None


class TeamChange(Document):
    team: str
    change: Literal["added", "removed", "renamed", "priority", "budget"]
    details: str


class TierChange(Document):
    tier: str
    change: Literal["added", "removed", "changed"]
    details: list[str]


class ObjectChange(Document):
    site: str
    kind: str
    namespace: str | None
    name: str
    change: Literal["added", "removed", "changed"]
    dataLoss: str | None


class ResourceChange(Document):
    type: str = Field(description="Pulumi type token.")
    name: str
    action: Literal["create", "delete", "update", "replace"]
    properties: list[str] = Field(description="Inputs that changed (replace: the ones that force it).")
    dataLoss: str | None
    destructive: bool


class PrometheusStorageChange(Document):
    site: str
    change: Literal["grown", "shrunk", "reclassed"] = Field(
        description="reclassed: monitoring.storageClass changed; the claims stay on theirs."
    )
    claimBefore: str = Field(description="The volumeClaimTemplate's request before, e.g. 100Gi.")
    claimAfter: str
    retentionSizeBefore: str
    retentionSizeAfter: str
    claims: list[str] = Field(description="Prometheus's PersistentVolumeClaims by name; they keep their size when the template grows.")
    steps: list[str] = Field(description="What to do, in order, before the change syncs.")
    dataLoss: str | None = Field(description="A shrink: the history the smaller retention size deletes.")
    classBefore: str | None = Field(default=None, description="The claims' StorageClass before; null: the cluster's default class.")
    classAfter: str | None = Field(default=None, description="The StorageClass the volumeClaimTemplate names now.")


class BudgetShareChange(Document):
    team: str
    site: str
    usdBefore: float | None = Field(description="The monthly budget share that site's alerts and guard watch; null: none.")
    usdAfter: float | None
    guarded: bool = Field(description="The team's budget guard stops admitting at that site past the share.")


class CostDelta(Document):
    before: float | None
    after: float | None
    delta: float | None


class EnvironmentDiff(Document):
    environment: str
    status: Literal["changed", "added", "removed", "unchanged"]
    gpuUnitsDelta: int
    monthlyCostUsd: CostDelta
    destructive: int = Field(description="Destructive changes: resources, objects or Prometheus history whose data is lost.")
    pools: list[PoolChange]
    quotas: list[QuotaChange]
    teams: list[TeamChange]
    storage: list[TierChange]
    objects: list[ObjectChange]
    resources: list[ResourceChange]
    prometheusStorage: list[PrometheusStorageChange] = Field(description="monitoring.storage changes per site (claims keep their size).")
    budgetShares: list[BudgetShareChange] = Field(description="Per-site budget shares that move (alerts and guard read them at once).")
    warnings: list[str] = Field(description="What may stop `pulumi up` though the plan is valid (e.g. a node group's minimum raised).")
    notes: list[str] = Field(
        description="What else the change does: receivers whose alerts Alertmanager groups anew (a PagerDuty receiver opens "
        "a second incident for each alert firing then)."
    )
    alerting: list[str] = Field(
        default_factory=list,
        description="What alerting needs by hand before the sync (the Secret keys a new site or receiver reads, a new dead "
        "man's switch check) and what a change does to pages (SLO objectives and names: burn-rate thresholds).",
    )


class DiffDocument(Versioned):
    """`alicerce diff --format json`: what a spec change does, per environment."""

    title: str
    environments: list[EnvironmentDiff]


# -- preview


class PreviewCounts(Document):
    resources: int = Field(description="Resources the engine would create (alicerce's own components excluded).")
    components: int = Field(description="alicerce's components, which group them.")


class PreviewResource(Document):
    type: str = Field(description="Pulumi type token.")
    name: str
    parent: str | None
    inputs: dict[str, Any] = Field(description="Inputs as the engine receives them (camelCase); secrets shown as [secret].")


class PreviewDocument(Versioned):
    """`alicerce preview --format json`: what the Pulumi program declares, run offline."""

    platform: str
    counts: PreviewCounts
    environment: str
    resources: list[PreviewResource]
    outputs: dict[str, Any]


# -- catalog


class CatalogGpu(Gpu):
    origin: Literal["built-in", "user"] = Field(description="user: declared in the spec's catalog section.")


class CatalogInstance(InstanceType):
    origin: Literal["built-in", "user"] = Field(description="user: declared in the spec's catalog section.")


class CatalogDocument(Versioned):
    """`alicerce catalog SECTION --format json`: one of gpus, instances or versions."""

    gpus: list[CatalogGpu] | None = None
    instances: list[CatalogInstance] | None = None
    versions: Versions | None = None


# -- rules


class RuleEntry(Document):
    id: str
    name: str
    summary: str
    waivable: bool = Field(description="Whether a waiver may skip it (policy rules only).")
    stage: Literal["file", "schema", "cross-field"]
    warning: bool = Field(default=False, description="Whether its findings are warnings: validate shows them and exits 0.")


class RuleExample(Document):
    kind: Literal["pass", "fail"]
    description: str
    patch: str = Field(description="The fixture's patch to the base spec, as YAML text.")
    errors: list[str] = Field(description="The errors of this rule the failing example gives, as validate prints them.")


class RulesDocument(Versioned):
    """`alicerce rules --format json` (rules) or `alicerce rules ID --format json` (rule and examples)."""

    rules: list[RuleEntry] | None = None
    rule: RuleEntry | None = None
    examples: list[RuleExample] | None = None


# -- generate, apply


class GenerateDocument(Versioned):
    """`alicerce generate --format json`."""

    out: str
    files: int = Field(description="Files written.")
    kept: list[str] = Field(description="Paths of yours carried into the new tree (host_vars, caches).")
    displaced: list[str] = Field(description="Changed files --force replaced; copies are under .alicerce/displaced/.")


class StaleFile(Document):
    path: str = Field(description="The file, under OUT or the --ci-dir folder.")
    why: Literal["missing", "differs", "no longer generated"]


class GenerateCheckDocument(Versioned):
    """`alicerce generate --check --format json` (exit 1 when ``stale`` is not empty)."""

    out: str
    stale: list[StaleFile] = Field(description="Files that do not match what the spec produces.")


class InitDocument(Versioned):
    """`alicerce init --format json`."""

    directory: str
    written: int = Field(description="Files written.")
    kept: list[str] = Field(description="Files that already existed and were left as they were (--fill).")


class HostCounters(Document):
    ok: int
    changed: int
    failed: int
    unreachable: int
    skipped: int
    rescued: int
    ignored: int


class HostFailureItem(Document):
    kind: Literal["TaskFailed", "HostUnreachable"]
    host: str
    task: str
    message: str


class FailureGroup(Document):
    kind: Literal["failed", "unreachable"]
    task: str
    message: str
    hosts: list[str] = Field(description="Every host this failure hit, each once.")


class ApplyStage(Document):
    stage: str = Field(description="nodes, kubespray <site>, cluster; or the playbook run alone.")
    playbook: str
    ok: bool
    artifacts: str
    reason: str = Field(description="Why the stage failed before reaching any host (Ansible's error); empty otherwise.")
    spared: list[str] = Field(
        description="Hosts that failed this stage without stopping the sequence: outside --limit in kubespray's facts run."
    )


class ApplyDocument(Versioned):
    """`alicerce apply onprem --format json`: the run's outcome (the figures are the last stage's)."""

    status: str = Field(description="ansible-runner's status: successful, failed, timeout, canceled.")
    rc: int
    ok: bool
    artifacts: str = Field(description="Folder with the run's stdout, events and status.")
    tasks: int
    hosts: dict[str, HostCounters]
    failures: list[HostFailureItem] = Field(description="Each distinct failure of each host.")
    failureGroups: list[FailureGroup] = Field(description="The failures grouped: one entry per task and message.")
    stages: list[ApplyStage] = Field(description="Each stage run, in order; a failed stage stops the sequence.")
    kubeconfigs: list[str] = Field(description="The admin kubeconfig kubespray wrote for each site its cluster playbook built.")
    removed: list[str] = Field(description="Hosts kubespray's remove-node took out of the cluster: delete them from the spec.")
    reason: str = Field(description="Why the last stage failed before reaching any host (Ansible's error); empty otherwise.")
    held: list[str] = Field(description="Hosts the run drained and did not uncordon: they stay cordoned until a re-run accepts them.")
    next: str = Field(description="The command that completes this run (after a scale: --accept for the new nodes); empty if none.")


# -- show: the spec's own schema, as printed, with what resolving adds


class PoolResolved(Document):
    gpu: str | None
    gpusPerNode: int
    maxGpus: int
    gpuUnits: dict[str, int]
    maxGpuUnits: int
    efaInterfaces: int
    placementGroup: bool
    zone: str | None
    hosts: list[str]
    labels: dict[str, str]
    userCatalog: list[str] = Field(description="The pool's GPU and instance type when they come from the spec's own catalog.")


class FsxResolved(Document):
    deploymentType: str
    storageType: str
    storageCapacityGiB: int
    perUnitStorageThroughput: int | None
    throughputMBps: float
    usdPerMonth: float


class TierResolved(Document):
    sites: list[str]
    implementations: dict[str, str]
    fsx: FsxResolved | None


class ShowVersions(BillOfMaterials):
    eksAddons: dict[str, str] = Field(description="EKS managed add-on -> pinned version; absent: AWS's default at deploy time.")


class ShowChart(Document):
    repository: str
    chart: str
    version: str
    appVersion: str | None = Field(default=None, description="The application version the chart deploys, where the catalog records it.")


def show_schema() -> dict[str, Any]:
    """`alicerce show --format json`: the environment's spec (overrides applied) plus what resolving decided."""
    from alicerce.spec.models import PlatformSpec

    spec = PlatformSpec.model_json_schema(mode="serialization", by_alias=True)
    defs = spec["$defs"]
    extra = {name: _inline(model) for name, model in (("PoolResolved", PoolResolved), ("TierResolved", TierResolved))}
    for name, model in (("ShowVersions", ShowVersions),):
        extra[name] = _inline(model)
    for name, schema in extra.items():
        defs.update(schema.pop("$defs", {}))
        defs[name] = schema
    defs["NodePool"]["properties"]["resolved"] = {"$ref": "#/$defs/PoolResolved"}
    for tier in ("ObjectTier", "ParallelFsTier", "SharedNfsTier", "BlockTier", "LocalNvmeTier"):
        defs[tier]["properties"]["resolved"] = {"$ref": "#/$defs/TierResolved"}
    team = defs["Team"]["properties"]
    team["namespaces"] = {"type": "array", "items": {"type": "string"}, "description": "The team's namespaces."}
    team["costCenter"] = {"type": "string", "description": "The team's cost center (the platform's when it names none)."}
    properties = {k: v for k, v in spec["properties"].items() if k not in ("apiVersion", "kind", "environments")}
    properties["versions"] = {"$ref": "#/$defs/ShowVersions", "description": "Every component version in effect."}
    chart = _inline(ShowChart)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "ShowDocument",
        "description": "`alicerce show --format json`: one environment resolved; sizes, rates, counts and durations in base units.",
        "type": "object",
        "additionalProperties": False,
        "required": [
            "schemaVersion",
            "platform",
            "environment",
            "tier",
            "tags",
            "sites",
            "charts",
            *sorted(set(spec.get("required", [])) - {"apiVersion", "kind", "environments"}),
        ],
        "properties": {
            "schemaVersion": {"const": 1, "description": "Version of this document's shape; raised on any incompatible change."},
            "platform": {"type": "string"},
            "environment": {"type": "string"},
            "tier": {"type": "string"},
            "tags": {"type": "object", "additionalProperties": {"type": "string"}, "description": "Tags on every resource."},
            "sites": {"type": "array", "items": {"$ref": "#/$defs/Site"}, "description": "The environment's sites, address ranges filled."},
            **properties,
            "charts": {"type": "object", "additionalProperties": chart, "description": "Helm charts in effect, by component."},
        },
        "$defs": {**defs, "Site": _site(defs)},
    }


def _inline(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema(mode="serialization", ref_template="#/$defs/{model}")
    return copy.deepcopy(schema)


def _site(defs: dict[str, Any]) -> dict[str, Any]:
    """One of the registered targets' sites (the spec's schema holds their definitions)."""
    from alicerce.targets import TARGETS

    names = [t.site.__name__ for t in TARGETS]
    return {"oneOf": [{"$ref": f"#/$defs/{n}"} for n in names]} if all(n in defs for n in names) else {"type": "object"}


def _model_schema(model: type[BaseModel]) -> Callable[[], dict[str, Any]]:
    def build() -> dict[str, Any]:
        schema = model.model_json_schema(mode="serialization", ref_template="#/$defs/{model}")
        return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}

    return build


DOCUMENTS: dict[str, Callable[[], dict[str, Any]]] = {
    "validate": _model_schema(ValidateDocument),
    "error": _model_schema(ErrorDocument),
    "plan": _model_schema(PlanDocument),
    "plan-checks": _model_schema(PlanChecksDocument),
    "versions": _model_schema(VersionsDocument),
    "diff": _model_schema(DiffDocument),
    "show": show_schema,
    "preview": _model_schema(PreviewDocument),
    "catalog": _model_schema(CatalogDocument),
    "rules": _model_schema(RulesDocument),
    "generate": _model_schema(GenerateDocument),
    "generate-check": _model_schema(GenerateCheckDocument),
    "apply": _model_schema(ApplyDocument),
    "init": _model_schema(InitDocument),
}
"""Every JSON document by name; its schema is committed as ``schema/output/<name>.schema.json``."""


def document_schema_text(name: str) -> str:
    return json.dumps(DOCUMENTS[name](), indent=2, sort_keys=True) + "\n"


def write_schemas(folder: str) -> None:
    """Write every document's schema as ``<folder>/<name>.schema.json`` (``make schema``)."""
    from pathlib import Path

    from alicerce.emit.files import write_text_atomic

    for name in sorted(DOCUMENTS):
        write_text_atomic(Path(folder) / f"{name}.schema.json", document_schema_text(name))
