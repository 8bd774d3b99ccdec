"""What `alicerce plan` reports: typed findings under stable check ids (PL3xx), waivable where policy.

Every finding names a check of :data:`CHECKS`; the check fixes its severity (never guessed from the
message) and whether a `waivers:` entry of the spec may silence it, the same way validation rules
(AL2xx) are waived. `alicerce plan --checks` lists them; `--fail-on error|warning` turns them into an
exit code for a pull-request check. Checks that guard correctness (a job that cannot fit, a deadline
or a peak load the pool cannot meet) are not waivable: change the spec instead.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from alicerce.spec.errors import format_path
from alicerce.spec.models import PlatformSpec

PLAN_CHECK_ID = re.compile(r"^PL3[0-9]{2}$")


class Severity(IntEnum):
    """Ordered: a higher value is more severe (``--fail-on warning`` fails on warnings and errors)."""

    INFO = 0
    WARNING = 1
    ERROR = 2

    @property
    def label(self) -> str:
        return self.name.lower()


@dataclass(frozen=True)
class PlanCheck:
    id: str
    name: str
    severity: Severity
    summary: str
    waivable: bool

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "severity": self.severity.label, "summary": self.summary, "waivable": self.waivable}


_E, _W, _I = Severity.ERROR, Severity.WARNING, Severity.INFO
CHECKS: dict[str, PlanCheck] = {
    c.id: c
    for c in (
        PlanCheck("PL300", "plan-waiver-valid", _E, "A waiver of a plan check names a known, waivable check.", False),
        PlanCheck("PL301", "no-pool-for-kind", _W, "Some pool of the environment runs each workload's kind.", True),
        PlanCheck("PL302", "pinned-gpu-mismatch", _W, "A workload's pinned accelerator is the GPU of its pool.", True),
        PlanCheck("PL303", "cannot-run", _E, "The workload fits on its GPU (memory, activations, latency targets).", False),
        PlanCheck(
            "PL304", "deadline-missed", _E, "The pool at max size finishes each training or data-preparation job by its deadline.", False
        ),
        PlanCheck("PL305", "serving-capacity-short", _E, "The pool at max size holds every replica a serving peak needs.", False),
        PlanCheck("PL306", "pool-oversubscribed", _W, "The workloads of a pool fit in it at their peak, the runs queued.", True),
        PlanCheck("PL307", "low-utilisation", _I, "A pool's forecast utilisation justifies its max size.", True),
        PlanCheck("PL308", "pool-without-workloads", _I, "Every pool's size is backed by declared workloads.", True),
        PlanCheck("PL309", "no-rdma-multinode", _W, "Multi-node training with heavy gradient traffic runs on an RDMA fabric.", True),
        PlanCheck("PL310", "storage-throughput-short", _W, "Storage tiers declare the throughput their readers and writers need.", True),
        PlanCheck("PL311", "no-price", _W, "The catalog prices each pool's instance type in its region and capacity type.", True),
        PlanCheck("PL312", "small-batch-per-rank", _W, "Training keeps at least one sequence per data-parallel rank per step.", True),
        PlanCheck("PL313", "pool-runs-out", _W, "Each pool holds its workloads' forecast growth over the horizon.", True),
        PlanCheck("PL314", "better-pool", _W, "A pinned pool meets the deadline when another eligible pool would.", True),
        PlanCheck("PL315", "reservation-size-assumed", _I, "Capacity reservations declare how many instances they hold.", True),
        PlanCheck("PL316", "fine-grained-moe", _I, "MoE models sit inside the calibration data (10B+ active parameters).", True),
        PlanCheck("PL317", "unvalidated-precision", _I, "The training precision's speed-up is validated on held-out runs.", True),
        PlanCheck("PL318", "over-budget", _W, "Each team's monthly showback stays within its declared budget.", True),
        PlanCheck("PL319", "onprem-default-prices", _I, "On-prem capital costs come from the spec, not the catalog's market quotes.", True),
        PlanCheck("PL320", "runs-overlap", _W, "A training schedule's runs per quarter fit one after another in the quarter.", True),
        PlanCheck("PL321", "moe-fabric-short", _W, "An RDMA fabric carries a MoE run's expert all-to-all and weight sync.", True),
        PlanCheck("PL322", "tensor-parallel-beyond-node", _E, "A declared tensor-parallel degree (expert layers' too) fits a node.", False),
        PlanCheck("PL323", "window-covers-sequence", _I, "A training run's sliding window is shorter than its sequences.", True),
        PlanCheck(
            "PL324", "dense-fabric-short", _W, "An RDMA fabric carries a dense run's data-parallel weight and gradient traffic.", True
        ),
        PlanCheck("PL325", "no-cost-of-capital", _I, "An owned site declares the cost of the capital its hardware ties up.", True),
        PlanCheck(
            "PL326", "budget-unpriced", _E, "A team's budget covers only GPU pools the plan prices (spend elsewhere reads $0).", True
        ),
        PlanCheck("PL327", "dataset-remote", _W, "A workload runs at a site that holds the storage tier its dataset is read from.", True),
        PlanCheck(
            "PL328", "storage-unpriced", _I, "A tier billed by the GB it holds declares its capacity, in a region the catalog prices.", True
        ),
        PlanCheck(
            "PL329", "low-trust-defaults", _I, "An owned pool's month rests on the buyer's figures, not low-trust catalog defaults.", True
        ),
        PlanCheck(
            "PL330",
            "pipeline-bubble",
            _W,
            "A training pipeline runs at least as many microbatches a step as it has stages, and its schedule idles at "
            "most a fifth of a step in its bubble.",
            True,
        ),
        PlanCheck(
            "PL331",
            "ttft-queueing",
            _W,
            "A serving workload's replicas come from its throughput, not from its latency percentiles "
            "(prompts queueing for a prefill, prefill steps stalling decodes).",
            True,
        ),
        PlanCheck(
            "PL332", "schedule-assumed", _W, "A training run on paid-for capacity (owned, reserved) declares its runs per quarter.", True
        ),
        PlanCheck(
            "PL333", "serving-slo-on-spot", _W, "A service with latency targets keeps them when Spot reclaims one of its nodes.", True
        ),
        PlanCheck("PL334", "peak-month-over-budget", _W, "A team's busiest month at each of its sites, added up, fits its budget.", True),
        PlanCheck(
            "PL335",
            "quota-unfunded",
            _W,
            "A team's budget leaves each site at least an hour of its quota there beyond the plan's months.",
            True,
        ),
        PlanCheck("PL336", "training-on-spot", _W, "A run across several nodes is not on Spot, where one reclaim stops it all.", True),
        PlanCheck("PL337", "deadline-dear", _W, "A run's deadline is met at a count where added GPUs still pay for themselves.", True),
        PlanCheck("PL338", "deadline-unreachable", _E, "Some GPU count the global batch admits meets a run's deadline.", False),
        PlanCheck("PL339", "deadline-pinned-short", _E, "A run's pinned GPU count meets its deadline.", False),
        PlanCheck("PL340", "over-team-quota", _E, "A run fits its team's quota and borrowing limit on its pool.", False),
        PlanCheck("PL341", "runs-on-borrowed-quota", _W, "A run fits its team's nominal quota on its pool, not only borrowed GPUs.", True),
        PlanCheck("PL342", "idle-storage-tier", _I, "Each declared storage tier is read or written by a workload it is billed for.", True),
        PlanCheck("PL343", "checkpoints-fit", _W, "A checkpoints tier holds two checkpoints of every run that writes to it.", True),
        PlanCheck("PL344", "capacity-blocks-unsold", _I, "Own-vs-rent weighs Capacity Blocks only for runs AWS sells them for.", True),
        PlanCheck(
            "PL345", "budget-holds-serving", _W, "A budget that stops admitting belongs to a team that serves no inference workload.", True
        ),
        PlanCheck(
            "PL346",
            "stale-price",
            _W,
            "The catalog prices a rented pool is costed at and own-vs-rent weighs are current, "
            "and own-vs-rent's are read within six months of each other.",
            True,
        ),
        PlanCheck("PL347", "audit-on-hosts", _W, "An on-prem audit trail held on the hosts alone can keep its declared retention.", True),
        PlanCheck(
            "PL348",
            "adapters-estimated",
            _W,
            "A LoRA run's adapters are counted on the model's declared shape, not a share or a default.",
            True,
        ),
        PlanCheck(
            "PL349",
            "adapter-rank-low-experts",
            _E,
            "A MoE LoRA run's rank is below its routed experts' FFN width (AL390 checks the widths the spec declares).",
            False,
        ),
        PlanCheck(
            "PL350",
            "adapters-exceed-base",
            _W,
            "A LoRA run's adapters hold fewer parameters than the base they adapt.",
            True,
        ),
        PlanCheck(
            "PL351",
            "batch-above-step-budget",
            _E,
            "A serving workload's maxBatch fits the tokens its engine's step carries (vLLM's max-num-batched-tokens).",
            False,
        ),
        PlanCheck(
            "PL352",
            "time-sliced-memory",
            _E,
            "The pods a time-sliced GPU holds ask no more than its memory between them (kvMemoryFraction x slices).",
            False,
        ),
        PlanCheck(
            "PL353",
            "storage-throughput-unpriced",
            _W,
            "An owned site's shared tiers that declare a throughput are priced for it, not as hard-disk capacity alone.",
            True,
        ),
        PlanCheck(
            "PL354",
            "sharing-costs-gpus",
            _W,
            "A service in a shared pool's MIG instances or time slices holds no more GPUs than whole GPUs would serve it on.",
            True,
        ),
        PlanCheck(
            "PL355",
            "pipeline-stage-memory",
            _W,
            "A pipeline run at ZeRO-2 or 3 fits its stage gathered for the step, as its traffic is counted, in the GPU's memory.",
            True,
        ),
    )
}


@dataclass(frozen=True)
class PlanFinding:
    """One thing the plan found, under a check id; the check decides severity and waivability."""

    check: str
    subject: str
    message: str
    # the spec field the finding is about, where it is one declared field (a pinned gpus, a tensorParallel), and where it is
    # written (file:line:col): errors found after schema validation point back to YAML as AL errors do (CONVENTIONS.md
    # "Spec and errors"; review sizreview22 G4). The plan fills the path; the CLI, which holds the positions, the place
    path: tuple[str | int, ...] = ()
    location: str | None = None

    @property
    def severity(self) -> Severity:
        return CHECKS[self.check].severity

    def sort_key(self) -> tuple[int, str, str, str]:
        return (-self.severity, self.check, self.subject, self.message)

    def where(self) -> str:
        """``workloads[0].gpus at p.yaml:40:5`` (what the text report prints beside the subject), or nothing."""
        if not self.path:
            return ""
        dotted = format_path(self.path)
        return f"{dotted} at {self.location}" if self.location else dotted

    def to_json(self) -> dict[str, str | None]:
        return {"id": self.check, "severity": self.severity.label, "subject": self.subject, "message": self.message,
                "path": format_path(self.path) if self.path else None, "location": self.location}  # fmt: skip


def apply_waivers(
    findings: list[PlanFinding], spec: PlatformSpec, environment: str, today: datetime.date
) -> tuple[list[PlanFinding], list[PlanFinding]]:
    """(kept, waived): a finding is waived by an unexpired waiver of its check that covers the
    environment and its subject; waivers naming an unknown or non-waivable PL check become PL300."""
    kept: list[PlanFinding] = []
    waived: list[PlanFinding] = []
    problems: list[PlanFinding] = []
    plan_waivers = [w for w in spec.waivers if PLAN_CHECK_ID.match(w.rule)]
    for waiver in plan_waivers:
        check = CHECKS.get(waiver.rule)
        if check is None:
            problems.append(PlanFinding("PL300", f"waivers[{waiver.rule}]", f'no plan check "{waiver.rule}"; see `alicerce plan --checks`'))
        elif not check.waivable:
            problems.append(PlanFinding("PL300", f"waivers[{waiver.rule}]", f"{waiver.rule} cannot be waived (it guards correctness)"))
    for finding in findings:
        if CHECKS[finding.check].waivable and any(
            w.rule == finding.check
            and w.expires >= today
            and (not w.environments or environment in w.environments)
            and (not w.resources or finding.subject in w.resources)
            for w in plan_waivers
        ):
            waived.append(finding)
        else:
            kept.append(finding)
    return sorted(kept + problems, key=PlanFinding.sort_key), sorted(waived, key=PlanFinding.sort_key)
