"""The starter spec `alicerce init` writes: a small valid platform to grow from (the repository around it: emit/repository.py)."""

from __future__ import annotations

import re

from alicerce.spec.models import DNS_LABEL
from alicerce.spec.schema import schema_text

STARTER = """\
# yaml-language-server: $schema=schema/platform.schema.json
#
# A starter platform: one AWS environment with a system pool, an inference GPU pool, one team and
# the model it serves. `alicerce validate` checks it; `alicerce plan` sizes the pools from the
# workload; `alicerce show --env dev` prints what alicerce resolves from it.
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
        account: "123456789012"     # your AWS account (README: what a real account adds)
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
      # the API server puts the identity provider's prefix ("oidc:" unless security.identityProvider
      # says otherwise) before every group it reads from a token: a group without it binds nobody (AL294)
      groups: ["oidc:ml-engineers"]
      quotas: [{{pool: inference, gpus: 4}}]

workloads:
  - name: assistant
    kind: inference
    team: ml
    pool: inference
    model: {{parameters: 8B, layers: 32, hiddenSize: 4096}}
    precision: bf16
    traffic: {{peakRps: 2, inputTokens: 1000, outputTokens: 200}}
    latency:
      timeToFirstToken: {{p99: 1s}}

# Your OIDC identity provider, whose groups the teams above name (a real issuer: EKS reads its
# discovery document when the cluster is created):
# security:
#   identityProvider: {{issuerUrl: "https://login.example.com", clientId: kubernetes}}
"""

GITIGNORE = """\
# alicerce generate output, its lock file, and local caches
/out/
/.alicerce-apply/
.*.alicerce-*
.venv/
__pycache__/
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
    }
