"""README.md of a platform repository `alicerce init` writes: the quickstart from `pip install` to `pulumi preview`."""

from __future__ import annotations

from alicerce.emit.gitops.ci import layer_stacks
from alicerce.resolve.model import ResolvedPlatform
from alicerce.targets import TARGETS, target


def readme(name: str, resolve: dict[str, ResolvedPlatform]) -> str:
    """The repository's README; ``resolve`` holds its spec resolved per environment (the first one is the example)."""
    env, rp = next(iter(resolve.items()))
    spec = rp.spec.gitops.spec_file
    tree = "/".join(p for p in (rp.spec.gitops.folder.strip("/"), env) if p)
    cloud, kubernetes = (stack for stack, _ in layer_stacks(env))
    # the first site with a cloud account (its target declares how to read the region): the real-account steps
    account = next(((target(s.provider).cloud, s) for s in rp.spec.environments[env].sites if target(s.provider).cloud), None)
    region = account[0].region(account[1]) if account is not None and account[0] is not None else "<region>"
    stacks = ", ".join(f"`{stack}`" for e in resolve for stack, _ in layer_stacks(e))
    real_account = _REAL_ACCOUNT.format(spec=spec, region=region, cloud=cloud, kubernetes=kubernetes, tree=tree) if account else ""
    return f"""\
# {name}

The ML platform `{name}`, described in `{spec}` and built with alicerce. Editors with the YAML
language server complete and check `{spec}` against `schema/platform.schema.json`.

| path | what |
|---|---|
| `{spec}` | the platform: WHAT runs WHERE (the one file you edit) |
| `requirements.txt` | alicerce pinned at the release that wrote this repository |
| `Pulumi.yaml`, `__main__.py` | the Pulumi project; its program is `alicerce.emit.pulumi.program.main` from the installed package |
| `stacks/` | one stack per environment and layer ({stacks}): only what the spec cannot know |
| `{tree}/` | the generated tree of `{env}` (Kubernetes objects, Argo CD Applications, monitoring, reports); never edit it |
| `.github/workflows/` | CI: validate, `generate --check`, `pulumi preview`, the semantic diff on pull requests; `pulumi up` on merge |
| `.pre-commit-config.yaml` | validate and `generate --check` before each commit |

## Quickstart: from `pip install` to `pulumi preview`

Offline, with no cloud account and no credentials:

```sh
python3 -m venv .venv && . .venv/bin/activate
pip install -r requirements.txt         # alicerce and the Pulumi SDK
alicerce validate                       # every error, located, before anything is deployed
alicerce plan                           # the pools sized from the workloads, and what a month costs
alicerce preview --env {env}              # every resource the Pulumi program declares (mock engine, offline)
alicerce generate --env {env} --out {tree} --ci-dir .github/workflows   # after each spec change; commit the result
```

Then against a real account ([Pulumi CLI](https://www.pulumi.com/docs/iac/download-install/) installed,
AWS credentials in the shell):

```sh
export PULUMI_CONFIG_PASSPHRASE=...     # the passphrase secrets provider (below); keep it out of git
pulumi stack init {cloud}                 # Pulumi.yaml's backend: local files under ~/.pulumi
pulumi preview --stack {cloud}            # the cloud layer: network, key, cluster, node groups, storage, IAM
pulumi up --stack {cloud}
pulumi stack init {kubernetes}
pulumi preview --stack {kubernetes}       # from a runner that reaches the cluster's API endpoint
```

`pulumi preview --stack {kubernetes}` reads the outputs of `{cloud}` (a StackReference), so it
runs after `pulumi up --stack {cloud}`.
{_applied(rp, env, kubernetes)}
{real_account}## State backend

`Pulumi.yaml` sets `backend.url: file://~`: state in `~/.pulumi` on this machine, enough to try it
alone. A team and CI need one shared backend; switch before the first `pulumi up`:

```sh
# S3 (self-managed): edit Pulumi.yaml's backend.url, or per shell:
export PULUMI_BACKEND_URL='s3://<bucket>?region={region}'
# or Pulumi Cloud: backend.url: https://api.pulumi.com (and PULUMI_ACCESS_TOKEN)
```

`PULUMI_BACKEND_URL` takes precedence over `Pulumi.yaml`; the CI workflows set it from the
`PULUMI_BACKEND_URL` variable and refuse to run on a local file backend. Moving existing stacks:
`pulumi stack export` from the old backend, `pulumi stack import` into the new one.

## Secrets

Secret config (an on-prem site's kubeconfig, for example) is set with `pulumi config set --secret`
and stored encrypted in the stack file by the stack's secrets provider, chosen at `pulumi stack init`:
the default `passphrase` (`PULUMI_CONFIG_PASSPHRASE`, what CI uses), or a KMS key:

```sh
pulumi stack init {cloud} --secrets-provider 'awskms://alias/<key>?region={region}'
pulumi stack change-secrets-provider --stack {cloud} 'awskms://alias/<key>?region={region}'   # later
```

No secret value is ever written to this repository in clear text.
"""


_REAL_ACCOUNT = """\
## What a real account adds

- `{spec}`: your AWS account id and region (`environments.*.sites[].account`, `region: {region}`),
  zones and VPC range; the instance types your quotas allow (`alicerce catalog instances`).
- `stacks/Pulumi.{cloud}.yaml`: `alicerce:adminPrincipals`, the IAM roles granted cluster admin (the
  placeholder names a role that does not exist); the role that runs `{kubernetes}` must be one of them.
- Your identity provider (`security.identityProvider`, commented out in `{spec}`): the teams'
  groups are written with its prefix (`oidc:` by default), as the API server sees them.
- AWS credentials for `pulumi` (the cloud layer needs IAM, EC2, EKS, KMS, S3 and FSx rights), and a
  runner inside the VPC (or a network listed in `alicerce:apiAccessCidrs`) for the Kubernetes layer.
- For CI: the GitHub environments, variables and secrets listed in `{tree}/ci/README.md`.

"""


def _applied(rp: ResolvedPlatform, env: str, kubernetes: str) -> str:
    """The quickstart's step for each target whose sites `alicerce apply <target>` provisions (its declared deploy)."""
    out = []
    for t in TARGETS:
        sites = [s for s in rp.spec.environments[env].sites if s.provider == t.name]
        if not t.applies or not sites:
            continue
        names = ", ".join(f"`{s.name}`" for s in sites)
        secrets = ", ".join(f"`{k}`" for s in sites if (k := getattr(s, "kubeconfig_secret", None)))
        out.append(f"""
## Servers you own: `alicerce apply {t.name}`

The {t.label} sites ({names}) run on servers you own. `alicerce apply {t.name}` provisions their nodes and
builds the cluster (kubespray), over SSH from a machine that reaches them, before the Kubernetes layer:

```sh
alicerce apply {t.name} --env {env} --check   # what would change (Ansible check mode); nothing applied
alicerce apply {t.name} --env {env}           # node stage, kubespray, then the cluster stage with acceptance
```

Then give the Kubernetes layer the cluster's kubeconfig as the Pulumi secret the site names ({secrets or "kubeconfigSecret"}):
`pulumi config set --secret --stack {kubernetes} <key> < kubeconfig`.
""")
    return "".join(out)
