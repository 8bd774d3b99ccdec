"""Security posture and time-boxed waivers of policy rules."""

from __future__ import annotations

import datetime
from typing import Literal

from pydantic import Field, StrictBool

from alicerce.spec.base import LongText, Name, SpecModel
from alicerce.spec.text import AwsName, Identifier, Url, Word
from alicerce.spec.units import Cidr, Duration


class Encryption(SpecModel):
    at_rest: StrictBool = Field(default=True, description="Encrypt volumes, file systems, buckets and Kubernetes secrets.")
    kms_key: AwsName | None = Field(default=None, description="KMS key ARN or alias; a platform key is created when omitted.")


class EndpointAccess(SpecModel):
    private: StrictBool = Field(default=True, description="Private Kubernetes API endpoint.")
    public: StrictBool = Field(default=False, description="Also expose a public endpoint.")
    public_cidrs: list[Cidr] = Field(default_factory=list, description="Allow-list for the public endpoint.")


class IdentityProvider(SpecModel):
    """The OIDC identity provider whose groups (tenancy.teams[].groups) reach Kubernetes RBAC."""

    issuer_url: Url = Field(pattern=r"^https://", description="OIDC issuer URL.", examples=["https://idp.example.com"])
    client_id: Identifier = Field(min_length=1, description="OIDC client id the API server accepts tokens for.", examples=["kubernetes"])
    groups_claim: Identifier = Field(default="groups", description="Token claim that lists the user's groups.")
    username_claim: Identifier = Field(default="email", description="Token claim that names the user.")
    prefix: Identifier = Field(
        default="oidc:",
        min_length=1,
        description="Prefix the API server puts before every group and user name from this provider, so teams' groups are "
        "written <prefix><group> (a group without it can never match).",
    )


class Audit(SpecModel):
    enabled: StrictBool = Field(default=True, description="Kubernetes audit logging.")
    retention: Duration = Field(default=365 * 86400, gt=0, description="How long audit logs are kept.")
    webhook: Url | None = Field(
        default=None,
        pattern=r"^https://",
        description="HTTPS endpoint the on-prem API servers also send their audit events to (kubespray's audit webhook, "
        "batched), so the record leaves the control-plane hosts, whose own log holds at most 10 GB: a log collector's "
        "audit input. AWS sites send theirs to CloudWatch Logs and CloudTrail already. On a running cluster it takes "
        "`alicerce apply onprem --kubespray upgrade-cluster` (kubeadm upgrade apply rewrites the API server's flags; "
        "cluster.yml leaves an existing control plane's as they are).",
        examples=["https://audit.dc1.example.com/k8s-audit"],
    )


class Security(SpecModel):
    encryption: Encryption = Field(default_factory=Encryption, description="Encryption at rest.")
    endpoint_access: EndpointAccess = Field(default_factory=EndpointAccess, description="Kubernetes API endpoint exposure.")
    pod_security: Literal["privileged", "baseline", "restricted"] = Field(
        default="restricted", description="Pod Security Standard enforced in team namespaces."
    )
    audit: Audit = Field(default_factory=Audit, description="Audit logging.")
    identity_provider: IdentityProvider | None = Field(
        default=None, description="OIDC identity provider of the teams' groups; without one, groups come from the cloud's IAM mapping."
    )


class Waiver(SpecModel):
    """An accepted, time-boxed exception to one rule."""

    rule: Word = Field(description="Rule id.", examples=["AL250"])
    environments: list[Name] = Field(default_factory=list, description="Environments it covers; all when empty.")
    resources: list[Word] = Field(default_factory=list, description="Names (pools, tiers, ...) it covers; all when empty.")
    justification: LongText = Field(min_length=10, description="Why the exception is acceptable.")
    expires: datetime.date = Field(description="Date after which the waiver stops applying.")
