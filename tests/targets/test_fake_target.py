"""A target of the tests' own, registered by this test alone: every command works on a spec that uses it.

The claim of ARCHITECTURE.md ("Adding a target") proved: a package outside alicerce declares a target
(a site, a pool section, one rule, a resolver and a build with one resource) and registers it with an
entry point; no file of alicerce changes. The package and its entry point live in a temporary folder
put on the import path of real `alicerce` processes, as a second installed package would be.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

from tests.conftest import ROOT

PACKAGE = {
    "fake_target/__init__.py": "",
    # the spec stage: the site and the pool section (models of the spec, so the JSON Schema has them)
    "fake_target/spec.py": '''
from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from alicerce.spec.base import Name, SpecModel
from alicerce.spec.units import Cidr


class FakeSite(SpecModel):
    """A region of the fake cloud."""

    ROUTED: ClassVar[tuple[tuple[str, str], ...]] = ()  # no address ranges of its own to check for overlaps
    name: Name = Field(description="Site name.")
    provider: Literal["fake"] = Field(description="Target kind.")
    project: str = Field(description="The fake cloud's project.")
    region: str = Field(description="The fake cloud's region.")
    service_cidr: Cidr | None = Field(default=None, description="Kubernetes service range.")
    delivery: Literal["pulumi"] = Field(default="pulumi", description="Pulumi applies the in-cluster layer.")


class FakePool(SpecModel):
    """A pool's details on the fake cloud."""

    machine_type: str = Field(description="The fake cloud's machine type.")
''',
    # the one declaration: its spec sections, its later stages by module, its declared facts
    "fake_target/target.py": """
from alicerce.targets.base import Section, Target
from fake_target.spec import FakePool, FakeSite

TARGET = Target(
    name="fake",
    label="Fake",
    site=FakeSite,
    sections={"pool": Section(FakePool, "Fake cloud details; required when the site is on the fake cloud.")},
    resolver="fake_target.resolve",
    rules="fake_target.rules",
    build="fake_target.build",
    capacity="rented",
    # a Pulumi stack for its cloud layer, and `alicerce apply fake` for its nodes: CI runs that command, not on-prem's
    deploy=("pulumi", "apply"),
)
""",
    # the resolve stage: nodes come with the driver on the image, no storage of its own
    "fake_target/resolve.py": """
from alicerce.targets.base import Capabilities
from alicerce.targets.resolver import NodeSoftwareOwners, PoolPlacement, TargetResolver
from fake_target.target import TARGET

CAPABILITIES = Capabilities(
    provider=TARGET.name,
    label=TARGET.label,
    owned=TARGET.capacity == "owned",
    pool_section=TARGET.name,
    pool_section_hint="add fake: {machineType: ...}",
    nodes_by_ansible=False,  # its apply is its own, not alicerce's Ansible tree
    gpu_stack_on_image=True,
)

RESOLVER = TargetResolver(
    capabilities=CAPABILITIES,
    site=lambda site, networks: site,
    pool=lambda pool, site, fabric, catalog: PoolPlacement(),
    implementation=lambda tier: None,
    mount=lambda tier, path: None,
    software=lambda site: NodeSoftwareOwners(gpu_driver="node-image", node_exporter="cluster"),
)
""",
    # the rules stage: one rule of its own
    "fake_target/rules.py": """
from collections.abc import Iterable

from alicerce.rules.base import Finding, RuleContext, RuleSet, S

rules = RuleSet()


@rules.rule("AL353", "fake-pool-section", "A pool at a fake site says its machine type.")
def fake_pool_section(ctx: RuleContext) -> Iterable[Finding]:
    for i, pool in ctx.indexed_pools():
        site = ctx.pool_site(pool)
        if site is not None and site.provider == "fake" and getattr(pool, "fake", None) is None:
            yield Finding(S.node_pools[i], f"pool {pool.name} is at a fake site", "add fake: {machineType: ...}", resource=pool.name)
""",
    # the emit stage: one resource in the cloud layer, a provider into the cluster
    "fake_target/build.py": """
import pulumi
import pulumi_kubernetes as k8s

from alicerce.emit.pulumi.stack import KubeSite, SiteBuild


class FakeCluster(pulumi.ComponentResource):
    def __init__(self, name: str, region: str) -> None:
        super().__init__("fake:index:Cluster", name, {"region": region})
        self.register_outputs({})


def build_site(rp, resolved, secrets, settings):
    site = resolved.spec
    cluster = FakeCluster(f"{site.name}-cluster", site.region)
    return SiteBuild(cluster={"provider": "fake", "region": site.region}, after=[cluster])


def kube_site(rp, resolved, handoff, secrets):
    return KubeSite(kube=k8s.Provider(f"{resolved.spec.name}-k8s", kubeconfig="{}"))
""",
    "fake_target-0.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: fake-target\nVersion: 0.1\n",
    "fake_target-0.1.dist-info/entry_points.txt": "[alicerce.targets]\nfake = fake_target.target:TARGET\n",
}


def _spec(pool_section: dict[str, object]) -> str:
    spec = yaml.safe_load((ROOT / "examples/minimal.yaml").read_text(encoding="utf-8"))
    spec["environments"]["dev"]["sites"].append({"name": "fake", "provider": "fake", "project": "p-1", "region": "north-1"})
    spec["nodePools"] += [
        {"name": "fake-system", "site": "fake", "purpose": "system", "fake": {"machineType": "f1.large"}, "scaling": {"min": 1, "max": 2}},
        {
            "name": "batch",
            "site": "fake",
            "purpose": "inference",
            "accelerator": "L4-24GB:1",
            "fake": pool_section,
            "scaling": {"min": 0, "max": 2},
            "taints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}],
        },
    ]
    spec["tenancy"]["teams"][0]["quotas"].append({"pool": "batch", "gpus": 2})
    return yaml.safe_dump(spec, sort_keys=False)


@pytest.fixture(scope="module")
def plugin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("plugin")
    for name, text in PACKAGE.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text.lstrip(), encoding="utf-8")
    return root


def alicerce(plugin: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(plugin)]),
        "ALICERCE_CACHE_DIR": str(cwd / ".cache"),
        "PULUMI_SKIP_UPDATE_CHECK": "1",
    }
    return subprocess.run(
        [sys.executable, "-m", "alicerce", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False
    )


def test_the_fake_target_works_through_every_command(plugin: Path, tmp_path: Path) -> None:
    (tmp_path / "platform.yaml").write_text(_spec({"machineType": "f1.large"}), encoding="utf-8")

    validated = alicerce(plugin, tmp_path, "validate", "platform.yaml", "--format", "json")
    assert validated.returncode == 0, validated.stdout + validated.stderr

    shown = alicerce(plugin, tmp_path, "show", "platform.yaml", "--env", "dev", "--format", "json")
    assert shown.returncode == 0, shown.stderr
    assert {s["provider"] for s in json.loads(shown.stdout)["sites"]} == {"aws", "fake"}

    planned = alicerce(plugin, tmp_path, "plan", "platform.yaml", "--env", "dev", "--format", "json")
    assert planned.returncode == 0, planned.stderr
    pools = {p["name"]: p for p in json.loads(planned.stdout)["pools"]}
    assert pools["batch"]["owned"] is False  # declared rented: no cloud instance type does not make it owned

    out = tmp_path / "generated"
    generated = alicerce(plugin, tmp_path, "generate", "platform.yaml", "--env", "dev", "--out", str(out))
    assert generated.returncode == 0, generated.stderr
    assert (out / "kubernetes" / "fake").is_dir() and (out / "kubernetes" / "aws").is_dir()
    # CI provisions the fake site with the fake target's own command (its name), never `alicerce apply onprem`
    deploy = yaml.safe_load((out / "ci" / "alicerce-deploy.yml").read_text(encoding="utf-8"))
    apply_job = deploy["jobs"]["apply-dev-fake"]
    assert apply_job["name"] == "alicerce apply fake dev fake"
    assert "alicerce apply fake --env dev " in apply_job["steps"][-1]["run"]
    assert "apply onprem" not in json.dumps(deploy)
    assert "`alicerce apply fake` per Fake site" in (out / "ci" / "README.md").read_text(encoding="utf-8")

    previewed = alicerce(plugin, tmp_path, "preview", "platform.yaml", "--env", "dev", "--format", "json")
    assert previewed.returncode == 0, previewed.stderr
    assert "fake:index:Cluster" in previewed.stdout and "aws:eks/cluster:Cluster" in previewed.stdout

    schema = alicerce(plugin, tmp_path, "schema", "--output", "schema.json")
    assert schema.returncode == 0, schema.stderr
    written = json.loads((tmp_path / "schema.json").read_text(encoding="utf-8"))
    assert {"$ref": "#/$defs/FakeSite"} in written["$defs"]["Environment"]["properties"]["sites"]["items"]["oneOf"]
    # editors accept the spec with the fake site and pool section, and refuse a bad field in that section
    jsonschema.Draft202012Validator(written).validate(yaml.safe_load(_spec({"machineType": "f1.large"})))
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(written).validate(yaml.safe_load(_spec({"machineTyp": "f1.large"})))

    (tmp_path / "new.yaml").write_text(_spec({"machineType": "f1.xlarge"}).replace("max: 2", "max: 3"), encoding="utf-8")
    diffed = alicerce(plugin, tmp_path, "diff", "platform.yaml", "new.yaml", "--env", "dev", "--format", "json", "--no-plan")
    assert diffed.returncode == 0, diffed.stderr
    assert "batch" in diffed.stdout


def test_a_bad_field_in_the_fake_section_is_a_located_error(plugin: Path, tmp_path: Path) -> None:
    (tmp_path / "platform.yaml").write_text(_spec({"machineTyp": "f1.large"}), encoding="utf-8")
    result = alicerce(plugin, tmp_path, "validate", "platform.yaml")
    assert result.returncode == 2, result.stdout + result.stderr
    line = next(n for n, text in enumerate(_spec({"machineTyp": "f1.large"}).splitlines(), 1) if "machineTyp:" in text)
    assert f"platform.yaml:{line}:" in result.stdout + result.stderr
    assert "machineType" in result.stdout + result.stderr  # the hint: did you mean
    assert "Traceback" not in result.stderr


def test_the_fake_targets_rule_runs(plugin: Path, tmp_path: Path) -> None:
    spec = yaml.safe_load(_spec({"machineType": "f1.large"}))
    del spec["nodePools"][-1]["fake"]
    (tmp_path / "platform.yaml").write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    result = alicerce(plugin, tmp_path, "validate", "platform.yaml")
    assert result.returncode == 2 and "AL353" in result.stdout + result.stderr, result.stdout + result.stderr


def test_a_target_installed_after_a_run_is_found_by_the_next(tmp_path: Path) -> None:
    """The entry points are read once and kept in the cache folder (reading every distribution's metadata cost as
    much as a whole cold `validate`), keyed by the import path's folders and their times: a distribution installed
    into a folder already on the path is found by the next run, and one removed is gone."""
    site = tmp_path / "site-packages"
    site.mkdir()
    cache = tmp_path / "cache"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(site)]), "ALICERCE_CACHE_DIR": str(cache)}
    env.pop("ALICERCE_NO_CACHE", None)
    names = "from alicerce.targets import TARGETS; print(','.join(t.name for t in TARGETS))"

    def targets() -> str:
        return subprocess.run(
            [sys.executable, "-c", names], env=env, cwd=tmp_path, capture_output=True, text=True, check=True
        ).stdout.strip()

    assert targets() == "aws,onprem"
    assert len(list((cache / "entry-points").glob("*.json"))) == 1  # the scan is kept
    for name, text in PACKAGE.items():
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        (site / name).write_text(text.lstrip(), encoding="utf-8")
    assert targets() == "aws,onprem,fake"
    for name in ("fake_target", "fake_target-0.1.dist-info"):
        shutil.rmtree(site / name)
    assert targets() == "aws,onprem"
