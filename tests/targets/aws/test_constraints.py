"""What AWS enforces that the mock engine does not: one test per rule, over the offline preview of every
shipped spec and environment with an AWS site (tests/targets/aws/conftest.py SHIPPED).

Each docstring names the AWS documentation page the rule comes from. The mock engine accepts any
input; these checks encode what the real APIs reject or what makes the platform misbehave once up.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from alicerce.emit.pulumi.stack import StackSettings
from alicerce.run.preview import PlannedResource, PreviewResult

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

Preview = tuple[Any, PreviewResult]


def _of(result: PreviewResult, kind: str) -> list[PlannedResource]:
    return [r for r in result.resources if r.type.endswith(kind)]


def _key_policy(result: PreviewResult) -> dict[str, Any]:
    keys = _of(result, "kms/key:Key")
    assert len(keys) == 1
    policy: dict[str, Any] = json.loads(keys[0].inputs["policy"])
    return policy


def _statements(result: PreviewResult) -> dict[str, dict[str, Any]]:
    return {s["Sid"]: s for s in _key_policy(result)["Statement"]}


def test_encrypted_log_groups_are_named_in_the_key_policy(shipped: Preview) -> None:
    """CloudWatch Logs user guide, "Encrypt log data in CloudWatch Logs using AWS KMS": the key policy must let
    logs.<region>.amazonaws.com use the key, with kms:EncryptionContext:aws:logs:arn naming the log group."""
    rp, result = shipped
    logs = _statements(result)["CloudWatchLogs"]
    region = result.resources[0].inputs.get("region") or next(s.spec.region for s in rp.sites if s.spec.provider == "aws")
    assert logs["Principal"] == {"Service": f"logs.{region}.amazonaws.com"}
    allowed = logs["Condition"]["ArnLike"]["kms:EncryptionContext:aws:logs:arn"]
    encrypted = [g.inputs["name"] for g in _of(result, "cloudwatch/logGroup:LogGroup") if g.inputs.get("kmsKeyId")]
    assert len(encrypted) >= 2  # control plane and flow logs at least
    for name in encrypted:
        assert any(arn.endswith(f":log-group:{name}") for arn in allowed), name


def test_autoscaling_role_may_use_the_key_of_encrypted_root_volumes(shipped: Preview) -> None:
    """EC2 Auto Scaling user guide, "Required AWS KMS key policy for use with encrypted volumes": the
    AWSServiceRoleForAutoScaling needs key use and kms:CreateGrant with kms:GrantIsForAWSResource."""
    _, result = shipped
    statements = _statements(result)
    for lt in _of(result, "ec2/launchTemplate:LaunchTemplate"):
        assert all(b["ebs"]["kmsKeyId"] for b in lt.inputs["blockDeviceMappings"])
    use, grant = statements["AutoScalingVolumes"], statements["AutoScalingVolumeGrants"]
    slr = use["Condition"]["ArnEquals"]["aws:PrincipalArn"]
    assert slr.endswith(":role/aws-service-role/autoscaling.amazonaws.com/AWSServiceRoleForAutoScaling")
    assert {"kms:Encrypt", "kms:Decrypt", "kms:GenerateDataKey*", "kms:DescribeKey"} <= set(use["Action"])
    assert grant["Action"] == "kms:CreateGrant" and grant["Condition"]["Bool"]["kms:GrantIsForAWSResource"] == "true"


def test_no_key_policy_principal_can_be_invalid(shipped: Preview) -> None:
    """KMS developer guide, "Key policies" (PutKeyPolicy MalformedPolicyDocumentException): every principal named in
    Principal must exist; service-linked roles that may not exist yet appear only in conditions."""
    _, result = shipped
    for statement in _key_policy(result)["Statement"]:
        principal = statement["Principal"]
        aws = principal.get("AWS")
        assert aws in (None, "*") or aws.endswith(":root"), statement["Sid"]
        if aws == "*":
            assert statement["Condition"]["StringEquals"]["kms:CallerAccount"].isdigit(), statement["Sid"]


def test_fsx_may_read_its_sse_kms_data_repository(shipped: Preview) -> None:
    """FSx for Lustre user guide, "Working with server-side encrypted Amazon S3 buckets": the key policy lets FSx's
    S3 access role use the key via S3, with the bucket ARN as encryption context when bucket keys are on."""
    _, result = shipped
    linked = {
        r.inputs["dataRepositoryPath"].removeprefix("s3://") for r in _of(result, "fsx/dataRepositoryAssociation:DataRepositoryAssociation")
    }
    linked |= {
        r.inputs["importPath"].removeprefix("s3://")
        for r in _of(result, "fsx/lustreFileSystem:LustreFileSystem")
        if "importPath" in r.inputs
    }
    created = {b.inputs["bucket"] for b in _of(result, "s3/bucket:Bucket")}
    needs = linked & created
    if not needs:
        assert "FsxS3Access" not in _statements(result)
        return
    condition = _statements(result)["FsxS3Access"]["Condition"]
    assert "AWSServiceRoleForFSxS3Access_*" in condition["ArnLike"]["aws:PrincipalArn"]
    for bucket in needs:
        assert f"arn:aws:s3:::{bucket}" in condition["StringLike"]["kms:EncryptionContext:aws:s3:arn"]


def test_capacity_block_node_groups_take_their_instance_type_from_the_launch_template(shipped: Preview) -> None:
    """EKS user guide, "Create a managed node group with Capacity Blocks for ML": the launch template carries
    InstanceType, market type capacity-block and the reservation; the node group lists no instance types."""
    _, result = shipped
    templates = {r.parent: r.inputs for r in _of(result, "ec2/launchTemplate:LaunchTemplate")}
    for ng in _of(result, "eks/nodeGroup:NodeGroup"):
        lt = templates[ng.parent]
        if ng.inputs["capacityType"] == "CAPACITY_BLOCK":
            assert "instanceTypes" not in ng.inputs and lt["instanceType"]
            assert lt["instanceMarketOptions"] == {"marketType": "capacity-block"}
            assert lt["capacityReservationSpecification"]["capacityReservationTarget"]["capacityReservationId"].startswith("cr-")
        else:
            assert "instanceType" not in lt  # EKS rejects instance types in both places
            assert 1 <= len(ng.inputs["instanceTypes"]) <= 20


def test_reserved_and_efa_pools_live_in_one_zone(shipped: Preview) -> None:
    """EKS user guide, capacity blocks and ODCRs with managed node groups (subnets of the reservation's zone); EFA
    traffic does not cross zones (EC2 user guide, "Elastic Fabric Adapter", limitations)."""
    _, result = shipped
    templates = {r.parent: r.inputs for r in _of(result, "ec2/launchTemplate:LaunchTemplate")}
    for ng in _of(result, "eks/nodeGroup:NodeGroup"):
        lt = templates[ng.parent]
        if "capacityReservationSpecification" in lt or any(n["interfaceType"] == "efa-only" for n in lt.get("networkInterfaces", [])):
            assert len(ng.inputs["subnetIds"]) == 1, ng.name


def test_node_group_update_config_is_valid_and_needs_no_surge_on_reservations(shipped: Preview) -> None:
    """EKS API reference, NodegroupUpdateConfig: maxUnavailable (1-100) or maxUnavailablePercentage (1-100);
    updateStrategy DEFAULT launches replacements first, MINIMAL terminates first (no spare reserved capacity)."""
    _, result = shipped
    templates = {r.parent: r.inputs for r in _of(result, "ec2/launchTemplate:LaunchTemplate")}
    for ng in _of(result, "eks/nodeGroup:NodeGroup"):
        update = ng.inputs["updateConfig"]
        assert ("maxUnavailable" in update) != ("maxUnavailablePercentage" in update)
        assert 1 <= update.get("maxUnavailable", update.get("maxUnavailablePercentage")) <= 100
        if "capacityReservationSpecification" in templates[ng.parent]:
            assert update["updateStrategy"] == "MINIMAL"


def test_cluster_access_uses_eks_access_policies_and_explicit_admins(shipped: Preview) -> None:
    """EKS user guide, "Review access policy permissions": access policies are arn:aws:eks::aws:cluster-access-policy/...;
    bootstrapClusterCreatorAdminPermissions with an explicit entry for the creator fails (ResourceInUseException)."""
    _, result = shipped
    (eks,) = _of(result, "eks/cluster:Cluster")
    assert eks.inputs["accessConfig"] == {"authenticationMode": "API", "bootstrapClusterCreatorAdminPermissions": False}
    associations = _of(result, "eks/accessPolicyAssociation:AccessPolicyAssociation")
    assert associations
    for assoc in associations:
        assert assoc.inputs["policyArn"].startswith("arn:aws:eks::aws:cluster-access-policy/")


def test_clusters_stay_on_standard_support(shipped: Preview) -> None:
    """EKS user guide, "Cluster upgrade policy": extended support is the default for new clusters and costs extra."""
    _, result = shipped
    (eks,) = _of(result, "eks/cluster:Cluster")
    assert eks.inputs["upgradePolicy"] == {"supportType": "STANDARD"}


def test_vpc_cni_enforces_network_policies_with_its_own_role(shipped: Preview) -> None:
    """EKS user guide, "Limit Pod traffic with Kubernetes network policies" (enableNetworkPolicy "true") and
    "Amazon VPC CNI ... IAM role": aws-node gets its EC2 permissions from its own role, not the node role."""
    _, result = shipped
    cni = next(a for a in _of(result, "eks/addon:Addon") if a.inputs["addonName"] == "vpc-cni")
    assert json.loads(cni.inputs["configurationValues"]) == {"enableNetworkPolicy": "true"}
    assert cni.inputs["podIdentityAssociations"][0]["serviceAccount"] == "aws-node"
    node_policies = {
        r.inputs["policyArn"].rsplit("/", 1)[-1]
        for r in _of(result, "iam/rolePolicyAttachment:RolePolicyAttachment")
        if r.name.startswith(("aws-cluster-node-",))
    }
    assert "AmazonEKS_CNI_Policy" not in node_policies and "AmazonEKSWorkerNodePolicy" in node_policies


def test_pods_may_reach_the_pod_identity_agent_through_default_deny(shipped: Preview) -> None:
    """EKS user guide, "Understand how EKS Pod Identity works": pods get credentials from 169.254.170.23:80 (IPv6
    fd00:ec2::23); with NetworkPolicies enforced, every default-deny namespace must allow that egress."""
    _, result = shipped
    objs = [o for r in result.resources if "objs" in r.inputs for o in r.inputs["objs"]]
    deny = {o["metadata"]["namespace"] for o in objs if o["kind"] == "NetworkPolicy" and o["metadata"]["name"] == "default-deny"}
    agent = {
        o["metadata"]["namespace"]: o["spec"]["egress"]
        for o in objs
        if o["kind"] == "NetworkPolicy" and any("169.254.170.23/32" in json.dumps(e) for e in o["spec"].get("egress", []))
    }
    assert deny and deny <= set(agent)
    for egress in agent.values():  # both address families, port 80 only
        assert {
            "to": [{"ipBlock": {"cidr": "169.254.170.23/32"}}, {"ipBlock": {"cidr": "fd00:ec2::23/128"}}],
            "ports": [{"protocol": "TCP", "port": 80}],
        } in egress


def test_pod_identity_roles_trust_only_their_service_account(shipped: Preview) -> None:
    """EKS user guide, "Create IAM role with trust policy required by EKS Pod Identity": pods.eks.amazonaws.com with
    sts:AssumeRole and sts:TagSession, conditioned on the session tags naming namespace and service account."""
    _, result = shipped
    roles = [json.loads(r.inputs["assumeRolePolicy"]) for r in _of(result, "iam/role:Role")]
    pods = [d["Statement"][0] for d in roles if d["Statement"][0]["Principal"] == {"Service": "pods.eks.amazonaws.com"}]
    assert len(pods) >= 4  # VPC CNI, EBS CSI, cluster-autoscaler, and more
    for statement in pods:
        assert statement["Action"] == ["sts:AssumeRole", "sts:TagSession"]
        keys = set(statement["Condition"]["StringEquals"])
        assert {
            "aws:RequestTag/eks-cluster-arn",
            "aws:RequestTag/kubernetes-namespace",
            "aws:RequestTag/kubernetes-service-account",
        } <= keys


def test_lustre_security_group_lets_file_servers_talk_to_each_other(shipped: Preview) -> None:
    """FSx for Lustre user guide, "File system access control with Amazon VPC": TCP 988 and 1018-1023 from clients and
    from the file system's own group; the provider removes the default egress, so the same ports go out to itself."""
    _, result = shipped
    if not _of(result, "fsx/lustreFileSystem:LustreFileSystem"):
        return
    sg = next(r for r in _of(result, "ec2/securityGroup:SecurityGroup") if r.name.endswith("-lustre"))
    rules = [r for r in result.resources if r.parent == sg.parent and r.name.startswith(sg.name)]
    egress_self = {
        (r.inputs["fromPort"], r.inputs["toPort"]) for r in rules if r.type.endswith("EgressRule") and r.name.endswith("self-egress")
    }
    ingress_self = {
        (r.inputs["fromPort"], r.inputs["toPort"]) for r in rules if r.type.endswith("IngressRule") and r.name.endswith("-self")
    }
    assert egress_self == ingress_self == {(988, 988), (1018, 1023)}


def test_fsx_backups_and_tags_only_where_fsx_keeps_backups(shipped: Preview) -> None:
    """FSx for Lustre user guide, "Working with backups" (persistent file systems not linked to S3; 0-90 days) and
    CreateFileSystemLustreConfiguration: customer keys only for persistent file systems."""
    _, result = shipped
    linked = {r.inputs["fileSystemId"] for r in _of(result, "fsx/dataRepositoryAssociation:DataRepositoryAssociation")}
    for fs in _of(result, "fsx/lustreFileSystem:LustreFileSystem"):
        inputs = fs.inputs
        persistent = inputs["deploymentType"].startswith("PERSISTENT")
        days = inputs.get("automaticBackupRetentionDays", 0)
        assert 0 <= days <= 90 and (persistent or "automaticBackupRetentionDays" not in inputs)
        assert ("kmsKeyId" in inputs) == persistent
        if inputs.get("copyTagsToBackups"):
            assert days > 0
        if "importPath" in inputs or any(fs.name in r for r in linked):
            assert days == 0


def test_fsx_logs_go_to_an_encrypted_aws_fsx_log_group(shipped: Preview) -> None:
    """FSx for Lustre user guide, "Logging with Amazon CloudWatch Logs": the destination log group's name begins
    with /aws/fsx."""
    _, result = shipped
    for fs in _of(result, "fsx/lustreFileSystem:LustreFileSystem"):
        log = fs.inputs["logConfiguration"]
        assert log["level"] == "WARN_ERROR" and ":log-group:/aws/fsx/" in log["destination"]


def test_efa_security_group_allows_all_traffic_within_itself(shipped: Preview) -> None:
    """EC2 user guide, "Get started with EFA": the security group allows all inbound and outbound traffic to and
    from itself."""
    _, result = shipped
    for rule in result.resources:
        if rule.parent and rule.parent.endswith("-fabric") and rule.type.endswith(("IngressRule", "EgressRule")):
            assert rule.inputs["ipProtocol"] == "-1" and rule.inputs["referencedSecurityGroupId"] == rule.inputs["securityGroupId"]


def test_pools_at_zero_tell_the_autoscaler_what_their_nodes_offer(shipped: Preview) -> None:
    """EKS user guide, "Create a managed node group" (node group tags are not propagated to the Auto Scaling group) and
    cluster-autoscaler's AWS README, "Auto-Discovery Setup" (node-template resources, labels, taints)."""
    rp, result = shipped
    for pool in rp.pools:
        if pool.gpu_units is None or pool.site.provider != "aws":
            continue
        tags = {
            r.inputs["tag"]["key"]: r.inputs["tag"]["value"] for r in result.children(f"aws-pool-{pool.name}") if r.type.endswith("tag:Tag")
        }
        for resource, count in pool.gpu_units.resources.items():
            assert tags[f"k8s.io/cluster-autoscaler/node-template/resources/{resource}"] == str(count)
        if pool.efa_interfaces:
            assert tags["k8s.io/cluster-autoscaler/node-template/resources/vpc.amazonaws.com/efa"] == str(pool.efa_interfaces)
        for taint in pool.spec.taints:
            assert tags[f"k8s.io/cluster-autoscaler/node-template/taint/{taint.key}"] == f"{taint.value}:{taint.effect}"


def test_private_clusters_have_the_endpoints_pod_identity_and_the_controllers_need(shipped: Preview) -> None:
    """EKS user guide, "Deploy private clusters with limited internet access": eks-auth for Pod Identity; cluster-
    autoscaler's README: eks for DescribeNodegroup; autoscaling, elasticloadbalancing, ec2, logs, sts, ecr."""
    _, result = shipped
    services = {e.inputs["serviceName"].split(".", 3)[-1] for e in _of(result, "ec2/vpcEndpoint:VpcEndpoint")}
    assert {"eks-auth", "eks", "autoscaling", "elasticloadbalancing", "ec2", "logs", "sts", "ecr.api", "ecr.dkr", "s3", "ssm"} <= services


def test_every_node_requires_imdsv2_with_one_hop(shipped: Preview) -> None:
    """EKS best practices (security, "Restrict access to the instance profile"): IMDSv2 required, hop limit 1."""
    _, result = shipped
    for lt in _of(result, "ec2/launchTemplate:LaunchTemplate"):
        assert lt.inputs["metadataOptions"]["httpTokens"] == "required" and lt.inputs["metadataOptions"]["httpPutResponseHopLimit"] == 1


def test_log_retention_is_one_cloudwatch_accepts(shipped: Preview) -> None:
    """CloudWatch Logs API, PutRetentionPolicy: retentionInDays takes a fixed list of values."""
    from alicerce.emit.pulumi.component import LOG_RETENTION_DAYS

    _, result = shipped
    for group in _of(result, "cloudwatch/logGroup:LogGroup"):
        assert group.inputs["retentionInDays"] in LOG_RETENTION_DAYS


def test_the_kubernetes_layer_of_a_private_endpoint_is_not_run_from_outside(shipped: Preview) -> None:
    """EKS user guide, "Cluster API server endpoint": with public access off, traffic to the API server must come
    from the VPC or a connected network; the program refuses both layers in one stack unless a network is allowed."""
    rp, _ = shipped
    both = StackSettings(("arn:aws:iam::111111111111:role/admin",))
    private_only = not rp.spec.security.endpoint_access.public
    assert bool(both.problems(rp)) == private_only
    assert StackSettings(("arn:aws:iam::111111111111:role/admin",), layers=("cloud",)).problems(rp) == []
    assert StackSettings(("arn:aws:iam::111111111111:role/admin",), ("10.99.0.0/16",)).problems(rp) == []
    assert StackSettings((), layers=("cloud",)).problems(rp)  # admins must be explicit


def test_fsx_throughput_and_capacity_are_ones_fsx_accepts(shipped: Preview) -> None:
    """FSx API, CreateFileSystemLustreConfiguration (PerUnitStorageThroughput per deployment type) and
    CreateFileSystem StorageCapacity steps per deployment type (FACTS.md, FSx for Lustre)."""
    from alicerce.catalog import load_catalog
    from alicerce.catalog.fsx import is_valid_capacity, options

    catalog = load_catalog().fsx
    _, result = shipped
    for fs in _of(result, "fsx/lustreFileSystem:LustreFileSystem"):
        i = fs.inputs
        fitting = options(catalog, i["deploymentType"], i["storageType"], i.get("perUnitStorageThroughput"))
        assert fitting, fs.name
        assert any(is_valid_capacity(o, i["storageCapacity"]) for o in fitting), fs.name


def test_efa_interfaces_follow_the_instance_type_and_start_with_ena(shipped: Preview) -> None:
    """EC2 user guide, "Maximize network bandwidth on accelerated instances": the primary interface (card 0, device 0)
    is ENA, then one EFA-only interface per EFA network card, up to MaximumEfaInterfaces (FACTS.md, EFA)."""
    rp, result = shipped
    for pool in rp.pools:
        if not pool.efa_interfaces:
            continue
        lt = next(r for r in result.children(f"aws-pool-{pool.name}") if r.type.endswith("launchTemplate:LaunchTemplate"))
        nics = lt.inputs["networkInterfaces"]
        assert (nics[0]["networkCardIndex"], nics[0]["deviceIndex"], nics[0]["interfaceType"]) == (0, 0, "interface")
        assert len([n for n in nics if n["interfaceType"] == "efa-only"]) == pool.efa_interfaces == pool.instance.efa.maxInterfaces  # type: ignore[union-attr]


def test_names_fit_aws_limits_and_come_from_the_functions_rule_al299_checks(shipped: Preview) -> None:
    """EKS API reference (CreateCluster name 100, CreateNodegroup nodegroupName 63), S3 user guide "General purpose
    bucket naming rules" (63), IAM user guide "IAM and AWS STS quotas" (role 64: Pulumi names a role after its
    resource name plus 8 characters). The program uses the very functions rule AL299 checks."""
    from alicerce.targets.aws import resolve as names

    rp, result = shipped
    site = next(s.spec for s in rp.sites if s.spec.provider == "aws")
    cluster = names.site_name(rp, site)  # type: ignore[arg-type]
    (eks,) = _of(result, "eks/cluster:Cluster")
    assert eks.inputs["name"] == cluster and len(cluster) <= names.CLUSTER_NAME_MAX
    groups = sorted(g.inputs["nodeGroupName"] for g in _of(result, "eks/nodeGroup:NodeGroup"))
    assert groups == sorted(names.node_group_name(cluster, p.name) for p in names.site_pools(rp, site))  # type: ignore[arg-type]
    assert all(len(g) <= names.NODE_GROUP_NAME_MAX for g in groups)
    assert all(3 <= len(b.inputs["bucket"]) <= names.BUCKET_NAME_MAX for b in _of(result, "s3/bucket:Bucket"))
    roles = _of(result, "iam/role:Role")
    assert roles and all(len(r.name) + names.AUTONAME_SUFFIX <= names.ROLE_NAME_MAX and "name" not in r.inputs for r in roles)
    component = names.identity_component(site)  # type: ignore[arg-type]
    assert names.workload_role(component, names.CLUSTER_AUTOSCALER_ROLE) in {r.name for r in roles}


def test_auto_scaling_group_tags_fit_the_tag_limits(shipped: Preview) -> None:
    """EC2 Auto Scaling API reference, Tag: key 1-128 characters, value 0-256 (rule AL300 checks the spec)."""
    _, result = shipped
    tags = [t.inputs["tag"] for t in _of(result, "autoscaling/tag:Tag")]
    assert tags
    assert all(1 <= len(t["key"]) <= 128 and len(t["value"]) <= 256 for t in tags)
