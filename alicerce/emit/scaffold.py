"""The files `alicerce init` writes: a small valid platform to grow from."""

from __future__ import annotations

import re

from alicerce.spec.models import DNS_LABEL
from alicerce.spec.schema import schema_text

STARTER = """\
# yaml-language-server: $schema=schema/platform.schema.json
#
# A starter platform: one AWS environment with a system pool, an inference GPU pool and one team.
# `alicerce validate` checks it; `alicerce show --env dev` prints what alicerce resolves from it.
apiVersion: alicerce.dev/v1
kind: Platform

metadata:
  name: {name}
  owner: platform-team@example.com
  costCenter: CC-0000

environments:
  dev:
    tier: development
    sites:
      - name: aws
        provider: aws
        account: "123456789012"
        region: us-east-1
        zones: [us-east-1a, us-east-1b]
        vpcCidr: 10.0.0.0/16

nodePools:
  - name: system
    site: aws
    purpose: system
    aws: {{instanceType: m7i.2xlarge}}
    scaling: {{min: 2, max: 3}}
  - name: inference
    site: aws
    purpose: inference
    accelerator: "L4-24GB:1"
    aws: {{instanceType: g6.xlarge}}
    scaling: {{min: 0, max: 4}}
    taints: [{{key: nvidia.com/gpu, value: "true", effect: NoSchedule}}]

tenancy:
  teams:
    - name: ml
      groups: [ml-engineers]
      quotas: [{{pool: inference, gpus: 4}}]
"""

GITIGNORE = """\
# alicerce generate output, its lock file, and local caches
/out/
/.alicerce-apply/
.*.alicerce-*
.venv/
__pycache__/
"""

README = """\
# {name}

The ML platform `{name}`, described in `platform.yaml` and built with alicerce.

    alicerce validate                 # every error, located, before anything is deployed
    alicerce show --env dev           # the resolved environment
    alicerce catalog gpus             # accelerators the spec can name

Editors with the YAML language server complete and check `platform.yaml` against
`schema/platform.schema.json`.
"""


def valid_name(name: str) -> bool:
    """Whether ``name`` can name a platform (a DNS-1123 label)."""
    return bool(re.match(DNS_LABEL, name)) and len(name) <= 63


def scaffold_files(name: str) -> dict[str, str]:
    """Relative path -> text of a new platform repository."""
    if not valid_name(name):
        raise ValueError(f"not a DNS label: {name!r}")  # the CLI checks user input before it gets here
    return {
        "platform.yaml": STARTER.format(name=name),
        "schema/platform.schema.json": schema_text(),
        ".gitignore": GITIGNORE,
        "README.md": README.format(name=name),
    }
