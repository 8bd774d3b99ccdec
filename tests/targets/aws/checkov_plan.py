"""The offline preview as a Terraform-plan-shaped JSON document, for checkov's terraform_plan framework.

pulumi-aws is bridged from terraform-provider-aws, so each Pulumi resource is a Terraform resource: the type token
``aws:<module>/<resource>:<Class>`` names ``aws_<module>_<resource>`` (EC2 resources drop the module, as Terraform
does), inputs are camelCase of the Terraform attributes, and Pulumi pluralises repeated blocks (``rules`` for
Terraform's ``rule``). Values that are another resource's mocked id, ARN or name become configuration references,
so checkov's graph checks connect a bucket to its encryption, versioning and logging resources. checkov reads
planned_values, resource_changes and configuration (checkov/terraform/plan_parser.py at 3.3.30).
"""

from __future__ import annotations

import re
from typing import Any

from alicerce.run.preview import PreviewResult, Recorder

MAPS = {"tags", "tags_all", "labels", "final_backup_tags"}  # maps whose keys are data, not attribute names
BLOCKS = {"rules": "rule", "statements": "statement"}  # Pulumi's plural names of Terraform's repeated blocks


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def terraform_type(token: str) -> str:
    """``aws:s3/bucket:Bucket`` -> ``aws_s3_bucket``; ``aws:ec2/vpc:Vpc`` -> ``aws_vpc``."""
    _, path, _ = token.split(":")
    module, resource = path.split("/")
    name = _snake(resource)
    if module == "ec2":
        return f"aws_{name}"
    if module == "vpc":
        return f"aws_vpc_{name}"
    if module == "autoscaling" and name == "tag":
        return "aws_autoscaling_group_tag"
    return f"aws_{module}_{name}"


def _values(value: Any, parent: str | None = None) -> Any:
    if isinstance(value, dict):
        if parent in MAPS:
            return value
        return {BLOCKS.get(_snake(k), _snake(k)): _values(v, _snake(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [_values(v, parent) for v in value]
    return value


def plan_document(result: PreviewResult) -> dict[str, Any]:
    """Every AWS resource of the preview as a resource to create, with references between them."""
    recorder = Recorder()
    known: dict[str, str] = {}
    rows = []
    for r in result.resources:
        if not r.custom or not r.type.startswith("aws:"):
            continue
        kind, name = terraform_type(r.type), re.sub(r"[^A-Za-z0-9_]", "_", r.name)
        rid, state = recorder.outputs(r.type, r.name, r.inputs)
        for value in (rid, state.get("arn"), state.get("name")):
            if isinstance(value, str):
                known.setdefault(value, f"{kind}.{name}")
        rows.append((kind, name, _values(r.inputs)))
    resources, configuration = [], []
    for kind, name, values in rows:
        address = f"{kind}.{name}"
        expressions = {}
        for key, value in values.items():
            hits = [known[v] for v in (value if isinstance(value, list) else [value]) if isinstance(v, str) and v in known]
            if hits:
                expressions[key] = {"references": [f"{h}.id" for h in hits] + hits}
        common = {"address": address, "mode": "managed", "type": kind, "name": name}
        resources.append({**common, "provider_name": "registry.terraform.io/hashicorp/aws", "values": values})
        configuration.append({**common, "expressions": expressions})
    return {
        "format_version": "1.2",
        "terraform_version": "1.9.8",
        "planned_values": {"root_module": {"resources": resources}},
        "resource_changes": [
            {
                **{k: r[k] for k in ("address", "mode", "type", "name")},
                "change": {"actions": ["create"], "before": None, "after": r["values"]},
            }
            for r in resources
        ],
        "configuration": {"root_module": {"resources": configuration}},
    }
