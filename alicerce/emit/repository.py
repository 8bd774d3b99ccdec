"""`alicerce init`: a platform repository that validates, previews, generates and deploys from its first commit.

platform.yaml, schema/, README.md, .gitignore     the starter spec (alicerce.emit.scaffold)
requirements.txt                                  alicerce pinned at the version that wrote the repository
Pulumi.yaml, __main__.py, stacks/Pulumi.<env>.yaml   the Pulumi project: one stack per environment
generated/<env>/                                  each environment's generated tree (`generate --check` passes)
.github/workflows/alicerce-*.yml                  the CI workflows of the generated ci/ subtree
.pre-commit-config.yaml                           validate and generate --check before each commit
"""

from __future__ import annotations

from importlib.metadata import version

from alicerce.emit.gitops.ci import stacks
from alicerce.emit.gitops.yamltext import dump
from alicerce.emit.scaffold import scaffold_files
from alicerce.emit.stale import workflows
from alicerce.emit.tree import render_tree
from alicerce.resolve.model import ResolvedPlatform
from alicerce.spec.models import AwsSite

PULUMI_YAML = """\
# The Pulumi project: one stack per environment of platform.yaml (stack config in stacks/).
name: {name}
description: GPU/ML platform generated from platform.yaml by alicerce
runtime:
  name: python
  options:
    toolchain: pip
    virtualenv: .venv
stackConfigDir: stacks
"""

MAIN = '''\
"""The Pulumi program of this repository: alicerce builds every resource of the stack's environment."""

from alicerce.emit.pulumi.program import main

main()
'''

REQUIREMENTS = """\
# The alicerce release this repository is generated with (CI and pre-commit install it from here).
alicerce=={version}
"""


def _stack_config(rp: ResolvedPlatform, env: str) -> str:
    config: dict[str, object] = {"alicerce:spec": rp.spec.gitops.spec_file, "alicerce:environment": env}
    aws = [s for s in rp.spec.environments[env].sites if isinstance(s, AwsSite)]
    if aws:
        config |= {"aws:region": aws[0].region, "aws:allowedAccountIds": [aws[0].account]}
    return f"# WHERE the {env} environment of {rp.spec.gitops.spec_file} runs; WHAT runs there is in the spec.\n" + dump({"config": config})


def _pre_commit(rp: ResolvedPlatform) -> str:
    spec = rp.spec.gitops.spec_file
    hooks = [
        {
            "id": "alicerce-validate",
            "name": "alicerce validate",
            "entry": f"alicerce validate {spec}",
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
                "entry": f"alicerce generate --check --env {stack.name} --out {tree}{ci} {spec}",
                "language": "system",
                "always_run": True,
                "pass_filenames": False,
            }
        )
    header = "# Before each commit: the spec is valid and every generated tree matches it (alicerce installed from requirements.txt).\n"
    return header + dump({"repos": [{"repo": "local", "hooks": hooks}]}, sort_keys=False)


def platform_repository(name: str, resolve: dict[str, ResolvedPlatform]) -> dict[str, str]:
    """Every file of a new platform repository; ``resolve`` holds the starter spec resolved per environment."""
    files = scaffold_files(name)
    any_env = next(iter(resolve.values()))
    files["requirements.txt"] = REQUIREMENTS.format(version=version("alicerce"))
    files["Pulumi.yaml"] = PULUMI_YAML.format(name=name)
    files["__main__.py"] = MAIN
    files[".pre-commit-config.yaml"] = _pre_commit(any_env)
    for env, rp in resolve.items():
        files[f"stacks/Pulumi.{env}.yaml"] = _stack_config(rp, env)
        tree = render_tree(rp)
        folder = "/".join(p for p in (rp.spec.gitops.folder.strip("/"), env) if p)
        files.update({f"{folder}/{path}": text for path, text in tree.items()})
    files.update({f".github/workflows/{file}": text for file, text in workflows(render_tree(any_env, ["ci"])).items()})
    return dict(sorted(files.items()))
