"""`alicerce preview`: the Pulumi program run offline under the SDK's mock engine.

No credentials, network or Pulumi CLI: :func:`pulumi.runtime.set_mocks` replaces the engine with
:class:`Recorder`, which records every resource registration (type token, name, parent, inputs
exactly as the engine would receive them, camelCase) and answers with plausible outputs (ids,
ARNs, endpoints) so that dependent resources see realistic values. This is an offline plan of
what the program declares, NOT a diff against live state.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
from pulumi.runtime import mocks, rpc

from alicerce.resolve.model import ResolvedPlatform

SECRET = "[secret]"
UNKNOWN = "[unknown]"
OFFLINE_SECRET = "offline-preview-placeholder"
# the version an unpinned EKS add-on shows: AWS picks its default for the minor when `pulumi up` runs
UNPINNED_ADDON = "aws-default-for-kubernetes-"


@dataclass(frozen=True)
class PlannedResource:
    type: str
    name: str
    parent: str | None  # name of the parent resource; None at the stack root
    parent_type: str | None
    custom: bool  # False for components (ours, and remote ones such as helm.v4.Chart)
    inputs: dict[str, Any]
    depends_on: tuple[str, ...] = ()  # names of explicit dependencies (depends_on)
    protect: bool = False  # the protect option: the engine refuses to delete or replace the resource
    delete_before_replace: bool = False  # the engine deletes it before creating its replacement (a fixed name)

    @property
    def component(self) -> bool:
        """One of alicerce's own components (a branch of the plan), not something the engine creates."""
        return self.type.startswith("alicerce:")

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "name": self.name, "parent": self.parent, "inputs": self.inputs}


@dataclass
class PreviewResult:
    platform: str
    environment: str
    resources: list[PlannedResource]
    outputs: dict[str, Any] = field(default_factory=dict)
    invokes: list[tuple[str, str]] = field(default_factory=list)  # (function token, provider reference) of each call

    def to_json(self) -> dict[str, Any]:
        return {"environment": self.environment, "resources": [r.to_json() for r in self.resources], "outputs": self.outputs}

    def unpinned_addons(self) -> list[str]:
        """EKS add-ons that get AWS's default version at deploy time (no pin in the spec or catalog)."""
        return sorted(
            {
                str(r.inputs["addonName"])
                for r in self.of_type("aws:eks/addon:Addon")
                if str(r.inputs.get("addonVersion", "")).startswith(UNPINNED_ADDON)
            }
        )

    def of_type(self, token: str) -> list[PlannedResource]:
        return [r for r in self.resources if r.type == token]

    def named(self, name: str) -> PlannedResource:
        return next(r for r in self.resources if r.name == name)

    def children(self, name: str) -> list[PlannedResource]:
        return [r for r in self.resources if r.parent == name]


def _plain(value: Any) -> Any:
    """Engine values as JSON: secrets masked, unknowns marked, mappings sorted."""
    if rpc.is_rpc_secret(value):
        return SECRET
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in sorted(value.items()) if not k.startswith("__")}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)  # the engine carries every number as a double
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if type(value).__name__ == "Unknown":
        return UNKNOWN
    return str(value)


def _hash(*parts: str, n: int = 17) -> str:
    return hashlib.sha256("/".join(parts).encode()).hexdigest()[:n]


# id prefixes by resource (the last part of the type token), as AWS prints them
_ID_PREFIX = {
    "Vpc": "vpc",
    "Subnet": "subnet",
    "SecurityGroup": "sg",
    "InternetGateway": "igw",
    "NatGateway": "nat",
    "RouteTable": "rtb",
    "Eip": "eipalloc",
    "VpcEndpoint": "vpce",
    "LaunchTemplate": "lt",
    "PlacementGroup": "pg",
    "LustreFileSystem": "fs",
    "FileSystem": "fs",
    "MountTarget": "fsmt",
    "FlowLog": "fl",
    "SecurityGroupIngressRule": "sgr",
    "SecurityGroupEgressRule": "sgr",
    "DataRepositoryAssociation": "dra",
    "AccessPoint": "fsap",
}


class Recorder(mocks.Mocks):
    """Mock engine that records each registration and fills plausible outputs."""

    def __init__(self, region: str = "us-east-1", account: str = "000000000000", stack_outputs: Mapping[str, Any] | None = None) -> None:
        self.region = region
        self.account = account
        self.stack_outputs = dict(stack_outputs or {})  # what a StackReference reads (a previous preview's outputs)
        self.resources: list[PlannedResource] = []
        self.invokes: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        self._local = threading.local()

    # -- engine calls
    def new_resource(self, args: mocks.MockResourceArgs) -> tuple[str | None, dict[Any, Any]]:
        parent_urn: str = getattr(self._local, "parent", "") or ""
        parent_name = parent_type = None
        if parent_urn and "::" in parent_urn:
            chain = parent_urn.split("::")
            if not chain[-2].endswith("pulumi:pulumi:Stack"):
                parent_name, parent_type = chain[-1], chain[-2].split("$")[-1]
        depends = tuple(sorted({urn.rsplit("::", 1)[-1] for urn in getattr(self._local, "dependencies", ())}))
        protect = bool(getattr(self._local, "protect", False))
        first = bool(getattr(self._local, "delete_before_replace", False))
        record = PlannedResource(
            args.typ, args.name, parent_name, parent_type, bool(args.custom), _plain(args.inputs), depends, protect, first
        )
        with self._lock:
            self.resources.append(record)
        return self.outputs(args.typ, args.name, args.inputs)

    def call(self, args: mocks.MockCallArgs) -> tuple[dict[Any, Any], list[tuple[str, str]] | None]:
        with self._lock:
            self.invokes.append((args.token, str(getattr(args, "provider", "") or "")))
        if args.token == "aws:eks/getAddonVersion:getAddonVersion":
            a = args.args
            version = f"{UNPINNED_ADDON}{a.get('kubernetesVersion')}"
            return {"addonName": a.get("addonName"), "kubernetesVersion": a.get("kubernetesVersion"), "version": version}, []
        if args.token == "aws:kms/getKey:getKey":  # DescribeKey: any form of a key's name gives its key ARN
            key = str(args.args.get("keyId"))
            arn = (
                key
                if ":key/" in key
                else f"arn:aws:kms:{self.region}:{self.account}:key/{_hash('key', key, n=8)}-0000-4000-8000-{_hash(key, n=12)}"
            )
            return {"id": arn.rsplit("/", 1)[-1], "keyId": key, "arn": arn}, []
        return {}, []

    # -- plausible outputs
    def outputs(self, typ: str, name: str, inputs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        kind = typ.rsplit(":", 1)[-1]
        service = typ.split(":")[1].split("/", maxsplit=1)[0] if typ.startswith("aws:") else ""
        h = _hash(typ, name)
        rid = f"{_ID_PREFIX[kind]}-{h}" if kind in _ID_PREFIX else f"{name}-{h[:8]}"
        region, account = self.region, self.account
        state: dict[str, Any] = {**inputs, "arn": f"arn:aws:{service}:{region}:{account}:{kind.lower()}/{rid}"}
        if typ == "aws:eks/cluster:Cluster":
            cid = _hash(name, n=32).upper()
            state |= {
                "endpoint": f"https://{cid}.gr7.{region}.eks.amazonaws.com",
                "certificateAuthority": {"data": base64.b64encode(b"offline-preview-ca").decode()},
                "identities": [{"oidcs": [{"issuer": f"https://oidc.eks.{region}.amazonaws.com/id/{cid}"}]}],
                "vpcConfig": {**inputs.get("vpcConfig", {}), "clusterSecurityGroupId": f"sg-{_hash(name, 'cluster-sg')}"},
                "arn": f"arn:aws:eks:{region}:{account}:cluster/{inputs.get('name', name)}",
            }
        elif typ == "aws:iam/role:Role":
            state |= {"name": inputs.get("name") or f"{name}-{h[:7]}", "arn": f"arn:aws:iam::{account}:role/{name}-{h[:7]}"}
        elif typ == "aws:kms/key:Key":
            rid = f"{h[:8]}-{h[8:12]}-{h[12:16]}-{_hash(name, n=4)}-{_hash(typ, n=12)}"
            state |= {"keyId": rid, "arn": f"arn:aws:kms:{region}:{account}:key/{rid}"}
        elif typ == "aws:ec2/launchTemplate:LaunchTemplate":
            state |= {"latestVersion": 1, "defaultVersion": 1}
        elif typ == "aws:ec2/placementGroup:PlacementGroup":
            state |= {"name": f"{name}-{h[:7]}"}
        elif typ == "aws:fsx/lustreFileSystem:LustreFileSystem":
            state |= {"dnsName": f"{rid}.fsx.{region}.amazonaws.com", "mountName": h[:8]}
        elif typ == "aws:efs/fileSystem:FileSystem":
            state |= {"dnsName": f"{rid}.efs.{region}.amazonaws.com"}
        elif typ == "aws:s3/bucket:Bucket":
            state |= {"arn": f"arn:aws:s3:::{inputs.get('bucket', name)}"}
            rid = inputs.get("bucket", name)
        elif typ == "aws:eks/nodeGroup:NodeGroup":
            # EKS names the node group's Auto Scaling group eks-<node group>-<uuid>
            asg = f"eks-{inputs.get('nodeGroupName', name)}-{h[:8]}-{h[8:12]}-{h[12:16]}"
            state |= {"resources": [{"autoscalingGroups": [{"name": asg}], "remoteAccessSecurityGroupId": ""}]}
        elif typ == "pulumi:pulumi:StackReference":
            state |= {"name": inputs.get("name", name), "outputs": self.stack_outputs, "secretOutputNames": []}
        elif typ == "aws:cloudwatch/logGroup:LogGroup":
            state |= {"arn": f"arn:aws:logs:{region}:{account}:log-group:{inputs.get('name', name)}"}
        return rid, state


class _Monitor(mocks.MockMonitor):
    """Tells the recorder which parent each registration has (the mock API does not pass it)."""

    def __init__(self, recorder: Recorder) -> None:
        super().__init__(recorder)
        self._recorder = recorder

    def RegisterResource(self, request: Any) -> Any:  # noqa: N802 (the engine's RPC name)
        self._recorder._local.parent = request.parent
        self._recorder._local.dependencies = list(request.dependencies)
        self._recorder._local.protect = bool(request.protect)
        self._recorder._local.delete_before_replace = bool(request.deleteBeforeReplace)
        return super().RegisterResource(request)  # type: ignore[no-untyped-call]


class OfflineSecrets:
    """Secret config in a preview: a placeholder, never a real value (and masked in the output)."""

    def secret(self, key: str) -> pulumi.Output[str]:
        return pulumi.Output.secret(OFFLINE_SECRET)


async def _resolve_outputs(exports: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in exports.items():
        resolved = pulumi.Output.from_input(value)
        secret = await resolved.is_secret()
        known = await resolved.is_known()
        out[key] = SECRET if secret else _plain(await resolved.future()) if known else UNKNOWN
    return out


def _order(resources: list[PlannedResource]) -> list[PlannedResource]:
    """Depth-first from the stack root, siblings by (type, name): the same order on every run."""
    by_parent: dict[str | None, list[PlannedResource]] = {}
    for r in resources:
        by_parent.setdefault(r.parent, []).append(r)
    out: list[PlannedResource] = []

    def walk(parent: str | None) -> None:
        for r in sorted(by_parent.get(parent, []), key=lambda r: (not r.component, r.type, r.name)):
            out.append(r)
            if r.component:
                walk(r.name)

    walk(None)
    seen = {id(r) for r in out}
    out.extend(sorted((r for r in resources if id(r) not in seen), key=lambda r: (r.type, r.name)))
    return out


def run_preview(
    rp: ResolvedPlatform,
    program: Callable[[ResolvedPlatform], dict[str, Any]] | None = None,
    stack_outputs: Mapping[str, Any] | None = None,
) -> PreviewResult:
    """Run the program for ``rp`` under the mock engine and return everything it declared.

    ``stack_outputs`` is what a StackReference reads (for a kubernetes-only stack: the cloud layer's
    outputs, e.g. those of a preview of the cloud layer).
    """
    from alicerce.emit.pulumi.program import BUILDERS, build

    # the first site whose target has a cloud identity sets the mock engine's region and account
    identities = (identity(s) for s in rp.sites if (identity := BUILDERS[s.spec.provider].preview_identity) is not None)
    where = next(identities, ("us-east-1", "000000000000"))
    recorder = Recorder(*where, stack_outputs=stack_outputs)
    mocks.set_mocks(recorder, project="alicerce-platform", stack=rp.environment, preview=True, monitor=_Monitor(recorder))
    result: dict[str, Any] = {}

    def body() -> Any:
        exports = program(rp) if program else build(rp, OfflineSecrets())
        task = asyncio.ensure_future(_resolve_outputs(exports))
        task.add_done_callback(lambda t: result.update(t.result()))
        return task

    mocks.test(body)()  # type: ignore[no-untyped-call]
    return PreviewResult(rp.name, rp.environment, _order(recorder.resources), result, recorder.invokes)
