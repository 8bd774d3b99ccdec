"""`alicerce catalog`: the facts alicerce knows (GPUs, instance types, versions), with sources."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from alicerce.cli.errors import user_errors
from alicerce.cli.output import Column, Format, FormatOption, JsonAlias, Table, console, print_json, print_table, wants_json

if TYPE_CHECKING:
    from alicerce.catalog import Catalog

EPILOG = """\b
Examples:
  alicerce catalog gpus                              GPU ids and aliases a spec may write
  alicerce catalog instances --spec platform.yaml    with the spec's own catalog entries, marked user
  alicerce catalog versions --format json            the tested bill of materials, for scripts
"""


class Section(str, Enum):
    gpus = "gpus"
    instances = "instances"
    versions = "versions"


def register(app: typer.Typer) -> None:
    app.command("catalog", epilog=EPILOG)(catalog)


def _origin(cat: Catalog, name: str) -> str:
    return "user" if name in cat.user_ids else "built-in"


@user_errors()
def catalog(
    section: Annotated[Section, typer.Argument(help="What to list.")] = Section.gpus,
    spec: Annotated[
        Path | None, typer.Option("--spec", help="Also list the entries of this spec's own catalog: section (marked user).")
    ] = None,
    output_format: FormatOption = Format.text,
    as_json: JsonAlias = False,
) -> None:
    """List catalog GPUs, AWS instance types, or the version matrix and bill of materials.

    Every figure has its public source in alicerce/catalog/data/; with --spec, the spec's own
    entries (its catalog: section) are listed too, marked user.
    """
    from alicerce.catalog import load_catalog

    as_json = wants_json(output_format, as_json)
    cat = load_catalog()
    if spec is not None:
        cat = _with_spec(cat, spec)
    if as_json:
        data: dict[str, Any]
        if section is Section.gpus:
            data = {"gpus": [{**g.model_dump(mode="json"), "origin": _origin(cat, g.id)} for g in cat.gpus]}
        elif section is Section.instances:
            data = {"instances": [{**i.model_dump(mode="json"), "origin": _origin(cat, i.type)} for i in cat.instances]}
        else:
            data = {"versions": cat.versions.model_dump(mode="json", exclude={"schemaVersion"})}  # the data file's own version
        print_json({"schemaVersion": 1, **data})
        return
    out = console()
    if section is Section.gpus:
        table = Table(
            "GPUs (dense peak figures)",
            [Column("id", key=True), Column("aliases", key=True), Column("arch"), Column("origin")]
            + [Column(h, numeric=True) for h in ("memory GB", "HBM GB/s", "bf16 TFLOP/s", "fp8 TFLOP/s")]
            + [Column("MIG"), Column("NVSwitch")],
        )
        for g in cat.gpus:
            table.add(
                g.id, ", ".join(g.aliases), g.architecture, _origin(cat, g.id), f"{g.memoryGB:g}", f"{g.memoryBandwidthGBps:g}",
                f"{g.tflops.bf16:g}", "-" if g.tflops.fp8 is None else f"{g.tflops.fp8:g}",
                "-" if g.mig is None else f"{len(g.mig.profiles)} profiles", "yes" if g.interconnect.nvswitch else "no",
            )  # fmt: skip
        print_table(table, out)
    elif section is Section.instances:
        table = Table(
            "AWS instance types (on-demand Linux prices)",
            [Column("type", key=True), Column("GPUs", key=True), Column("origin")]
            + [Column(h, numeric=True) for h in ("vCPU", "memory GiB")]
            + [Column("local NVMe"), Column("network Gbps", numeric=True), Column("EFA", numeric=True), Column("USD/h", numeric=True)]
            + [Column("price as of")],
        )
        for i in cat.instances:
            table.add(
                i.type, f"{i.gpus} x {i.gpu}" if i.gpu else "-", _origin(cat, i.type), str(i.vcpus), f"{i.memoryGiB:g}",
                f"{i.localNvme.count} x {i.localNvme.sizeGB} GB" if i.localNvme else "-", f"{i.networkGbps:g}",
                str(i.efa.maxInterfaces) if i.efa else "-", f"{i.price.usdPerHour:.4g}", f"{i.price.asOf} {i.price.region}",
            )  # fmt: skip
        print_table(table, out)
    else:
        _versions(cat)


def _with_spec(cat: Catalog, spec: Path) -> Catalog:
    """The catalog with the spec's own entries; the spec's errors (AL290 clashes included) are reported first."""
    from alicerce.cli.common import load
    from alicerce.rules.validate import check
    from alicerce.spec.errors import SpecInvalid

    checked = check(load(spec))
    if checked.errors:
        raise SpecInvalid(checked.errors)
    assert checked.base is not None
    return cat.with_user(checked.base.catalog.gpus, checked.base.catalog.instance_types)


def _versions(cat: Catalog) -> None:
    v = cat.versions
    out = console()
    charts = {c.version: f"{c.repository} {c.chart}" for c in v.charts.values()}
    bom = Table("Tested bill of materials", [Column("component", key=True), Column("bill of materials", key=True), Column("chart")])
    for key, value in v.bom.model_dump().items():
        bom.add(key, value, charts.get(value, ""))
    print_table(bom, out)
    matrix = Table("GPU Operator compatibility", [Column("GPU Operator", key=True), Column("Kubernetes"), Column("driver branches")])
    for release in v.gpuOperator:
        matrix.add(release.version, ", ".join(release.kubernetes), ", ".join(release.driverBranches))
    print_table(matrix, out)
    minors = sorted({m for pins in v.eksAddons.values() for m in pins.versions})
    addons = Table(
        "EKS add-on pins (any other: AWS's default when `pulumi up` runs)",
        [Column("Kubernetes", key=True), *(Column(name, key=True) for name in sorted(v.eksAddons))],
    )
    for minor in minors:
        addons.add(minor, *(pins.versions.get(minor, "-") for _, pins in sorted(v.eksAddons.items())))
    print_table(addons, out)
