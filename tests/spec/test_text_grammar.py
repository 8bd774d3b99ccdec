"""Every text field of the spec has a grammar: the audit of issue 22 (defect 1) kept as a table.

:data:`AUDIT` lists each string position of the spec models (``[]`` an item, ``{key}``/``{}`` a
mapping's keys/values), the check that bounds it and where the text lands. The test walks the models:
a new string field without a grammar, or one whose grammar changed, fails until this table says
where it lands and what keeps it inert.
"""

from __future__ import annotations

import typing

import pytest
from pydantic import AfterValidator, BaseModel, StringConstraints, TypeAdapter, ValidationError, WithJsonSchema

from alicerce.spec import base
from alicerce.spec.models import PlatformSpec
from alicerce.spec.text import (
    GRAMMARS,
    Email,
    Grammar,
    LnetRoute,
    MountOption,
    NidList,
    ObjectPrefix,
    SecretName,
    SlackChannel,
    escaped,
    secret_shape,
)

# check -> meaning: a grammar of alicerce/spec/text.py; "Name" a DNS label (rule AL201 or a reference rule
# that requires an existing name); check_label_* Kubernetes label syntax; "pattern"/"length" pydantic constraints;
# "rule AL221" etc. a cross-field rule; "inert" text that only reaches data files and reports (escaped there),
# walked by AL275 (templates), AL276 (secret material) and AL277 (control, invisible and non-ASCII characters).
AUDIT: dict[str, tuple[str, str]] = {
    "metadata.name": ("Name", "labels, Pulumi names, report title"),
    "metadata.owner": ("length", "inert: labels-free prose in PLATFORM.md (escaped) and resolved.json"),
    "metadata.costCenter": ("check_label_value", "labels and AWS tags"),
    "metadata.labels{key}": ("check_label_key", "labels and AWS tags"),
    "metadata.labels{}": ("check_label_value", "labels and AWS tags"),
    **{
        f"versions.{v}": ("Version", "apt pins, Helm chart versions, image tags")
        for v in (
            "kubernetes",
            "driverBranch",
            "driverVersion",
            "gpuOperator",
            "networkOperator",
            "kueue",
            "kuberay",
            "trainingOperator",
            "kubePrometheusStack",
            "efaDevicePlugin",
            "fsxCsiDriver",
            "clusterAutoscaler",
            "awsLoadBalancerController",
            "cloudwatchExporter",
        )
    },
    "versions.eksAddons{}": ("Version", "EKS add-on versions (Pulumi)"),
    "environments{key}": ("Name", "Pulumi stacks, folder names, CI workflow names"),
    "environments{}.sites[].name": ("Name", "inventory groups, kubernetes/<site>/ folders"),
    "environments{}.sites[].account": ("AwsAccount", "Pulumi provider, IAM ARNs"),
    "environments{}.sites[].region": ("AwsName", "Pulumi provider, ARNs"),
    "environments{}.sites[].zones[]": ("AwsName", "subnets, node groups"),
    "environments{}.sites[].controlPlaneEndpoint": ("ApiEndpoint", "kubespray variables, kubeconfigs"),
    "environments{}.sites[].controlPlane.hosts[]": ("rule AL221", "inventory host names, kubespray"),
    "environments{}.sites[].controlPlane.loadBalancer.interface": ("Interface", "kube-vip settings (kubespray)"),
    "environments{}.sites[].timeSync.servers[]": ("Host", "kubespray's ntp_servers, chrony.conf server lines"),
    "environments{}.sites[].kubeconfigSecret": ("SecretName", "Pulumi config key name in resolved.json and READMEs"),
    "environments{}.sites[].nodeSoftware.lustreMirror.url": ("Url", "apt sources file (parallel_fs_client role)"),
    "environments{}.sites[].nodeSoftware.lustreMirror.key": ("Url", "alicerce_apt_key download URL"),
    "environments{}.sites[].nodeSoftware.lustreMirror.keyFingerprint": ("KeyFingerprint", "alicerce_apt_key fingerprint check"),
    "environments{}.overrides{key}": ("schema", "merged into the spec, then validated as the spec"),
    "nodePools[].name": ("Name", "node groups, labels, inventory groups"),
    "nodePools[].site": ("Name", "reference (AL202)"),
    "nodePools[].accelerator.model": ("CatalogId", "node labels, mig-parted, Kueue flavors"),
    "nodePools[].sharing.profiles{key}": ("CatalogId", "mig-parted configuration"),
    "nodePools[].aws.instanceType": ("AwsName", "launch templates"),
    "nodePools[].aws.additionalInstanceTypes[]": ("AwsName", "node groups"),
    "nodePools[].aws.capacityReservationId": ("AwsName", "launch templates"),
    "nodePools[].aws.placementGroup.name": ("AwsName", "launch templates"),
    "nodePools[].aws.zone": ("AwsName", "node groups"),
    "nodePools[].onprem.hosts[].hosts": ("rule AL221", "inventory host names"),
    "nodePools[].onprem.hosts[].rack": ("Word", "inventory group names"),
    "nodePools[].onprem.scratchDevices[]": ("Device", "mdadm command line (nvme_scratch role)"),
    "nodePools[].onprem.railAdapters[]": ("PciAddress", "rail selection (rdma and node_validation roles)"),
    "nodePools[].onprem.railDevices[]": ("RdmaDevice", "PromQL device matcher (fabric alerts)"),
    "nodePools[].labels{key}": ("check_label_key", "kubelet --node-labels"),
    "nodePools[].labels{}": ("check_label_value", "kubelet --node-labels"),
    "nodePools[].taints[].key": ("check_label_key", "kubelet --register-with-taints"),
    "nodePools[].taints[].value": ("check_label_value", "kubelet --register-with-taints"),
    "nodePools[].fabric": ("Name", "reference (AL203)"),
    "storage[].name": ("Name", "PersistentVolumes, BeeGFS config file names"),
    "storage[].site": ("Name", "reference (AL202)"),
    "storage[].sites[]": ("Name", "reference (AL202)"),
    "storage[].source": ("Name", "reference (AL204)"),
    "storage[].mountPath": ("MountPath", "fstab, mount units, PersistentVolumes (and rule AL235: absolute, no '..', no system path)"),
    "storage[].aws.zone": ("AwsName", "FSx subnet"),
    "storage[].onprem.server": ("Host", "fstab source, PersistentVolume nfs.server"),
    "storage[].onprem.filesystem": ("FsName", "fstab source server:/NAME"),
    "storage[].onprem.mountOptions[]": ("MountOption", "fstab options column"),
    "storage[].onprem.lnetRoutes[]": ("LnetRoute", '/etc/modprobe.d/alicerce-lnet.conf routes="..."'),
    "storage[].onprem.export": ("ServerPath", "fstab source, PersistentVolume nfs.path"),
    "storage[].aws.bucket": ("AwsName", "S3 bucket (Pulumi), IAM policies"),
    "storage[].onprem.endpoint": ("Url", "S3 endpoint in workloads' config"),
    "storage[].onprem.bucket": ("Word", "bucket names in workloads' config"),
    "storage[].pools[]": ("Name", "reference (AL204)"),
    "networks.fabrics[].name": ("Name", "labels, report"),
    **{
        f"operators.{o}.values{{key}}": ("schema", "Helm values: YAML data (AL275-AL277 walk keys and values)")
        for o in ("gpuOperator", "networkOperator", "kueue", "kuberay", "trainingOperator", "monitoring")
    },
    "monitoring.storageClass": ("Word", "Prometheus volume claim"),
    "monitoring.slos[].name": ("Name", "recording and alert rule names"),
    "monitoring.slos[].workload": ("Name", "reference (AL206)"),
    "monitoring.slos[].team": ("Name", "reference (AL206)"),
    "monitoring.alerts[].alert": ("Word", "alert rule names"),
    "tenancy.cohort": ("Name", "Kueue cohort"),
    "tenancy.teams[].name": ("Name", "namespaces, ClusterQueues"),
    "tenancy.teams[].namespaces[]": ("Name", "namespaces"),
    "tenancy.teams[].renamedFrom[]": ("Name", "PromQL team matchers of the cost records, the budget guard's config"),
    "tenancy.teams[].groups[]": ("length", "inert: RoleBinding subjects, YAML data"),
    "tenancy.teams[].quotas[].pool": ("Name", "reference (AL205)"),
    "tenancy.teams[].costCenter": ("check_label_value", "namespace labels"),
    "tenancy.teams[].storageAccess[].tier": ("Name", "reference"),
    "tenancy.teams[].storageAccess[].prefix": ("ObjectPrefix", "IAM policy resources, PersistentVolume paths"),
    "tenancy.ingress.namespaces[]": ("Name", "NetworkPolicies"),
    "security.encryption.kmsKey": ("AwsName", "Pulumi key references"),
    "security.identityProvider.issuerUrl": ("Url", "kube-apiserver --oidc-issuer-url, EKS identity provider"),
    "security.audit.webhook": ("Url", "kubespray audit_webhook_server_url: the server of the API server's audit webhook kubeconfig"),
    "security.identityProvider.clientId": ("Identifier", "kube-apiserver --oidc-client-id"),
    "security.identityProvider.groupsClaim": ("Identifier", "kube-apiserver --oidc-groups-claim"),
    "security.identityProvider.usernameClaim": ("Identifier", "kube-apiserver --oidc-username-claim"),
    "security.identityProvider.prefix": ("Identifier", "kube-apiserver --oidc-groups-prefix, RoleBindings"),
    "waivers[].rule": ("Word", "matched against rule ids (AL274)"),
    "waivers[].environments[]": ("Name", "reference (AL274)"),
    "waivers[].resources[]": ("Word", "matched against resource names"),
    "waivers[].justification": ("length", "inert: prose, resolved.json only"),
    "workloads[].name": ("Name", "report, sizing.json"),
    "workloads[].team": ("Name", "reference (AL206)"),
    "workloads[].pool": ("Name", "reference (AL206)"),
    "workloads[].accelerator": ("CatalogId", "catalog lookup"),
    "workloads[].dataset.tier": ("Name", "reference (AL206)"),
    "workloads[].inputs[]": ("Name", "reference (AL223); PromQL label matcher (lead-time rules)"),
    "costs.onprem[].site": ("Name", "reference"),
    "costs.onprem[].pools[].pool": ("Name", "reference"),
    "costs.owned[].site": ("Name", "reference"),
    "costs.owned[].pools[].pool": ("Name", "reference"),
    "costs.cloud[].pool": ("Name", "reference"),
    "gitops.repository": ("GitUrl", "Argo CD Applications and repository Secrets, CI workflows"),
    "gitops.revision": ("GitRevision", "Argo CD targetRevision, CI workflows"),
    "gitops.folder": ("RepoPath", "Argo CD path, CI workflows"),
    "gitops.specFile": ("RepoPath", "CI workflows, pre-commit hooks"),
    "gitops.repositorySecret": ("SecretName", "Pulumi config key name"),
    "monitoring.receivers[].name": ("Name", "Alertmanager receiver name (kube-prometheus-stack values)"),
    "monitoring.receivers[].secret.name": ("Name", "Secret name in alertmanagerSpec.secrets (mounted, never read here)"),
    "monitoring.receivers[].secret.key": ("SecretKeyName", "file name under /etc/alertmanager/secrets/<name>/"),
    "monitoring.receivers[].to": ("Email", "Alertmanager email_configs.to"),
    "monitoring.receivers[].sender": ("Email", "Alertmanager email_configs.from"),
    "monitoring.receivers[].smarthost": ("HostPort", "Alertmanager email_configs.smarthost"),
    "monitoring.receivers[].channel": ("SlackChannel", "Alertmanager slack_configs.channel"),
    "monitoring.receivers[].teams[]": ("Name", "route matchers on namespace"),
    # the user catalog adds facts the planner reads; they reach reports (escaped) and resolved.json only
    **{
        f"catalog.{p}": ("inert", "catalog facts: reports (escaped), resolved.json")
        for p in (
            "gpus[].id",
            "gpus[].aliases[]",
            "gpus[].computeCapability",
            "gpus[].mig.profiles[].name",
            "gpus[].sources[].title",
            "gpus[].sources[].url",
            "instanceTypes[].type",
            "instanceTypes[].family",
            "instanceTypes[].gpu",
            "instanceTypes[].price.region",
            "instanceTypes[].price.source.title",
            "instanceTypes[].price.source.url",
            "instanceTypes[].price.note",
            "instanceTypes[].sources[].title",
            "instanceTypes[].sources[].url",
        )
    },
}

# text that is not a grammar-checked type but is held by a rule or reaches only data (see AUDIT's meanings)
NOT_GRAMMAR = {"rule AL221", "schema", "inert"}


def _check_of(meta: list[typing.Any]) -> str | None:
    for item in meta:
        if isinstance(item, AfterValidator):
            owner = getattr(item.func, "__self__", None)
            if isinstance(owner, Grammar):
                return next(name for name, g in GRAMMARS.items() if g is owner)
            return str(item.func.__name__)
    for item in meta:
        if isinstance(item, WithJsonSchema) and (item.json_schema or {}).get("pattern") == base.DNS_LABEL:
            return "Name"
    for item in meta:
        if isinstance(item, StringConstraints) or getattr(item, "pattern", None) or getattr(item, "max_length", None):
            return "pattern" if getattr(item, "pattern", None) else "length"
    return None


def _strings(annotation: typing.Any, path: str, meta: list[typing.Any], out: dict[str, str | None], seen: set[tuple[type, str]]) -> None:
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if annotation is str:
        out[path] = _check_of(meta)
    elif origin is typing.Annotated:
        _strings(args[0], path, [*args[1:], *meta], out, seen)
    elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
        _walk(annotation, path, out, seen)
    elif origin is typing.Literal:
        return
    elif origin is dict:
        _strings(args[0], f"{path}{{key}}", [], out, seen)
        _strings(args[1], f"{path}{{}}", [], out, seen)
    elif origin in (list, tuple):
        _strings(args[0], f"{path}[]", [], out, seen)
    else:
        for arg in args:
            _strings(arg, path, meta, out, seen)


def _walk(model: type[BaseModel], path: str, out: dict[str, str | None], seen: set[tuple[type, str]]) -> None:
    if (model, path) in seen:
        return
    seen.add((model, path))
    for name, field in model.model_fields.items():
        key = field.alias or name
        _strings(field.annotation, f"{path}.{key}" if path else key, list(field.metadata), out, seen)


def string_fields() -> dict[str, str | None]:
    """Every string position of the spec models and the check that bounds it (None: none)."""
    out: dict[str, str | None] = {}
    _walk(PlatformSpec, "", out, set())
    return out


def test_every_string_field_is_in_the_audit_with_the_check_it_has() -> None:
    found = string_fields()
    missing = sorted(set(found) - set(AUDIT))
    assert not missing, f"new text fields without an audit entry (give each a grammar in alicerce/spec/text.py): {missing}"
    assert not sorted(set(AUDIT) - set(found)), "audit entries for fields that no longer exist"
    wrong = {path: (found[path], check) for path, (check, _) in AUDIT.items() if check not in NOT_GRAMMAR and found[path] != check}
    assert not wrong, f"fields whose check differs from the audit (found, audited): {wrong}"
    unchecked = [path for path, (check, _) in AUDIT.items() if check in NOT_GRAMMAR and found[path] is not None]
    assert not unchecked, f"fields that gained a check: move them out of the inert/rule list: {unchecked}"


SAMPLES: dict[str, str] = {
    "MountPath": "/mnt/datasets",
    "ServerPath": "/export/home",
    "Host": "nfs.dc1.example.com",
    "NidList": "10.90.255.11@o2ib:10.90.255.12@o2ib",
    "FsName": "scratch",
    "MountOption": "rsize=1048576",
    "LnetRoute": "o2ib1 10.40.0.250@o2ib",
    "Url": "https://s3.dc1.example.com:9000/path",
    "ApiEndpoint": "https://k8s.dc1.example.com:6443",
    "GitUrl": "git@github.com:acme/ml-platform.git",
    "GitRevision": "release/v1.2",
    "RepoPath": "specs/platform.yaml",
    "SecretName": "dc1Kubeconfig",
    "Version": "580.95.05",
    "Identifier": "oidc:",
    "Interface": "eno1",
    "Device": "/dev/disk/by-id/nvme-SAMSUNG_MZ1L23T8HBLA-00A07_S6EWNA0T100001",
    "Word": "r01",
    "CatalogId": "1g.10gb+me",
    "AwsName": "arn:aws:kms:us-east-1:111111111111:key/abcd-1234",
    "AwsAccount": "111111111111",
    "Email": "ml-oncall@acme.example",
    "HostPort": "smtp.acme.example:587",
    "SlackChannel": "#ml-alerts",
    "SecretKeyName": "routing-key",
    "ObjectPrefix": "curated/year=2026/",
    "KeyFingerprint": "EB693B3035CD5710E231E123A4B469963BF863CC",
    "PciAddress": "0000:1a:00.0",
    "RdmaDevice": "ibp24s0",
}
"""A value each grammar accepts."""


def test_every_grammar_has_a_json_schema_pattern_that_accepts_what_it_accepts() -> None:
    samples = SAMPLES
    assert set(samples) == set(GRAMMARS)
    import re

    for name, grammar in GRAMMARS.items():
        assert grammar.problem(samples[name]) is None, name
        assert re.fullmatch(grammar.pattern, samples[name]), name


def test_the_one_regex_of_a_grammar_accepts_what_its_two_checks_accept() -> None:
    """A grammar tries a valid value with one regex (its characters and pattern at once) and runs the two checks that
    name the mistake only when it fails: the two must accept exactly what the one does, on every grammar's sample,
    every other grammar's and each of their cuts, doublings and one-character changes."""
    import re

    from alicerce.spec.text import first_outside

    values = set(SAMPLES.values()) | {"", "/", "-", ".", "a", "A1", "a\n", "a\nb", " a", "a ", "é", "a..b", "a//b", "x" * 70}
    for value in list(values):
        for i in range(len(value) + 1):
            values |= {value[:i], value[i:], value[:i] + value[i:] * 2}
            values |= {value[:i] + c + value[i + 1 :] for c in ("-", ".", "/", ":", "@", " ", "\n", "_", "0", "Z", "é", "\x1b")}
    for name, grammar in GRAMMARS.items():
        chars = re.compile(grammar.chars)
        for value in values:
            two = first_outside(value, chars) is None and re.fullmatch(grammar.pattern, value) is not None
            assert (grammar._accepts.fullmatch(value) is not None) is two, (name, value)


@pytest.mark.parametrize(
    ("kind", "value", "says"),
    [
        (LnetRoute, 'o2ib1 10.0.0.1@o2ib"\ninstall lnet /bin/sh -c "id > /tmp/pwned', "U+0022 QUOTATION MARK"),
        (LnetRoute, "o2ib1 10.0.0.1@o2ib;tcp 10.0.0.2@tcp", "U+003B SEMICOLON"),
        (MountOption, "ro\n10.0.0.1@tcp:/x /etc lustre defaults 0 0", "U+000A LINE FEED"),
        (MountOption, "ro,suid", "U+002C COMMA"),
        (Email, "ops@acme.example\nbcc: all@acme.example", "U+000A LINE FEED"),
        (SlackChannel, "#ml alerts", "U+0020 SPACE"),
        (NidList, "10.0.0.1@o2ib\tx", "U+0009"),
        (SecretName, "$(id)", "U+0024 DOLLAR SIGN"),
    ],
)
def test_grammars_name_the_first_character_that_is_not_allowed(kind: typing.Any, value: str, says: str) -> None:
    with pytest.raises(ValidationError) as raised:
        TypeAdapter(kind).validate_python(value)
    message = str(raised.value)
    assert says in message
    assert "\n" not in message.split("Value error, ", 1)[1].split(" [type=", maxsplit=1)[0]  # the value is shown escaped


def test_a_pasted_secret_is_named_as_such_and_never_echoed() -> None:
    pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\n-----END RSA PRIVATE KEY-----"
    with pytest.raises(ValidationError) as raised:
        TypeAdapter(SecretName).validate_python(pem)
    message = str(raised.value).split(" [type=")[0]
    assert "looks like a PEM block" in message and "MIIEow" not in message


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("-----BEGIN OPENSSH PRIVATE KEY-----", "a PEM block (a private key or certificate)"),
        ("apiVersion: v1\nkind: Config\nclusters: []", "a kubeconfig"),
        ("AKIAIOSFODNN7EXAMPLE", "an AWS access key id"),
        ("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "an AWS secret access key"),
        ("ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789", "a GitHub token"),
        ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln", "a JSON Web Token"),
        ("https://user:hunter2@git.example.com/r.git", "a password in a URL"),
        ("QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWZnaGlqa2xtbm9wcXJzdHV2d3h5ejAxMjM0NTY3ODk=", "a long base64 blob"),
        ("e93facc04764012d7bfb002500d5d1a6", "a PagerDuty integration key"),
        ("R01ABCDEFGHIJKLMNOPQRSTUVWXYZ234", "a PagerDuty integration key"),
        ("https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX", "a Slack webhook URL"),
    ],
)
def test_secret_shapes(text: str, kind: str) -> None:
    assert secret_shape(text) == kind


@pytest.mark.parametrize(
    "text",
    [
        "0123456789abcdef0123456789abcdef01234567",  # a git commit id
        "/dev/disk/by-id/nvme-SAMSUNG_MZ1L23T8HBLA-00A07_S6EWNA0T100001",
        "https://github.com/acme/ml-platform.git",
        "arn:aws:kms:us-east-1:111111111111:key/0c8a6b8e-7d1e-4b5f-9f8c-2a1b3c4d5e6f",
        "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        "ml-platform@acme.example",
        "00000000000000000000000000000000",  # a number, not a key
        "alertmanager-pagerduty",
    ],
)
def test_ordinary_values_are_not_secrets(text: str) -> None:
    assert secret_shape(text) is None


def test_escaped_shows_control_characters_and_leaves_letters() -> None:
    assert escaped("a\x1b[31mb\x00c\u202ed") == "a\\x1b[31mb\\x00c\\u202ed"
    assert escaped("José") == "José"


@pytest.mark.parametrize("prefix", ["research/../", "../", "research/./x/", "research//", "/research/", "research/*", "re search/"])
def test_a_key_prefix_never_climbs_out_of_its_directory(prefix: str) -> None:
    """Security review of issue 22: a storage grant's prefix is also the directory of the team's claim on a file
    system linked to the tier (FSx subdirectory mount, alicerce.emit.kube.storage._below): `research/../` took a
    grant on research/ to the file system's root, where every other team's files are."""
    assert TypeAdapter(ObjectPrefix).validate_python("research/") == "research/"
    with pytest.raises(ValidationError):
        TypeAdapter(ObjectPrefix).validate_python(prefix)


@pytest.mark.parametrize("name", sorted(GRAMMARS))
def test_no_grammar_takes_a_leading_dash(name: str) -> None:
    """Review of issue 22: `gitops.specFile: "-itools/inv.sh"` reached the deploy workflow's command line as
    `-i tools/inv.sh`, an executable inventory Ansible ran. No spec word may start like an option."""
    grammar = GRAMMARS[name]
    assert grammar.problem("-itools/inv.sh") is not None, name
    assert grammar.problem("-1") is not None, name
    import re

    assert not re.fullmatch(grammar.pattern, "-itools"), name  # editors refuse it too
    if name == "RepoPath":
        assert 'starts with "-", which a command line reads as an option' in (grammar.problem("-itools/inv.sh") or "")


@pytest.mark.parametrize("char", ["\u061c", "\U000e0041", "\u180e", "\ufe0f", "\u034f", "\u3164", "\u115f"])
def test_hidden_format_characters_are_invisible(char: str) -> None:
    """Review of issue 22: bidi marks, tag characters (hidden ASCII) and fillers passed AL277 in prose."""
    from alicerce.spec.text import INVISIBLE

    assert INVISIBLE.match(char), f"U+{ord(char):04X}"


@pytest.mark.parametrize(
    "path",
    [
        "/root/.ssh",
        "/var/spool/cron/crontabs",
        "/opt/cni/bin",
        "/run/containerd",
        "/var/run",
        "/var/lib/etcd/member",
        "/var/lib/containerd/io",
    ],
)
def test_mount_points_that_hand_over_root_are_refused(path: str) -> None:
    from alicerce.spec.text import mount_point_problem

    assert mount_point_problem(path) is not None, path
    assert mount_point_problem("/mnt/datasets") is None


def test_printable_ascii_holds_no_invisible_character() -> None:
    """AL277 skips text that is printable ASCII whole (str.isascii and str.isprintable): none of it is invisible."""
    from alicerce.spec.text import INVISIBLE

    printable = [chr(code) for code in range(0x80) if chr(code).isprintable()]
    assert printable == [chr(code) for code in range(0x20, 0x7F)]
    assert [char for char in printable if INVISIBLE.match(char)] == []
    assert [chr(code) for code in (*range(0x20), 0x7F) if not INVISIBLE.match(chr(code))] == []
