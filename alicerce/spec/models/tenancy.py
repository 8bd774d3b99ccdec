"""Teams: namespaces, identity groups, GPU quotas, priority and budgets."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StrictInt

from alicerce.spec.base import LabelValue, Name, ShortText, SpecModel
from alicerce.spec.text import ObjectPrefix
from alicerce.spec.units import Cidr

MAX_QUOTA = 10**7
"""The most GPU units a quota may hold: a million GPUs, time-sliced or split into MIG instances (up to 7 or 64 each)."""


class Quota(SpecModel):
    pool: Name = Field(description="Node pool the GPUs come from.")
    gpus: StrictInt = Field(
        ge=0,
        le=MAX_QUOTA,
        description="Guaranteed GPU units of the pool (Kueue nominal quota): whole GPUs, or time-sliced replicas or MIG "
        "instances where the pool shares its GPUs.",
    )
    borrowing_limit: StrictInt | None = Field(
        default=None, ge=0, le=MAX_QUOTA, description="GPU units the team may borrow from its cohort above its quota."
    )


class Budget(SpecModel):
    monthly_usd: float = Field(gt=0, le=10**12, description="Monthly budget in USD.")
    alert_at_percent: list[Annotated[StrictInt, Field(ge=1, le=1000)]] = Field(
        default_factory=lambda: [80, 100], description="Budget alert thresholds."
    )
    on_exhausted: Literal["alert", "stopAdmitting"] = Field(
        default="alert",
        description="What happens once the month's GPU spend reaches the budget: alert only, or also stop admitting the "
        "team's new workloads (its Kueue ClusterQueue is held: running ones finish) until the next month or a larger budget.",
        examples=["stopAdmitting"],
    )


class StorageGrant(SpecModel):
    """What a team's workloads may do in an object tier, through the team's workload identity (an IAM role on AWS)."""

    tier: Name = Field(description="Object tier (data lake, model registry) the grant is on.")
    access: Literal["read", "read-write"] = Field(default="read", description="read: list and get; read-write: also put and delete.")
    prefix: ObjectPrefix | None = Field(
        default=None,
        description="Key prefix the grant is limited to, ending in '/' (the whole tier when omitted); no '.' or '..' segment.",
        examples=["research/"],
    )


class Team(SpecModel):
    """A tenant: namespaces, identity groups, GPU quotas, priority and cost attribution."""

    name: Name = Field(description="Team name.")
    namespaces: list[Name] = Field(default_factory=list, description="Namespaces; defaults to one named after the team.")
    groups: list[ShortText] = Field(min_length=1, description="Identity-provider groups bound to the team's namespaces.")
    quotas: list[Quota] = Field(default_factory=list, description="GPU quotas per pool.")
    priority: Literal["critical", "high", "normal", "low"] = Field(default="normal", description="Scheduling priority class.")
    cost_center: LabelValue | None = Field(default=None, description="Cost center (defaults to metadata.costCenter).")
    budget: Budget | None = Field(default=None, description="Monthly budget.")
    renamed_from: list[Name] = Field(
        default_factory=list,
        description="Names the team had earlier this calendar month (UTC): what it spent under them counts toward its "
        "budget, the budget alerts and the guard's hold, so a rename mid-month keeps the month. Remove them after the month "
        "of the rename.",
        examples=[["research"]],
    )
    storage_access: list[StorageGrant] = Field(
        default_factory=list,
        description="Object tiers the team's workloads may read or write (service account team-<name> in each namespace); none when empty.",
    )


class Ingress(SpecModel):
    """Where traffic into the serving namespaces comes from: the gateway or ingress controller the platform team runs."""

    namespaces: list[Name] = Field(
        default_factory=list, description="Namespaces of the gateway or ingress controller pods.", examples=[["envoy-gateway-system"]]
    )
    cidrs: list[Cidr] = Field(
        default_factory=list, description="Source ranges of load balancers that send traffic straight to pods (e.g. ALB IP targets)."
    )


class Tenancy(SpecModel):
    cohort: Name = Field(default="platform", description="Kueue cohort the teams lend and borrow in.")
    teams: list[Team] = Field(default_factory=list, description="Teams.")
    ingress: Ingress = Field(
        default_factory=Ingress,
        description="Sources allowed into the namespaces of teams that serve (a quota on an inference pool); nothing else outside a "
        "team reaches its pods.",
    )
