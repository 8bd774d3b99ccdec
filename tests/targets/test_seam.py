"""The seam between the provider-neutral code and the targets: every list of providers names the same ones.

A target that is missing from one list half-works: validate crashes on a union that does not name its
site, the JSON Schema rejects a site the loader accepts, a rule's hint names a tier section the tier
model refuses. Each list below is read from where the stage uses it, not from the registration.
"""

from __future__ import annotations

import ast
import typing
from typing import Any, get_args, get_origin

from pydantic import BaseModel

from alicerce.cli.documents import show_schema
from alicerce.emit.pulumi.program import BUILDERS
from alicerce.resolve.model import ResolvedPool, ResolvedSite
from alicerce.resolve.targets import RESOLVERS
from alicerce.rules import RULE_MODULES
from alicerce.rules.base import RuleContext
from alicerce.spec.models import Environment, Fabric, LocalNvmeTier, NodePool, StorageTier
from alicerce.spec.schema import platform_schema
from alicerce.targets import SHIPPED, TARGETS
from tests.conftest import ROOT


def _models(annotation: Any) -> list[type[BaseModel]]:
    """The models a (possibly Annotated, Optional) union annotation admits."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in get_args(annotation) for m in _models(arg)]


def _providers(models: list[type[BaseModel]]) -> set[str]:
    return {get_args(m.model_fields["provider"].annotation)[0] for m in models}


def providers() -> set[str]:
    """The providers the spec's `Site` union admits: the reference every other list is held to."""
    return _providers(_models(Environment.model_fields["sites"].annotation))


def _sections(model: type[BaseModel], names: set[str]) -> set[str]:
    return {name for name in model.model_fields if name in names}


def test_the_spec_admits_exactly_the_registered_targets() -> None:
    assert [t.name for t in TARGETS[:2]] == ["aws", "onprem"]
    assert {t.name for t in TARGETS} == providers()


def test_each_target_section_is_a_field_where_it_declares_one() -> None:
    """The sections come from the declarations: a tier or fabric model has a target's field iff the target declares it."""
    places: dict[str, type[BaseModel]] = {"pool": NodePool, "fabric": Fabric}
    places.update({get_args(m.model_fields["class_"].annotation)[0]: m for m in _models(get_args(StorageTier)[0])})
    for place, model in places.items():
        declared = {t.name: t.sections[place] for t in TARGETS if place in t.sections}
        assert _sections(model, providers()) == set(declared), place
        for name, section in declared.items():
            field = model.model_fields[name]
            assert _models(field.annotation) == [section.model] and field.description == section.description


def test_mypys_view_of_the_sections_names_the_shipped_ones() -> None:
    """The registration spells the shipped sections out for mypy (under TYPE_CHECKING): it must agree with them."""
    tree = ast.parse((ROOT / "alicerce/targets/__init__.py").read_text(encoding="utf-8"))
    stated = {
        node.name: {
            a.target.id: ast.unparse(a.annotation) for a in node.body if isinstance(a, ast.AnnAssign) and isinstance(a.target, ast.Name)
        }
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef) and node.body and isinstance(node.body[0], ast.AnnAssign)
    }
    classes = {"pool": "PoolSections", "parallel-fs": "ParallelFsSections", "shared-nfs": "SharedNfsSections"}
    classes.update({"object": "ObjectSections", "block": "BlockSections", "fabric": "FabricSections"})
    for place, name in classes.items():
        shipped = {t.name: f"{t.sections[place].model.__name__} | None" for t in SHIPPED if place in t.sections}
        assert stated[name] == shipped, place
    alias = next(n for n in ast.walk(tree) if isinstance(n, ast.AnnAssign) and ast.unparse(n.target) == "AnySite")
    assert alias.value is not None and ast.unparse(alias.value) == " | ".join(t.site.__name__ for t in SHIPPED)


def test_resolvers_rules_and_builders_cover_the_site_union() -> None:
    target_rules = {m.__name__.split(".")[2] for m in RULE_MODULES if m.__name__.startswith("alicerce.targets.")}
    assert set(RESOLVERS) == providers()
    assert target_rules == providers()
    assert set(BUILDERS) == providers()


def test_resolved_and_rule_context_types_admit_every_site() -> None:
    """resolve/model.py and rules/base.py once listed two site classes by hand: validate crashed on a third."""
    expected = _models(Environment.model_fields["sites"].annotation)
    assert set(_models(typing.get_type_hints(ResolvedPool)["site"])) == set(expected)
    assert set(_models(typing.get_type_hints(ResolvedSite)["spec"])) == set(expected)
    hints = typing.get_type_hints(RuleContext.pool_site)
    assert set(_models(hints["return"])) == set(expected)
    assert set(_models(typing.get_type_hints(RuleContext.sites.func)["return"])) == set(expected)


def test_every_target_has_its_pool_section_and_tier_sections() -> None:
    """AL230 tells the user to add a `<provider>:` section to a tier: each tier model must have it."""
    assert _sections(NodePool, providers()) == providers()
    for tier in _models(get_args(StorageTier)[0]):
        if tier is LocalNvmeTier:
            continue
        for provider, resolver in RESOLVERS.items():
            if tier.model_fields["class_"].annotation is not None:
                kind = get_args(tier.model_fields["class_"].annotation)[0]
                if kind in resolver.capabilities.storage_choices:
                    assert resolver.capabilities.pool_section in tier.model_fields, (tier.__name__, provider)
        assert _sections(tier, providers()) <= providers()
    assert _sections(Fabric, providers()) <= providers()


def _refs(schema: dict[str, Any]) -> set[str]:
    return {one["$ref"].rpartition("/")[2] for one in schema["oneOf"]}


def _site_defs(schema: dict[str, Any]) -> set[str]:
    sites = schema["$defs"]["Environment"]["properties"]["sites"]["items"]
    return _refs(sites) if "oneOf" in sites else {sites["$ref"].rpartition("/")[2]}


def test_the_json_schemas_admit_every_site() -> None:
    """The platform schema (editors) and the `show --json` schema (its hand-written `Site`) name every site model."""
    expected = {m.__name__ for m in _models(Environment.model_fields["sites"].annotation)}
    assert _site_defs(platform_schema()) == expected
    assert _refs(show_schema()["$defs"]["Site"]) == expected


def test_the_seam_checks_can_fail() -> None:
    """A union or schema that leaves a site out is told apart from one that names it."""
    from alicerce.targets.aws.spec import AwsSite

    assert _providers(_models(list[AwsSite])) == {"aws"} != providers()
    assert _refs({"oneOf": [{"$ref": "#/$defs/AwsSite"}]}) == {"AwsSite"}
    assert get_origin(Environment.model_fields["sites"].annotation) is list
