"""`alicerce init`: a platform repository that validates, previews, generates and deploys from its first commit.

platform.yaml, schema/, .gitignore                the starter spec (alicerce.emit.scaffold)
README.md                                         the quickstart, from pip install to pulumi preview (emit/readme.py)
requirements.txt                                  alicerce pinned at the version that wrote the repository
Pulumi.yaml, __main__.py, stacks/Pulumi.<stack>.yaml   the Pulumi project: <env> and <env>-kubernetes per environment
generated/<env>/                                  each environment's generated tree (`generate --check` passes)
.github/workflows/alicerce-*.yml                  the CI workflows of the generated ci/ subtree
.pre-commit-config.yaml                           validate and generate --check before each commit
"""

from __future__ import annotations

import json
from importlib.metadata import version

from alicerce.emit.gitops.ci import layer_stacks, stacks
from alicerce.emit.gitops.yamltext import dump
from alicerce.emit.readme import readme
from alicerce.emit.scaffold import scaffold_files
from alicerce.emit.stale import workflows
from alicerce.emit.tree import render_tree
from alicerce.resolve.model import ResolvedPlatform
from alicerce.targets import target

PULUMI_YAML = """\
# The Pulumi project: two stacks per environment of platform.yaml (stack config in stacks/).
name: {name}
description: GPU/ML platform generated from platform.yaml by alicerce
runtime:
  name: python
  options:
    toolchain: pip
    virtualenv: .venv
stackConfigDir: stacks
# Where stack state lives. The default is Pulumi's local file backend in your home folder (what
# `pulumi login --local` selects): one machine, one person. For a team (and for CI), switch to a
# managed backend: replace the URL (s3://<bucket>?region=<region>, or https://api.pulumi.com), or
# override it per shell with PULUMI_BACKEND_URL, which takes precedence over this file.
backend:
  url: file://~
"""

MAIN = '''\
"""The Pulumi program of this repository: alicerce builds every resource of the stack's environment."""

from alicerce.emit.pulumi.program import main

main()
'''

REQUIREMENTS = """\
# The alicerce release this repository is generated with (Pulumi, CI and pre-commit install it from here).
alicerce=={version}
"""

DEFAULT_SPEC = "platform.yaml"  # alicerce:spec's default in the program

_CLOUD_COMMENT = """\
# The {env} environment's cloud layer (network, key, EKS cluster, node groups, storage, IAM): what
# {spec} cannot know. Region and account come from the spec. Its Kubernetes layer is the stack
# {env}-kubernetes. Secrets are set with `pulumi config set --secret` and stored encrypted by the
# stack's secrets provider (README, "Secrets").
"""

_ADMIN_COMMENT = """\
  # REPLACE: the IAM roles granted cluster admin through EKS access entries (the cluster bootstraps no
  # creator access). List the role that runs the {env}-kubernetes stack.
"""

_KUBERNETES_COMMENT = """\
# The {env} environment's Kubernetes layer (operators, controllers, in-cluster objects). Run it from a
# runner that reaches the cluster's API endpoint, as a role listed in the {env} stack's
# alicerce:adminPrincipals. It reads the {env} stack's outputs through a StackReference.
"""


def _stack_configs(rp: ResolvedPlatform, env: str) -> dict[str, str]:
    """``stacks/Pulumi.<stack>.yaml`` of one environment: only what the spec cannot know."""
    spec = rp.spec.gitops.spec_file
    base: dict[str, object] = {} if spec == DEFAULT_SPEC else {"alicerce:spec": spec}
    # the first site with a cloud account: its target declares the admin principals the stack settings start from
    cloud = next(((target(s.provider).cloud, s) for s in rp.spec.environments[env].sites if target(s.provider).cloud), None)
    out = {}
    for stack, layer in layer_stacks(env):
        config = {**base, "alicerce:environment": env, "alicerce:layers": [layer]}
        if layer == "cloud":
            text = _CLOUD_COMMENT.format(env=env, spec=spec) + dump({"config": config}, sort_keys=False)
            if cloud is not None and cloud[0] is not None:
                admins = list(cloud[0].admin_principals(cloud[1]))
                text += _ADMIN_COMMENT.format(env=env) + f"  alicerce:adminPrincipals: {json.dumps(admins)}\n"
        else:
            text = _KUBERNETES_COMMENT.format(env=env) + dump({"config": config}, sort_keys=False)
        out[f"stacks/Pulumi.{stack}.yaml"] = text
    return out


def _pre_commit(rp: ResolvedPlatform) -> str:
    spec = rp.spec.gitops.spec_file
    hooks = [
        {
            "id": "alicerce-validate",
            "name": "alicerce validate",
            "entry": f"alicerce validate -- {spec}",  # `--`: the path is never read as an option
            "language": "system",
            "files": r"\.ya?ml$",
            "pass_filenames": False,
        }
    ]
    for i, stack in enumerate(stacks(rp)):
        tree = "/".join(p for p in (rp.spec.gitops.folder.strip("/"), stack.name) if p)
        ci = " --ci-dir .github/workflows" if i == 0 else ""
        hooks.append(
            {
                "id": f"alicerce-generate-check-{stack.name}",
                "name": f"alicerce generate --check ({stack.name})",
                "entry": f"alicerce generate --check --env {stack.name} --out {tree}{ci} -- {spec}",
                "language": "system",
                "always_run": True,
                "pass_filenames": False,
            }
        )
    header = "# Before each commit: the spec is valid and every generated tree matches it (alicerce installed from requirements.txt).\n"
    return header + dump({"repos": [{"repo": "local", "hooks": hooks}]}, sort_keys=False)


def platform_repository(name: str, resolve: dict[str, ResolvedPlatform], starter: str = "aws") -> dict[str, str]:
    """Every file of a new platform repository; ``resolve`` holds the starter spec resolved per environment."""
    files = scaffold_files(name, starter)
    any_env = next(iter(resolve.values()))
    files["requirements.txt"] = REQUIREMENTS.format(version=version("alicerce"))
    files["Pulumi.yaml"] = PULUMI_YAML.format(name=name)
    files["__main__.py"] = MAIN
    files[".pre-commit-config.yaml"] = _pre_commit(any_env)
    files["README.md"] = readme(name, resolve)
    for env, rp in resolve.items():
        files.update(_stack_configs(rp, env))
        tree = render_tree(rp)
        folder = "/".join(p for p in (rp.spec.gitops.folder.strip("/"), env) if p)
        files.update({f"{folder}/{path}": text for path, text in tree.items()})
    files.update({f".github/workflows/{file}": text for file, text in workflows(render_tree(any_env, ["ci"])).items()})
    return dict(sorted(files.items()))
