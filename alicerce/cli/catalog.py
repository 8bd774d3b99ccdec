"""`alicerce catalog`: the facts alicerce knows (GPUs, instance types, versions), with sources."""

from __future__ import annotations

import json
from enum import Enum
from typing import Annotated, Any

import typer

from alicerce.cli.common import JsonOption


class Section(str, Enum):
    gpus = "gpus"
    instances = "instances"
    versions = "versions"


def register(app: typer.Typer) -> None:
    app.command("catalog")(catalog)


def catalog(
    section: Annotated[Section, typer.Argument(help="What to list.")] = Section.gpus,
    as_json: JsonOption = False,
) -> None:
    """List catalog GPUs, AWS instance types, or the version matrix and bill of materials."""
    from alicerce.catalog import load_catalog

    cat = load_catalog()
    if as_json:
        data: Any
        if section is Section.gpus:
            data = [g.model_dump(mode="json") for g in cat.gpus]
        elif section is Section.instances:
            data = [i.model_dump(mode="json") for i in cat.instances]
        else:
            data = cat.versions.model_dump(mode="json")
        print(json.dumps(data, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    console = Console()
    if section is Section.gpus:
        table = Table(
            "id",
            "aliases",
            "arch",
            "memory GB",
            "HBM GB/s",
            "bf16 TFLOP/s",
            "fp8 TFLOP/s",
            "MIG",
            "NVSwitch",
            title="GPUs (dense peak figures)",
        )
        for g in cat.gpus:
            table.add_row(
                g.id,
                ", ".join(g.aliases),
                g.architecture,
                f"{g.memoryGB:g}",
                f"{g.memoryBandwidthGBps:g}",
                f"{g.tflops.bf16:g}",
                "-" if g.tflops.fp8 is None else f"{g.tflops.fp8:g}",
                "-" if g.mig is None else f"{len(g.mig.profiles)} profiles",
                "yes" if g.interconnect.nvswitch else "no",
            )
    elif section is Section.instances:
        table = Table(
            "type",
            "GPUs",
            "vCPU",
            "memory GiB",
            "local NVMe",
            "network Gbps",
            "EFA",
            "USD/h",
            "price as of",
            title="AWS instance types (on-demand Linux prices)",
        )
        for i in cat.instances:
            gpus = f"{i.gpus} x {i.gpu}" if i.gpu else "-"
            nvme = f"{i.localNvme.count} x {i.localNvme.sizeGB} GB" if i.localNvme else "-"
            efa = str(i.efa.maxInterfaces) if i.efa else "-"
            table.add_row(
                i.type,
                gpus,
                str(i.vcpus),
                f"{i.memoryGiB:g}",
                nvme,
                f"{i.networkGbps:g}",
                efa,
                f"{i.price.usdPerHour:.2f}",
                f"{i.price.asOf} {i.price.region}",
            )
    else:
        v = cat.versions
        table = Table("component", "bill of materials", "chart", title="Tested bill of materials")
        charts = {c.version: f"{c.repository} {c.chart}" for c in v.charts.values()}
        for key, value in v.bom.model_dump().items():
            table.add_row(key, value, charts.get(value, ""))
        console.print(table)
        matrix = Table("GPU Operator", "Kubernetes", "driver branches", title="GPU Operator compatibility")
        for release in v.gpuOperator:
            matrix.add_row(release.version, ", ".join(release.kubernetes), ", ".join(release.driverBranches))
        console.print(matrix)
        minors = sorted({m for pins in v.eksAddons.values() for m in pins.versions})
        table = Table("Kubernetes", *sorted(v.eksAddons), title="EKS add-on pins (any other: AWS's default when `pulumi up` runs)")
        for minor in minors:
            table.add_row(minor, *(pins.versions.get(minor, "-") for _, pins in sorted(v.eksAddons.items())))
    console.print(table)
