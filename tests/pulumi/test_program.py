"""The program as a whole: every emitted type asserted, nothing created inside apply, the CLI preview."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pulumi
import pytest
from typer.testing import CliRunner

from alicerce.cli import build_app
from tests.conftest import ROOT
from tests.pulumi.conftest import COVERED, all_previews, covers

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # pulumi_aws warns about its own deprecated classes on import


def test_every_emitted_resource_type_is_asserted_by_a_test() -> None:
    # the modules whose tests register coverage must be imported first
    import tests.pulumi.test_argocd
    import tests.pulumi.test_aws
    import tests.pulumi.test_kubernetes  # noqa: F401

    emitted = {r.type for _, result in all_previews() for r in result.resources}
    missing = sorted(emitted - set(COVERED))
    assert not missing, f"resource types no test asserts: {missing}"
    stale = sorted(set(COVERED) - emitted)
    assert not stale, f"tests cover types the program never emits: {stale}"


def test_no_resource_is_created_inside_an_apply(monkeypatch: Any) -> None:
    """Resources made inside Output.apply vanish from previews; the program makes none there."""
    from alicerce.emit.pulumi.program import build
    from alicerce.run.preview import OfflineSecrets, run_preview
    from tests.pulumi.conftest import _preview

    rp, _ = _preview("reference", "prod")
    depth = 0
    inside: list[str] = []
    constructed: list[str] = []
    original_apply = pulumi.Output.apply
    original_init = pulumi.Resource.__init__

    def apply(self: Any, func: Any, run_with_unknowns: bool = False) -> Any:
        def wrapped(value: Any) -> Any:
            nonlocal depth
            depth += 1
            try:
                return func(value)
            finally:
                depth -= 1

        return original_apply(self, wrapped, run_with_unknowns)

    def init(self: Any, t: str, name: str, *args: Any, **kwargs: Any) -> None:
        if t != "pulumi:pulumi:Stack":
            constructed.append(name)
            if depth:
                inside.append(f"{t} {name}")
        original_init(self, t, name, *args, **kwargs)

    monkeypatch.setattr(pulumi.Output, "apply", apply)
    monkeypatch.setattr(pulumi.Resource, "__init__", init)
    result = run_preview(rp, lambda r: build(r, OfflineSecrets()))
    assert inside == []
    # and the preview holds every resource the program constructed
    assert sorted(constructed) == sorted(r.name for r in result.resources)


@covers("pulumi:providers:kubernetes")
def test_preview_json_is_engine_shaped_and_deterministic(prod: Any) -> None:
    _, result = prod
    out = CliRunner().invoke(build_app(), ["preview", "--env", "prod", str(ROOT / "platform.yaml"), "--format", "json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert set(data) == {"schemaVersion", "platform", "counts", "environment", "resources", "outputs"}
    assert data["environment"] == "prod"
    same = {k: data[k] for k in ("environment", "resources", "outputs")}
    assert same == json.loads(json.dumps(result.to_json()))  # same plan, same order, run after run
    first = data["resources"][0]
    assert set(first) == {"type", "name", "parent", "inputs"}
    lt = next(r for r in data["resources"] if r["name"] == "aws-pool-train-p5-lt")
    assert lt["type"] == "aws:ec2/launchTemplate:LaunchTemplate" and lt["parent"] == "aws-pool-train-p5"
    assert lt["inputs"]["metadataOptions"]["httpTokens"] == "required"
    assert {n["interfaceType"] for n in lt["inputs"]["networkInterfaces"]} == {"interface", "efa-only"}
    # secrets never appear: the on-prem kubeconfig and every exported kubeconfig are masked
    k8s = {r["name"]: r for r in data["resources"] if r["type"] == "pulumi:providers:kubernetes"}
    assert k8s["dc1-k8s"]["inputs"]["kubeconfig"] == "[secret]" and k8s["aws-k8s"]["inputs"]["kubeconfig"] == "[secret]"
    assert data["outputs"]["kubeconfigs"] == "[secret]"
    assert data["outputs"]["clusters"]["aws"]["name"] == "acme-ml-prod-aws"
    assert data["outputs"]["storage"]["aws"]["data-lake"] == "s3://acme-ml-prod-data-lake-222222222222"
    assert "offline-preview-placeholder" not in out.stdout


def test_preview_tree_is_labelled_offline_and_counts_by_type(prod: Any) -> None:
    from rich.console import Console

    from alicerce.cli.preview import render_tree

    _, result = prod
    console = Console(width=200, record=True)
    console.print(render_tree(result))
    text = console.export_text()
    assert "offline plan, not a diff against live state" in text
    assert "aws-network alicerce:network:Network" in text and "aws:ec2/subnet:Subnet x6" in text
    assert "aws-objects-kueue: 18 objects" in text  # 3 ClusterQueues, 4 LocalQueues, 4 ResourceFlavors, 7 WorkloadPriorityClasses


def test_preview_of_an_invalid_spec_reports_located_errors_and_exits_2(tmp_path: Any) -> None:
    out = CliRunner().invoke(build_app(), ["preview", "--env", "nope", str(ROOT / "platform.yaml")])
    assert out.exit_code == 2
    assert 'no environment "nope"' in out.output and "platform.yaml:" in out.output


# ---------------------------------------------------------------- layers: two stacks per environment (issue 10 item 4)


def _settings_of(stack_file: Any) -> Any:
    import yaml

    from alicerce.emit.pulumi.stack import LAYERS, StackSettings

    config = yaml.safe_load(stack_file.read_text())["config"]
    return config["alicerce:environment"], StackSettings(
        tuple(config.get("alicerce:adminPrincipals", [])),
        tuple(config.get("alicerce:apiAccessCidrs", [])),
        tuple(config.get("alicerce:layers", LAYERS)),
        config.get("alicerce:cloudStack"),
    )


def test_shipped_stacks_split_each_environment_into_two_deployable_layers() -> None:
    """Every environment has a cloud stack and a kubernetes stack, and the program finds no problem in either."""
    from alicerce.rules.validate import validated
    from alicerce.spec.loader import load_file

    files = sorted((ROOT / "stacks").glob("Pulumi.*.yaml"))
    layers: dict[str, set[str]] = {}
    for stack_file in files:
        env, settings = _settings_of(stack_file)
        rp = validated(load_file(ROOT / "platform.yaml", "platform.yaml"), env)
        assert settings.problems(rp) == [], stack_file.name
        layers.setdefault(env, set()).update(settings.layers)
    assert layers == {"dev": {"cloud", "kubernetes"}, "prod": {"cloud", "kubernetes"}}


def test_the_kubernetes_stack_builds_from_the_cloud_stacks_outputs() -> None:
    """Run the cloud layer, hand its outputs to a StackReference, run the kubernetes layer: together they declare what
    one stack with both layers declares, and the kubernetes stack creates no AWS resource."""
    from alicerce.emit.pulumi.program import build
    from alicerce.emit.pulumi.stack import StackSettings
    from alicerce.run.preview import OfflineSecrets, run_preview
    from tests.pulumi.conftest import _preview

    rp, both = _preview("reference", "prod")
    admins = ("arn:aws:iam::222222222222:role/platform-admins",)
    cloud = run_preview(rp, lambda r: build(r, OfflineSecrets(), StackSettings(admins, layers=("cloud",))))
    kube = run_preview(rp, lambda r: build(r, OfflineSecrets(), StackSettings(admins, layers=("kubernetes",))), stack_outputs=cloud.outputs)
    assert not any(r.type.startswith("aws:") for r in kube.resources)
    assert not any(r.type.startswith("kubernetes:") for r in cloud.resources)
    (reference,) = [r for r in kube.resources if r.type == "pulumi:pulumi:StackReference"]
    assert reference.inputs["name"] == "organization/alicerce-platform/prod"
    split = [r.name for r in [*cloud.resources, *kube.resources] if r.type != "pulumi:pulumi:StackReference"]
    assert sorted(n for n in split if not n.startswith("aws-cluster-admin")) == sorted(r.name for r in both.resources)
    # the file systems' volumes reach the kubernetes stack through the handoff
    objs = [o for r in kube.resources if "objs" in r.inputs for o in r.inputs["objs"]]
    pv = next(o for o in objs if o["kind"] == "PersistentVolume" and "datasets" in o["metadata"]["name"])
    assert pv["spec"]["csi"]["volumeHandle"].startswith("fs-") and pv["spec"]["csi"]["driver"] == "fsx.csi.aws.com"


def test_main_reads_the_spec_relative_to_the_pulumi_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 16: `alicerce:spec` is relative to the folder of Pulumi.yaml, not to where the program runs."""
    import shutil

    from alicerce.emit.pulumi.program import main
    from alicerce.rules.validate import validated
    from alicerce.run.preview import run_preview
    from alicerce.spec.loader import load_file

    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    shutil.copy(ROOT / "platform.yaml", project / "platform.yaml")
    monkeypatch.chdir(elsewhere)
    monkeypatch.setattr(pulumi, "get_root_directory", lambda: str(project))
    admins = '["arn:aws:iam::111111111111:role/platform-admins"]'  # a cloud layer needs its admins (issue 10)
    config = {
        "alicerce:spec": "platform.yaml",
        "alicerce:environment": "dev",
        "alicerce:adminPrincipals": admins,
        "alicerce:layers": '["cloud"]',
    }
    pulumi.runtime.set_all_config(config)
    try:
        result = run_preview(validated(load_file(ROOT / "platform.yaml"), "dev"), lambda _: main() or {})
    finally:
        pulumi.runtime.set_all_config({})
    assert any(r.type == "aws:eks/cluster:Cluster" for r in result.resources)
