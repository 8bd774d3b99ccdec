"""The AWS components, asserted on what the Pulumi program declares under the mock engine."""

from __future__ import annotations

import importlib
import inspect
import json
import re
import subprocess
from typing import Any

import pytest
import yaml

from alicerce.catalog import load_catalog
from alicerce.catalog.models import Efa, InstanceType
from alicerce.targets.aws.components.cluster import ClusterArgs
from alicerce.targets.aws.components.gpu_node_pool import Interface, efa_interface_layout
from alicerce.targets.aws.components.network import subnet_layout
from alicerce.targets.aws.spec import AwsSite
from tests.pulumi.conftest import covers, reference, resolved

TAG_KEYS = ("alicerce.dev/platform", "alicerce.dev/environment", "alicerce.dev/cost-center")

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # pulumi_aws warns about its own deprecated classes on import


def one(result: Any, name: str) -> dict[str, Any]:
    inputs: dict[str, Any] = result.named(name).inputs
    return inputs


# ---------------------------------------------------------------- node pools and EFA


@covers("aws:ec2/launchTemplate:LaunchTemplate", "aws:eks/nodeGroup:NodeGroup", "aws:ec2/placementGroup:PlacementGroup")
def test_p5_pool_gets_32_efa_interfaces_in_the_recommended_layout_one_zone_and_a_placement_group(p5_on_demand: Any) -> None:
    rp, result = p5_on_demand
    lt = one(result, "aws-pool-train-p5-lt")
    nics = lt["networkInterfaces"]
    # primary: ENA at card 0 device 0; then one EFA-only per card, device 1 on card 0, device 0 elsewhere
    assert (nics[0]["networkCardIndex"], nics[0]["deviceIndex"], nics[0]["interfaceType"]) == (0, 0, "interface")
    efa = [n for n in nics if n["interfaceType"] == "efa-only"]
    assert len(efa) == 32 == rp.pool("train-p5").efa_interfaces
    assert [(n["networkCardIndex"], n["deviceIndex"]) for n in efa] == [(0, 1)] + [(c, 0) for c in range(1, 32)]
    assert "vpcSecurityGroupIds" not in lt  # groups go on each interface when interfaces are explicit
    ng = one(result, "aws-pool-train-p5-ng")
    assert len(ng["subnetIds"]) == 1
    assert "aws-network-private-us-east-1b" in result.named("aws-pool-train-p5-ng").depends_on
    pg = result.named("aws-pool-train-p5-placement")
    assert pg.inputs["strategy"] == "cluster"
    assert lt["placement"]["groupName"].startswith("aws-pool-train-p5-placement")
    assert ng["capacityType"] == "ON_DEMAND" and ng["amiType"] == "AL2023_x86_64_NVIDIA"
    assert ng["scalingConfig"] == {"desiredSize": 0, "maxSize": 16, "minSize": 0}
    assert ng["taints"] == [{"effect": "NO_SCHEDULE", "key": "nvidia.com/gpu", "value": "true"}]
    assert ng["labels"]["alicerce.dev/pool"] == "train-p5"


def test_reserved_capacity_gets_no_placement_group(prod: Any, p5_block: Any) -> None:
    _, reserved = prod
    assert not reserved.of_type("aws:ec2/placementGroup:PlacementGroup")
    lt = one(reserved, "aws-pool-train-p5-lt")
    assert "placement" not in lt
    assert lt["capacityReservationSpecification"]["capacityReservationTarget"]["capacityReservationId"] == "cr-0a1b2c3d4e5f60718"
    assert len([n for n in lt["networkInterfaces"] if n["interfaceType"] == "efa-only"]) == 32
    _, block = p5_block
    assert not block.of_type("aws:ec2/placementGroup:PlacementGroup")
    assert one(block, "aws-pool-train-p5-lt")["instanceMarketOptions"] == {"marketType": "capacity-block"}
    assert one(block, "aws-pool-train-p5-ng")["capacityType"] == "CAPACITY_BLOCK"


def test_efa_layout_skips_ena_only_cards() -> None:
    price: Any = {"usdPerHour": 1, "region": "us-east-1", "asOf": "2026-01-01", "source": {"title": "t", "url": "u"}}
    b300 = InstanceType.model_validate(
        {
            **{"type": "p6-b300.48xlarge", "family": "p6", "gpu": None, "gpus": 8, "vcpus": 192, "memoryGiB": 4096},
            **{"localNvme": None, "networkGbps": 6400, "gpuDirectRdma": True, "price": price, "sources": [{"title": "t", "url": "u"}]},
            "efa": Efa(maxInterfaces=16, networkCards=17, enaOnlyCards=(0,)),
        }
    )
    layout = efa_interface_layout(b300, 16)
    assert layout[0] == Interface(0, 0, "interface")
    assert [(i.card, i.device) for i in layout[1:]] == [(c, 0) for c in range(1, 17)]
    assert all(i.type == "efa-only" for i in layout[1:])


@covers("alicerce:fabric:EfaFabric")
def test_efa_security_group_allows_all_traffic_to_and_from_itself(prod: Any) -> None:
    _, result = prod
    rules = result.children("aws-fabric")
    ingress = [r.inputs for r in rules if r.type == "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"]
    egress = [r.inputs for r in rules if r.type == "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"]
    assert len(ingress) == len(egress) == 1
    for rule in (*ingress, *egress):
        assert rule["ipProtocol"] == "-1"
        assert rule["referencedSecurityGroupId"] == rule["securityGroupId"]
        assert "cidrIpv4" not in rule
    efa_sg = ingress[0]["securityGroupId"]
    nics = one(result, "aws-pool-train-p5-lt")["networkInterfaces"]
    assert all(efa_sg in n["securityGroups"] for n in nics)
    # pools without EFA do not carry the EFA group
    assert efa_sg not in one(result, "aws-pool-system-lt")["vpcSecurityGroupIds"]


@covers("alicerce:gpu_node_pool:GpuNodePool")
def test_every_launch_template_requires_imdsv2_and_encrypts_its_volumes(prod: Any, dev: Any) -> None:
    for _, result in (prod, dev):
        templates = result.of_type("aws:ec2/launchTemplate:LaunchTemplate")
        assert templates
        for lt in templates:
            assert lt.inputs["metadataOptions"]["httpTokens"] == "required", lt.name
            assert lt.inputs["metadataOptions"]["httpPutResponseHopLimit"] == 1
            for bdm in lt.inputs["blockDeviceMappings"]:
                assert bdm["ebs"]["encrypted"] == "true" and bdm["ebs"]["kmsKeyId"].startswith("arn:aws:kms:"), lt.name


def test_instance_store_nvme_becomes_raid0_through_nodeadm(prod: Any) -> None:
    import base64

    _, result = prod
    user_data = base64.b64decode(one(result, "aws-pool-train-p5-lt")["userData"]).decode()
    assert "application/node.eks.aws" in user_data and "kind: NodeConfig" in user_data and "strategy: RAID0" in user_data
    assert "userData" not in one(result, "aws-pool-system-lt")  # m7i has no instance store


def test_pools_spread_over_zones_unless_pinned(prod: Any) -> None:
    _, result = prod
    assert len(one(result, "aws-pool-infer-l40s-ng")["subnetIds"]) == 3
    assert one(result, "aws-pool-data-prep-ng")["capacityType"] == "SPOT"
    assert one(result, "aws-pool-system-ng")["amiType"] == "AL2023_x86_64_STANDARD"
    # time-sliced pool selects its device-plugin config by node label
    assert one(result, "aws-pool-infer-l4-ng")["labels"]["nvidia.com/device-plugin.config"] == "infer-l4"


# ---------------------------------------------------------------- cluster


@covers(
    "aws:eks/cluster:Cluster",
    "alicerce:cluster:EksCluster",
    "aws:cloudwatch/logGroup:LogGroup",
    "aws:iam/role:Role",
    "aws:iam/rolePolicy:RolePolicy",
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment",
)
def test_eks_encrypts_secrets_logs_everything_and_is_private_in_prod(prod: Any) -> None:
    rp, result = prod
    eks = one(result, "aws-cluster-eks")
    assert eks["version"] == rp.versions.kubernetes == "1.35"
    assert eks["encryptionConfig"]["resources"] == ["secrets"]
    assert eks["encryptionConfig"]["provider"]["keyArn"].startswith("arn:aws:kms:")
    assert eks["enabledClusterLogTypes"] == ["api", "audit", "authenticator", "controllerManager", "scheduler"]
    assert eks["vpcConfig"]["endpointPrivateAccess"] is True and eks["vpcConfig"]["endpointPublicAccess"] is False
    assert "publicAccessCidrs" not in eks["vpcConfig"]
    assert eks["accessConfig"]["authenticationMode"] == "API"
    logs = one(result, "aws-cluster-logs")
    assert logs["name"] == "/aws/eks/acme-ml-prod-aws/cluster" and logs["retentionInDays"] == 365
    assert "aws-cluster-logs" in result.named("aws-cluster-eks").depends_on  # ours, before EKS makes one
    kms_policy = one(result, "aws-cluster-role-kms")["policy"]
    assert "kms:Decrypt" in kms_policy
    node_policies = {
        r.inputs["policyArn"].rsplit("/", 1)[-1] for r in result.children("aws-cluster") if r.type.endswith("RolePolicyAttachment")
    }
    assert {"AmazonEKSWorkerNodePolicy", "AmazonEC2ContainerRegistryPullOnly", "AmazonEKSClusterPolicy"} <= node_policies
    # Pod Identity only: no IAM OIDC provider a role could be made to trust (break-it review of issue 10)
    assert not result.of_type("aws:iam/openIdConnectProvider:OpenIdConnectProvider")


@covers("aws:eks/addon:Addon", "alicerce:cluster:EksAddons")
def test_core_addons_are_pinned_and_workload_addons_wait_for_nodes(prod: Any) -> None:
    _, result = prod
    addons = {r.inputs["addonName"]: r for r in result.of_type("aws:eks/addon:Addon")}
    # prod has an EFS tier (home), so the EFS CSI driver joins the pinned add-ons
    assert set(addons) == {
        *("vpc-cni", "kube-proxy", "eks-pod-identity-agent", "coredns", "aws-ebs-csi-driver", "aws-efs-csi-driver"),
        "eks-node-monitoring-agent",  # node auto-repair acts on the faults it reports
    }
    # pinned to the catalog's versions for the cluster's minor; the rest take AWS's default at deploy time
    catalog = load_catalog().versions.eksAddons
    assert {n: addons[n].inputs["addonVersion"] for n in catalog} == {n: pins.versions["1.35"] for n, pins in catalog.items()}
    assert result.unpinned_addons() == ["aws-ebs-csi-driver", "aws-efs-csi-driver", "eks-node-monitoring-agent", "eks-pod-identity-agent"]
    assert "aws-pool-system-ng" in addons["coredns"].depends_on
    assert addons["aws-ebs-csi-driver"].inputs["podIdentityAssociations"][0]["serviceAccount"] == "ebs-csi-controller-sa"
    assert addons["aws-efs-csi-driver"].inputs["podIdentityAssociations"][0]["serviceAccount"] == "efs-csi-controller-sa"


def test_spec_pins_override_the_catalog_and_fill_its_gaps(tmp_path: Any) -> None:
    data = reference()
    pins = {"coredns": "v1.14.2-eksbuild.4", "aws-ebs-csi-driver": "v1.66.0-eksbuild.1"}
    data["versions"] = {**data.get("versions", {}), "eksAddons": pins}
    rp = resolved(data, "prod", tmp_path)
    assert rp.eks_addons["coredns"] == "v1.14.2-eksbuild.4"
    assert rp.eks_addons["aws-ebs-csi-driver"] == "v1.66.0-eksbuild.1"
    assert rp.eks_addons["kube-proxy"] == load_catalog().versions.eksAddons["kube-proxy"].versions[rp.versions.kubernetes]
    site = next(s.spec for s in rp.sites if isinstance(s.spec, AwsSite))
    args = ClusterArgs.from_resolved(rp, site, vpc_id="vpc-1", subnet_ids=["subnet-1"], kms_key_arn=None)
    assert args.addon_versions == rp.eks_addons


@covers(
    "aws:eks/accessEntry:AccessEntry",
    "aws:eks/accessPolicyAssociation:AccessPolicyAssociation",
    "aws:eks/identityProviderConfig:IdentityProviderConfig",
)
def test_access_entries_and_team_identity_provider(dev: Any) -> None:
    _, result = dev
    entry = one(result, "aws-cluster-admin-0")
    assert entry["principalArn"] == "arn:aws:iam::111111111111:role/platform-admins"
    assoc = result.of_type("aws:eks/accessPolicyAssociation:AccessPolicyAssociation")[0].inputs
    assert assoc["policyArn"].endswith("AmazonEKSClusterAdminPolicy") and assoc["accessScope"] == {"type": "cluster"}
    idp = one(result, "aws-cluster-idp")["oidc"]
    assert idp["groupsPrefix"] == "oidc:" and idp["groupsClaim"] == "groups"  # teams' groups are written oidc:<group>


# ---------------------------------------------------------------- network


@covers(
    "alicerce:network:Network",
    "aws:ec2/vpc:Vpc",
    "aws:ec2/subnet:Subnet",
    "aws:ec2/internetGateway:InternetGateway",
    "aws:ec2/natGateway:NatGateway",
    "aws:ec2/eip:Eip",
    "aws:ec2/routeTable:RouteTable",
    "aws:ec2/routeTableAssociation:RouteTableAssociation",
    "aws:ec2/vpcEndpoint:VpcEndpoint",
    "aws:ec2/flowLog:FlowLog",
    "aws:ec2/securityGroup:SecurityGroup",
)
def test_network_has_subnets_per_zone_nat_per_zone_in_prod_endpoints_and_flow_logs(prod: Any, dev: Any) -> None:
    rp, result = prod
    zones = rp.site("aws").spec.zones  # type: ignore[union-attr]
    subnets = result.of_type("aws:ec2/subnet:Subnet")
    assert sorted(s.inputs["availabilityZone"] for s in subnets) == sorted(zones * 2)
    assert len(result.of_type("aws:ec2/natGateway:NatGateway")) == 3 == len(result.of_type("aws:ec2/eip:Eip"))
    assert len(dev[1].of_type("aws:ec2/natGateway:NatGateway")) == 1  # development: one NAT
    services = sorted(e.inputs["serviceName"].split("us-east-1.")[1] for e in result.of_type("aws:ec2/vpcEndpoint:VpcEndpoint"))
    expected = "autoscaling ec2 ec2messages ecr.api ecr.dkr eks eks-auth elasticloadbalancing logs s3 ssm ssmmessages sts"
    assert services == expected.split()
    s3 = next(e.inputs for e in result.of_type("aws:ec2/vpcEndpoint:VpcEndpoint") if e.inputs["serviceName"].endswith(".s3"))
    assert s3["vpcEndpointType"] == "Gateway" and len(s3["routeTableIds"]) == 3
    flow = result.of_type("aws:ec2/flowLog:FlowLog")[0].inputs
    assert flow["trafficType"] == "ALL" and flow["vpcId"].startswith("vpc-") and flow["logDestinationType"] == "cloud-watch-logs"
    assert one(result, "aws-network-vpc")["cidrBlock"] == "10.20.0.0/16"


def test_subnet_plan_leaves_room_and_never_overlaps() -> None:
    import ipaddress

    plans = subnet_layout("10.20.0.0/16", ("a", "b", "c"))
    nets = [ipaddress.ip_network(n) for p in plans for n in (p.private, p.public)]
    assert [p.private for p in plans] == ["10.20.0.0/18", "10.20.64.0/18", "10.20.128.0/18"]
    assert all(not a.overlaps(b) for i, a in enumerate(nets) for b in nets[i + 1 :])


# ---------------------------------------------------------------- storage


@covers(
    "alicerce:storage:Storage",
    "aws:fsx/lustreFileSystem:LustreFileSystem",
    "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation",
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
    "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule",
)
def test_fsx_follows_the_resolved_plan_and_lustre_ports_are_open_to_nodes_only(prod: Any) -> None:
    rp, result = prod
    for tier in ("datasets", "checkpoints"):
        plan = next(t.fsx for t in rp.storage if t.name == tier)
        assert plan is not None
        fs = one(result, f"aws-storage-{tier}")
        assert fs["deploymentType"] == plan.deployment_type == "PERSISTENT_2"
        assert fs["storageCapacity"] == plan.capacity_gib
        assert fs["perUnitStorageThroughput"] == plan.per_unit_throughput
        assert (
            fs["storageCapacity"] / 1024 * fs["perUnitStorageThroughput"]
            >= next(t.spec.throughput for t in rp.storage if t.name == tier) / 1e6
        )  # type: ignore[operator]
        assert fs["kmsKeyId"].startswith("arn:aws:kms:")
        assert "aws-network-private-us-east-1a" in result.named(f"aws-storage-{tier}").depends_on  # the EFA pool's zone
    assert (one(result, "aws-storage-datasets")["storageCapacity"], one(result, "aws-storage-datasets")["perUnitStorageThroughput"]) == (
        50400,
        250,
    )
    dra = one(result, "aws-storage-datasets-dra")
    assert dra["dataRepositoryPath"] == "s3://acme-ml-prod-data-lake-222222222222"
    assert dra["s3"]["autoImportPolicy"]["events"] == ["NEW", "CHANGED", "DELETED"]
    # a file deleted on the file system is never deleted from the data lake (FSx API reference, AutoExportPolicy)
    assert dra["s3"]["autoExportPolicy"]["events"] == ["NEW", "CHANGED"]
    node_sg = one(result, "aws-cluster-nodes-self")["securityGroupId"]
    rules = [
        r.inputs
        for r in result.children("aws-storage")
        if r.type.endswith("SecurityGroupIngressRule") and "lustre" in r.name and r.inputs["securityGroupId"] != node_sg
    ]
    assert sorted({(r["fromPort"], r["toPort"]) for r in rules}) == [(988, 988), (1018, 1023)]
    for r in rules:
        assert r["ipProtocol"] == "tcp" and "cidrIpv4" not in r
        assert r["referencedSecurityGroupId"] in (node_sg, r["securityGroupId"])


def test_nodes_take_the_lustre_servers_connections(prod: Any) -> None:
    """FSx for Lustre user guide, "File system access control with Amazon VPC": the clients' security group allows
    988 and 1018-1023 from the file system's group (the servers connect back to the clients)."""
    _, result = prod
    node_sg = one(result, "aws-cluster-nodes-self")["securityGroupId"]
    lustre_sg = next(r.inputs["securityGroupId"] for r in result.children("aws-storage") if r.name.endswith("lustre-988-988-nodes"))
    to_nodes = [
        r.inputs
        for r in result.children("aws-storage")
        if r.type.endswith("SecurityGroupIngressRule") and r.inputs["securityGroupId"] == node_sg
    ]
    assert sorted((r["fromPort"], r["toPort"]) for r in to_nodes if r["referencedSecurityGroupId"] == lustre_sg) == [
        (988, 988),
        (1018, 1023),
    ]


def test_file_systems_are_created_after_the_rules_that_let_lustre_and_nfs_in(prod: Any) -> None:
    """FSx fails to create a file system whose security groups "do not permit Lustre LNET network traffic on port
    988" (FSx for Lustre user guide, "Creating an FSx for Lustre file system fails"): the rules are separate
    resources, so the file system (and each EFS mount target) must wait for them."""
    _, result = prod
    rules = {
        kind: sorted(r.name for r in result.children("aws-storage") if r.type.startswith("aws:vpc/securityGroup") and f"-{kind}-" in r.name)
        for kind in ("lustre", "efs")
    }
    assert any("988-988" in n for n in rules["lustre"]) and any("1018-1023" in n for n in rules["lustre"])
    for tier in ("datasets", "checkpoints"):
        missing = set(rules["lustre"]) - set(result.named(f"aws-storage-{tier}").depends_on)
        assert not missing, (tier, missing)
    for target in result.of_type("aws:efs/mountTarget:MountTarget"):
        assert set(rules["efs"]) <= set(target.depends_on), target.name


@covers(
    "aws:s3/bucket:Bucket",
    "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock",
    "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration",
    "aws:s3/bucketVersioning:BucketVersioning",
    "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration",
    "aws:s3/bucketOwnershipControls:BucketOwnershipControls",
    "aws:s3/bucketPolicy:BucketPolicy",
)
def test_buckets_block_public_access_encrypt_with_kms_version_and_expire(prod: Any) -> None:
    _, result = prod
    # the tiers' buckets (the access-log bucket is SSE-S3: test_every_created_bucket_logs_its_requests_to_the_access_log_bucket)
    # (and the audit trail's: tests/pulumi/test_audit.py)
    buckets = [b for b in result.of_type("aws:s3/bucket:Bucket") if b.name not in ("aws-storage-access-logs", "aws-audit-bucket")]
    assert {b.inputs["bucket"] for b in buckets} == {"acme-ml-prod-data-lake-222222222222", "acme-ml-prod-model-registry-222222222222"}
    for b in buckets:
        pab = next(r.inputs for r in result.of_type("aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock") if r.name == b.name)
        assert all(pab[k] is True for k in ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets"))
        sse = next(
            r.inputs
            for r in result.of_type("aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration")
            if r.name == b.name
        )
        assert sse["rules"][0]["applyServerSideEncryptionByDefault"]["sseAlgorithm"] == "aws:kms"
        ver = next(r.inputs for r in result.of_type("aws:s3/bucketVersioning:BucketVersioning") if r.name == b.name)
        assert ver["versioningConfiguration"]["status"] == "Enabled"
        own = next(r.inputs for r in result.of_type("aws:s3/bucketOwnershipControls:BucketOwnershipControls") if r.name == b.name)
        assert own["rule"]["objectOwnership"] == "BucketOwnerEnforced"
        policy = next(r.inputs for r in result.of_type("aws:s3/bucketPolicy:BucketPolicy") if r.name == b.name)
        assert "aws:SecureTransport" in policy["policy"]
    lifecycle = next(
        r.inputs
        for r in result.of_type("aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration")
        if r.name == "aws-storage-data-lake"
    )
    retention = next(r for r in lifecycle["rules"] if r["id"] == "retention")
    assert retention["expiration"]["days"] == 730  # data-lake retention: 730d


@covers("aws:efs/fileSystem:FileSystem", "aws:efs/mountTarget:MountTarget", "aws:efs/backupPolicy:BackupPolicy")
def test_efs_is_encrypted_backed_up_with_a_mount_target_per_zone(prod: Any) -> None:
    _, result = prod
    fs = one(result, "aws-storage-home")
    assert fs["encrypted"] is True and fs["kmsKeyId"].startswith("arn:aws:kms:")
    # daily backups by AWS Backup (EFS API reference, BackupPolicy: ENABLED)
    (backup,) = result.of_type("aws:efs/backupPolicy:BackupPolicy")
    assert backup.inputs["backupPolicy"] == {"status": "ENABLED"} and backup.inputs["fileSystemId"].startswith("fs-")
    targets = list(result.of_type("aws:efs/mountTarget:MountTarget"))
    assert len(targets) == 3
    nfs = [r.inputs for r in result.children("aws-storage") if r.type.endswith("IngressRule") and "efs" in r.name]
    assert [(r["fromPort"], r["toPort"]) for r in nfs] == [(2049, 2049)]


@covers("alicerce:kms:PlatformKey", "aws:kms/key:Key", "aws:kms/alias:Alias", "pulumi:providers:aws")
def test_platform_key_rotates_and_provider_is_pinned_to_the_account(prod: Any) -> None:
    _, result = prod
    assert one(result, "aws-kms-key")["enableKeyRotation"] is True
    assert one(result, "aws-kms-alias")["name"] == "alias/acme-ml-prod-aws"
    provider = one(result, "aws")
    assert provider["region"] == "us-east-1" and "222222222222" in provider["allowedAccountIds"]


# ---------------------------------------------------------------- every resource


def _strings(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    if isinstance(value, str) and value.startswith("{"):  # a policy document
        try:
            return _strings(json.loads(value))
        except ValueError:
            return [value]
    return [value] if isinstance(value, str) else []


def test_a_key_given_by_its_alias_reaches_every_aws_consumer_as_its_key_arn() -> None:
    """security.encryption.kmsKey may name an alias; IAM policies, EKS secrets encryption, log groups, volumes and
    file systems get the key ARN it stands for (KMS DescribeKey resolves any form of a key's name), never the alias:
    an alias ARN in a policy's Resource matches no key (KMS developer guide, "Using aliases in IAM policies")."""
    from tests.pulumi.conftest import _preview

    _, result = _preview("key-alias", "prod")
    assert not result.of_type("aws:kms/key:Key")
    references = [
        (r.name, s)
        for r in result.resources
        if r.type.startswith("aws:")
        for s in _strings(r.inputs)
        if ":kms:" in s or s.startswith("alias/")
    ]
    kinds = {name.split("-")[1] for name, _ in references}
    assert {"cluster", "storage", "identity", "pool", "network"} <= kinds, kinds
    for name, arn in references:
        assert re.fullmatch(r"arn:aws:kms:us-east-1:222222222222:key/[0-9a-f-]+", arn), (name, arn)


def _taggable(token: str) -> bool:
    if not token.startswith("aws:"):
        return False
    module, _rest = token.split(":")[1].split("/")
    cls = getattr(importlib.import_module(f"pulumi_aws.{module}"), token.rsplit(":", 1)[-1])
    return "tags" in inspect.signature(cls._internal_init).parameters


def test_every_taggable_resource_carries_platform_environment_and_cost_center(prod: Any, dev: Any) -> None:
    for rp, result in (prod, dev):
        checked = 0
        for r in result.resources:
            if _taggable(r.type):
                checked += 1
                tags = r.inputs.get("tags", {})
                for key in TAG_KEYS:
                    assert tags.get(key) == rp.tags[key], f"{r.type} {r.name} lacks {key}"
        assert checked > 40


@pytest.mark.parametrize("token", ["aws:ec2/vpc:Vpc", "aws:s3/bucketPolicy:BucketPolicy"])
def test_taggable_detection(token: str) -> None:
    assert _taggable(token) is (token == "aws:ec2/vpc:Vpc")


# ---------------------------------------------------------------- issue 10: what the first `pulumi up` and the platform need


def _policy(result: Any, name: str, field: str = "policy") -> dict[str, Any]:
    import json

    found = next(r for r in result.resources if r.name == name and field in r.inputs)
    loaded: dict[str, Any] = json.loads(found.inputs[field])
    return loaded


def test_platform_key_policy_lets_logs_autoscaling_and_fsx_use_the_key(prod: Any) -> None:
    """Issue 10 items 1, 2, 7: without these statements the log group, every node launch and FSx's S3 link fail."""
    _, result = prod
    statements = {s["Sid"]: s for s in _policy(result, "aws-kms-key")["Statement"]}
    assert statements["AccountRoot"]["Principal"] == {"AWS": "arn:aws:iam::222222222222:root"}
    logs = statements["CloudWatchLogs"]
    assert logs["Principal"] == {"Service": "logs.us-east-1.amazonaws.com"}
    arns = logs["Condition"]["ArnLike"]["kms:EncryptionContext:aws:logs:arn"]
    assert f"arn:aws:logs:us-east-1:222222222222:log-group:{one(result, 'aws-cluster-logs')['name']}" in arns
    assert f"arn:aws:logs:us-east-1:222222222222:log-group:{one(result, 'aws-network-flow-logs')['name']}" in arns
    slr = "arn:aws:iam::222222222222:role/aws-service-role/autoscaling.amazonaws.com/AWSServiceRoleForAutoScaling"
    grants = statements["AutoScalingVolumeGrants"]
    assert grants["Action"] == "kms:CreateGrant" and grants["Condition"]["Bool"] == {"kms:GrantIsForAWSResource": "true"}
    volumes = statements["AutoScalingVolumes"]["Condition"]["ArnEquals"]["aws:PrincipalArn"]
    assert grants["Condition"]["ArnEquals"]["aws:PrincipalArn"] == slr == volumes
    assert grants["Principal"] == {"AWS": "*"}  # a service-linked role that may not exist yet is never a Principal
    fsx = statements["FsxS3Access"]["Condition"]
    assert fsx["StringEquals"]["kms:ViaService"] == "s3.us-east-1.amazonaws.com"
    assert "arn:aws:s3:::acme-ml-prod-data-lake-222222222222" in fsx["StringLike"]["kms:EncryptionContext:aws:s3:arn"]


@covers("aws:autoscaling/tag:Tag")
def test_asg_tags_let_cluster_autoscaler_scale_gpu_and_efa_pools_from_zero(prod: Any) -> None:
    """Issue 10 item 5: node-group tags do not reach the Auto Scaling group; these tags do."""
    _, result = prod
    tags = {r.inputs["tag"]["key"]: r.inputs for r in result.children("aws-pool-train-p5") if r.type == "aws:autoscaling/tag:Tag"}
    prefix = "k8s.io/cluster-autoscaler/node-template"
    assert tags[f"{prefix}/resources/nvidia.com/gpu"]["tag"]["value"] == "8"
    assert tags[f"{prefix}/resources/vpc.amazonaws.com/efa"]["tag"]["value"] == "32"
    assert tags[f"{prefix}/taint/nvidia.com/gpu"]["tag"]["value"] == "true:NoSchedule"
    assert tags[f"{prefix}/label/alicerce.dev/pool"]["tag"]["value"] == "train-p5"
    assert tags[f"{prefix}/label/k8s.amazonaws.com/accelerator"]["tag"]["value"] == "H100-SXM5-80GB"
    assert all(t["tag"]["propagateAtLaunch"] is False and t["autoscalingGroupName"].startswith("eks-") for t in tags.values())
    l4 = {r.inputs["tag"]["key"]: r.inputs["tag"]["value"] for r in result.children("aws-pool-infer-l4") if r.type.endswith("tag:Tag")}
    assert l4[f"{prefix}/resources/nvidia.com/gpu"] == "4"  # time-sliced: 1 GPU x 4 replicas, what the device plugin offers


def test_every_pool_tells_cluster_autoscaler_its_ephemeral_storage(prod: Any) -> None:
    """cluster-autoscaler's node template for a group at zero has the ephemeral storage its resources/ephemeral-storage
    tag says (cloudprovider/aws/aws_manager.go extractAllocatableResourcesFromAsg), else a pod requesting some never
    scales the pool up: the instance-store RAID0 array where there is one (p5: 8 x 3840 GB), else the root volume."""
    rp, result = prod
    key = "k8s.io/cluster-autoscaler/node-template/resources/ephemeral-storage"
    for pool in rp.pools:
        if pool.site.name != "aws":
            continue
        tags = {
            r.inputs["tag"]["key"]: r.inputs["tag"]["value"] for r in result.children(f"aws-pool-{pool.name}") if r.type.endswith("tag:Tag")
        }
        nvme = pool.instance.localNvme  # type: ignore[union-attr]
        lt = next(r.inputs for r in result.children(f"aws-pool-{pool.name}") if r.type.endswith("launchTemplate:LaunchTemplate"))
        root = lt["blockDeviceMappings"][0]["ebs"]["volumeSize"]
        assert tags[key] == (f"{nvme.count * nvme.sizeGB}G" if nvme else f"{root}Gi"), pool.name
    p5 = {r.inputs["tag"]["key"]: r.inputs["tag"]["value"] for r in result.children("aws-pool-train-p5") if r.type.endswith("tag:Tag")}
    assert p5[key] == "30720G"


@covers("aws:eks/podIdentityAssociation:PodIdentityAssociation", "alicerce:identity:WorkloadIdentity")
def test_workload_identity_roles_are_bound_to_exactly_their_service_accounts(prod: Any) -> None:
    """Issue 10 gaps: per-team roles reading what the spec grants; autoscaler and LB controller roles."""
    _, result = prod
    found = result.of_type("aws:eks/podIdentityAssociation:PodIdentityAssociation")
    assoc = {(r.inputs["namespace"], r.inputs["serviceAccount"]) for r in found}
    assert ("kube-system", "cluster-autoscaler") in assoc and ("kube-system", "aws-load-balancer-controller") in assoc
    assert {("research", "team-research"), ("serving", "team-serving"), ("serving-canary", "team-serving")} <= assoc
    trust = _policy(result, "aws-identity-team-serving", "assumeRolePolicy")["Statement"][0]
    assert trust["Condition"]["StringEquals"]["aws:RequestTag/kubernetes-namespace"] == ["serving", "serving-canary"]
    cluster = "arn:aws:eks:us-east-1:222222222222:cluster/acme-ml-prod-aws"
    assert trust["Condition"]["StringEquals"]["aws:RequestTag/eks-cluster-arn"] == cluster
    research = _policy(result, "aws-identity-team-research")["Statement"]
    writes = [s for s in research if s["Sid"].startswith("Write")]
    assert writes == [
        {
            "Sid": writes[0]["Sid"],
            "Effect": "Allow",
            "Action": ["s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"],
            "Resource": ["arn:aws:s3:::acme-ml-prod-model-registry-222222222222/research/*"],
        }
    ]


def test_kubernetes_layer_in_the_same_stack_waits_for_admin_access(dev: Any) -> None:
    """With no creator bootstrap, the Kubernetes layer authenticates through the admin access entry: it must exist first."""
    _, result = dev
    for chart in result.of_type("kubernetes:helm.sh/v4:Chart"):
        assert "aws-cluster-admin-0" in chart.depends_on or not chart.name.startswith("aws-"), chart.name


def test_the_kubernetes_layer_runner_may_reach_every_api_server_of_its_stack(prod: Any, dev: Any) -> None:
    """The runner security group of the Kubernetes layer (attached to the runner inside the VPC) allows egress to
    each cluster the stack applies objects to: EKS on 443, dc1 on its controlPlaneEndpoint's port (6443); the
    provider removes a new group's allow-all egress, so nothing else gets out."""
    for (rp, result), expected in ((prod, {443, 6443}), (dev, {443})):
        clients = result.named("aws-cluster-api-clients")
        assert clients.type == "aws:ec2/securityGroup:SecurityGroup"
        egress = [
            r.inputs
            for r in result.of_type("aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule")
            if r.name.startswith("aws-cluster-api-clients")
        ]
        tcp = {r["fromPort"] for r in egress if r["ipProtocol"] == "tcp"}
        assert tcp == expected, (rp.environment, tcp)
    endpoint = next(s.spec.control_plane_endpoint for s in prod[0].sites if s.name == "dc1")
    assert endpoint.endswith(":6443")


def test_nodes_reach_session_manager_and_nothing_more_of_systems_manager(prod: Any) -> None:
    """The node role carries the Session Manager actions of AWS's AWSCloud9SSMInstanceProfile policy, not
    AmazonSSMManagedInstanceCore (which also reads every SSM parameter and runs Systems Manager documents)."""
    _, result = prod
    attached = [r.inputs["policyArn"] for r in result.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")]
    assert not [a for a in attached if "SSM" in a]
    inline = json.loads(one(result, "aws-cluster-node-session-manager")["policy"])
    (statement,) = inline["Statement"]
    assert sorted(statement["Action"]) == [
        "ssm:UpdateInstanceInformation",
        "ssmmessages:CreateControlChannel",
        "ssmmessages:CreateDataChannel",
        "ssmmessages:OpenControlChannel",
        "ssmmessages:OpenDataChannel",
    ]


def test_data_sources_are_read_through_the_sites_provider(prod: Any) -> None:
    """An add-on's default version (and any other lookup) is read in the site's region and account, through its
    provider pinned to allowedAccountIds, not the stack's default provider."""
    _, result = prod
    assert result.invokes
    for token, provider in result.invokes:
        assert "$pulumi:providers:aws::aws::" in provider, (token, provider)  # the provider named after the site


def test_only_this_accounts_flow_logs_may_assume_the_flow_logs_role(prod: Any) -> None:
    """VPC user guide, "IAM role for publishing flow logs to CloudWatch Logs": aws:SourceAccount and aws:SourceArn
    against the confused deputy problem."""
    _, result = prod
    role = next(r for r in result.of_type("aws:iam/role:Role") if r.name == "aws-network-flow-logs")
    (statement,) = json.loads(role.inputs["assumeRolePolicy"])["Statement"]
    assert statement["Principal"] == {"Service": "vpc-flow-logs.amazonaws.com"}
    assert statement["Condition"] == {
        "StringEquals": {"aws:SourceAccount": "222222222222"},
        "ArnLike": {"aws:SourceArn": "arn:aws:ec2:us-east-1:222222222222:vpc-flow-log/*"},
    }


def test_workload_addons_wait_for_the_pools_that_can_run_them_not_for_gpu_pools(prod: Any) -> None:
    """CoreDNS and the CSI controllers tolerate no GPU taint: they wait for the untainted pools with nodes from the
    start (system), not for the p5 pool on a capacity reservation whose node group may take long or fail."""
    _, result = prod
    pools = {d.split("-")[2] for d in result.named("aws-addons").depends_on if d.startswith("aws-pool-")}  # a pool's resources
    assert pools == {"system"}, pools


# ---------------------------------------------------------------- what EKS, EC2 and EFS refuse (issue 21)


def test_platform_labels_reach_node_groups_only_where_eks_takes_them(eks_refusals: Any) -> None:
    """EKS API reference, CreateNodegroup labels: key and value 1-63 characters (UpdateLabelsPayload). The platform's
    labels stay AWS tags on every resource, but a long key or an empty value would fail every node group."""
    _, result = eks_refusals
    long_key = "showback.finance.acme.example/chargeback-owning-department-of-record"
    for ng in result.of_type("aws:eks/nodeGroup:NodeGroup"):
        labels = ng.inputs["labels"]
        assert labels["business-unit"] == "ai-research" and labels["alicerce.dev/cost-center"] == "CC-4410"
        assert long_key not in labels and "ticket" not in labels
        assert all(1 <= len(k) <= 63 and 1 <= len(v) <= 63 for k, v in labels.items()), ng.name
        assert ng.inputs["tags"][long_key] == "ai"  # still a tag


def test_efs_in_provisioned_mode_provisions_the_tiers_throughput(eks_refusals: Any, prod: Any) -> None:
    """EFS API reference, CreateFileSystem: ProvisionedThroughputInMibps is required with ThroughputMode provisioned."""
    _, result = eks_refusals
    (fs,) = result.of_type("aws:efs/fileSystem:FileSystem")
    assert fs.inputs["throughputMode"] == "provisioned"
    assert fs.inputs["provisionedThroughputInMibps"] == 287  # 300 MB/s = 286.1 MiB/s, rounded up
    (elastic,) = prod[1].of_type("aws:efs/fileSystem:FileSystem")
    assert "provisionedThroughputInMibps" not in elastic.inputs


def test_efa_nodes_run_containers_with_an_unlimited_memlock_limit(prod: Any) -> None:
    """nodeadm (amazon-eks-ami v20260724, nodeadm/internal/containerd/base-runtime-spec.json) sets only RLIMIT_NOFILE;
    EFA pins memory under RLIMIT_MEMLOCK, so EFA pools merge a base runtime spec with both (the list is replaced whole)."""
    import base64

    _, result = prod
    for lt in result.of_type("aws:ec2/launchTemplate:LaunchTemplate"):
        efa = any(n["interfaceType"] == "efa-only" for n in lt.inputs.get("networkInterfaces", []))
        text = base64.b64decode(lt.inputs["userData"]).decode() if "userData" in lt.inputs else ""
        if not efa:
            assert "RLIMIT_MEMLOCK" not in text, lt.name
            continue
        document = yaml.safe_load(text.split("Content-Type: application/node.eks.aws")[1].split("--//--")[0])
        rlimits = {r["type"]: r for r in document["spec"]["containerd"]["baseRuntimeSpec"]["process"]["rlimits"]}
        assert rlimits["RLIMIT_MEMLOCK"]["soft"] == rlimits["RLIMIT_MEMLOCK"]["hard"] == 2**63
        assert float(2**63) == 2**63  # survives nodeadm's float64 round trip exactly
        assert rlimits["RLIMIT_NOFILE"] == {"type": "RLIMIT_NOFILE", "soft": 65536, "hard": 1048576}


def test_efa_nodes_install_the_efa_counters_writer_and_other_nodes_do_not(prod: Any) -> None:
    """Issue 24 item 1 on AWS: the node exporter sees no EFA traffic, so EFA pools' user data carries a shell part that
    cloud-init runs, installing the counters writer (its one copy in the package) and the timer that runs it."""
    import base64
    import email

    from alicerce.emit.storage_counters import TEXTFILE_DIRECTORY
    from alicerce.targets.aws.components.gpu_node_pool import EFA_STATS_PATH, efa_stats_code

    _, result = prod
    seen = {"efa": 0, "other": 0}
    for lt in result.of_type("aws:ec2/launchTemplate:LaunchTemplate"):
        efa = any(n["interfaceType"] == "efa-only" for n in lt.inputs.get("networkInterfaces", []))
        raw = base64.b64decode(lt.inputs["userData"]) if "userData" in lt.inputs else b""
        assert len(raw) < 16 * 1024, lt.name  # EC2's limit on user data before base64
        parts = {p.get_content_type(): p.get_payload() for p in email.message_from_bytes(raw).walk()} if raw else {}
        seen["efa" if efa else "other"] += 1
        if not efa:
            assert "text/x-shellscript" not in parts and "alicerce_efa" not in raw.decode(), lt.name
            continue
        assert "application/node.eks.aws" in parts, lt.name  # nodeadm's part is still there beside it
        shell = parts["text/x-shellscript"]
        assert shell.startswith("#!/bin/bash\nset -euo pipefail\n")
        assert efa_stats_code().rstrip() in shell  # byte for byte, inside a quoted heredoc that expands nothing
        assert '"""' not in shell and "# HELP" in shell  # its code only: no docstring rolls a node (obsreview20 F2)
        assert f"cat > {EFA_STATS_PATH} <<'" in shell
        assert f"ExecStart=/usr/bin/python3 {EFA_STATS_PATH} --output {TEXTFILE_DIRECTORY}" in shell
        assert "OnUnitActiveSec=15s" in shell and "systemctl enable --now alicerce-efa-stats.timer" in shell
        syntax = subprocess.run(["bash", "-n"], input=shell, capture_output=True, text=True, check=False)
        assert syntax.returncode == 0, syntax.stderr
    assert seen["efa"] and seen["other"]


# ---------------------------------------------------------------- data protection (issue 21)

STATEFUL = (
    "aws:fsx/lustreFileSystem:LustreFileSystem",
    "aws:efs/fileSystem:FileSystem",
    "aws:s3/bucket:Bucket",
    "aws:kms/key:Key",
    "aws:eks/cluster:Cluster",
)


def test_every_stateful_resource_is_protected_and_the_cluster_has_deletion_protection(prod: Any, dev: Any) -> None:
    """The audit trail's log group among them (review obsreview27 N4). Pulumi's protect option refuses any delete or
    replace of the resource; EKS refuses DeleteCluster while
    deletionProtection is on (EKS API reference, CreateCluster deletionProtection)."""
    for _, result in (prod, dev):
        stateful = [r for r in result.resources if r.type in STATEFUL]
        assert {r.type for r in stateful} == set(STATEFUL)
        # the control plane's log group holds the API server's audit trail (EKS names it /aws/eks/<cluster>/cluster)
        audit = [r for r in result.of_type("aws:cloudwatch/logGroup:LogGroup") if r.inputs["name"].startswith("/aws/eks/")]
        assert len(audit) == 1
        assert [r.name for r in [*stateful, *audit] if not r.protect] == []
        assert not [r.name for r in result.resources if r.protect and r.type not in STATEFUL and r not in audit]
        (eks,) = result.of_type("aws:eks/cluster:Cluster")
        assert eks.inputs["deletionProtection"] is True


def test_a_node_group_is_deleted_before_its_replacement_is_created(prod: Any, dev: Any) -> None:
    """Review obsreview29 N-3: a managed node group keeps a fixed name (resolve.node_group_name), and EKS refuses a second
    group of one name ("ResourceInUseException: NodeGroup already exists", pulumi/pulumi-eks#294, terraform-aws-eks#1415).
    Pulumi's default replacement creates the new group first, so an instance type, capacity type or zone change failed
    the next `pulumi up` half-way; the engine must delete the old group first (and `alicerce diff` says so)."""
    for _, result in (prod, dev):
        groups = result.of_type("aws:eks/nodeGroup:NodeGroup")
        assert groups and all(g.inputs["nodeGroupName"] for g in groups)
        assert [g.name for g in groups if not g.delete_before_replace] == []
        assert not [r.name for r in result.resources if r.delete_before_replace and r not in groups]


def test_fsx_takes_a_final_backup_where_it_keeps_backups(prod: Any) -> None:
    """FSx API, DeleteFileSystemLustreConfiguration: SkipFinalBackup (the provider's default is true); automatic
    backups go with the file system, a final backup stays. Backups exist only for persistent file systems not linked
    to S3 (FSx for Lustre user guide, "Working with backups")."""
    _, result = prod
    file_systems = {r.name: r.inputs for r in result.of_type("aws:fsx/lustreFileSystem:LustreFileSystem")}
    checkpoints, datasets = file_systems["aws-storage-checkpoints"], file_systems["aws-storage-datasets"]
    assert checkpoints["skipFinalBackup"] is False
    assert checkpoints["finalBackupTags"]["alicerce.dev/storage-tier"] == "checkpoints"
    assert checkpoints["automaticBackupRetentionDays"] == 30 and checkpoints["copyTagsToBackups"] is True
    assert "skipFinalBackup" not in datasets  # linked to the data lake: FSx backs it up not at all


@covers("aws:ec2/defaultSecurityGroup:DefaultSecurityGroup")
def test_the_vpc_default_security_group_allows_nothing(prod: Any) -> None:
    """VPC user guide, "Default security groups for your VPCs": managing it with no rules removes the default
    allow-all egress and self ingress (CIS AWS Foundations 5.4)."""
    _, result = prod
    (default,) = result.of_type("aws:ec2/defaultSecurityGroup:DefaultSecurityGroup")
    assert default.inputs["vpcId"].startswith("vpc-")
    assert not default.inputs.get("ingress") and not default.inputs.get("egress")


@covers("aws:ec2/route:Route", "aws:ec2/routeTable:RouteTable")
def test_routes_are_resources_of_their_own_so_hand_added_routes_survive(prod: Any) -> None:
    """terraform-provider-aws aws_route_table: with inline routes the table owns every route and removes others
    (a peering, a VPN route added by hand) at the next update; standalone routes leave them alone."""
    _, result = prod
    tables = result.of_type("aws:ec2/routeTable:RouteTable")
    assert len(tables) == 4 and all("routes" not in t.inputs for t in tables)  # public + one private per zone
    routes = result.of_type("aws:ec2/route:Route")
    assert len(routes) == len(tables) and all(r.inputs["destinationCidrBlock"] == "0.0.0.0/0" for r in routes)
    assert sum("gatewayId" in r.inputs for r in routes) == 1 and sum("natGatewayId" in r.inputs for r in routes) == 3


@covers("aws:efs/fileSystemPolicy:FileSystemPolicy", "aws:efs/accessPoint:AccessPoint")
def test_efs_requires_tls_and_mount_targets_and_each_team_acts_as_its_own_posix_user(prod: Any) -> None:
    """EFS user guide, "Using IAM to control file system data access" (aws:SecureTransport,
    elasticfilesystem:AccessedViaMountTarget) and "Enforcing a user identity using an access point" (PosixUser)."""
    from alicerce.targets.aws.components.storage import team_posix_ids

    _, result = prod
    (policy,) = result.of_type("aws:efs/fileSystemPolicy:FileSystemPolicy")
    statements = {s["Sid"]: s for s in json.loads(policy.inputs["policy"])["Statement"]}
    assert statements["DenyInsecureTransport"]["Effect"] == "Deny"
    assert statements["DenyInsecureTransport"]["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    assert statements["MountTargetsOnly"]["Condition"] == {"Bool": {"elasticfilesystem:AccessedViaMountTarget": "true"}}
    # issue 21: only the nodes' role may mount (the volumes mount with iam); nothing for "*", so anonymous clients are refused
    roles = {g.inputs["nodeRoleArn"] for g in result.of_type("aws:eks/nodeGroup:NodeGroup")}
    assert len(roles) == 1
    assert statements["MountTargetsOnly"]["Principal"] == {"AWS": roles.pop()}
    assert all(s["Principal"] != {"AWS": "*"} for s in statements.values() if s["Effect"] == "Allow")
    points = result.of_type("aws:efs/accessPoint:AccessPoint")
    assert points
    uids = set()
    for point in points:
        user, info = point.inputs["posixUser"], point.inputs["rootDirectory"]["creationInfo"]
        assert user["uid"] == user["gid"] == info["ownerUid"] == info["ownerGid"] >= 20000
        assert info["permissions"] == "0770"
        uids.add(user["uid"])
    assert len(uids) == len(points)  # one identity per team
    # stable: a team's id does not depend on the other teams
    assert team_posix_ids(("a", "research"))["research"] == team_posix_ids(("research", "zz", "b"))["research"]


@covers("aws:s3/bucketLogging:BucketLogging")
def test_every_created_bucket_logs_its_requests_to_the_access_log_bucket(prod: Any) -> None:
    """S3 user guide, "Enabling Amazon S3 server access logging": the target bucket uses SSE-S3 and lets
    logging.s3.amazonaws.com write for the source account."""
    rp, result = prod
    buckets = {b.name: b.inputs["bucket"] for b in result.of_type("aws:s3/bucket:Bucket")}
    logs = buckets.pop("aws-storage-access-logs")
    logging = {r.name: r.inputs for r in result.of_type("aws:s3/bucketLogging:BucketLogging")}
    assert sorted(logging) == sorted(buckets)
    assert all(item["targetPrefix"] == f"{buckets[name]}/" for name, item in logging.items())
    sse = one(result, "aws-storage-access-logs")  # the policy: only the logging service writes
    policy = json.loads(
        next(r.inputs["policy"] for r in result.of_type("aws:s3/bucketPolicy:BucketPolicy") if r.name == "aws-storage-access-logs")
    )
    (write,) = [s for s in policy["Statement"] if s["Effect"] == "Allow"]
    assert write["Principal"] == {"Service": "logging.s3.amazonaws.com"}
    assert write["Condition"]["StringEquals"]["aws:SourceAccount"] == rp.site("aws").spec.account  # type: ignore[union-attr]
    assert logs.endswith(rp.site("aws").spec.account) and "bucket" in sse  # type: ignore[union-attr]
    encryption = next(
        r.inputs
        for r in result.of_type("aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration")
        if r.name == "aws-storage-access-logs"
    )
    assert encryption["rules"][0]["applyServerSideEncryptionByDefault"]["sseAlgorithm"] == "AES256"
    lifecycle = next(
        r.inputs
        for r in result.of_type("aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration")
        if r.name == "aws-storage-access-logs"
    )
    (rule,) = lifecycle["rules"]  # kept for the audit retention; stray multipart uploads are aborted (checkov CKV_AWS_300)
    assert rule["expiration"]["days"] == 365 and rule["abortIncompleteMultipartUpload"] == {"daysAfterInitiation": 7}


def test_node_auto_repair_comes_with_the_node_monitoring_agent(prod: Any) -> None:
    """EKS user guide, "Detect node health issues and enable automatic node repair": GPU, kernel and network faults
    reach node auto-repair through the eks-node-monitoring-agent add-on."""
    _, result = prod
    groups = result.of_type("aws:eks/nodeGroup:NodeGroup")
    assert groups and all(g.inputs["nodeRepairConfig"]["enabled"] for g in groups)
    # but no reboot for an XID a killed or faulting process raises (review obsreview31 G-2: agents before v1.6.4 set
    # AcceleratedHardwareReady=False for XID 13 and 31; tests/targets/aws/test_node_repair.py checks the strings)
    for g in groups:
        overrides = {o["nodeUnhealthyReason"]: o for o in g.inputs["nodeRepairConfig"]["nodeRepairConfigOverrides"]}
        for reason in ("NvidiaXID13Error", "NvidiaXID31Error"):
            assert overrides[reason]["repairAction"] == "NoAction", (g.name, reason)
            assert overrides[reason]["nodeMonitoringCondition"] == "AcceleratedHardwareReady"
    assert "eks-node-monitoring-agent" in {a.inputs["addonName"] for a in result.of_type("aws:eks/addon:Addon")}


@covers("aws:s3/bucketObjectLockConfiguration:BucketObjectLockConfiguration")
def test_an_object_tiers_retention_is_a_minimum_before_it_is_an_expiry(prod: Any) -> None:
    """S3 user guide, "Locking objects with Object Lock": a default retention keeps every new object version from
    deletion or overwrite for the period (governance mode); the lifecycle rule expires it afterwards."""
    _, result = prod
    # the tiers' (the audit bucket's: tests/pulumi/test_audit.py)
    (lock,) = [
        r for r in result.of_type("aws:s3/bucketObjectLockConfiguration:BucketObjectLockConfiguration") if r.name != "aws-audit-bucket"
    ]
    assert lock.name == "aws-storage-data-lake" and lock.inputs["objectLockEnabled"] == "Enabled"
    assert lock.inputs["rule"]["defaultRetention"] == {"mode": "GOVERNANCE", "days": 730}  # data-lake retention: 730d
    assert "aws-storage-data-lake" in lock.depends_on  # after versioning is on


@covers("aws:fsx/lustreFileSystem:LustreFileSystem", "aws:efs/fileSystem:FileSystem")
def test_the_cloudwatch_exporter_reads_its_region_s_metrics_only_and_finds_the_site_s_file_systems_by_tag(prod: Any) -> None:
    """Issue 24: the storage metrics exporter's Pod Identity role may read CloudWatch metrics and find resources by tag,
    in the site's region, and nothing else; the tags the file systems carry are those its discovery jobs match."""
    from alicerce.emit.kube.cloud_metrics import exporter_values
    from alicerce.targets.aws.resolve import STORAGE_METRICS
    from tests.emit.kube.yace import found

    rp, result = prod
    assoc = {
        (r.inputs["namespace"], r.inputs["serviceAccount"]) for r in result.of_type("aws:eks/podIdentityAssociation:PodIdentityAssociation")
    }
    assert STORAGE_METRICS.service_account == ("monitoring", "cloudwatch-exporter") and STORAGE_METRICS.service_account in assoc
    assert _policy(result, "aws-identity-cloudwatch-exporter")["Statement"] == [
        {
            "Sid": "ReadMetricsOfTaggedFileSystems",
            "Effect": "Allow",
            "Action": ["cloudwatch:GetMetricData", "cloudwatch:ListMetrics", "tag:GetResources"],
            "Resource": "*",
            "Condition": {"StringEquals": {"aws:RequestedRegion": "us-east-1"}},
        }
    ]
    config = yaml.safe_load(exporter_values(rp, rp.site("aws"))["config"])
    jobs = {j["type"]: j["searchTags"] for j in config["discovery"]["jobs"]}
    tier = STORAGE_METRICS.tier_tag
    lustre = [r.inputs["tags"] for r in result.of_type("aws:fsx/lustreFileSystem:LustreFileSystem")]
    efs = [r.inputs["tags"] for r in result.of_type("aws:efs/fileSystem:FileSystem")]
    assert sorted(t[tier] for t in lustre if found(jobs["AWS/FSx"], t)) == ["checkpoints", "datasets"]
    assert [t[tier] for t in efs if found(jobs["AWS/EFS"], t)] == ["home"]
    assert all(t[STORAGE_METRICS.site_tag] == "aws" for t in lustre + efs)
